//go:build linux

package sqlitestore

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fileMap reads and writes through its mapping only after mapAfter
// accesses, only inside the file's known size, and turns a fault on a file
// shrunk behind its back into an error.
func TestFileMap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, bytes.Repeat([]byte{1}, 3*4096), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	var m fileMap
	m.reset()
	defer m.unmap()
	p := make([]byte, 4096)
	for i := 1; i < mapAfter; i++ {
		if done, _ := m.read(fd, p, 0); done {
			t.Fatalf("access %d went through a mapping before mapAfter", i)
		}
	}
	if done, err := m.read(fd, p, 4096); !done || err != nil || p[0] != 1 {
		t.Fatalf("access mapAfter: done %v, err %v, byte %d; want a mapped read of 1", done, err, p[0])
	}
	if done, err := m.write(fd, bytes.Repeat([]byte{2}, 4096), 8192); !done || err != nil {
		t.Fatalf("mapped write: done %v, err %v", done, err)
	}
	got := make([]byte, 1)
	if _, err := f.ReadAt(got, 8192); err != nil || got[0] != 2 {
		t.Fatalf("read(2) after a mapped write: %v, byte %d; want 2", err, got[0])
	}
	if done, _ := m.write(fd, p, 3*4096); done {
		t.Fatal("a write past the file's end went through the mapping")
	}
	if err := f.Truncate(4096); err != nil {
		t.Fatal(err)
	}
	done, err := m.read(fd, p, 8192) // the slot still believes the file has 3 pages
	if !done || err == nil || !strings.Contains(err.Error(), "faulted") {
		t.Fatalf("read of a page truncated away: done %v, err %v; want a fault error", done, err)
	}
	if m.mem != nil {
		t.Fatal("the mapping survived a fault")
	}
}
