//go:build unix

package testfs

import (
	"os"
	"syscall"
	"testing"
)

// ExhaustFiles lowers the process's limit of open files to limit and opens
// the null device until only spare descriptors are left; restore closes
// them and puts the limit back, and fails tb when it cannot. The limit is
// the whole process's: a test that calls it must not run in parallel.
func ExhaustFiles(tb testing.TB, limit uint64, spare int) (restore func()) {
	tb.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatal(err)
	}
	low := lim
	low.Cur = limit
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		tb.Fatal(err)
	}
	var fillers []*os.File
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		fillers = append(fillers, f)
	}
	for range min(spare, len(fillers)) {
		fillers[len(fillers)-1].Close()
		fillers = fillers[:len(fillers)-1]
	}
	return func() {
		tb.Helper()
		for _, f := range fillers {
			f.Close()
		}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			tb.Fatal(err)
		}
	}
}
