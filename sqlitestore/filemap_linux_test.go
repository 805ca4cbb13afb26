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
		if m.window(fd, 0, len(p)) != nil {
			t.Fatalf("access %d went through a mapping before mapAfter", i)
		}
	}
	if w := m.window(fd, 4096, len(p)); w == nil || m.copy(p, w) != nil || p[0] != 1 {
		t.Fatalf("access mapAfter: window %v, byte %d; want a mapped read of 1", w != nil, p[0])
	}
	if w := m.window(fd, 8192, 4096); w == nil || m.copy(w, bytes.Repeat([]byte{2}, 4096)) != nil {
		t.Fatalf("mapped write: window %v", w != nil)
	}
	got := make([]byte, 1)
	if _, err := f.ReadAt(got, 8192); err != nil || got[0] != 2 {
		t.Fatalf("read(2) after a mapped write: %v, byte %d; want 2", err, got[0])
	}
	if m.window(fd, 3*4096, len(p)) != nil {
		t.Fatal("a write past the file's end went through the mapping")
	}
	if err := f.Truncate(4096); err != nil {
		t.Fatal(err)
	}
	w := m.window(fd, 8192, len(p)) // the slot still believes the file has 3 pages
	if w == nil {
		t.Fatal("no mapped window for a page truncated away")
	}
	if err := m.copy(p, w); err == nil || !strings.Contains(err.Error(), "faulted") {
		t.Fatalf("read of a page truncated away: err %v; want a fault error", err)
	}
	if m.mem != nil {
		t.Fatal("the mapping survived a fault")
	}
}
