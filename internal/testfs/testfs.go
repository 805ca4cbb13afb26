// Package testfs holds helpers shared by the tests of several packages:
// file systems, a buffer that is written and read at once, and a bound on
// calls that could hang. It is imported by tests only.
package testfs

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// MountTmpfs mounts a tmpfs of the given size (mount's notation: "512k") on
// a new directory and unmounts it at cleanup, after everything registered
// later. It needs root: without it the test is skipped, unless CI is set,
// where it fails.
func MountTmpfs(tb testing.TB, size string) string {
	tb.Helper()
	dir := tb.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0755", "tmpfs", dir).CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("mounting a %s tmpfs on %s failed (%v: %s): this test fills a small file system and needs root",
			size, dir, err, strings.TrimSpace(string(out)))
		if os.Getenv("CI") != "" {
			tb.Fatal(msg + "; CI must run it")
		}
		tb.Skip(msg + "; skipped because CI is not set")
	}
	tb.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			tb.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// Within runs fn in a goroutine and fails the test if it has not returned
// after a minute: the failure a hang would otherwise be. The bound is for
// the failure path, never a measure of speed.
func Within(tb testing.TB, what string, fn func()) {
	tb.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		tb.Fatalf("%s did not return within a minute", what)
	}
}
