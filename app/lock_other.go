//go:build !unix && !windows

package app

import "os"

// tryLock does not lock where the platform has no file locks: two servers
// must then not share an instance root.
func tryLock(*os.File) error { return nil }

// lockWait does not lock either: servers sharing a checkpoint store on
// this platform do not exclude each other's latest pointer writes.
func lockWait(*os.File) error { return nil }

// processAlive cannot tell on this platform, so it says yes: no other
// process's instance directory is ever taken for stale.
func processAlive(int) bool { return true }
