package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Storage modes of serve's instance files (--storage).
const (
	// storageDisk keeps instance directories under the OS temp dir (or
	// --instances), on whatever file system that is.
	storageDisk = "disk"
	// storageMemory keeps them on a memory file system (tmpfs): SQLite
	// still reads and writes ordinary files, but making, writing and
	// removing them costs no disk I/O. Freeze still writes fixtures to the
	// fixtures directory, on disk.
	storageMemory = "memory"
)

// memoryFSDir is where Linux mounts a tmpfs for everyone.
const memoryFSDir = "/dev/shm"

// instanceRoot returns the instance root for a storage mode: instances as
// given, or the mode's default ("" lets the backend choose its default on
// disk). Memory storage needs a memory file system: --instances on one, or
// /dev/shm.
func instanceRoot(storage, instances string) (string, error) {
	switch storage {
	case storageDisk:
		return instances, nil
	case storageMemory:
	default:
		return "", fmt.Errorf("--storage %q: want %s or %s", storage, storageDisk, storageMemory)
	}
	dir := instances
	if dir == "" {
		dir = memoryFSDir
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("--instances: %w", err)
	}
	mem, err := onMemoryFS(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && instances == "" {
			return "", fmt.Errorf("--storage memory: %s does not exist here; pass --instances a directory on a tmpfs mount", memoryFSDir)
		}
		return "", fmt.Errorf("--storage memory: %w", err)
	}
	if !mem {
		return "", fmt.Errorf("--storage memory: %s is not on a memory file system (tmpfs); mount one (mount -t tmpfs -o size=4g tmpfs DIR, or an emptyDir with medium Memory) and pass it as --instances", dir)
	}
	if instances == "" {
		return filepath.Join(dir, "seahaven-instances"), nil
	}
	return instances, nil
}
