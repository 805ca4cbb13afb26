package sqlitestore

import "syscall"

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
