//go:build linux

package sqlitestore

import (
	"fmt"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// mapAfter is how many reads and writes a slot makes through system calls
// after a bind before it maps its file. A store used for one call and
// released never pays for a mapping; one that keeps working reads and
// writes by copying memory.
const mapAfter = 64

// mapHeadroom is how far past the file's end a mapping reaches, so the file
// can grow that much before the slot maps it again. Bytes past the end are
// never touched (that would fault): only address space is reserved.
const mapHeadroom = 1 << 20

// fileMap is a slot's shared mapping of its bound file. Reads and writes
// inside the file's known size copy memory; the page cache is the same as
// for read(2) and write(2), so other connections, which use system calls,
// see the same bytes. Only the slot's connection changes the file's size
// (writes past the end go through pwrite, and Truncate), so size stays
// true; a file shrunk behind the slot's back makes an access fault, which
// is caught and reported as an I/O error.
type fileMap struct {
	mem  []byte // nil until mapped
	size int64  // the file's size when known; -1 otherwise
	ops  int    // system-call reads and writes since the bind
}

// reset forgets the mapping, for a new binding.
func (m *fileMap) reset() {
	m.unmap()
	m.ops = 0
}

// unmap releases the mapping.
func (m *fileMap) unmap() {
	if m.mem != nil {
		unix.Munmap(m.mem)
		m.mem = nil
	}
	m.size = -1
}

// window returns the n bytes at off in the mapping, mapping the file first
// when it is due; nil when they must be read or written through the
// descriptor.
func (m *fileMap) window(fd int, off int64, n int) []byte {
	end := off + int64(n)
	if m.mem == nil || m.size < 0 || end > int64(len(m.mem)) {
		if m.ops++; m.ops < mapAfter {
			return nil
		}
		m.ops = 0
		if !m.mapFile(fd) {
			return nil
		}
	}
	if end > m.size || end > int64(len(m.mem)) {
		return nil // past the end: the descriptor extends the file
	}
	return m.mem[off:end]
}

// mapFile maps the bound file with mapHeadroom to spare.
func (m *fileMap) mapFile(fd int) bool {
	m.unmap()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Size <= 0 {
		return false
	}
	length := (st.Size + mapHeadroom + mapHeadroom - 1) / mapHeadroom * mapHeadroom
	mem, err := unix.Mmap(fd, 0, int(length), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return false
	}
	m.mem, m.size = mem, st.Size
	return true
}

// wrote records a write through the descriptor that ended at end.
func (m *fileMap) wrote(end int64) {
	if m.size >= 0 && end > m.size {
		m.size = end
	}
}

// truncated records a truncation to size; a failed one leaves the size
// unknown.
func (m *fileMap) truncated(size int64, err error) {
	if err != nil {
		m.size = -1
		return
	}
	if m.size >= 0 {
		m.size = size
	}
}

// copy copies src to dst, turning a fault on the mapping (the file shrunk
// by someone else) into an error and dropping the mapping.
func (m *fileMap) copy(dst, src []byte) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			m.unmap()
			err = fmt.Errorf("sqlitestore: mapped file access faulted (was the file truncated?): %v", r)
		}
	}()
	copy(dst, src)
	return nil
}

// mapped reports whether the slot reads and writes through a mapping.
func (r *rebindFile) mapped() bool { return r.fmap.mem != nil }
