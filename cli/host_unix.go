//go:build unix

package cli

import "syscall"

// raiseOpenFileLimit raises the open-file soft limit to the hard limit
// where it can, and returns the two.
func raiseOpenFileLimit() (soft, hard uint64, err error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0, err
	}
	if r.Cur < r.Max {
		raised := r
		raised.Cur = r.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			r = raised
		}
	}
	return uint64(r.Cur), uint64(r.Max), nil
}
