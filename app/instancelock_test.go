package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
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
	"github.com/seahaven/seahaven/internal/testfs"
	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/task"
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

	t.Run("RemadeAsMade", func(t *testing.T) {
		// A cleaner removed the directory: Ready makes it again as
		// os.MkdirTemp made it (the server's alone), saying so in a line
		// labelled as the instance directory's, not as a tool call's.
		var logs bytes.Buffer
		b, err := app.New(company.World, app.Config{InstanceRoot: root, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		dir := b.InstanceDir()
		if err := os.Remove(dir); err != nil {
			t.Fatal(err)
		}
		if err := b.Ready(); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("remade directory: %v (%v), want drwx------", fi.Mode(), err)
		}
		if !strings.Contains(logs.String(), `"component":"instances"`) {
			t.Errorf("logs = %s, want the remake labelled component=instances", logs.String())
		}
	})

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

// TestNewRefusesAStaleDefaultFixture: a default fixture frozen for another
// schema (a world changed without go generate) or whose files do not match
// their hashes stops the server at startup, naming the problem, rather than
// failing every reset of a server that reports ready.
func TestNewRefusesAStaleDefaultFixture(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(t *testing.T, dir string)
		want string
	}{
		{"SchemaDrifted", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "acme", "fixture.yaml")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b = []byte(strings.Replace(string(b), "schema_hash: 7b208652", "schema_hash: 0b208652", 1))
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, `app: default fixture: fixture "acme" does not match company's composition: schema drifted: node main`},
		{"FileChanged", func(t *testing.T, dir string) {
			f, err := os.OpenFile(filepath.Join(dir, "acme", "state.chat.sqlite"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte{0})
			f.Close()
		}, `app: default fixture: `},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS("../examples/worlds/company/fixtures")); err != nil {
				t.Fatal(err)
			}
			if b, err := app.New(company.World, app.Config{InstanceRoot: t.TempDir(), FixturesDir: dir}); err != nil {
				t.Fatalf("the fixtures as built: %v", err)
			} else {
				b.Close()
			}
			tt.edit(t, dir)
			b, err := app.New(company.World, app.Config{InstanceRoot: t.TempDir(), FixturesDir: dir})
			if err == nil {
				b.Close()
				t.Fatalf("New took a default fixture that no reset could open")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to begin %q", err, tt.want)
			}
		})
	}
}

// TestNewNamesAMissingDefaultFixture: a default fixture the fixtures do not
// hold stops the server naming them as the operator knows them (the
// directory given, or the world's embedded fixtures) and the ids they hold,
// where it named the copy on disk embedded fixtures are read from, a
// directory the operator never made, and no id.
func TestNewNamesAMissingDefaultFixture(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../examples/worlds/company/fixtures")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		fixtures, want string
	}{
		{"", `app: default fixture: "nope" is not in the fixtures embedded in world company (fixtures: acme)`},
		{dir, `app: default fixture: "nope" is not in ` + dir + ` (fixtures: acme)`},
	} {
		b, err := app.New(company.World, app.Config{InstanceRoot: t.TempDir(), FixturesDir: tt.fixtures, DefaultFixture: "nope"})
		if err == nil {
			b.Close()
			t.Fatalf("New took a default fixture that does not exist")
		}
		if err.Error() != tt.want {
			t.Errorf("err = %v\nwant %s", err, tt.want)
		}
	}
}

// TestCloseLeavesOpenInstances: Close with an instance still open (a
// session a server's Shutdown left closing in the background when its
// deadline passed) removes nothing and says so; the instance then closes
// as usual, its recording ending with its final state's hash, and, the
// last one open, removes the directory. Close removed the directory from
// under it: its final state could not be read, and its recording had no
// end line.
func TestCloseLeavesOpenInstances(t *testing.T) {
	var logs testfs.Buffer
	recordings := t.TempDir()
	b, err := app.New(company.World, app.Config{InstanceRoot: t.TempDir(), Checkpoints: t.TempDir(), RecordDir: recordings, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	inst, err := b.Open(ctx, openenv.OpenOptions{Fixture: company.AcmeID, EpisodeID: "closing"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inst.CallJSON(ctx, "hire", json.RawMessage(`{"name":"Ada"}`)); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := os.Stat(b.InstanceDir()); err != nil {
		t.Errorf("Close with an instance open: %v, want its directory left", err)
	}
	if !strings.Contains(logs.String(), `"msg":"app: instances still closing`) || !strings.Contains(logs.String(), `"instances":1`) {
		t.Errorf("Close logged %s, want a line saying one instance is still closing", logs.String())
	}
	if err := inst.Close(); err != nil {
		t.Errorf("closing the instance after the backend: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(recordings, "closing.*.jsonl"))
	if err != nil || len(files) != 1 {
		t.Fatalf("recordings %q (%v), want one", files, err)
	}
	tr, err := task.ReadTrajectoryFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if tr.End == nil || len(tr.End.StateSHA256) == 0 {
		t.Errorf("the recording's end line: %+v, want one with the final state's hash", tr.End)
	}
	for _, p := range []string{b.InstanceDir(), b.InstanceDir() + ".lock"} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after the last instance closed: %v, want it removed", p, err)
		}
	}
}

// TestFixturesListsTheWorldsOwn: the fixtures a server lists are its
// world's own, where a fixtures directory another world's fixtures share
// had them listed too, though no reset of this world can open them.
func TestFixturesListsTheWorldsOwn(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../examples/worlds/company/fixtures")); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "other"), os.DirFS("../examples/worlds/company/fixtures/acme")); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "other", "fixture.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(strings.Replace(string(b), "id: acme", "id: other", 1), "world: company", "world: payments", 1))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	be, err := app.New(company.World, app.Config{InstanceRoot: t.TempDir(), FixturesDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	var ids []string
	for _, f := range be.Info().Fixtures {
		ids = append(ids, f.ID)
	}
	if !slices.Equal(ids, []string{"acme"}) {
		t.Errorf("fixtures %v, want only company's acme", ids)
	}
}
