//go:build !linux

package sqlitestore

// noSpaceLeft reports false: outside Linux the store does not ask the file
// system why a write failed.
func noSpaceLeft(string) bool { return false }

// FreeSpace reports false: outside Linux the store does not ask the file
// system how much space it has.
func FreeSpace(string) (int64, bool) { return 0, false }
