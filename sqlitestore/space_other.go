//go:build !linux

package sqlitestore

// noSpaceLeft reports false: outside Linux the store does not ask the file
// system why a write failed.
func noSpaceLeft(string) bool { return false }
