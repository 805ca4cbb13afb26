package app

import (
	"os"

	"github.com/seahaven/seahaven/composition"
)

// OpenConnections returns the SQLite connections held open right now by the
// node stores of the backend's instances (composition.DefaultPool). It
// implements [ConnectionCounter].
func (b *Backend) OpenConnections() int { return composition.DefaultPool.Open() }

// ParkedConnections returns the SQLite connections parked in
// composition.DefaultPool: open, bound to no instance, waiting to be rebound
// to the next store copied from the same frozen file. It implements
// [ParkedCounter].
func (b *Backend) ParkedConnections() int { return composition.DefaultPool.Parked() }

// InstanceDirs counts the instance directories under InstanceDir: one per
// open instance, unless instances were closed without removing their files.
// It implements [InstanceDirCounter].
func (b *Backend) InstanceDirs() (int, error) {
	ents, err := os.ReadDir(b.dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if e.IsDir() {
			n++
		}
	}
	return n, nil
}
