package cli

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/internal/testfs"
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

func TestServeCommand_Storage(t *testing.T) {
	t.Run("MemoryRefusedOnDisk", func(t *testing.T) {
		onDisk := t.TempDir()
		if mem, err := onMemoryFS(onDisk); err != nil || mem {
			t.Skip("the test temp dir is not on disk")
		}
		_, err := serveBriefly(t, []string{"--storage", "memory", "--instances", onDisk}, func(string) { t.Error("serve started") })
		if err == nil || !strings.Contains(err.Error(), "is not on a memory file system") {
			t.Fatalf("err = %v, want a refusal naming the file system", err)
		}
	})
	t.Run("Memory", func(t *testing.T) {
		if mem, err := onMemoryFS(memoryFSDir); err != nil || !mem {
			t.Skipf("%s is not a tmpfs here", memoryFSDir)
		}
		root, err := os.MkdirTemp(memoryFSDir, "seahaven-test-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(root) })
		stderr, err := serveBriefly(t, []string{"--storage", "memory", "--instances", root}, func(base string) {
			res, err := http.Post(base+"/reset", "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("POST /reset: %s", res.Status)
			}
			ents, _ := os.ReadDir(root)
			var insts []string
			for _, p := range ents {
				if !p.IsDir() {
					continue
				}
				in, _ := os.ReadDir(filepath.Join(root, p.Name()))
				for _, e := range in {
					if e.IsDir() {
						insts = append(insts, e.Name())
					}
				}
			}
			if len(insts) != 1 {
				t.Errorf("instance directories on the memory file system after a reset: %v, want 1", insts)
			}
		})
		if err != nil {
			t.Fatalf("serve: %v\n%s", err, stderr)
		}
	})
}

// TestServe_MinFreeDiskZero: --min-free-disk 0 asks for no reserve beyond
// an instance's own files, so a server whose instances' file system has
// less than the default reserve free is ready and resets; before, 0 read
// as the 8 MiB default, refusing every reset with disk_full.
func TestServe_MinFreeDiskZero(t *testing.T) {
	bin := buildSeahaven(t)
	instances := testfs.MountTmpfs(t, "4m")
	s := startServe(t, bin, "--world", "company", "--instances", instances, "--min-free-disk", "0")
	res, err := http.Get("http://" + s.addr + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /ready = %d %s, want 200", res.StatusCode, body)
	}
	res, err = http.Post("http://"+s.addr+"/reset", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("POST /reset = %d %s, want 200", res.StatusCode, body)
	}
}
