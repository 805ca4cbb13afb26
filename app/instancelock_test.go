package app_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/examples/worlds/company"
)

// deadPID returns a process id no process has now.
func deadPID(tb testing.TB) int {
	tb.Helper()
	for pid := 4_000_000; pid > 100_000; pid -= 7919 {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return pid
		}
	}
	tb.Skip("found no unused process id")
	return 0
}

// zombiePID returns the pid of a child process that has exited and is not
// yet reaped (a zombie), on Linux; "" elsewhere.
func zombiePID(tb testing.TB) string {
	tb.Helper()
	if runtime.GOOS != "linux" {
		return ""
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cmd.Wait() })
	pid := strconv.Itoa(cmd.Process.Pid)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && strings.Contains(string(b), ") Z ") {
			return pid
		}
	}
	tb.Fatal("the child did not become a zombie")
	return ""
}

func TestNewCleansStaleInstances(t *testing.T) {
	root := t.TempDir()
	self, dead := strconv.Itoa(os.Getpid()), strconv.Itoa(deadPID(t))
	zombie := zombiePID(t)
	live, err := app.New(company.World, app.Config{InstanceRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	liveName := filepath.Base(live.InstanceDir())

	for _, tt := range []struct {
		name  string // a directory under root, or a lone lock file
		dir   bool
		lock  bool // an unlocked lock file beside the directory
		stale bool
	}{
		{dead + "-crashed", true, true, true},                          // killed: its lock is free
		{dead + "-old", true, false, true},                             // from before lock files, its process gone
		{self + "-restarted", true, true, true},                        // a container restart: same pid, lock free
		{self + "-creating", true, false, false},                       // this process is making it
		{"1-otherprocess", true, true, false},                          // pid 1 runs: a lock file without its lock yet
		{"not-a-pid", true, false, false},                              // not an instance directory
		{dead + "-orphan.lock", false, false, true},                    // a lock file whose directory is gone
		{zombie + "-killed", zombie != "", zombie != "", zombie != ""}, // killed, not yet reaped by its parent
	} {
		if tt.name == "-killed" {
			continue // not Linux
		}
		p := filepath.Join(root, tt.name)
		if tt.dir {
			if err := os.MkdirAll(filepath.Join(p, "seahaven-inst-1"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if tt.lock || !tt.dir {
			lock := p + ".lock"
			if !tt.dir {
				lock = p
			}
			if err := os.WriteFile(lock, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A new backend cleans the root before it makes its own directory.
	cleaner, err := app.New(company.World, app.Config{InstanceRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	defer cleaner.Close()
	stale := []string{dead + "-crashed", dead + "-old", self + "-restarted"}
	if zombie != "" {
		stale = append(stale, zombie+"-killed")
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	for _, keep := range []string{liveName, liveName + ".lock", self + "-creating", "1-otherprocess", "not-a-pid"} {
		if !slices.Contains(left, keep) {
			t.Errorf("%s was removed; left: %v", keep, left)
		}
	}
	for _, gone := range append(stale, dead+"-crashed.lock", self+"-restarted.lock", dead+"-orphan.lock") {
		if slices.Contains(left, gone) {
			t.Errorf("%s was left behind", gone)
		}
	}

	t.Run("CloseRemovesDirAndLock", func(t *testing.T) {
		b, err := app.New(company.World, app.Config{InstanceRoot: root})
		if err != nil {
			t.Fatal(err)
		}
		dir := b.InstanceDir()
		if _, err := os.Stat(dir + ".lock"); err != nil {
			t.Fatalf("no lock file: %v", err)
		}
		if n, err := b.InstanceDirs(); err != nil || n != 0 {
			t.Errorf("a new backend has %d instance directories (%v)", n, err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{dir, dir + ".lock"} {
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s after Close: %v", p, err)
			}
		}
	})
}
