package sqlitestore

import "syscall"

// spaceFloor is the free space below which a failed write is taken to be
// the file system running out: less than two of SQLite's largest pages.
const spaceFloor = 128 << 10

// noSpaceLeft reports whether the file system holding dir has less than
// spaceFloor bytes available to this process.
func noSpaceLeft(dir string) bool {
	free, ok := FreeSpace(dir)
	return ok && free < spaceFloor
}

// FreeSpace returns the bytes available to this process on the file system
// holding dir, and whether it could tell (false when dir cannot be
// examined, and outside Linux).
func FreeSpace(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
