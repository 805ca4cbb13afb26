package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInstanceRoot(t *testing.T) {
	onDisk := t.TempDir()
	if mem, err := onMemoryFS(onDisk); err != nil || mem {
		t.Skipf("the test temp dir is on a memory file system (%v): no disk directory to refuse", err)
	}
	shm, shmErr := onMemoryFS(memoryFSDir)
	memDir := filepath.Join(memoryFSDir, "seahaven-test-missing") // made by instanceRoot, removed below
	t.Cleanup(func() { os.Remove(memDir) })
	tests := []struct {
		name      string
		storage   string // --storage
		instances string // --instances
		want      string // the root, when no error
		errMsg    string // a substring of the error
		needShm   bool   // the case needs /dev/shm to be a tmpfs
	}{
		{name: "DiskDefault", storage: "disk", want: ""},
		{name: "DiskGiven", storage: "disk", instances: onDisk, want: onDisk},
		{name: "MemoryDefault", storage: "memory", want: filepath.Join(memoryFSDir, "seahaven-instances"), needShm: true},
		{name: "MemoryGiven", storage: "memory", instances: memDir, want: memDir, needShm: true},
		{name: "MemoryOnDisk", storage: "memory", instances: onDisk, errMsg: "is not on a memory file system (tmpfs)"},
		{name: "Unknown", storage: "cloud", errMsg: `--storage "cloud": want disk or memory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needShm && (shmErr != nil || !shm) {
				t.Skipf("%s is not a tmpfs here", memoryFSDir)
			}
			got, err := instanceRoot(tt.storage, tt.instances)
			if tt.errMsg != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errMsg) {
					t.Fatalf("err = %v, want one containing %q", err, tt.errMsg)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("instanceRoot = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
