//go:build unix

package app

import (
	"bytes"
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// tryLock takes an exclusive lock on f without waiting: flock(2), held
// until f is closed (so a process that dies releases it).
func tryLock(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
}

// lockWait takes an exclusive lock on f, waiting for it: flock(2), held
// until f is closed. A signal interrupting the wait retries it.
func lockWait(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// processAlive reports whether a process with this pid runs. A zombie (a
// process that died and was not yet reaped, as a killed server whose
// parent is slow to wait for it) does not, though signalling it succeeds:
// on Linux its /proc stat says so.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := unix.Kill(pid, 0); err != nil && !errors.Is(err, unix.EPERM) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // not Linux, or it went meanwhile: err on the side of live
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
