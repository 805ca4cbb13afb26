//go:build linux

package openenv_test

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"
)

// watchOpens reports every open or read of a file in the directories it
// watches, from the moment it is made, through inotify.
type watchOpens struct {
	fd    int
	paths map[int32]string // watched directory by watch descriptor
}

// newWatchOpens watches dirs until the test ends.
func newWatchOpens(tb testing.TB, dirs ...string) *watchOpens {
	tb.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		tb.Fatalf("inotify: %v", err)
	}
	tb.Cleanup(func() { syscall.Close(fd) })
	w := &watchOpens{fd: fd, paths: map[int32]string{}}
	for _, d := range dirs {
		wd, err := syscall.InotifyAddWatch(fd, d, syscall.IN_OPEN|syscall.IN_ACCESS)
		if err != nil {
			tb.Fatalf("inotify watch %s: %v", d, err)
		}
		w.paths[int32(wd)] = d
	}
	return w
}

// events returns the paths opened or read since the last call.
func (w *watchOpens) events(tb testing.TB) []string {
	tb.Helper()
	var out []string
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(w.fd, buf)
		if errors.Is(err, syscall.EAGAIN) {
			return out
		}
		if err != nil {
			tb.Fatalf("reading inotify events: %v", err)
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
			for len(name) > 0 && name[len(name)-1] == 0 {
				name = name[:len(name)-1]
			}
			out = append(out, filepath.Join(w.paths[ev.Wd], string(name)))
			off += syscall.SizeofInotifyEvent + int(ev.Len)
		}
	}
}
