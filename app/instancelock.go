package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// lockSuffix names the file beside a process's instance directory (the
// directory's name plus ".lock") that the process holds an exclusive flock
// on for as long as it runs. The kernel drops the lock when the process
// dies, however it dies, so a directory whose lock can be taken is stale. A
// process id alone cannot tell: in a container every restart of the server
// is pid 1 again. The file sits beside the directory, not in it, so the
// directory holds only instance directories.
const lockSuffix = ".lock"

// instanceRootMu serialises cleaning and making instance directories in
// this process, so that one backend's cleaning never sees another's
// directory between its creation and its lock.
var instanceRootMu sync.Mutex

// makeInstanceDir cleans root of stale instance directories and makes and
// locks this process's new one. release unlocks it.
func makeInstanceDir(root string) (dir string, release func(), err error) {
	instanceRootMu.Lock()
	defer instanceRootMu.Unlock()
	if err := cleanStale(root); err != nil {
		return "", nil, err
	}
	dir, err = os.MkdirTemp(root, strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", nil, fmt.Errorf("app: instance directory: %w", err)
	}
	release, err = lockInstanceDir(dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, release, nil
}

// remakeInstanceDir makes dir, this process's instance directory, and its
// lock file again after something removed them (a cleaner of the temp
// directory), and reports whether it had to. release is the lock's current
// release; the new one is returned in its place when the lock is remade.
func remakeInstanceDir(dir string, release func()) (remade bool, _ func(), _ error) {
	if _, err := os.Stat(dir); err == nil {
		return false, release, nil
	}
	instanceRootMu.Lock()
	defer instanceRootMu.Unlock()
	// 0o700, as os.MkdirTemp made it: the instances are the server's alone.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, release, fmt.Errorf("app: making the instance directory again: %w", err)
	}
	if _, err := os.Stat(dir + lockSuffix); err == nil {
		return true, release, nil // only the directory went; the lock is held
	}
	newRelease, err := lockInstanceDir(dir)
	if err != nil {
		return true, release, err
	}
	release()
	return true, newRelease, nil
}

// lockInstanceDir creates dir's lock file and takes its lock; release
// removes the file and drops the lock.
func lockInstanceDir(dir string) (release func(), err error) {
	f, err := os.OpenFile(dir+lockSuffix, os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		err = tryLock(f)
		if err != nil {
			f.Close()
			os.Remove(dir + lockSuffix)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("app: locking the instance directory: %w", err)
	}
	return sync.OnceFunc(func() {
		// Only the lock this call took: a remade lock file at the same
		// path belongs to the new lock.
		if fi, err := os.Stat(dir + lockSuffix); err == nil {
			if own, err := f.Stat(); err == nil && os.SameFile(fi, own) {
				os.Remove(dir + lockSuffix)
			}
		}
		f.Close()
	}), nil
}

// cleanStale removes the instance directories under root made by
// processes that are no longer running (a server killed with SIGKILL, or by
// the out-of-memory killer, leaves them behind). A directory is stale when
// its lock can be taken and the process that made it is not running, or is
// this very process (a restarted container's server has the pid of the one
// before). instanceRootMu must be held.
func cleanStale(root string) error {
	ents, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	dirs := map[string]bool{}
	for _, e := range ents {
		if e.IsDir() {
			dirs[e.Name()] = true
		}
	}
	for _, e := range ents {
		name := e.Name()
		base, isLock := strings.CutSuffix(name, lockSuffix)
		pidText, _, ok := strings.Cut(base, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || (isLock && dirs[base]) || (!isLock && !e.IsDir()) {
			continue // not ours, or a lock file handled with its directory
		}
		p := filepath.Join(root, base)
		if !staleInstanceDir(p, pid) {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return err
		}
		if err := os.Remove(p + lockSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// staleInstanceDir reports whether the instance directory p, made by the
// process pid, is left over. Without a lock file (a directory being made by
// another process, or one made before lock files) only the pid decides.
func staleInstanceDir(p string, pid int) bool {
	self := pid == os.Getpid()
	f, err := os.OpenFile(p+lockSuffix, os.O_RDWR, 0)
	if err != nil {
		return !self && !processAlive(pid)
	}
	defer f.Close()
	if err := tryLock(f); err != nil {
		return false // its process holds it
	}
	return self || !processAlive(pid)
}
