//go:build !linux

package sqlitestore

// FreeSpace reports false: outside Linux the store does not ask the file
// system how much space it has.
func FreeSpace(string) (int64, bool) { return 0, false }
