package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/task"
)

// mustRecord records an episode of a company task: the calls, then close.
// It returns the trajectory file.
func mustRecord(tb testing.TB, id string, seed int64, calls ...[2]string) string {
	tb.Helper()
	return mustRecordWith(tb, id, composition.Options{Seed: seed}, calls...)
}

// mustRecordWith is mustRecord with the instance opened with opts.
func mustRecordWith(tb testing.TB, id string, opts composition.Options, calls ...[2]string) string {
	tb.Helper()
	ctx := context.Background()
	tasks, err := task.ForWorld(company.World)
	if err != nil {
		tb.Fatal(err)
	}
	tk, ok := task.Find(tasks, id)
	if !ok {
		tb.Fatalf("no task %s", id)
	}
	rec, err := task.NewRecorder(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	opts.EpisodeID, opts.Dir = id, tb.TempDir()
	ep, err := task.Open(ctx, company.World, tk, opts)
	if err != nil {
		tb.Fatal(err)
	}
	if err := ep.Record(rec); err != nil {
		tb.Fatal(err)
	}
	for _, c := range calls {
		ep.CallJSON(ctx, c[0], []byte(c[1]))
	}
	path := ep.Recording().Path()
	if err := ep.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

func runGrade(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	m := exampleMain()
	m.Stdout, m.Stderr = &out, &errOut
	err = m.Run(context.Background(), append([]string{"grade"}, args...))
	if err != nil {
		m.fail(err)
	}
	return out.String(), errOut.String(), err
}

// mustRecordRestored records an episode of task invoice_750 on a server's
// backend: a call, a checkpoint, and the episode restored from it makes
// another. It returns the restored episode's trajectory, the checkpoint
// store and the checkpoint's id.
func mustRecordRestored(tb testing.TB) (file, store, id string) {
	tb.Helper()
	ctx := context.Background()
	rec, store := tb.TempDir(), tb.TempDir()
	b, err := app.New(company.World, app.Config{InstanceRoot: tb.TempDir(), Checkpoints: store, RecordDir: rec})
	if err != nil {
		tb.Fatal(err)
	}
	defer b.Close()
	inst, err := b.Open(ctx, openenv.OpenOptions{Task: "invoice_750", EpisodeID: "ep-r", Seed: 3})
	if err != nil {
		tb.Fatal(err)
	}
	inst.CallJSON(ctx, "invoice", []byte(`{"amount": 75}`))
	info, err := inst.(openenv.Checkpointer).Checkpoint(ctx, openenv.CheckpointRequest{Revision: 1, Attempt: "6f9619ff-8b86-d011-b42d-00c04fc964ff", Session: []byte(`{}`)})
	if err != nil {
		tb.Fatal(err)
	}
	inst.Close()
	restored, _, err := b.Restore(ctx, info.ID)
	if err != nil {
		tb.Fatal(err)
	}
	restored.CallJSON(ctx, "invoice", []byte(`{"amount": 750}`))
	if err := restored.Close(); err != nil {
		tb.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(rec, "*.jsonl"))
	for _, f := range files {
		if tr, err := task.ReadTrajectoryFile(f); err == nil && tr.Header.Checkpoint == info.ID {
			return f, store, info.ID
		}
	}
	tb.Fatal("no recording of the restored episode")
	return "", "", ""
}

// TestGradeCommand_Restored: the trajectory of a restored episode is
// replayed from the checkpoint it continues, found in --checkpoints;
// without the flag, or without the checkpoint there, grade says so
// instead of replaying it from the fixture.
func TestGradeCommand_Restored(t *testing.T) {
	file, store, id := mustRecordRestored(t)
	t.Run("OK", func(t *testing.T) {
		stdout, stderr, err := runGrade(t, "--world", "company", "--checkpoints", store, file)
		if err != nil || strings.Contains(stdout, "NON-DETERMINISTIC") || !strings.Contains(stdout, "episode ep-r, 1 call replayed") {
			t.Fatalf("err %v\nstdout %s\nstderr %s", err, stdout, stderr)
		}
	})
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"NoFlag", nil, "ERROR continues checkpoint " + id + ": pass --checkpoints to replay it"},
		{"NotInStore", []string{"--checkpoints", t.TempDir()}, "ERROR continues checkpoint " + id + ", which is not in "},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("SEAHAVEN_CHECKPOINTS", "")
			stdout, _, err := runGrade(t, append(append([]string{"--world", "company"}, c.args...), file)...)
			if err == nil || !strings.Contains(stdout, c.want) || strings.Contains(stdout, "NON-DETERMINISTIC") {
				t.Errorf("err %v\nstdout %s\nwant %q", err, stdout, c.want)
			}
		})
	}
	t.Run("NoStore", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "nowhere")
		_, _, err := runGrade(t, "--world", "company", "--checkpoints", missing, file)
		if want := "grade: --checkpoints " + missing + " is not a directory"; exitCode(err) != 2 || !strings.Contains(err.Error(), want) {
			t.Errorf("err %v, want exit 2 saying %q", err, want)
		}
	})
}

func TestGradeCommand(t *testing.T) {
	solved := mustRecord(t, "invoice_750", 3, [2]string{"invoice", `{"amount": 750}`})
	unsolved := mustRecord(t, "invoice_750", 3, [2]string{"invoice", `{"amount": 75}`})

	t.Run("OK", func(t *testing.T) {
		stdout, stderr, err := runGrade(t, "--world", "company", solved, unsolved)
		if err != nil {
			t.Fatalf("err %v; stderr %s", err, stderr)
		}
		want := solved + `: task invoice_750, episode invoice_750, 1 call replayed
  PASS  invoice filed (weight 1): expected 1, found 1
  PASS  charged on the company account (weight 1): expected 1, found 1
  PASS  no collateral damage (weight 1): 2 changes, all to main.invoices:insert, payments.charges:insert
  reward 1.00  done true
` + unsolved + `: task invoice_750, episode invoice_750, 1 call replayed
  FAIL  invoice filed (weight 1): expected 1, found 0
  FAIL  charged on the company account (weight 1): expected 1, found 0
  PASS  no collateral damage (weight 1): 2 changes, all to main.invoices:insert, payments.charges:insert
  reward 0.00  done false
`
		if stdout != want {
			t.Fatalf("stdout:\n%s\nwant:\n%s", stdout, want)
		}
	})
	t.Run("JSON", func(t *testing.T) {
		stdout, _, err := runGrade(t, "-json", solved)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Task   string      `json:"task"`
			Result task.Result `json:"result"`
		}
		if err := json.Unmarshal([]byte(stdout), &r); err != nil || r.Task != "invoice_750" || r.Result.Reward != 1 || len(r.Result.Checks) != 3 {
			t.Fatalf("%s: %+v, %v", stdout, r, err)
		}
	})
	t.Run("ErrNonDeterministic", func(t *testing.T) {
		data, err := os.ReadFile(solved)
		if err != nil {
			t.Fatal(err)
		}
		// As if the world minted other ids on replay: the recorded seed no
		// longer matches the recorded results.
		tampered := filepath.Join(t.TempDir(), "tampered.jsonl")
		if err := os.WriteFile(tampered, bytes.Replace(data, []byte(`"seed":3`), []byte(`"seed":4`), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, err := runGrade(t, solved, tampered)
		if code := exitCode(err); code != 1 {
			t.Fatalf("exit code %d, want 1", code)
		}
		if !strings.Contains(stdout, "  NON-DETERMINISTIC: call 1 (invoice): recorded result {") {
			t.Errorf("stdout lacks the mismatch:\n%s", stdout)
		}
		if stderr != "seahaven: grade: of the 2 files given, 1 did not replay as recorded\n" {
			t.Errorf("stderr %q", stderr)
		}
	})
	t.Run("ErrChangeLogTruncated", func(t *testing.T) {
		// A hire and 14 messages outgrow a 3000-byte change log: the hire
		// is dropped, and the grading that needs it fails, on the server
		// and in the replay, which keeps the bound the recording carries.
		calls := [][2]string{{"hire", `{"name":"Barbara Liskov","role":"engineer"}`}}
		for i := range 14 {
			calls = append(calls, [2]string{"chat_send_message", fmt.Sprintf(`{"channel":"general","text":"message %d"}`, i)})
		}
		file := mustRecordWith(t, "hire_liskov", composition.Options{MaxChangeLogBytes: 3000}, calls...)
		stdout, stderr, err := runGrade(t, file)
		if code := exitCode(err); code != 1 || !strings.Contains(stdout, "  GRADING FAILED: ") || !strings.Contains(stdout, "the change log was truncated") ||
			strings.Contains(stdout, "NON-DETERMINISTIC") || stderr != "seahaven: grade: of the 1 file given, 1 could not be graded\n" {
			t.Fatalf("exit code %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	})
	t.Run("ErrUnreadable", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.jsonl")
		os.WriteFile(bad, []byte("{}\n"), 0o644)
		stdout, stderr, err := runGrade(t, bad)
		if code := exitCode(err); code != 1 || !strings.Contains(stdout, `bad.jsonl: ERROR task: `+bad+`: line 1: type "", want "header"`) ||
			stderr != "seahaven: grade: of the 1 file given, 1 could not be replayed\n" {
			t.Fatalf("exit code %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	})
	t.Run("ErrNoFiles", func(t *testing.T) {
		_, stderr, err := runGrade(t)
		if code := exitCode(err); code != 2 || !strings.Contains(stderr, "Usage: seahaven grade") {
			t.Fatalf("exit code %d, stderr %q", code, stderr)
		}
	})
	t.Run("ErrUnknownWorld", func(t *testing.T) {
		_, _, err := runGrade(t, "--world", "bank", solved)
		if err == nil || !strings.Contains(err.Error(), `unknown world "bank"`) {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestGradeCommand_TimedOutCall: an episode with a call its deadline cut
// off replays as recorded: the call is replayed cut off too, not run to
// its end, so it and the calls after it match the recording.
func TestGradeCommand_TimedOutCall(t *testing.T) {
	ctx := context.Background()
	rec, err := task.NewRecorder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ep, err := task.Open(ctx, company.World, env.Task{}, composition.Options{Seed: 3, EpisodeID: "ep-t", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := ep.Record(rec); err != nil {
		t.Fatal(err)
	}
	late, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	for _, c := range []struct {
		ctx        context.Context
		tool, args string
	}{
		{ctx, "hire", `{"name": "Ada Lovelace"}`},
		{late, "hire", `{"name": "Barbara Liskov"}`},
		{ctx, "hire", `{"name": "Edsger Dijkstra"}`},
	} {
		ep.CallJSON(c.ctx, c.tool, []byte(c.args))
	}
	path := ep.Recording().Path()
	if err := ep.Close(); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); !bytes.Contains(data, []byte(`"error_type":"timeout"`)) {
		t.Fatalf("the recording holds no timeout:\n%s", data)
	}
	stdout, stderr, err := runGrade(t, "--world", "company", path)
	if err != nil {
		t.Fatalf("err %v; stdout %s; stderr %s", err, stdout, stderr)
	}
	if want := path + ": no task, episode ep-t, 3 calls replayed\n"; stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
	}
}

// TestGradeCommand_Warnings: a trajectory recorded with another version
// of the world, or under another definition of its task, replays with a
// warning naming both, in the text and in -json, and grade exits 0 with
// nothing on stderr: the calls replayed as recorded. One recorded before
// headers named the definition replays without a warning.
func TestGradeCommand_Warnings(t *testing.T) {
	solved := mustRecord(t, "invoice_750", 3, [2]string{"invoice", `{"amount": 750}`})
	tr, err := task.ReadTrajectoryFile(solved)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := task.ForWorld(company.World)
	if err != nil {
		t.Fatal(err)
	}
	tk, _ := task.Find(tasks, "invoice_750")
	hash := task.DefinitionHash(tk)
	if tr.Header.WorldVersion != company.World.Version() || tr.Header.TaskSHA256 != hash {
		t.Fatalf("header %+v, want world version %s and task_sha256 %s", tr.Header, company.World.Version(), hash)
	}
	data, err := os.ReadFile(solved)
	if err != nil {
		t.Fatal(err)
	}
	// tamper writes the recording with its header's old value replaced.
	tamper := func(old, new string) string {
		t.Helper()
		if !bytes.Contains(data, []byte(old)) {
			t.Fatalf("the recording lacks %s", old)
		}
		f := filepath.Join(t.TempDir(), "tampered.jsonl")
		if err := os.WriteFile(f, bytes.Replace(data, []byte(old), []byte(new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	other := strings.Repeat("ab", 32)
	for _, c := range []struct {
		name, file, want string
	}{
		{"WorldVersion", tamper(`"world_version":"`+company.World.Version()+`"`, `"world_version":"0.0.9"`),
			"recorded with company 0.0.9, replayed with " + company.World.Version()},
		{"TaskDefinition", tamper(`"task_sha256":"`+hash+`"`, `"task_sha256":"`+other+`"`),
			`recorded under task "invoice_750" of definition sha256 ` + other[:12] + `…, replayed under another definition of it, ` + hash[:12] +
				`… (the task was edited since, or the recording is another server's)`},
		// A recording made before headers carried task_sha256 says
		// nothing of its definition.
		{"NoTaskDefinition", tamper(`"task_sha256":"`+hash+`",`, ``), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, err := runGrade(t, "--world", "company", c.file)
			if err != nil || stderr != "" {
				t.Fatalf("err %v, stderr %q: a warning is no failure", err, stderr)
			}
			want := c.file + ": task invoice_750, episode invoice_750, 1 call replayed\n"
			wantWarnings := []string{}
			if c.want != "" {
				want += "  warning: " + c.want + "\n"
				wantWarnings = append(wantWarnings, c.want)
			}
			want += `  PASS  invoice filed (weight 1): expected 1, found 1
  PASS  charged on the company account (weight 1): expected 1, found 1
  PASS  no collateral damage (weight 1): 2 changes, all to main.invoices:insert, payments.charges:insert
  reward 1.00  done true
`
			if stdout != want {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
			}
			stdout, stderr, err = runGrade(t, "--world", "company", "-json", c.file)
			if err != nil || stderr != "" {
				t.Fatalf("-json: err %v, stderr %q", err, stderr)
			}
			var r struct {
				Warnings   []string    `json:"warnings"`
				Mismatches []string    `json:"mismatches"`
				Result     task.Result `json:"result"`
			}
			if err := json.Unmarshal([]byte(stdout), &r); err != nil {
				t.Fatalf("-json: %v\n%s", err, stdout)
			}
			if !slices.Equal(r.Warnings, wantWarnings) || r.Mismatches == nil || len(r.Mismatches) != 0 || r.Result.Reward != 1 {
				t.Errorf("-json: %s\nwant the warnings %q", stdout, wantWarnings)
			}
		})
	}
}
