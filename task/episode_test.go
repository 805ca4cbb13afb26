package task_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/testfs"
	"github.com/seahaven/seahaven/task"
)

func TestInstanceOptions(t *testing.T) {
	full := env.Task{Fixture: "acme", Now: "2026-06-01T09:00:00Z", Seed: new(int64(7)), Startup: map[string]any{"owner": "ada", "plan": "pro"}}
	tests := []struct {
		name string              // case
		task env.Task            // the task
		opts composition.Options // the caller's options
		want composition.Options // the merged options
	}{
		{"TaskFillsZeros", full, composition.Options{Dir: "d"},
			composition.Options{Dir: "d", Fixture: "acme", Now: "2026-06-01T09:00:00Z", Seed: 7, Startup: map[string]any{"owner": "ada", "plan": "pro"}}},
		{"OptionsOverride", full, composition.Options{Fixture: "other", Now: "2027-01-01T00:00:00Z", Seed: 3, Startup: map[string]any{"owner": "bob"}},
			composition.Options{Fixture: "other", Now: "2027-01-01T00:00:00Z", Seed: 3, Startup: map[string]any{"owner": "bob", "plan": "pro"}}},
		{"TaskWithoutSeed", env.Task{}, composition.Options{Seed: 0, ClockMode: env.ClockStep},
			composition.Options{ClockMode: env.ClockStep}},
		{"NoStartup", env.Task{}, composition.Options{Startup: map[string]any{"owner": "x"}},
			composition.Options{Startup: map[string]any{"owner": "x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := task.InstanceOptions(tt.task, tt.opts); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	if full.Startup["owner"] != "ada" {
		t.Error("InstanceOptions changed the task's startup map")
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	checks := []env.Check{{SQL: "SELECT 1"}}
	t.Run("StartsFromTheTask", func(t *testing.T) {
		w := newLedger("ledger_open_ok")
		tk := env.Task{ID: "t", Instruction: "x", Now: "2030-01-02T03:04:05Z", Seed: new(int64(42)),
			Startup: map[string]any{"owner": "ada"}, Checks: checks}
		ep := mustOpen(t, w, tk, composition.Options{EpisodeID: "ep-1"})
		st := ep.State()
		if st.Now != "2030-01-02T03:04:05.000Z" || st.Seed != 42 || st.Task == nil || *st.Task != "t" || st.Checks != nil {
			t.Fatalf("state %+v", st)
		}
		h := ep.Header()
		want := task.Header{Task: "t", TaskSHA256: task.DefinitionHash(tk), World: "ledger_open_ok", WorldVersion: "1.0.0", Seed: 42, Now: "2030-01-02T03:04:05.000Z",
			EpisodeID: "ep-1", ClockMode: env.ClockFrozen, Startup: map[string]any{"owner": "ada"}}
		if !reflect.DeepEqual(h, want) {
			t.Fatalf("header %+v, want %+v", h, want)
		}
	})
	t.Run("ErrInvalidTask", func(t *testing.T) {
		_, err := task.Open(ctx, newLedger("ledger_open_invalid"), env.Task{ID: "t", Instruction: "x"}, composition.Options{Dir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "no checks") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ErrHalfATask", func(t *testing.T) {
		_, err := task.Open(ctx, newLedger("ledger_open_half"), env.Task{Fixture: "acme"}, composition.Options{Dir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), `task id "" must match`) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ErrToolNotOnSurface", func(t *testing.T) {
		_, err := task.Open(ctx, newLedger("ledger_open_tool"), env.Task{ID: "t", Instruction: "x", Tools: []string{"refund"}, Checks: checks}, composition.Options{Dir: t.TempDir()})
		if err == nil || err.Error() != `task t: tools: "refund" is not on ledger_open_tool's surface` {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ErrUnknownFixture", func(t *testing.T) {
		_, err := task.Open(ctx, newLedger("ledger_open_fixture"), env.Task{ID: "t", Instruction: "x", Fixture: "nope", Checks: checks}, composition.Options{Dir: t.TempDir()})
		if err == nil {
			t.Fatal("opened a task naming a missing fixture")
		}
	})
}

func TestEpisode_AllowList(t *testing.T) {
	w := newLedger("ledger_allow")
	ep := mustOpen(t, w, env.Task{ID: "notes_only", Instruction: "Write a note.", Tools: []string{"note"},
		Checks: []env.Check{{MustChange: []string{"main.notes"}}}}, composition.Options{ControlTools: true})
	var names []string
	for _, tl := range ep.Tools() {
		names = append(names, tl.Name)
	}
	if strings.Join(names, " ") != "note seahaven_control" {
		t.Fatalf("tools %v, want note and the control tool", names)
	}
	_, err := ep.CallJSON(context.Background(), "add", []byte(`{"amount": 1}`))
	te, ok := env.AsToolError(err)
	if !ok || te.Kind != env.KindNotFound || te.Message != `unknown tool "add": task notes_only allows note, seahaven_control` {
		t.Fatalf("err = %#v", err)
	}
	// A name of any length is repeated at most 1 KiB of it.
	long := strings.Repeat("x", 100<<10)
	if _, err := ep.CallJSON(context.Background(), long, []byte(`{}`)); err == nil || len(err.Error()) > 2<<10 || !strings.Contains(err.Error(), "not echoed") {
		t.Errorf("an unknown tool of 100 KiB: the error is %d bytes, want the name cut", len(err.Error()))
	}
	mustCall(t, ep, "note", `{"body": "hi"}`)
	mustCall(t, ep, env.ControlTool, `{"action": "advance_clock", "seconds": 5}`)
	if n := len(ep.Instance().ChangeLog()); n != 1 {
		t.Fatalf("%d change records, want only the note's", n)
	}
	res, err := ep.Grade(context.Background())
	if err != nil || res.Reward != 1 {
		t.Fatalf("Grade = %+v, %v", res, err)
	}
	if st := ep.State(); len(st.Checks) != 1 || !st.Checks[0].Passed || st.Checks[0].Name != "must_change #1" {
		t.Fatalf("state checks %+v", st.Checks)
	}
	if last, ok := ep.LastGrade(); !ok || last.Reward != 1 {
		t.Fatalf("LastGrade = %+v, %v", last, ok)
	}
}

func TestEpisode_WithoutTask(t *testing.T) {
	ep := mustOpen(t, newLedger("ledger_plain"), env.Task{}, composition.Options{Seed: 3})
	if len(ep.Tools()) != 2 {
		t.Fatalf("tools %v", ep.Tools())
	}
	mustCall(t, ep, "add", `{"amount": 1}`)
	if _, err := ep.Grade(context.Background()); !errors.Is(err, task.ErrNoTask) {
		t.Fatalf("Grade err = %v, want ErrNoTask", err)
	}
	if _, ok := ep.Task(); ok {
		t.Fatal("Task() reports a task")
	}
	if st := ep.State(); st.Task != nil || st.Seed != 3 {
		t.Fatalf("state %+v", st)
	}
}

func TestEpisode_RecordAfterACall(t *testing.T) {
	ep := mustOpen(t, newLedger("ledger_late"), env.Task{}, composition.Options{})
	mustCall(t, ep, "add", `{"amount": 1}`)
	rec, err := task.NewRecorder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := ep.Record(rec); err == nil || !strings.Contains(err.Error(), "after its first call") {
		t.Fatalf("err = %v", err)
	}
}

// TestEpisode_InfraError fails calls on the host: one before it changed
// anything, one after a nested call committed on a child. Neither is
// recorded; the first is not counted (the instance said NoStep), the
// second is.
func TestEpisode_InfraError(t *testing.T) {
	ctx := context.Background()
	host := env.NewWorld(env.WorldSpec{Name: "infrahost", Version: "1", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(newLedger("infraledger"), env.Name("led"), env.ToolAllowList())
	full := &os.PathError{Op: "write", Path: "/x/state.sqlite", Err: syscall.ENOSPC}
	env.Tool(host, "write", "Write a row.", func(c *env.Ctx, _ struct{}) (int, error) {
		_, err := c.DB.Exec("INSERT INTO h VALUES (1)")
		return 1, err
	})
	env.Tool(host, "fail", "Fail on the host, having changed nothing.", func(c *env.Ctx, _ struct{}) (int, error) {
		return 0, full
	})
	env.Tool(host, "add_then_fail", "Add an entry to the child, then fail on the host.", func(c *env.Ctx, _ struct{}) (int, error) {
		if _, err := c.Worlds.Get("led").Call("add", amountArgs{Amount: 5}); err != nil {
			return 0, err
		}
		return 0, full
	})
	ep := mustOpen(t, host, env.Task{}, composition.Options{})
	startRecording(t, ep)
	mustCall(t, ep, "write", `{}`)
	for _, name := range []string{"fail", "add_then_fail"} {
		var ie *env.InfraError
		if _, err := ep.CallJSON(ctx, name, []byte(`{}`)); !errors.As(err, &ie) {
			t.Fatalf("%s: %v, want an *env.InfraError", name, err)
		}
	}
	if _, saved, err := ep.Checkpoint(ctx); err != nil || saved.Calls != 2 {
		t.Errorf("Checkpoint: %d calls (%v), want 2: the write and the call that changed something", saved.Calls, err)
	}
	tr := closeAndRead(t, ep)
	if len(tr.Calls) != 1 || tr.Calls[0].Tool != "write" {
		t.Errorf("recorded calls %+v, want only the write", tr.Calls)
	}
}

// TestEpisode_CancelledCall: a call cancelled by its caller before it
// changed anything is neither counted nor recorded (env.ErrNoStep), and
// the recording replays without a mismatch, since the ids the call drew
// were taken back too.
func TestEpisode_CancelledCall(t *testing.T) {
	ctx := context.Background()
	w := env.NewWorld(env.WorldSpec{Name: "cancelhost", Version: "1", Schema: "CREATE TABLE h (id TEXT PRIMARY KEY) STRICT;"})
	started := make(chan struct{}, 1)
	env.Tool(w, "mint", "Write a new id.", func(c *env.Ctx, _ struct{}) (string, error) {
		id := c.IDs.UUID()
		_, err := c.DB.Exec("INSERT INTO h VALUES (?)", id)
		return id, err
	})
	env.Tool(w, "mint_and_wait", "Write a new id, then wait for the call's end.", func(c *env.Ctx, _ struct{}) (string, error) {
		if _, err := c.DB.Exec("INSERT INTO h VALUES (?)", c.IDs.UUID()); err != nil {
			return "", err
		}
		started <- struct{}{}
		<-c.Context().Done()
		return "", c.Context().Err()
	})
	ep := mustOpen(t, w, env.Task{}, composition.Options{})
	startRecording(t, ep)
	mustCall(t, ep, "mint", `{}`)
	cctx, cancel := context.WithCancel(ctx)
	go func() { <-started; cancel() }()
	if _, err := ep.CallJSON(cctx, "mint_and_wait", []byte(`{}`)); !errors.Is(err, env.ErrNoStep) {
		t.Fatalf("the cancelled call: %v, want an error wrapping env.ErrNoStep", err)
	}
	mustCall(t, ep, "mint", `{}`)
	if st := ep.State(); st.StepCount != 2 {
		t.Errorf("step_count %d, want 2: the cancelled call is no step", st.StepCount)
	}
	tr := closeAndRead(t, ep)
	if len(tr.Calls) != 2 || tr.Calls[0].Tool != "mint" || tr.Calls[1].Tool != "mint" {
		t.Fatalf("recorded calls %+v, want the two mints", tr.Calls)
	}
	rep, err := task.ReplayTrajectory(ctx, w, nil, tr, composition.Options{Dir: t.TempDir()})
	if err != nil || len(rep.Mismatches) != 0 {
		t.Errorf("replay: %v, mismatches %v", err, rep.Mismatches)
	}
}

// TestEpisode_TimedOutCall: a recorded call cut off by its deadline after
// it drew ids and SQL random values is replayed cut off as well, not run
// to its end: the recording, step clock included, replays without a
// mismatch. One that had committed a nested call's work first, which the
// recording does not hold, is a warning, and so is every difference
// after it.
func TestEpisode_TimedOutCall(t *testing.T) {
	ctx := context.Background()
	child := env.NewWorld(env.WorldSpec{Name: "timeoutchild", Version: "1", Schema: "CREATE TABLE c (id TEXT PRIMARY KEY) STRICT;"})
	add := env.Tool(child, "add", "Write a new id.", func(c *env.Ctx, _ struct{}) (string, error) {
		id := c.IDs.UUID()
		_, err := c.DB.Exec("INSERT INTO c VALUES (?)", id)
		return id, err
	})
	w := env.NewWorld(env.WorldSpec{Name: "timeouthost", Version: "1", Schema: "CREATE TABLE h (id TEXT PRIMARY KEY) STRICT;"})
	w.AddWorld(child, env.Name("led"), env.ToolAllowList())
	var started chan struct{} // made for each recording
	env.Tool(w, "mint", "Write a new id and SQL random bytes.", func(c *env.Ctx, _ struct{}) (string, error) {
		row, err := c.DB.One("SELECT hex(randomblob(8)) AS r")
		if err != nil {
			return "", err
		}
		id := c.IDs.UUID() + " " + row["r"].(string)
		_, err = c.DB.Exec("INSERT INTO h VALUES (?)", id)
		return id + " at " + c.Now().Format(env.TimeFormat), err
	})
	env.Tool(w, "mint_and_wait", "Write a new id, then wait for the call's end.", func(c *env.Ctx, in struct {
		Nested bool `json:"nested,omitempty"`
	}) (string, error) {
		if in.Nested {
			if _, err := env.Call(c.Context(), c.Worlds.Get("led"), add, struct{}{}); err != nil {
				return "", err
			}
		}
		if _, err := c.DB.Exec("INSERT INTO h VALUES (? || hex(randomblob(8)))", c.IDs.UUID()); err != nil {
			return "", err
		}
		select {
		case started <- struct{}{}:
		default:
		}
		select {
		case <-c.Context().Done():
			return "", c.Context().Err()
		case <-time.After(time.Second): // a replay that ran the call with no deadline
			return "waited", nil
		}
	})
	record := func(args string) (*task.Trajectory, *task.Replay) {
		t.Helper()
		ep := mustOpen(t, w, env.Task{}, composition.Options{ClockMode: env.ClockStep, Seed: 5})
		startRecording(t, ep)
		mustCall(t, ep, "mint", `{}`)
		started = make(chan struct{}, 1)
		cctx, cancel := context.WithCancelCause(ctx)
		go func(started chan struct{}) { <-started; cancel(context.DeadlineExceeded) }(started)
		if _, err := ep.CallJSON(cctx, "mint_and_wait", []byte(args)); err == nil {
			t.Fatal("the call past its deadline succeeded")
		}
		mustCall(t, ep, "mint", `{}`)
		tr := closeAndRead(t, ep)
		if len(tr.Calls) != 3 || tr.Calls[1].Error == nil || tr.Calls[1].Error.Type != env.KindTimeout {
			t.Fatalf("recorded calls %+v, want the timeout between two mints", tr.Calls)
		}
		rep, err := task.ReplayTrajectory(ctx, w, nil, tr, composition.Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
		return tr, rep
	}

	t.Run("ChangedNothing", func(t *testing.T) {
		tr, rep := record(`{}`)
		if tr.Calls[1].Error.Message != composition.MsgTimedOut {
			t.Errorf("recorded error %+v, want %q", tr.Calls[1].Error, composition.MsgTimedOut)
		}
		if len(rep.Mismatches) != 0 || len(rep.Warnings) != 0 || rep.Calls != 3 {
			t.Errorf("replayed %d calls; mismatches %q, warnings %q; want 3 and none", rep.Calls, rep.Mismatches, rep.Warnings)
		}
	})
	t.Run("CommittedFirst", func(t *testing.T) {
		tr, rep := record(`{"nested":true}`)
		if tr.Calls[1].Error.Message != composition.MsgTimedOutKept {
			t.Errorf("recorded error %+v, want %q", tr.Calls[1].Error, composition.MsgTimedOutKept)
		}
		if len(rep.Mismatches) != 0 {
			t.Errorf("mismatches %q, want none: the replay cannot know the work the call kept", rep.Mismatches)
		}
		if len(rep.Warnings) < 2 || !strings.HasPrefix(rep.Warnings[0], "call 2 (mint_and_wait) ended early in the recording") || !strings.Contains(rep.Warnings[len(rep.Warnings)-1], "final state differs from the recording in led") {
			t.Errorf("warnings %q, want the cut-off call's, then the final state's", rep.Warnings)
		}
	})
}

// TestEpisode_CheckpointWritesItsCalls: a checkpoint of a recording
// episode writes the line of its latest call, which otherwise waits for
// the next call (or a grading) to be written: a process that dies after
// the checkpoint leaves every call the checkpoint holds in the recording,
// since the restored episode's recording holds only the calls after it.
func TestEpisode_CheckpointWritesItsCalls(t *testing.T) {
	ep := mustOpen(t, newLedger("ledger_ckrec"), env.Task{}, composition.Options{})
	startRecording(t, ep)
	mustCall(t, ep, "add", `{"amount": 1}`)
	mustCall(t, ep, "add", `{"amount": 2}`)
	if _, saved, err := ep.Checkpoint(context.Background()); err != nil || saved.Calls != 2 {
		t.Fatalf("Checkpoint: %d calls (%v), want 2", saved.Calls, err)
	}
	// Read as a process that died here left it: no end line.
	tr, err := task.ReadTrajectoryFile(ep.Recording().Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Calls) != 2 || string(tr.Calls[1].Arguments) != `{"amount":2}` {
		t.Fatalf("the recording after the checkpoint holds %d calls (%+v), want both the checkpoint holds", len(tr.Calls), tr.Calls)
	}
	mustCall(t, ep, "add", `{"amount": 3}`)
	if tr := closeAndRead(t, ep); len(tr.Calls) != 3 || tr.End == nil || tr.End.Calls != 3 {
		t.Errorf("the closed recording holds %d calls, end %+v, want 3 calls, each once", len(tr.Calls), tr.End)
	}
}

// TestEpisode_CheckpointRecordingFails: a checkpoint whose latest call's
// line cannot be written fails with the host's fault, and takes nothing.
// (A task episode holds the line back for its step's grading; one
// without a task writes it with the call.)
func TestEpisode_CheckpointRecordingFails(t *testing.T) {
	rec, err := task.NewRecorder(testfs.MountTmpfs(t, "64k"))
	if err != nil {
		t.Fatal(err)
	}
	tk := env.Task{ID: "notes", Instruction: "Write a note.", Checks: []env.Check{{MustChange: []string{"main.notes"}}}}
	ep := mustOpen(t, newLedger("ledger_ckfull"), tk, composition.Options{}) // closed before the unmount
	if err := ep.Record(rec); err != nil {
		t.Fatal(err)
	}
	mustCall(t, ep, "note", `{"body": "`+strings.Repeat("n", 128<<10)+`"}`)
	cp, _, err := ep.Checkpoint(context.Background())
	if ie := (*env.InfraError)(nil); !errors.As(err, &ie) || ie.Kind != env.FaultDiskFull || cp != nil {
		t.Fatalf("Checkpoint: %v, %v, want the disk-full fault and no checkpoint", cp, err)
	}
}

// TestEpisode_SettleRecordingFails: a held call line that Settle cannot
// write is the host's fault (disk full), as CallJSON reports one, so that
// the server answers the call with an infrastructure error; it was the
// bare write error, which the server took for no fault and only logged.
func TestEpisode_SettleRecordingFails(t *testing.T) {
	rec, err := task.NewRecorder(testfs.MountTmpfs(t, "64k"))
	if err != nil {
		t.Fatal(err)
	}
	tk := env.Task{ID: "notes", Instruction: "Write a note.", Checks: []env.Check{{MustChange: []string{"main.notes"}}}}
	ep := mustOpen(t, newLedger("ledger_settlefull"), tk, composition.Options{}) // closed before the unmount
	if err := ep.Record(rec); err != nil {
		t.Fatal(err)
	}
	mustCall(t, ep, "note", `{"body": "`+strings.Repeat("n", 128<<10)+`"}`)
	err = ep.Settle()
	if ie := (*env.InfraError)(nil); !errors.As(err, &ie) || ie.Kind != env.FaultDiskFull {
		t.Fatalf("Settle: %v, want the disk-full fault", err)
	}
}

// TestEpisode_CallLineWritten: a call's line is on disk once nothing more
// will be put on it: at once in an episode without a task, whose steps no
// grading follows, and, in a task episode, once its step is graded or
// Settle (for a call no grading follows, an MCP tools/call) writes it.
// Before, the last call of an episode without a task, or of a task
// episode's MCP calls, was held in memory until the next call, a grading
// or the close: a server killed before then lost it, though it committed.
func TestEpisode_CallLineWritten(t *testing.T) {
	lines := func(ep *task.Episode) int {
		t.Helper()
		b, err := os.ReadFile(ep.Recording().Path())
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "\n")
	}
	plain := mustOpen(t, newLedger("ledger_written"), env.Task{}, composition.Options{})
	startRecording(t, plain)
	mustCall(t, plain, "note", `{"body": "a"}`)
	if n := lines(plain); n != 2 {
		t.Errorf("an episode without a task: %d lines after a call, want the header and the call", n)
	}
	tk := env.Task{ID: "notes", Instruction: "Write a note.", Checks: []env.Check{{MustChange: []string{"main.notes"}}}}
	graded := mustOpen(t, newLedger("ledger_written_task"), tk, composition.Options{})
	startRecording(t, graded)
	mustCall(t, graded, "note", `{"body": "a"}`)
	if n := lines(graded); n != 1 {
		t.Errorf("a task episode: %d lines after a call, want the header alone: its step's grading puts the reward on the call's", n)
	}
	if err := graded.Settle(); err != nil {
		t.Fatal(err)
	}
	if err := graded.Settle(); err != nil || lines(graded) != 2 {
		t.Errorf("a task episode settled (twice: %v): %d lines, want the header and the call", err, lines(graded))
	}
	if tr := closeAndRead(t, graded); len(tr.Calls) != 1 || tr.Calls[0].Reward != nil {
		t.Errorf("the settled recording: %+v, want its one call, without a reward", tr.Calls)
	}
}

// TestEpisode_Discard: a discarded episode leaves no recording, and
// closes its instance.
func TestEpisode_Discard(t *testing.T) {
	ep := mustOpen(t, newLedger("ledger_discard"), env.Task{}, composition.Options{})
	startRecording(t, ep)
	path := ep.Recording().Path()
	if err := ep.Discard(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the recording of the discarded episode: %v, want it removed", err)
	}
	if _, err := ep.CallJSON(context.Background(), "add", []byte(`{"amount": 1}`)); err == nil {
		t.Error("a call on the discarded episode succeeded")
	}
	if err := ep.Discard(); err != nil {
		t.Errorf("a second Discard: %v", err)
	}
}

// TestEpisode_UnencodableResult: a call whose result JSON cannot encode
// fails and rolls back, as a server's does, and is counted and recorded
// as that failure. It committed, was counted, and was never recorded: the
// stores, the episode's count and its recording disagreed.
func TestEpisode_UnencodableResult(t *testing.T) {
	ctx := context.Background()
	w := newLedger("ledger_nan")
	env.Tool(w, "ratio", "Note a ratio.", func(c *env.Ctx, in noteArgs) (float64, error) {
		_, err := c.DB.Exec("INSERT INTO notes (body) VALUES (?)", in.Body)
		return math.NaN(), err
	})
	ep := mustOpen(t, w, env.Task{}, composition.Options{})
	startRecording(t, ep)
	const msg = `tool "ratio" returned a result that cannot be encoded as JSON: json: unsupported value: NaN`
	_, err := ep.CallJSON(ctx, "ratio", []byte(`{"body": "lost"}`))
	if te, ok := env.AsToolError(err); !ok || te.Kind != env.KindExecution || te.Message != msg {
		t.Fatalf("ratio: %v, want the execution error %q", err, msg)
	}
	mustCall(t, ep, "note", `{"body": "kept"}`)
	rows, err := ep.Instance().Inspect().Rows(ctx, "SELECT group_concat(body) AS bodies FROM notes")
	if err != nil || rows[0]["bodies"] != "kept" {
		t.Fatalf("notes %v (%v), want only the one kept", rows, err)
	}
	if _, saved, err := ep.Checkpoint(ctx); err != nil || saved.Calls != 2 {
		t.Fatalf("Checkpoint: %d calls (%v), want 2", saved.Calls, err)
	}
	tr := closeAndRead(t, ep)
	want := []task.CallLine{
		{Type: task.LineCall, Tool: "ratio", Arguments: json.RawMessage(`{"body":"lost"}`), ArgumentsText: new(`{"body": "lost"}`), Error: &task.CallError{Type: env.KindExecution, Message: msg}},
		{Type: task.LineCall, Tool: "note", Arguments: json.RawMessage(`{"body":"kept"}`), ArgumentsText: new(`{"body": "kept"}`), Result: json.RawMessage(`1`)},
	}
	if !reflect.DeepEqual(tr.Calls, want) {
		t.Fatalf("recorded calls %+v, want %+v", tr.Calls, want)
	}
}
