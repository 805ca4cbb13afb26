package cli

import "syscall"

// Magic numbers of memory file systems (statfs f_type).
const (
	tmpfsMagic = 0x01021994
	ramfsMagic = 0x858458f6
)

// onMemoryFS reports whether dir is on a memory file system.
func onMemoryFS(dir string) (bool, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false, err
	}
	return st.Type == tmpfsMagic || st.Type == ramfsMagic, nil
}
