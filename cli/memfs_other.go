//go:build !linux

package cli

import "errors"

// onMemoryFS cannot tell a memory file system outside Linux: --storage
// memory needs /dev/shm, or --instances on a tmpfs, which only Linux has.
func onMemoryFS(string) (bool, error) {
	return false, errors.New("memory storage needs Linux's tmpfs")
}
