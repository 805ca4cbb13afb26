package sqlitestore

import "syscall"

// spaceFloor is the free space below which a failed write is taken to be
// the file system running out: less than two of SQLite's largest pages.
const spaceFloor = 128 << 10

// noSpaceLeft reports whether the file system holding dir has less than
// spaceFloor bytes available to this process.
func noSpaceLeft(dir string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Bavail*uint64(st.Bsize) < spaceFloor
}
