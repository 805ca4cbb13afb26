package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/examples/worlds/payments"
	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/task"
)

// checkpointed opens a company instance on a backend over dir, makes a
// call, and checkpoints it.
func checkpointed(tb testing.TB, b *Backend) openenv.CheckpointInfo {
	tb.Helper()
	return checkpointedEpisode(tb, b, "ep")
}

// checkpointedEpisode is checkpointed for an episode of the given id.
func checkpointedEpisode(tb testing.TB, b *Backend, episode string) openenv.CheckpointInfo {
	tb.Helper()
	ctx := context.Background()
	inst, err := b.Open(ctx, openenv.OpenOptions{Fixture: company.AcmeID, EpisodeID: episode})
	if err != nil {
		tb.Fatal(err)
	}
	defer inst.Close()
	if _, err := inst.CallJSON(ctx, "hire", json.RawMessage(`{"name":"Ada"}`)); err != nil {
		tb.Fatal(err)
	}
	info, err := inst.(openenv.Checkpointer).Checkpoint(ctx, openenv.CheckpointRequest{Revision: 1, Attempt: "a", Session: json.RawMessage(`{}`)})
	if err != nil {
		tb.Fatal(err)
	}
	return info
}

func newTestBackend(tb testing.TB, cfg Config) *Backend {
	tb.Helper()
	cfg.InstanceRoot = tb.TempDir()
	if cfg.Checkpoints == "" {
		cfg.Checkpoints = tb.TempDir() // not the shared default under the temp dir
	}
	b, err := New(company.World, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Close() })
	return b
}

// restoreErr restores id and returns the error's message.
func restoreErr(tb testing.TB, b *Backend, id string) string {
	tb.Helper()
	inst, _, err := b.Restore(context.Background(), id)
	if err == nil {
		inst.Close()
		return ""
	}
	var oe *openenv.OptionError
	if !errors.As(err, &oe) || oe.Option != "checkpoint" {
		tb.Fatalf("restore of %s: %v (%T), want an *openenv.OptionError on checkpoint", id, err, err)
	}
	return err.Error()
}

// TestCheckpoints_Refused: a checkpoint whose files were changed, cut or
// lost is refused with an error saying so, naming no server path, and so
// is an id naming none:
// by another server sharing the directory, and by the one that wrote and
// restored it, which keeps it in memory for forks only while its files are
// unchanged on disk.
func TestCheckpoints_Refused(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, Config{Checkpoints: dir})
	for _, c := range []struct {
		name    string
		corrupt func(dir string)
		want    string
	}{
		{"store file changed", func(d string) { flipByte(t, filepath.Join(d, "state.payments.sqlite"), 5000) }, "hash mismatch"},
		{"state cut short", func(d string) { os.Truncate(filepath.Join(d, stateName), 10) }, "is corrupt: state.json has sha256"},
		{"episode changed", func(d string) { os.WriteFile(filepath.Join(d, episodeName), []byte(`{}`), 0o600) }, "is corrupt: episode.json has sha256"},
		{"sidecar gone", func(d string) { os.Remove(filepath.Join(d, "fixture.yaml")) }, "is incomplete: fixture.yaml cannot be read"},
		{"store file gone", func(d string) { os.Remove(filepath.Join(d, "state.sqlite")) }, "is incomplete: composition: checkpoint \"" /* its id */},
		{"store file a directory", func(d string) {
			p := filepath.Join(d, "state.payments.sqlite")
			os.Remove(p)
			os.Mkdir(p, 0o700)
		}, "node payments: file state.payments.sqlite"},
		{"manifest gone", func(d string) { os.Remove(filepath.Join(d, manifestName)) }, "is incomplete: it has no manifest"},
		{"manifest garbled", func(d string) { os.WriteFile(filepath.Join(d, manifestName), []byte(`{"format":`), 0o600) }, "is corrupt: its manifest does not parse"},
		{"manifest of another format", func(d string) { os.WriteFile(filepath.Join(d, manifestName), []byte(`{"format":2}`), 0o600) }, "is of format 2; this server reads checkpoints of format 1 (a newer server wrote it: restore it on a server of that version or later"},
		{"manifest of another checkpoint", func(d string) {
			p := filepath.Join(d, manifestName)
			b, _ := os.ReadFile(p)
			var m map[string]any
			json.Unmarshal(b, &m)
			id := m["checkpoint_id"].(string)
			m["checkpoint_id"] = strings.Repeat("0", len(id))
			if id == m["checkpoint_id"] {
				m["checkpoint_id"] = strings.Repeat("1", len(id))
			}
			b, _ = json.Marshal(m)
			os.WriteFile(p, b, 0o600)
		}, "is corrupt: its manifest names another checkpoint"},
		{"store file a link", func(d string) {
			p := filepath.Join(d, "state.sqlite")
			os.Remove(p)
			os.Symlink("/etc/passwd", p)
		}, "hash mismatch"},
		{"directory gone", func(d string) { os.RemoveAll(d) }, "does not exist in this server's checkpoint store"},
		{"expiry edited", expireCheckpoint, "expired at 2000-01-01T00:00:00.000Z"},
	} {
		t.Run(c.name, func(t *testing.T) {
			info := checkpointed(t, b)
			if msg := restoreErr(t, b, info.ID); msg != "" {
				t.Fatalf("the whole checkpoint was refused: %s", msg)
			}
			c.corrupt(filepath.Join(dir, info.ID))
			for _, server := range []struct {
				name string
				b    *Backend
			}{{"another server", newTestBackend(t, Config{Checkpoints: dir})}, {"the server that wrote it", b}} {
				msg := restoreErr(t, server.b, info.ID)
				if !strings.Contains(msg, c.want) || !strings.HasSuffix(msg, "nothing was restored") {
					t.Errorf("%s: got %q, want it to contain %q and end in %q", server.name, msg, c.want, "nothing was restored")
				}
				if strings.Contains(msg, dir) {
					t.Errorf("%s: %q names the server's checkpoint directory", server.name, msg)
				}
			}
		})
	}
	for id, want := range map[string]string{
		"../../etc":                            "is not a checkpoint id",
		"6F9619FF-8B86-D011-B42D-00C04FC964FF": "is not a checkpoint id",
		"6f9619ff-8b86-d011-b42d-00c04fc964ff": "does not exist in this server's checkpoint store",
	} {
		if msg := restoreErr(t, b, id); !strings.Contains(msg, want) {
			t.Errorf("restore of %q: got %q, want %q", id, msg, want)
		}
	}
}

func flipByte(tb testing.TB, path string, off int64) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		tb.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		tb.Fatal(err)
	}
}

// crashDirEnv makes TestCheckpoints_Killed's helper process the one that
// writes a checkpoint and is killed.
const crashDirEnv = "SEAHAVEN_CHECKPOINT_CRASH_DIR"

// TestCheckpoints_Killed kills (SIGKILL) a process while it writes a
// checkpoint, after each of the files it writes, and checks that what it
// left is never restorable, and that retention removes it.
func TestCheckpoints_Killed(t *testing.T) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		b := newTestBackend(t, Config{Checkpoints: dir})
		in := bufio.NewReader(os.Stdin)
		testHookWrote = func(name string) {
			fmt.Printf("wrote %s\n", name)
			in.ReadByte()
		}
		checkpointed(t, b)
		return
	}
	files := []string{"fixture.yaml", stateName, episodeName, manifestName}
	for k, last := range files {
		t.Run("after "+last, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestCheckpoints_Killed$")
			// The helper's own temporary directories go under this
			// test's: killed, it removes none of them.
			cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, "TMPDIR="+t.TempDir())
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(stdout)
			for n := 0; n <= k; n++ {
				if !sc.Scan() {
					t.Fatalf("the helper stopped before writing %s", last)
				}
				if want := "wrote " + files[n]; sc.Text() != want {
					t.Fatalf("the helper said %q, want %q", sc.Text(), want)
				}
				if n < k {
					stdin.Write([]byte{1})
				}
			}
			cmd.Process.Kill()
			cmd.Wait()
			entries, _ := os.ReadDir(dir)
			var id string
			for _, e := range entries {
				if rest, ok := strings.CutPrefix(e.Name(), tmpPrefix); ok {
					id = rest[:36]
				} else if !slices.Contains(subDirs, e.Name()) {
					t.Errorf("the killed checkpoint left %s", e.Name())
				}
			}
			if id == "" {
				t.Fatal("the killed checkpoint left no temporary directory")
			}
			b := newTestBackend(t, Config{Checkpoints: dir})
			if msg := restoreErr(t, b, id); !strings.Contains(msg, "does not exist") {
				t.Fatalf("restore of the killed checkpoint: %q", msg)
			}
			b.checkpoints.sweep(time.Now().Add(2 * time.Minute))
			if entries, _ := os.ReadDir(dir); len(entries) != len(subDirs) {
				t.Errorf("retention left %d entries, want only %v", len(entries), subDirs)
			}
		})
	}
}

// TestCheckpoints_Retention: checkpoints past the TTL go, then the oldest
// while the directory is over its budget; those kept still restore.
func TestCheckpoints_Retention(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, Config{Checkpoints: dir, CheckpointTTL: time.Hour, CheckpointMaxBytes: 1 << 40})
	var ids []string
	for range 4 {
		ids = append(ids, checkpointed(t, b).ID)
	}
	b.checkpoints.sweep(time.Now()) // the sweep their writes started spares them
	now := time.Now()
	old := now.Add(-2 * time.Hour)
	os.Chtimes(filepath.Join(dir, ids[0]), old, old)
	for k, id := range ids[1:] {
		at := now.Add(time.Duration(k-3) * time.Minute)
		os.Chtimes(filepath.Join(dir, id), at, at)
	}
	b.checkpoints.sweep(now)
	if msg := restoreErr(t, b, ids[0]); !strings.Contains(msg, "does not exist") {
		t.Fatalf("the expired checkpoint: %q", msg)
	}
	size := dirSize(filepath.Join(dir, ids[3]))
	b.checkpoints.sweepMu.Lock() // not while retention runs on its own
	b.checkpoints.maxBytes = (2*size + size/2) * 10 / 9
	b.checkpoints.sweepMu.Unlock()
	b.checkpoints.sweep(now)
	if msg := restoreErr(t, b, ids[1]); !strings.Contains(msg, "does not exist") {
		t.Fatalf("the oldest checkpoint over the budget: %q", msg)
	}
	for _, id := range ids[2:] {
		if msg := restoreErr(t, b, id); msg != "" {
			t.Fatalf("a checkpoint within the budget: %q", msg)
		}
	}
}

// TestCheckpoints_SweepWhileWriting: retention that takes a checkpoint
// being written for one a killed writer left (a slow write, a clock ahead
// of the shared volume's) makes that checkpoint fail; it never removes
// the files of one whose writing succeeded, so every checkpoint a reply
// names restores.
func TestCheckpoints_SweepWhileWriting(t *testing.T) {
	ctx := context.Background()
	b := newTestBackend(t, Config{Checkpoints: t.TempDir(), CheckpointMaxBytes: 1 << 40})
	inst, err := b.Open(ctx, openenv.OpenOptions{Fixture: company.AcmeID, EpisodeID: "ep"})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			// Two minutes on: every checkpoint being written looks left
			// behind by a killed writer.
			b.checkpoints.sweep(time.Now().Add(2 * time.Minute))
		}
	}()
	written, failed := 0, 0
	for range 200 {
		info, err := inst.(openenv.Checkpointer).Checkpoint(ctx, openenv.CheckpointRequest{Revision: 1, Session: json.RawMessage(`{}`)})
		if err != nil {
			failed++
			continue
		}
		written++
		b.checkpoints.forget(info.ID) // read it from the directory
		if _, err := b.checkpoints.read(info.ID); err != nil {
			t.Errorf("checkpoint %s was written, and then: %v", info.ID, err)
		}
	}
	close(stop)
	<-done
	t.Logf("%d checkpoints written, %d failed as retention removed them", written, failed)
}

// TestCheckpoints_RetentionKeepsNewest: over the budget, retention removes
// the older revisions of an episode before the newest checkpoint of any
// other, keeps nine tenths of the budget, and an episode whose checkpoints
// all went has no latest one any more (nor one another server removed).
func TestCheckpoints_RetentionKeepsNewest(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, Config{Checkpoints: dir, CheckpointTTL: time.Hour, CheckpointMaxBytes: 1 << 40})
	now := time.Now()
	at := aged(dir, now)
	a, small := checkpointedEpisode(t, b, "small-a"), checkpointedEpisode(t, b, "small-b")
	at(a.ID, 10*time.Minute)
	at(small.ID, 9*time.Minute)
	var big []string
	for k := range 4 {
		id := checkpointedEpisode(t, b, "big").ID
		at(id, time.Duration(5-k)*time.Minute)
		big = append(big, id)
	}
	b.checkpoints.sweep(now) // the sweep their writes started spares them
	size := func(ids ...string) (n int64) {
		for _, id := range ids {
			n += dirSize(filepath.Join(dir, id))
		}
		return n
	}
	sweep := func(keep int64) {
		b.checkpoints.sweepMu.Lock()
		b.checkpoints.maxBytes = keep * 10 / 9
		b.checkpoints.sweepMu.Unlock()
		b.checkpoints.sweep(now)
	}
	latest := func(episode string) string {
		info, _ := b.Latest(episode)
		return info.ID
	}

	sweep(size(a.ID, small.ID, big[3]) + size(big[0])/2)
	for _, id := range big[:3] {
		if msg := restoreErr(t, b, id); !strings.Contains(msg, "does not exist") {
			t.Errorf("an older revision of a large episode was kept: %q", msg)
		}
	}
	for _, id := range []string{a.ID, small.ID, big[3]} {
		if msg := restoreErr(t, b, id); msg != "" {
			t.Errorf("an episode's newest checkpoint was removed: %q", msg)
		}
	}
	if latest("small-a") != a.ID || latest("big") != big[3] {
		t.Errorf("latest: small-a %q, big %q; want %s and %s", latest("small-a"), latest("big"), a.ID, big[3])
	}

	sweep(size(big[3]) + size(big[3])/2)
	if got := size(a.ID, small.ID, big[3]); got > size(big[3])*3/2 {
		t.Errorf("the store holds %d bytes after the sweep, over its nine tenths", got)
	}
	if id := latest("small-a"); id != "" {
		t.Errorf("latest of an episode whose checkpoints were all removed: %s", id)
	}
	if _, err := os.Stat(b.checkpoints.pointerPath(latestDir, worldKey(company.World.Name(), "small-a"))); !os.IsNotExist(err) {
		t.Errorf("the pointer to a removed checkpoint was kept: %v", err)
	}
	os.RemoveAll(filepath.Join(dir, big[3])) // as another server's retention would
	if id := latest("big"); id != "" {
		t.Errorf("latest names a checkpoint no longer in the store: %s", id)
	}
}

// TestCheckpoints_RetentionRuns: a server that writes no checkpoint still
// runs retention, when it starts and then every minute: it removes what a
// killed writer left and what expired. Close stops it.
func TestCheckpoints_RetentionRuns(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Checkpoints: dir, CheckpointTTL: time.Hour}
	expiring := checkpointed(t, newTestBackend(t, cfg))
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(filepath.Join(dir, expiring.ID), old, old)
	left := filepath.Join(dir, tmpPrefix+expiring.ID+"-1")
	if err := os.Mkdir(left, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(left, old, old)

	cfg.InstanceRoot = t.TempDir()
	b, err := New(company.World, cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, errExpired := os.Stat(filepath.Join(dir, expiring.ID))
		_, errLeft := os.Stat(left)
		if os.IsNotExist(errExpired) && os.IsNotExist(errLeft) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retention did not run when the store opened: the expired checkpoint %v, the leftover %v", errExpired, errLeft)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, ok := b.Latest("ep"); ok {
		t.Error("latest names the expired checkpoint")
	}
	b.Close()
	select {
	case <-b.checkpoints.done:
	default:
		t.Error("retention still runs after Close")
	}
}

// TestCheckpoints_LatestOfWorld: a server's latest checkpoint of an
// episode is one of its own world, which it can restore, though another
// world's episode of the same id checkpointed later in the same store.
func TestCheckpoints_LatestOfWorld(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, Config{Checkpoints: dir})
	own := checkpointedEpisode(t, b, "shared")
	other, err := New(payments.World, Config{Checkpoints: dir, InstanceRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	if info, ok := other.Latest("shared"); ok {
		t.Errorf("a payments server's latest of a company episode: %s", info.ID)
	}
	if info, _ := b.Latest("shared"); info.ID != own.ID {
		t.Errorf("latest: %q, want %s", info.ID, own.ID)
	}
}

// TestCheckpoints_DrainedOfWorld: a session's drain record is its
// world's: a server of another world sharing the store, whose own session
// of that id is unknown or lives again, neither names the checkpoint,
// which it cannot restore, nor forgets it for the servers of its world. A
// record keyed by the session alone, as servers of earlier versions wrote
// them, serves the servers of its checkpoint's world.
func TestCheckpoints_DrainedOfWorld(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, Config{Checkpoints: dir})
	info := checkpointed(t, b)
	other, err := New(payments.World, Config{Checkpoints: dir, InstanceRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	if err := b.Drained("grader-1", info); err != nil {
		t.Fatal(err)
	}
	if got, ok := other.DrainedTo("grader-1"); ok {
		t.Errorf("a payments server's drain record of a company session: %s", got.ID)
	}
	if err := other.Undrained("grader-1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.DrainedTo("grader-1"); got.ID != info.ID {
		t.Errorf("drained to, once a payments server's session of the same id lived again: %q, want %s", got.ID, info.ID)
	}
	if err := b.Undrained("grader-1"); err != nil {
		t.Fatal(err)
	}
	if got, ok := b.DrainedTo("grader-1"); ok {
		t.Errorf("drained to, once the session lived again: %s", got.ID)
	}

	if err := b.checkpoints.setPointer(drainedDir, "legacy", info); err != nil {
		t.Fatal(err)
	}
	if got, ok := other.DrainedTo("legacy"); ok {
		t.Errorf("a payments server's legacy drain record of a company session: %s", got.ID)
	}
	if err := other.Undrained("legacy"); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.DrainedTo("legacy"); got.ID != info.ID {
		t.Errorf("legacy drained to: %q, want %s", got.ID, info.ID)
	}
	if err := b.Undrained("legacy"); err != nil {
		t.Fatal(err)
	}
	if got, ok := b.DrainedTo("legacy"); ok {
		t.Errorf("legacy drained to, once the session lived again: %s", got.ID)
	}
}

// TestCheckpoints_Recorded: a restored episode is recorded in a new
// trajectory whose header names the checkpoint it continues.
func TestCheckpoints_Recorded(t *testing.T) {
	rec := t.TempDir()
	b := newTestBackend(t, Config{Checkpoints: t.TempDir(), RecordDir: rec})
	info := checkpointed(t, b)
	inst, _, err := b.Restore(context.Background(), info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inst.CallJSON(context.Background(), "hire", json.RawMessage(`{"name":"Bo"}`)); err != nil {
		t.Fatal(err)
	}
	if err := inst.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(rec, "*.jsonl"))
	var restored []string
	for _, f := range files {
		tr, err := task.ReadTrajectoryFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Header.Checkpoint != "" {
			restored = append(restored, fmt.Sprintf("%s:%d calls", tr.Header.Checkpoint, len(tr.Calls)))
		}
	}
	if want := []string{info.ID + ":1 calls"}; fmt.Sprint(restored) != fmt.Sprint(want) {
		t.Errorf("recordings of restored episodes: %v, want %v", restored, want)
	}
}

// TestCheckpoints_RecordedChangeLogBound: an episode checkpointed on a
// server with one change-log bound and restored on a server with another
// is recorded with the restoring server's bound, the one its calls after
// the restore ran under, and its replay keeps that bound: here the
// restoring server's smaller bound drops the hire a check needs, and the
// replay's grading fails as the server's did. Restored the other way, the
// grading passes, on the server and in the replay.
func TestCheckpoints_RecordedChangeLogBound(t *testing.T) {
	for _, c := range []struct {
		took, restored int64 // the servers' bounds
		fails          bool
	}{{0, 3000, true}, {3000, 0, false}} {
		t.Run(fmt.Sprintf("%d to %d", c.took, c.restored), func(t *testing.T) {
			ctx := context.Background()
			store, rec := t.TempDir(), t.TempDir()
			a := newTestBackend(t, Config{Checkpoints: store, MaxChangeLogBytes: c.took})
			b := newTestBackend(t, Config{Checkpoints: store, RecordDir: rec, MaxChangeLogBytes: c.restored})
			inst, err := a.Open(ctx, openenv.OpenOptions{Task: "hire_liskov", EpisodeID: "ep"})
			if err != nil {
				t.Fatal(err)
			}
			defer inst.Close()
			if _, err := inst.CallJSON(ctx, "hire", json.RawMessage(`{"name":"Barbara Liskov","role":"engineer"}`)); err != nil {
				t.Fatal(err)
			}
			info, err := inst.(openenv.Checkpointer).Checkpoint(ctx, openenv.CheckpointRequest{Revision: 1, Attempt: fenceAttempt, Session: json.RawMessage(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			restored, _, err := b.Restore(ctx, info.ID)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 14 { // outgrow a 3000-byte change log
				if _, err := restored.CallJSON(ctx, "chat_send_message", json.RawMessage(fmt.Sprintf(`{"channel":"engineering","text":"message %d"}`, i))); err != nil {
					t.Fatal(err)
				}
			}
			_, gerr := restored.(openenv.Grader).Grade(ctx)
			if (gerr != nil) != c.fails {
				t.Fatalf("the restored episode's grading: %v, want it to fail: %v", gerr, c.fails)
			}
			if err := restored.Close(); err != nil {
				t.Fatal(err)
			}
			files, _ := filepath.Glob(filepath.Join(rec, "*.jsonl"))
			if len(files) != 1 {
				t.Fatalf("recordings %v, want the restored episode's", files)
			}
			tr, err := task.ReadTrajectoryFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			if tr.Header.Checkpoint != info.ID || tr.Header.MaxChangeLogBytes != c.restored {
				t.Errorf("header: checkpoint %q, max_changelog_bytes %d; want %s, the restoring server's %d", tr.Header.Checkpoint, tr.Header.MaxChangeLogBytes, info.ID, c.restored)
			}
			cp, saved, err := ReadCheckpoint(store, info.ID)
			if err != nil {
				t.Fatal(err)
			}
			tasks, _ := task.ForWorld(company.World)
			rep, err := task.ReplayResumed(ctx, company.World, tasks, tr, cp, saved, composition.Options{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Mismatches) != 0 || (rep.GradeError != "") != c.fails || rep.Calls != 14 {
				t.Errorf("replay: %d calls, mismatches %q, grade error %q; want 14 calls as recorded, failing to grade: %v", rep.Calls, rep.Mismatches, rep.GradeError, c.fails)
			}
		})
	}
}

// TestCheckpoints_CacheBudget: the checkpoints kept in memory for more
// restores stay within maxLoaded and maxLoadedBytes, oldest out first; one
// larger than the byte budget is not kept.
func TestCheckpoints_CacheBudget(t *testing.T) {
	c := &checkpoints{loaded: map[string]*loadedCheckpoint{}}
	third := int64(maxLoadedBytes / 3)
	for _, id := range []string{"a", "b", "c", "d"} {
		c.keep(id, &loadedCheckpoint{size: third + 1})
	}
	if got := strings.Join(c.order, ","); got != "c,d" || c.loadedBytes != 2*(third+1) || len(c.loaded) != 2 {
		t.Errorf("kept %s (%d bytes, %d entries), want c,d (%d bytes)", got, c.loadedBytes, len(c.loaded), 2*(third+1))
	}
	c.keep("huge", &loadedCheckpoint{size: maxLoadedBytes + 1})
	c.keep("d", &loadedCheckpoint{size: 1}) // kept again: replaced, now newest
	if got := strings.Join(c.order, ","); got != "c,d" || c.loadedBytes != third+2 {
		t.Errorf("kept %s (%d bytes), want c,d (%d bytes)", got, c.loadedBytes, third+2)
	}
	for i := range 2 * maxLoaded {
		c.keep(fmt.Sprint(i), &loadedCheckpoint{size: 1})
	}
	if len(c.order) != maxLoaded || len(c.loaded) != maxLoaded || c.loadedBytes != maxLoaded {
		t.Errorf("%d ids, %d entries, %d bytes kept, want %d of each", len(c.order), len(c.loaded), c.loadedBytes, maxLoaded)
	}
	c.forget(fmt.Sprint(2*maxLoaded - 1))
	if len(c.order) != maxLoaded-1 || c.loadedBytes != maxLoaded-1 {
		t.Errorf("after forget: %d ids, %d bytes", len(c.order), c.loadedBytes)
	}
}

// TestCheckpoints_NotFound: a checkpoint that is not in the store is
// refused with the store's own retention, and ReadCheckpoint's error wraps
// fs.ErrNotExist.
func TestCheckpoints_NotFound(t *testing.T) {
	const id = "6f9619ff-8b86-d011-b42d-00c04fc964ff"
	for _, c := range []struct {
		ttl  time.Duration
		want string
	}{
		{0, "(checkpoints are kept 24h0m0s, fewer when the store is over its size budget)"},
		{time.Hour, "(checkpoints are kept 1h0m0s, fewer when the store is over its size budget)"},
		{-1, "(checkpoints are kept until the store is over its size budget)"},
	} {
		b := newTestBackend(t, Config{Checkpoints: t.TempDir(), CheckpointTTL: c.ttl})
		if msg := restoreErr(t, b, id); !strings.Contains(msg, "does not exist in this server's checkpoint store "+c.want) {
			t.Errorf("ttl %v: got %q, want it to contain %q", c.ttl, msg, c.want)
		}
	}
	dir := t.TempDir()
	if _, _, err := ReadCheckpoint(dir, id); !errors.Is(err, fs.ErrNotExist) || err.Error() != "app: checkpoint "+id+" is not in "+dir+": file does not exist" {
		t.Errorf("ReadCheckpoint: %v, want fs.ErrNotExist naming the checkpoint and the directory", err)
	}
}

// expireCheckpoint edits the manifest of the checkpoint in directory d to
// have expired in 2000.
func expireCheckpoint(d string) {
	p := filepath.Join(d, manifestName)
	b, _ := os.ReadFile(p)
	var m map[string]any
	json.Unmarshal(b, &m)
	m["expires_at"] = "2000-01-01T00:00:00.000Z"
	b, _ = json.Marshal(m)
	os.WriteFile(p, b, 0o600)
}

// TestCheckpoints_ReadExpired: ReadCheckpoint, which seahaven grade reads
// the checkpoint a restored episode continues with, reads one past its
// expiry that is still there, which a server refuses to restore; where
// before a recording could not be graded once its checkpoint expired
// (after a day, by default), though its files were kept.
func TestCheckpoints_ReadExpired(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, Config{Checkpoints: dir})
	info := checkpointed(t, b)
	expireCheckpoint(filepath.Join(dir, info.ID))
	if msg := restoreErr(t, b, info.ID); !strings.Contains(msg, "expired at 2000-01-01T00:00:00.000Z") {
		t.Errorf("restore of an expired checkpoint: %q, want it refused as expired", msg)
	}
	if cp, _, err := ReadCheckpoint(dir, info.ID); err != nil || cp == nil {
		t.Errorf("ReadCheckpoint of an expired checkpoint: %v", err)
	}
}

// TestCheckpoints_RetentionRemovalFails: a checkpoint retention cannot
// remove (here its name aside is taken by a directory that is not empty,
// so the rename fails) still counts against the size budget, so the sweep
// removes the next oldest instead of stopping as if it had freed it.
func TestCheckpoints_RetentionRemovalFails(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, Config{Checkpoints: dir, CheckpointTTL: time.Hour, CheckpointMaxBytes: 1 << 40})
	now := time.Now()
	var ids []string
	for k := range 3 {
		id := checkpointedEpisode(t, b, "e").ID
		os.Chtimes(filepath.Join(dir, id), now.Add(-time.Duration(10-k)*time.Minute), now.Add(-time.Duration(10-k)*time.Minute))
		ids = append(ids, id)
	}
	b.checkpoints.sweep(now) // the sweep their writes started spares them
	blocked := filepath.Join(dir, trashPrefix+ids[0])
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	size := dirSize(filepath.Join(dir, ids[2]))
	b.checkpoints.sweepMu.Lock()
	b.checkpoints.maxBytes = (dirSize(filepath.Join(dir, ids[0])) + size + size/2) * 10 / 9
	b.checkpoints.sweepMu.Unlock()
	b.checkpoints.sweep(now)
	for i, want := range []bool{true, false, true} {
		_, err := os.Stat(filepath.Join(dir, ids[i]))
		if got := err == nil; got != want {
			t.Errorf("checkpoint %d (oldest first) kept: %v, want %v", i, got, want)
		}
	}
}

// TestCheckpoints_RetentionKeepsFences: retention keeps a fence past the
// TTL while the store holds a checkpoint of its attempt's episode (a
// restore of one could otherwise replace the attempt again), and the
// record of which episode the attempt was at with it; once the episode's
// checkpoints are gone, so are both.
func TestCheckpoints_RetentionKeepsFences(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, Config{Checkpoints: dir, CheckpointTTL: time.Hour, CheckpointMaxBytes: 1 << 40})
	ctx := context.Background()
	inst, err := b.Open(ctx, openenv.OpenOptions{Fixture: company.AcmeID, EpisodeID: "ep"})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	const attempt = "0c6f3b62-8d4e-4e0a-9a51-7c1f2b3d4e5f"
	info, err := inst.(openenv.Checkpointer).Checkpoint(ctx, openenv.CheckpointRequest{Revision: 0, Attempt: attempt, Session: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Fence(attempt, "ep", info.ID, "checkpoint x"); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	old := now.Add(-2 * time.Hour)
	record := b.checkpoints.pointerPath(attemptsDir, attempt)
	for _, p := range []string{filepath.Join(dir, fencesDir, attempt), record} {
		os.Chtimes(p, old, old)
	}
	b.checkpoints.sweep(now)
	if by, ok, err := b.FencedBy(attempt); !ok || err != nil || by != "checkpoint x" {
		t.Fatalf("a fence past the TTL, its episode's checkpoint kept: %q %v %v", by, ok, err)
	}
	if _, err := os.Stat(record); err != nil {
		t.Errorf("the fenced attempt's record went: %v", err)
	}
	if err := b.Fence(attempt, "ep", info.ID, "checkpoint y"); err == nil || !strings.Contains(err.Error(), "was already superseded by checkpoint x") {
		t.Errorf("a second fence of the attempt: %v", err)
	}

	os.Chtimes(filepath.Join(dir, info.ID), old, old)
	b.checkpoints.sweep(now)
	if _, ok, err := b.FencedBy(attempt); ok || err != nil {
		t.Errorf("the fence of an episode with no checkpoint left, past the TTL: kept (%v)", err)
	}
	if _, err := os.Stat(record); !os.IsNotExist(err) {
		t.Errorf("the fenced attempt's record was kept: %v", err)
	}
}

// TestCheckpoints_RetentionSparesFresh: the sweep a checkpoint's write
// starts does not remove it, though the checkpoint alone is over the
// budget, so the id its reply names restores; the next sweep may. The
// checkpoint a drain named for a session's next request stays within any
// budget until the session comes back.
func TestCheckpoints_RetentionSparesFresh(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, Config{Checkpoints: dir, CheckpointMaxBytes: 1 << 40})
	b.checkpoints.close() // only the sweeps below run
	now := time.Now()
	info := checkpointed(t, b)
	b.checkpoints.maxBytes = 1000 // smaller than any checkpoint
	b.checkpoints.sweep(now)
	if msg := restoreErr(t, b, info.ID); msg != "" {
		t.Fatalf("the checkpoint that started the sweep: %q", msg)
	}
	next := checkpointed(t, b)
	b.checkpoints.sweep(now)
	if msg := restoreErr(t, b, info.ID); !strings.Contains(msg, "does not exist") {
		t.Errorf("the checkpoint of the sweep before, over the budget: %q", msg)
	}
	if msg := restoreErr(t, b, next.ID); msg != "" {
		t.Errorf("the checkpoint that started the second sweep: %q", msg)
	}

	if err := b.Drained("session-1", next); err != nil {
		t.Fatal(err)
	}
	checkpointed(t, b)
	b.checkpoints.sweep(now)
	b.checkpoints.sweep(now)
	if msg := restoreErr(t, b, next.ID); msg != "" {
		t.Errorf("the checkpoint a drain named: %q", msg)
	}
	if err := b.Undrained("session-1"); err != nil {
		t.Fatal(err)
	}
	b.checkpoints.sweep(now)
	if msg := restoreErr(t, b, next.ID); !strings.Contains(msg, "does not exist") {
		t.Errorf("the checkpoint a drain named, once its session came back: %q", msg)
	}
}

// TestCheckpoints_LatestAfterAFence: the episode's newest checkpoint stays
// the one a restore fencing an attempt continues, though the attempt's
// server finishes a checkpoint it began before the fence (a replica's
// --checkpoint-every checkpoint, racing the restore on another): where
// before that checkpoint became the episode's newest, its steps ones the
// restore undid.
func TestCheckpoints_LatestAfterAFence(t *testing.T) {
	b := newTestBackend(t, Config{Checkpoints: t.TempDir()})
	checkpoint := fenceableAttempt(t, b)
	restored := checkpoint(1)
	checkpoint(2)
	if err := b.Fence(fenceAttempt, "ep", restored.ID, "checkpoint "+restored.ID); err != nil {
		t.Fatal(err)
	}
	if info, ok := b.Latest("ep"); !ok || info.ID != restored.ID {
		t.Errorf("latest after the fence: %+v %v, want the restored checkpoint %s", info, ok, restored.ID)
	}
	late := checkpoint(3) // begun before the fence, done after it
	if info, ok := b.Latest("ep"); !ok || info.ID != restored.ID {
		t.Errorf("latest after the fenced attempt's late checkpoint %s: %+v %v, want the restored checkpoint %s", late.ID, info, ok, restored.ID)
	}
}

// TestCheckpoints_LatestAfterAChainOfRestores: a restore replacing an
// attempt that a restore started, before that attempt took a checkpoint,
// points the episode at the checkpoint it continues; where before the
// pointer stayed on the checkpoint the first restore continued, whose
// steps the second may have undone (here the second continued from an
// earlier one). A fork's newest checkpoint is left as it is.
func TestCheckpoints_LatestAfterAChainOfRestores(t *testing.T) {
	const (
		successor = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
		third     = "5f4e3d2c-1b0a-4987-a654-3210fedcba98"
		fourth    = "2b3c4d5e-6f70-4182-93a4-b5c6d7e8f901"
		fork      = "1d2e3f40-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
	)
	b := newTestBackend(t, Config{Checkpoints: t.TempDir()})
	checkpoint := fenceableAttempt(t, b)
	earlier, restored := checkpoint(1), checkpoint(2)
	checkpoint(3)
	fenceRestored(t, b, fenceAttempt, restored.ID, successor)
	fenceRestored(t, b, successor, earlier.ID, third)
	if info, ok := b.Latest("ep"); !ok || info.ID != earlier.ID {
		t.Errorf("latest after the second restore: %s %v, want the checkpoint it continues %s (the first continued %s)", info.ID, ok, earlier.ID, restored.ID)
	}

	inst, err := b.Open(context.Background(), openenv.OpenOptions{Fixture: company.AcmeID, EpisodeID: "ep"})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	forked, err := inst.(openenv.Checkpointer).Checkpoint(context.Background(), openenv.CheckpointRequest{Revision: 1, Attempt: fork, Session: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	fenceRestored(t, b, third, restored.ID, fourth)
	if info, ok := b.Latest("ep"); !ok || info.ID != forked.ID {
		t.Errorf("latest after a restore replacing another attempt than the fork's: %s %v, want the fork's %s", info.ID, ok, forked.ID)
	}
}

// TestCheckpoints_RetentionKeepsTheRestoredNewest: over the budget,
// retention keeps the checkpoint an episode's latest pointer names as its
// newest, the one a restore replacing an attempt continues, and removes
// the superseded attempt's later checkpoints first; where before it kept
// the latest written, removed the restored one as an older revision and
// pointed the episode at steps the restore undid.
func TestCheckpoints_RetentionKeepsTheRestoredNewest(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, Config{Checkpoints: dir, CheckpointTTL: time.Hour, CheckpointMaxBytes: 1 << 40})
	checkpoint := fenceableAttempt(t, b)
	now := time.Now()
	var ids []string
	for revision := range 2 {
		info := checkpoint(revision)
		ago := now.Add(time.Duration(revision-3) * time.Minute)
		os.Chtimes(filepath.Join(dir, info.ID), ago, ago)
		ids = append(ids, info.ID)
	}
	restored, later := ids[0], ids[1]
	if err := b.Fence(fenceAttempt, "ep", restored, "checkpoint "+restored); err != nil {
		t.Fatal(err)
	}
	other := checkpointedEpisode(t, b, "other")
	b.checkpoints.sweep(now) // the sweep their writes started spares them
	keep := dirSize(filepath.Join(dir, restored)) + dirSize(filepath.Join(dir, other.ID))
	b.checkpoints.sweepMu.Lock()
	b.checkpoints.maxBytes = (keep + dirSize(filepath.Join(dir, later))/2) * 10 / 9
	b.checkpoints.sweepMu.Unlock()
	b.checkpoints.sweep(now)
	if msg := restoreErr(t, b, restored); msg != "" {
		t.Errorf("the checkpoint the episode goes on from was removed: %q", msg)
	}
	if msg := restoreErr(t, b, later); !strings.Contains(msg, "does not exist") {
		t.Errorf("the superseded attempt's later checkpoint was kept: %q", msg)
	}
	if info, _ := b.Latest("ep"); info.ID != restored {
		t.Errorf("latest: %s, want the restored checkpoint %s", info.ID, restored)
	}
}

// TestCheckpoints_RepointSkipsFenced: when the checkpoint an episode's
// latest pointer names goes (here by the TTL), the pointer moves to the
// newest checkpoint left of an attempt no restore superseded, or goes
// when there is none; where before it moved to the newest left, a
// superseded attempt's checkpoint after the one its restore continued,
// whose restore brought back steps the restore had undone.
func TestCheckpoints_RepointSkipsFenced(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, Config{Checkpoints: dir, CheckpointTTL: time.Hour, CheckpointMaxBytes: 1 << 40})
	take := episodeCheckpoints(t, b)
	checkpoint := func(revision int, attempt string) string { return take(revision, attempt).ID }
	const (
		fork      = "1d2e3f40-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
		attempt   = "0c6f3b62-8d4e-4e0a-9a51-7c1f2b3d4e5f"
		successor = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
	)
	forked := checkpoint(1, fork) // a fork's: no restore superseded it
	restored := checkpoint(1, attempt)
	later := checkpoint(2, attempt)
	fenceRestored(t, b, attempt, restored, successor)
	now := time.Now()
	b.checkpoints.sweep(now) // the sweep their writes started spares them
	at := aged(dir, now)
	at(restored, 2*time.Hour)
	at(forked, 3*time.Minute)
	at(later, 2*time.Minute)
	b.checkpoints.sweep(now)
	if info, _ := b.Latest("ep"); info.ID != forked {
		t.Errorf("latest once the restored checkpoint expired: %q, want the fork's %s (the superseded attempt's later one is %s)", info.ID, forked, later)
	}
	at(forked, 2*time.Hour)
	b.checkpoints.sweep(now)
	if info, ok := b.Latest("ep"); ok {
		t.Errorf("latest with only a superseded attempt's checkpoint left: %+v, want none", info)
	}
	if msg := restoreErr(t, b, later); msg != "" {
		t.Errorf("the superseded attempt's checkpoint was removed: %q", msg)
	}
}

// TestCheckpoints_RepointKeepsWhatTheRestoreKept: when the checkpoint a
// restore replacing an attempt continued goes before the restored attempt
// takes one, the episode's latest pointer moves to the newest left of the
// superseded attempt's at or before that checkpoint's revision, whose
// steps the episode goes on from; where before it moved to a fork's, or
// to none, though those hold no step the restore undid. When the
// restored attempt was replaced in turn, from another checkpoint, they
// may, and are skipped still; and so they are once the pointer names one
// of them (the store does not record the restored checkpoint's revision
// once it is gone).
func TestCheckpoints_RepointKeepsWhatTheRestoreKept(t *testing.T) {
	const (
		fork      = "1d2e3f40-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
		successor = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
		third     = "5f4e3d2c-1b0a-4987-a654-3210fedcba98"
	)
	for _, replacedAgain := range []bool{false, true} {
		t.Run(fmt.Sprint("replaced again ", replacedAgain), func(t *testing.T) {
			dir := t.TempDir()
			b := newTestBackend(t, Config{Checkpoints: dir, CheckpointTTL: time.Hour, CheckpointMaxBytes: 1 << 40})
			take := episodeCheckpoints(t, b)
			checkpoint := func(revision int, attempt string) string { return take(revision, attempt).ID }
			forked := checkpoint(1, fork)
			earlier := checkpoint(1, fenceAttempt)
			restored := checkpoint(2, fenceAttempt)
			same := checkpoint(2, fenceAttempt) // no step between it and the restored one
			later := checkpoint(3, fenceAttempt)
			fenceRestored(t, b, fenceAttempt, restored, successor)
			if replacedAgain {
				// Restored from the fork's, the successor's line (from the
				// restored checkpoint) is undone.
				fenceRestored(t, b, successor, forked, third)
			}
			now := time.Now()
			b.checkpoints.sweep(now) // the sweep their writes started spares them
			at := aged(dir, now)
			at(forked, 5*time.Minute)
			at(earlier, 4*time.Minute)
			at(same, 3*time.Minute)
			at(later, 2*time.Minute)
			at(restored, 2*time.Hour)
			b.checkpoints.sweep(now)
			want := map[bool]string{false: same, true: forked}[replacedAgain]
			if info, _ := b.Latest("ep"); info.ID != want {
				t.Errorf("latest once the restored checkpoint expired: %q, want %s (fork %s, earlier %s, same %s, later %s)", info.ID, want, forked, earlier, same, later)
			}
			// The pointer names one the restore did not continue: the store
			// no longer records which revision it did.
			at(same, 2*time.Hour)
			b.checkpoints.sweep(now)
			if info, _ := b.Latest("ep"); info.ID != forked {
				t.Errorf("latest once the same revision's expired too: %q, want the fork's %s (earlier %s, later %s)", info.ID, forked, earlier, later)
			}
		})
	}
}

// TestCheckpoints_LatestAfterARestoreOfARepointedAttempt: when retention
// moved an episode's latest pointer from the checkpoint a restore
// continued, gone, to one of the superseded attempt's that stands for it
// (TestCheckpoints_RepointKeepsWhatTheRestoreKept), a restore replacing the
// restored attempt, before it took a checkpoint, points the episode at the
// checkpoint it continues, as it does while the pointer names the one the
// first restore continued (TestCheckpoints_LatestAfterAChainOfRestores):
// the pointer's holds a step the second restore undid.
func TestCheckpoints_LatestAfterARestoreOfARepointedAttempt(t *testing.T) {
	const (
		successor = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
		third     = "5f4e3d2c-1b0a-4987-a654-3210fedcba98"
	)
	dir := t.TempDir()
	b := newTestBackend(t, Config{Checkpoints: dir, CheckpointTTL: time.Hour, CheckpointMaxBytes: 1 << 40})
	checkpoint := fenceableAttempt(t, b)
	earlier, restored, same := checkpoint(1), checkpoint(2), checkpoint(2)
	checkpoint(3)
	fenceRestored(t, b, fenceAttempt, restored.ID, successor)
	now := time.Now()
	b.checkpoints.sweep(now) // the sweep their writes started spares them
	os.Chtimes(filepath.Join(dir, restored.ID), now.Add(-2*time.Hour), now.Add(-2*time.Hour))
	b.checkpoints.sweep(now)
	if info, _ := b.Latest("ep"); info.ID != same.ID {
		t.Fatalf("latest once the restored checkpoint expired: %q, want %s", info.ID, same.ID)
	}
	fenceRestored(t, b, successor, earlier.ID, third)
	if info, ok := b.Latest("ep"); !ok || info.ID != earlier.ID {
		t.Errorf("latest after a restore replacing the restored attempt: %s %v, want the checkpoint it continues %s (the pointer named %s, of a revision it undid)", info.ID, ok, earlier.ID, same.ID)
	}
}

// TestCheckpoints_FenceBetweenCheckAndPointer: a restore on another server
// fencing an attempt while this one writes a checkpoint of it, between
// its reading of the fence and its setting of the episode's latest
// pointer, leaves the pointer on the checkpoint the restore continues;
// where before the late checkpoint's pointer write could land after the
// restore's, and GET /checkpoints/latest named steps the restore undid.
func TestCheckpoints_FenceBetweenCheckAndPointer(t *testing.T) {
	dir := t.TempDir()
	b := newTestBackend(t, Config{Checkpoints: dir})
	other := newTestBackend(t, Config{Checkpoints: dir}) // another replica on the same store
	checkpoint := fenceableAttempt(t, b)
	restored := checkpoint(1)

	fenced := make(chan error, 1)
	waiting := make(chan struct{}, 1)
	testHookLatestLockWait = func() {
		select {
		case waiting <- struct{}{}:
		default:
		}
	}
	testHookFenceChecked = func(string) {
		testHookFenceChecked = func(string) {}
		// The other server's restore fences the attempt now: it ends, or
		// waits for the lock this write holds.
		go func() { fenced <- other.Fence(fenceAttempt, "ep", restored.ID, "checkpoint "+restored.ID) }()
		select {
		case err := <-fenced:
			fenced <- err
		case <-waiting:
		}
	}
	t.Cleanup(func() {
		testHookFenceChecked = func(string) {}
		testHookLatestLockWait = func() {}
	})
	late := checkpoint(2) // its fence read before the fence, its pointer set after
	if err := <-fenced; err != nil {
		t.Fatal(err)
	}
	for name, backend := range map[string]*Backend{"this server": b, "the other": other} {
		if info, ok := backend.Latest("ep"); !ok || info.ID != restored.ID {
			t.Errorf("latest on %s: %s %v, want the restored checkpoint %s (the late one is %s)", name, info.ID, ok, restored.ID, late.ID)
		}
	}
}

// fenceAttempt is the attempt fenceableAttempt's checkpoints name.
const fenceAttempt = "0c6f3b62-8d4e-4e0a-9a51-7c1f2b3d4e5f"

// fenceableAttempt opens an instance of episode "ep" on b, closed when the
// test ends, and returns what checkpoints it at a revision as attempt
// fenceAttempt.
func fenceableAttempt(t *testing.T, b *Backend) func(revision int) openenv.CheckpointInfo {
	t.Helper()
	checkpoint := episodeCheckpoints(t, b)
	return func(revision int) openenv.CheckpointInfo { return checkpoint(revision, fenceAttempt) }
}

// fenceRestored fences attempt as a restore of checkpoint id that started
// attempt successor records it (Restorer.Fence).
func fenceRestored(t *testing.T, b *Backend, attempt, id, successor string) {
	t.Helper()
	if err := b.Fence(attempt, "ep", id, "checkpoint "+id+", restored as attempt "+successor); err != nil {
		t.Fatal(err)
	}
}

// aged returns a function that dates checkpoint id of the store dir ago
// before now, for retention's sweep(now).
func aged(dir string, now time.Time) func(id string, ago time.Duration) {
	return func(id string, ago time.Duration) {
		os.Chtimes(filepath.Join(dir, id), now.Add(-ago), now.Add(-ago))
	}
}

// episodeCheckpoints opens an acme instance of episode "ep" on b, closed
// when the test ends, and returns a function that checkpoints it as
// attempt at revision.
func episodeCheckpoints(t *testing.T, b *Backend) func(revision int, attempt string) openenv.CheckpointInfo {
	t.Helper()
	ctx := context.Background()
	inst, err := b.Open(ctx, openenv.OpenOptions{Fixture: company.AcmeID, EpisodeID: "ep"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close() })
	return func(revision int, attempt string) openenv.CheckpointInfo {
		t.Helper()
		info, err := inst.(openenv.Checkpointer).Checkpoint(ctx, openenv.CheckpointRequest{Revision: revision, Attempt: attempt, Session: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
}

// TestCheckpoints_LatestAfterARestoreOfARemovedCheckpoint: a restore
// replacing an attempt whose checkpoint retention removed (on another
// server, over the size budget) after the restore read it and before it
// fenced the attempt leaves the episode with no newest checkpoint; where
// before the pointer stayed on the superseded attempt's later checkpoint,
// of a step the restore undid.
func TestCheckpoints_LatestAfterARestoreOfARemovedCheckpoint(t *testing.T) {
	const successor = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
	dir := t.TempDir()
	b := newTestBackend(t, Config{Checkpoints: dir})
	other := newTestBackend(t, Config{Checkpoints: dir}) // another replica on the same store
	checkpoint := fenceableAttempt(t, b)
	restored := checkpoint(1)
	later := checkpoint(2)
	inst, _, err := b.Restore(context.Background(), restored.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	if !other.checkpoints.remove(restored.ID) {
		t.Fatal("the restored checkpoint could not be removed")
	}
	fenceRestored(t, b, fenceAttempt, restored.ID, successor)
	if info, ok := b.Latest("ep"); ok {
		t.Errorf("latest after a restore of a checkpoint since removed: %s, want none (the restore undid %s's step)", info.ID, later.ID)
	}
}

// TestCheckpoints_RepointAfterAFenceDuringTheSweep: a restore replacing an
// attempt while retention removes checkpoints, once the sweep read the
// attempt's fence, and then the sweep removing the checkpoint it
// continued, leaves the episode with no newest checkpoint rather than the
// superseded attempt's later one; where before the sweep pointed the
// episode at that one, of a step the restore undid, by the fences as they
// were when it started.
func TestCheckpoints_RepointAfterAFenceDuringTheSweep(t *testing.T) {
	const successor = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
	dir := t.TempDir()
	b := newTestBackend(t, Config{Checkpoints: dir, CheckpointTTL: time.Hour, CheckpointMaxBytes: 1 << 40})
	checkpoint := fenceableAttempt(t, b)
	now := time.Now()
	var ids []string
	for revision := 1; revision <= 3; revision++ {
		info := checkpoint(revision)
		ago := now.Add(time.Duration(revision-4) * time.Minute)
		os.Chtimes(filepath.Join(dir, info.ID), ago, ago)
		ids = append(ids, info.ID)
	}
	oldest, restored, later := ids[0], ids[1], ids[2]
	b.checkpoints.sweep(now) // the sweep their writes started spares them
	b.checkpoints.sweepMu.Lock()
	b.checkpoints.maxBytes = dirSize(filepath.Join(dir, later)) * 3 / 2 * 10 / 9
	b.checkpoints.sweepMu.Unlock()
	testHookRemoved = func(id string) {
		if id == oldest {
			// The restore, on another server say, fences the attempt
			// while the sweep goes on.
			if err := b.Fence(fenceAttempt, "ep", restored, "checkpoint "+restored+", restored as attempt "+successor); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { testHookRemoved = func(string) {} })
	b.checkpoints.sweep(now)
	if msg := restoreErr(t, b, restored); !strings.Contains(msg, "does not exist") {
		t.Fatalf("the sweep kept the restored checkpoint (%q): the test needs it gone", msg)
	}
	if info, ok := b.Latest("ep"); ok {
		t.Errorf("latest once the restored checkpoint went: %s, want none (the superseded attempt's later one is %s)", info.ID, later)
	}
}

// TestCheckpoints_RetentionCountsWhatAPeerRemoved: a checkpoint another
// server sharing the store removed while this one's sweep went on left
// the store: the sweep counts its bytes as gone, and removes no more than
// the budget asks, nor logs an error; where before it took the checkpoint
// for one it could not remove, still counted against the budget, and
// removed an episode's newest, its only checkpoint, in its place.
func TestCheckpoints_RetentionCountsWhatAPeerRemoved(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	b := newTestBackend(t, Config{Checkpoints: dir, CheckpointTTL: time.Hour, CheckpointMaxBytes: 1 << 40, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	other := newTestBackend(t, Config{Checkpoints: dir}) // another replica on the same store
	now := time.Now()
	var ids []string
	for i := range 3 {
		info := checkpointedEpisode(t, b, fmt.Sprint("ep", i))
		ago := now.Add(time.Duration(i-4) * time.Minute)
		os.Chtimes(filepath.Join(dir, info.ID), ago, ago)
		ids = append(ids, info.ID)
	}
	oldest, next, newest := ids[0], ids[1], ids[2]
	b.checkpoints.sweep(now) // the sweep their writes started spares them
	b.checkpoints.sweepMu.Lock()
	b.checkpoints.maxBytes = dirSize(filepath.Join(dir, newest)) * 3 / 2 * 10 / 9
	b.checkpoints.sweepMu.Unlock()
	testHookRemoved = func(id string) {
		if id == oldest {
			testHookRemoved = func(string) {}
			other.checkpoints.remove(next) // the peer's sweep, between this one's listing and its removal
		}
	}
	t.Cleanup(func() { testHookRemoved = func(string) {} })
	b.checkpoints.sweep(now)
	if msg := restoreErr(t, b, newest); msg != "" {
		t.Errorf("the newest checkpoint was removed, though the store was within its budget without it: %q", msg)
	}
	if strings.Contains(logs.String(), "cannot remove") {
		t.Errorf("the checkpoint the peer removed was logged as one retention cannot remove:\n%s", logs.String())
	}
}

// TestCheckpoints_RepointPassesOverWhatAPeerRemoved: when the checkpoint
// retention would point an episode at in place of its gone newest was
// removed by another server sharing the store since the sweep listed it,
// the episode's latest pointer moves to the next that may stand for it
// (here a checkpoint of the same attempt, not the superseded attempt's
// newer one, of a step a restore undid); where before it was removed, and
// GET /checkpoints/latest answered 404 though that checkpoint was left.
func TestCheckpoints_RepointPassesOverWhatAPeerRemoved(t *testing.T) {
	const (
		fork      = "1d2e3f40-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
		successor = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
	)
	dir := t.TempDir()
	b := newTestBackend(t, Config{Checkpoints: dir, CheckpointTTL: time.Hour, CheckpointMaxBytes: 1 << 40})
	other := newTestBackend(t, Config{Checkpoints: dir}) // another replica on the same store
	take := episodeCheckpoints(t, b)
	checkpoint := func(revision int, attempt string) string { return take(revision, attempt).ID }
	restored := checkpoint(1, fenceAttempt)
	undone := checkpoint(2, fenceAttempt)
	fenceRestored(t, b, fenceAttempt, restored, successor)
	oldest, next, newest := checkpoint(1, fork), checkpoint(2, fork), checkpoint(3, fork)
	now := time.Now()
	b.checkpoints.sweep(now) // the sweep their writes started spares them
	at := aged(dir, now)
	at(restored, 6*time.Minute)
	at(oldest, 5*time.Minute)
	at(undone, 3*time.Minute)
	at(next, 2*time.Minute)
	at(newest, 2*time.Hour)
	// The other server holds the lock on the pointers when this one's
	// sweep comes to repoint the episode, and has removed next since the
	// sweep listed it.
	unlock := sync.OnceFunc(other.checkpoints.lockLatest())
	t.Cleanup(unlock)
	testHookLatestLockWait = func() {
		testHookLatestLockWait = func() {}
		if !other.checkpoints.remove(next) {
			t.Error("the other server could not remove", next)
		}
		unlock()
	}
	t.Cleanup(func() { testHookLatestLockWait = func() {} })
	b.checkpoints.sweep(now)
	if msg := restoreErr(t, b, next); !strings.Contains(msg, "does not exist") {
		t.Fatalf("the other server's removal of %s did not happen (%q): the test needs it gone", next, msg)
	}
	if info, ok := b.Latest("ep"); !ok || info.ID != oldest {
		t.Errorf("latest once its newest expired and the next went on another server: %q %v, want %s (the superseded attempt's later one is %s)", info.ID, ok, oldest, undone)
	}
}

// TestCheckpoints_RewindOfARemovedPointer: a restore replacing an attempt
// whose newest checkpoint, the one the episode's latest pointer names,
// another server's retention removed and has not yet pointed the episode
// elsewhere from, points the episode at the checkpoint it continues, as
// it does while that checkpoint is there (TestCheckpoints_LatestAfterAFence);
// where before it took the pointer for none and left it, GET
// /checkpoints/latest answered 404, and the other server's sweep then
// removed the pointer: the superseded attempt's checkpoint the restore
// continued is not one that stands for a later one of its attempt.
func TestCheckpoints_RewindOfARemovedPointer(t *testing.T) {
	const successor = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
	dir := t.TempDir()
	b := newTestBackend(t, Config{Checkpoints: dir})
	other := newTestBackend(t, Config{Checkpoints: dir, CheckpointTTL: time.Hour, CheckpointMaxBytes: 1 << 40}) // another replica on the same store
	checkpoint := fenceableAttempt(t, b)
	restored := checkpoint(1)
	later := checkpoint(2)
	now := time.Now()
	aged(dir, now)(later.ID, 2*time.Hour)
	testHookRemoved = func(id string) {
		if id == later.ID {
			// The restore, on this server, fences the attempt once the
			// other server's sweep removed the pointer's checkpoint, before
			// that sweep repoints the episode.
			fenceRestored(t, b, fenceAttempt, restored.ID, successor)
			if info, ok := b.Latest("ep"); !ok || info.ID != restored.ID {
				t.Errorf("latest after the restore: %q %v, want the checkpoint it continues %s", info.ID, ok, restored.ID)
			}
		}
	}
	t.Cleanup(func() { testHookRemoved = func(string) {} })
	other.checkpoints.sweep(now)
	if msg := restoreErr(t, b, later.ID); !strings.Contains(msg, "does not exist") {
		t.Fatalf("the other server's sweep kept %s (%q): the test needs it gone", later.ID, msg)
	}
	if info, ok := b.Latest("ep"); !ok || info.ID != restored.ID {
		t.Errorf("latest once the other server's sweep ended: %q %v, want the checkpoint the restore continues %s", info.ID, ok, restored.ID)
	}
}
