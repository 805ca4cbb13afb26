package task_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/internal/testfs"
	"github.com/seahaven/seahaven/internal/wirejson"
	"github.com/seahaven/seahaven/task"
)

func companyTask(tb testing.TB, id string) (env.Task, []env.Task) {
	tb.Helper()
	tasks, err := task.ForWorld(company.World)
	if err != nil {
		tb.Fatal(err)
	}
	tk, ok := task.Find(tasks, id)
	if !ok {
		tb.Fatalf("no task %s", id)
	}
	return tk, tasks
}

// recordInvoice records an episode of invoice_750: one refused call, one
// call with bad arguments, the solution, each graded; then closes it and
// returns the file.
func recordInvoice(t *testing.T, opts composition.Options) string {
	t.Helper()
	ctx := context.Background()
	tk, _ := companyTask(t, "invoice_750")
	rec, err := task.NewRecorder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opts.Dir = t.TempDir()
	ep, err := task.Open(ctx, company.World, tk, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := ep.Record(rec); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tool, args string }{
		{"hire", `{"name": "Edsger Dijkstra"}`},
		{"invoice", `{"amount": -1}`},
		{"invoice", `{"amount": 750}`},
	} {
		ep.CallJSON(ctx, c.tool, []byte(c.args))
		if _, err := ep.Grade(ctx); err != nil {
			t.Fatal(err)
		}
	}
	path := ep.Recording().Path()
	if err := ep.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRecorder_Episode(t *testing.T) {
	path := recordInvoice(t, composition.Options{EpisodeID: "ep-7", Seed: 5})
	if !recordingName("ep-7").MatchString(filepath.Base(path)) {
		t.Errorf("file %s, want ep-7.<start>.<random>.jsonl", path)
	}
	tr, err := task.ReadTrajectoryFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := tr.Header
	if h.Type != task.LineHeader || h.Task != "invoice_750" || h.World != "company" || h.WorldVersion != company.World.Version() ||
		h.Fixture != "acme" || len(h.FixtureSHA256) != 5 || h.Seed != 5 || h.Now != company.AcmeNow || h.EpisodeID != "ep-7" {
		t.Fatalf("header %+v", h)
	}
	if len(tr.Calls) != 3 {
		t.Fatalf("%d calls, want 3", len(tr.Calls))
	}
	refused, bad, ok := tr.Calls[0], tr.Calls[1], tr.Calls[2]
	if refused.Error == nil || refused.Error.Type != env.KindNotFound || refused.Result != nil {
		t.Errorf("refused call %+v", refused)
	}
	if bad.Error == nil || bad.Error.Type != env.KindInvalidArgs {
		t.Errorf("bad call %+v", bad)
	}
	var inv company.Invoice
	if ok.Error != nil || json.Unmarshal(ok.Result, &inv) != nil || inv.Amount != 750 || string(ok.Arguments) != `{"amount":750}` {
		t.Errorf("call %+v", ok)
	}
	if ok.Reward == nil || *ok.Reward != 1 || ok.Done == nil || !*ok.Done || refused.Reward == nil || *refused.Reward == 1 {
		t.Errorf("rewards on the lines: %v %v", refused.Reward, ok.Reward)
	}
	if tr.End == nil || tr.End.Calls != 3 || tr.End.Result == nil || tr.End.Result.Reward != 1 || len(tr.End.StateSHA256) != 5 {
		t.Fatalf("end %+v", tr.End)
	}
}

func TestReplayTrajectory(t *testing.T) {
	path := recordInvoice(t, composition.Options{EpisodeID: "replayed", Seed: 5})
	_, tasks := companyTask(t, "invoice_750")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	tests := []struct {
		name   string               // case
		edit   func(lines []string) // changes the recorded lines
		wrong  []string             // substrings of the mismatches, in order; none for a faithful replay
		reward float64              // the replay's reward
	}{
		{name: "Faithful", edit: func([]string) {}, reward: 1},
		{name: "OtherSeed", edit: func(l []string) {
			l[0] = strings.Replace(l[0], `"seed":5`, `"seed":6`, 1)
		}, wrong: []string{"call 3 (invoice): recorded result", "final state differs from the recording in main, payments"}, reward: 1},
		{name: "TamperedResult", edit: func(l []string) {
			l[3] = strings.Replace(l[3], `"amount":750},"reward"`, `"amount":751},"reward"`, 1)
		}, wrong: []string{`call 3 (invoice): recorded result {"id":`}, reward: 1},
		{name: "TamperedError", edit: func(l []string) {
			l[1] = strings.Replace(l[1], `"error_type":"tool_not_found"`, `"error_type":"execution_error"`, 1)
		}, wrong: []string{`call 1 (hire): recorded error execution_error "unknown tool`}, reward: 1},
		{name: "TamperedReward", edit: func(l []string) {
			l[4] = strings.Replace(l[4], `"reward":1,`, `"reward":0.5,`, 1)
		}, wrong: []string{"recorded reward 0.5 (done true), replay reward 1 (done true)"}, reward: 1},
		// The rewards a trainer was answered, graded again step by step.
		{name: "TamperedStepReward", edit: func(l []string) {
			l[3] = strings.Replace(l[3], `"reward":1,"done":true}`, `"reward":0.5,"done":true}`, 1)
		}, wrong: []string{"call 3 (invoice): recorded reward 0.5 (done true), replay reward 1 (done true)"}, reward: 1},
		{name: "StepAfterDone", edit: func(l []string) {
			l[2] = strings.Replace(l[2], `"reward":0,"done":false}`, `"reward":0,"done":true}`, 1)
		}, wrong: []string{"call 2 (invoice): recorded reward 0 (done true), replay reward 0 (done false)", "call 3 (invoice) follows the step its grading said done"}, reward: 1},
		{name: "CutShort", edit: func(l []string) {
			l[3], l[4] = "", "" // the solving call and the end line are lost
		}, reward: 0}, // the list call changed nothing: an idle episode scores 0
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := append([]string(nil), lines...)
			tt.edit(l)
			var kept []string
			for _, s := range l {
				if s != "" {
					kept = append(kept, s)
				}
			}
			tr, rep := replayText(t, company.World, tasks, strings.Join(kept, "\n")+"\n")
			if len(rep.Mismatches) != len(tt.wrong) {
				t.Fatalf("mismatches %q, want %d", rep.Mismatches, len(tt.wrong))
			}
			for i, w := range tt.wrong {
				if !strings.Contains(rep.Mismatches[i], w) {
					t.Errorf("mismatch %d = %q, want it to contain %q", i, rep.Mismatches[i], w)
				}
			}
			if rep.Result == nil || rep.Result.Reward != tt.reward {
				t.Fatalf("replay result %+v, want reward %v", rep.Result, tt.reward)
			}
			if tt.name == "Faithful" && !reflect.DeepEqual(rep.StateSHA256, tr.End.StateSHA256) {
				t.Fatalf("state hashes %v, recorded %v", rep.StateSHA256, tr.End.StateSHA256)
			}
		})
	}
}

// TestReadTrajectory_EndWithoutState: an end line without state_sha256,
// which every recording's end line holds, is refused, where the replay
// then compared its final state with nothing and said nothing.
func TestReadTrajectory_EndWithoutState(t *testing.T) {
	text := `{"type":"header","world":"company","fixture":"acme"}` + "\n" + `{"type":"end","calls":0}` + "\n"
	if _, err := task.ReadTrajectory(strings.NewReader(text)); err == nil || err.Error() != "line 2 (end): state_sha256 is missing" {
		t.Errorf("ReadTrajectory: %v, want line 2 refused for its missing state_sha256", err)
	}
}

func TestReplayTrajectory_Errors(t *testing.T) {
	ctx := context.Background()
	_, tasks := companyTask(t, "invoice_750")
	tests := []struct {
		name   string // case
		header string // the header line
		err    string // substring of the error
	}{
		{"OtherWorld", `{"type":"header","task":"","world":"shop","world_version":"1.0.0","fixture":"","seed":0,"now":"","episode_id":""}`, `the trajectory is of world "shop", not "company"`},
		{"UnknownTask", `{"type":"header","task":"nope","world":"company","world_version":"0.1.0","fixture":"acme","seed":0,"now":"","episode_id":""}`, `task "nope" is not a task of company`},
		{"MissingFixture", `{"type":"header","task":"","world":"company","world_version":"0.1.0","fixture":"gone","seed":0,"now":"","episode_id":""}`, "gone"},
		// acme built again since the recording: its calls would differ for
		// that alone, and the replay would blame the world.
		{"OtherFixtureFiles", `{"type":"header","task":"","world":"company","world_version":"0.1.0","fixture":"acme","fixture_sha256":{"main":"` + strings.Repeat("ab", 32) + `"},"seed":0,"now":"","episode_id":""}`,
			`task: fixture "acme" is not the one the episode was recorded on: the file of its node main has SHA-256 `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := task.ReadTrajectory(strings.NewReader(tt.header + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = task.ReplayTrajectory(ctx, company.World, tasks, tr, composition.Options{Dir: t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want one containing %q", err, tt.err)
			}
		})
	}
}

// An episode without a task records and replays too; there is nothing to
// grade.
func TestReplayTrajectory_WithoutTask(t *testing.T) {
	ctx := context.Background()
	rec, err := task.NewRecorder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ep, err := task.Open(ctx, company.World, env.Task{}, composition.Options{Fixture: company.AcmeID, Seed: 9, Dir: t.TempDir(), ControlTools: true, ClockMode: env.ClockStep})
	if err != nil {
		t.Fatal(err)
	}
	if err := ep.Record(rec); err != nil {
		t.Fatal(err)
	}
	mustCall(t, ep, "chat_send_message", `{"channel": "general", "text": "hello"}`)
	mustCall(t, ep, env.ControlTool, `{"action": "advance_clock", "seconds": 60}`)
	mustCall(t, ep, "invoice", `{"amount": 10}`)
	tr := closeAndRead(t, ep)
	if tr.Header.Task != "" || !tr.Header.ControlTools || tr.Header.ClockMode != env.ClockStep || tr.End == nil || tr.End.Result != nil {
		t.Fatalf("trajectory %+v", tr)
	}
	rep, err := task.ReplayTrajectory(ctx, company.World, nil, tr, composition.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Mismatches) != 0 || rep.Result != nil || rep.Calls != 3 {
		t.Fatalf("replay %+v", rep)
	}
}

// TestReplayTrajectory_ArgumentsAsGiven: a tool that reads its raw
// arguments (c.Call.Arguments) sees on replay the text its caller sent,
// white space and all (as Python's json.dumps writes it), and the replay
// matches. Before, the recording kept their compact form alone, the tool
// returned another text on replay, and the world was reported
// non-deterministic.
func TestReplayTrajectory_ArgumentsAsGiven(t *testing.T) {
	ctx := context.Background()
	w := newLedger("ledger_rawargs")
	env.Tool(w, "raw", "Return the arguments as given.", func(c *env.Ctx, _ struct {
		K string `json:"k"`
	}) (string, error) {
		return string(c.Call.Arguments), nil
	})
	rec, err := task.NewRecorder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ep := mustOpen(t, w, env.Task{}, composition.Options{})
	if err := ep.Record(rec); err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{`{"k": "a"}`, `{"k":"b"}`, "{\n  \"k\": \"c\"\n}"} {
		if got := mustCall(t, ep, "raw", args); got != args {
			t.Fatalf("raw(%s) = %v", args, got)
		}
	}
	tr := closeAndRead(t, ep)
	if tr.Calls[1].ArgumentsText != nil {
		t.Errorf("compact arguments kept as text too: %+v", tr.Calls[1])
	}
	rep, err := task.ReplayTrajectory(ctx, w, nil, tr, composition.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Mismatches) != 0 || rep.Calls != 3 {
		t.Errorf("replay %d calls, mismatches %q; want 3 and none", rep.Calls, rep.Mismatches)
	}
}

// An episode recorded with a small change-log bound, whose grading fails
// because the log lost the record a check needs, replays within the bound
// its header carries and fails grading the same way: a match. The replay
// ran with the default bound, graded 1 where the server could not grade,
// and flagged nothing. A header without the bound (an older recording)
// means the default: that replay grades, and differs from the recording's
// failed grading.
func TestReplayTrajectory_ChangeLogBound(t *testing.T) {
	ctx := context.Background()
	w := newLedger("ledger_bound")
	tk := env.Task{ID: "t", Instruction: "Add a note.", Checks: []env.Check{{MustChange: []string{"main.notes"}}}}
	ep := mustOpen(t, w, tk, composition.Options{MaxChangeLogBytes: 300})
	startRecording(t, ep)
	mustCall(t, ep, "note", `{"body":"`+strings.Repeat("n", 500)+`"}`)
	mustCall(t, ep, "add", `{"amount": 5}`)
	if _, err := ep.Grade(ctx); err == nil || !strings.Contains(err.Error(), "the change log was truncated") {
		t.Fatalf("Grade: %v, want the log truncated", err)
	}
	tr := closeAndRead(t, ep)
	if tr.Header.MaxChangeLogBytes != 300 || tr.End == nil || tr.End.Result != nil {
		t.Fatalf("header %+v, end %+v; want the bound 300 and no result", tr.Header, tr.End)
	}
	rep, err := task.ReplayTrajectory(ctx, w, []env.Task{tk}, tr, composition.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Mismatches) != 0 || rep.Result != nil || !strings.Contains(rep.GradeError, "the change log was truncated (its oldest 1 record dropped") {
		t.Fatalf("replay %+v; want its grading to fail as the recording's did", rep)
	}

	tr.Header.MaxChangeLogBytes = 0
	rep, err = task.ReplayTrajectory(ctx, w, []env.Task{tk}, tr, composition.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Result == nil || rep.Result.Reward != 1 || len(rep.Mismatches) != 1 || !strings.Contains(rep.Mismatches[0], "recorded grading failed (the end line holds no result), replay reward 1") {
		t.Fatalf("replay %+v; want it to grade 1 and differ from the recording", rep)
	}
}

// An episode restored into its world at another version (a checkpoint
// taken before a server's upgrade, restored after it) is recorded with the
// version its calls after the restore ran on, and its replay on that
// version warns of nothing; where before the header kept the version the
// checkpoint was taken on, and the replay on the version the calls ran on
// warned that it was another.
func TestResume_RecordsTheWorldVersion(t *testing.T) {
	ctx := context.Background()
	ep := mustOpen(t, newLedgerAt("ledger", "1.0.0"), env.Task{}, composition.Options{})
	mustCall(t, ep, "add", `{"amount": 5}`)
	cp, saved, err := ep.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	up := newLedgerAt("ledger", "1.1.0")
	rec, err := task.NewRecorder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	resumed, err := task.Resume(ctx, up, env.Task{}, saved, composition.Options{Checkpoint: cp, Dir: t.TempDir()}, rec, "ck")
	if err != nil {
		t.Fatal(err)
	}
	mustCall(t, resumed, "add", `{"amount": 7}`)
	tr := closeAndRead(t, resumed)
	if tr.Header.WorldVersion != "1.1.0" || tr.Header.Checkpoint != "ck" {
		t.Errorf("header: world_version %q, checkpoint %q; want 1.1.0, the version the calls ran on, and ck", tr.Header.WorldVersion, tr.Header.Checkpoint)
	}
	rep, err := task.ReplayResumed(ctx, up, nil, tr, cp, saved, composition.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Calls != 1 || len(rep.Mismatches) != 0 || len(rep.Warnings) != 0 {
		t.Errorf("replay on 1.1.0: %+v, want the call as recorded and no warning", rep)
	}
}

// A server fails a call whose result JSON cannot encode, rolling back what
// it wrote, and records that failure; the replay makes the call fail the
// same way. It made the call succeed, with its writes kept, and then gave
// up on the whole trajectory, unable to encode that result.
func TestReplayTrajectory_UnencodableResult(t *testing.T) {
	w := newLedger("ledger")
	env.Tool(w, "ratio", "Note a ratio.", func(c *env.Ctx, in noteArgs) (float64, error) {
		_, err := c.DB.Exec("INSERT INTO notes (body) VALUES (?)", in.Body)
		return math.NaN(), err
	})
	recorded := `{"type":"header","task":"","world":"ledger","world_version":"1.0.0","fixture":"","seed":0,"now":"","episode_id":"e"}
{"type":"call","tool":"ratio","arguments":{"body":"lost"},"error":{"error_type":"execution_error","message":"tool \"ratio\" returned a result that cannot be encoded as JSON: json: unsupported value: NaN"}}
{"type":"call","tool":"note","arguments":{"body":"kept"},"result":1}
`
	_, rep := replayText(t, w, nil, recorded)
	if rep.Calls != 2 || len(rep.Mismatches) != 0 || len(rep.Warnings) != 1 || rep.Warnings[0] != noEndLine {
		t.Fatalf("replay %+v, want both calls made as recorded, and the one warning of a recording with no end line", rep)
	}
}

// noEndLine is the warning of a replay of a recording with no end line.
const noEndLine = "the recording has no end line: its episode did not close cleanly (its server stopped, or the recording failed, first), so the final state and grade it ended with are not recorded, and the replay's are compared with nothing"

// A recording its server left without an end line (it stopped before the
// episode closed) replays with a warning saying its final state was not
// compared. It replayed with none, as if the whole episode had checked.
func TestReplayTrajectory_NoEndLine(t *testing.T) {
	w := newLedger("ledger")
	header := `{"type":"header","task":"","world":"ledger","world_version":"1.0.0","fixture":"","seed":0,"now":"","episode_id":"e"}
{"type":"call","tool":"note","arguments":{"body":"kept"},"result":1}
`
	_, rep := replayText(t, w, nil, header)
	if rep.Calls != 1 || len(rep.Mismatches) != 0 || !slices.Equal(rep.Warnings, []string{noEndLine}) {
		t.Errorf("replay without an end line: %+v, want the call as recorded and the warning %q", rep, noEndLine)
	}
	ended := header + fmt.Sprintf(`{"type":"end","calls":1,"state_sha256":{"main":%q}}`+"\n", rep.StateSHA256["main"])
	if _, rep := replayText(t, w, nil, ended); rep.Calls != 1 || len(rep.Mismatches) != 0 || len(rep.Warnings) != 0 {
		t.Errorf("replay with an end line: %+v, want the call as recorded and no warning", rep)
	}
}

// The replay's check of a result is the server's encoding, so a result that
// fails it fails with the server's words, which the recording holds. Those
// of encoding/json differ for a MarshalJSON that fails or a json.Number
// that is no number: the replay reported such calls as differing.
func TestReplayTrajectory_UnencodableResultWords(t *testing.T) {
	w := newLedger("ledger")
	bad := map[string]any{"raw": json.RawMessage(`{bad`), "number": json.Number("x")}
	env.Tool(w, "bad", "Return a result no JSON encodes.", func(c *env.Ctx, in noteArgs) (any, error) {
		_, err := c.DB.Exec("INSERT INTO notes (body) VALUES (?)", in.Body)
		return bad[in.Body], err
	})
	var lines []string
	for _, body := range []string{"raw", "number"} {
		_, err := wirejson.Marshal(bad[body]) // as the server checks a result
		if err == nil {
			t.Fatalf("%s encodes", body)
		}
		msg, _ := json.Marshal(fmt.Sprintf("tool %q returned a result that cannot be encoded as JSON: %v", "bad", err))
		lines = append(lines, `{"type":"call","tool":"bad","arguments":{"body":"`+body+`"},"error":{"error_type":"execution_error","message":`+string(msg)+`}}`)
	}
	recorded := `{"type":"header","task":"","world":"ledger","world_version":"1.0.0","fixture":"","seed":0,"now":"","episode_id":"e"}` + "\n" + strings.Join(lines, "\n") + "\n"
	_, rep := replayText(t, w, nil, recorded)
	if rep.Calls != 2 || len(rep.Mismatches) != 0 {
		t.Fatalf("replay %+v, want both calls failing as recorded", rep)
	}
}

// A number past float64's range (an argument of type any, given back) is
// the same number in the recording and the replay, written alike or not.
// They compared unequal: the replay reported the call as differing.
func TestReplayTrajectory_HugeNumber(t *testing.T) {
	w := newLedger("ledger")
	type echoArgs struct {
		V any `json:"v"`
	}
	env.Tool(w, "echo", "Give the value back.", func(c *env.Ctx, in echoArgs) (any, error) { return in.V, nil })
	header := `{"type":"header","task":"","world":"ledger","world_version":"1.0.0","fixture":"","seed":0,"now":"","episode_id":"e"}`
	for _, tt := range []struct {
		arg, result string // the recorded call's argument and result
		same        bool   // whether the replay's result is the recorded one
	}{
		{"1e400", "1e400", true},
		{"1e400", "10e399", true},
		{"-1.5e400", "-1.5E+400", true},
		{"1e400", "1e401", false},
		{"1e400", "1", false},
	} {
		recorded := header + "\n" + `{"type":"call","tool":"echo","arguments":{"v":` + tt.arg + `},"result":` + tt.result + "}\n"
		_, rep := replayText(t, w, nil, recorded)
		if same := len(rep.Mismatches) == 0; same != tt.same {
			t.Errorf("replay of echo(%s) recorded as %s: mismatches %q, want the same result %v", tt.arg, tt.result, rep.Mismatches, tt.same)
		}
	}
}

// replayText reads the trajectory text and replays it on w with tasks,
// failing the test if it cannot.
func replayText(t *testing.T, w *env.World, tasks []env.Task, text string) (*task.Trajectory, *task.Replay) {
	t.Helper()
	tr, err := task.ReadTrajectory(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := task.ReplayTrajectory(context.Background(), w, tasks, tr, composition.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return tr, rep
}

// recordingName matches the name of a recording of episode base.
func recordingName(base string) *regexp.Regexp {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(base) + `\.[0-9]{8}T[0-9]{6}\.[0-9]{3}Z\.[0-9a-f]{8}\.jsonl$`)
}

func TestRecorder_Names(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "dir")
	rec, err := task.NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		id   string // the episode id
		base string // the name's first part
	}{
		{"ep", "ep"},
		{"ep", "ep"},
		{"a.b_c-1", "a.b_c-1"},
		{"../escape", "episode"},
		{"", "episode"},
	} {
		r, err := rec.Start(task.Header{World: "w", EpisodeID: tt.id})
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Dir(r.Path()) != dir {
			t.Fatalf("file %s outside %s", r.Path(), dir)
		}
		if name := filepath.Base(r.Path()); !recordingName(tt.base).MatchString(name) {
			t.Errorf("episode %q recorded as %s, want %s.<start>.<random>.jsonl", tt.id, name, tt.base)
		}
		r.Close()
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 5 {
		t.Errorf("%d files (%v), want 5", len(ents), err)
	}
}

// TestRecorder_ManyWithOneID records more episodes with one id than the
// recorder once allowed (1,000), each with one attempt at a name.
func TestRecorder_ManyWithOneID(t *testing.T) {
	dir := t.TempDir()
	rec, err := task.NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	const n = 1100
	seen := map[string]bool{}
	for i := range n {
		r, err := rec.Start(task.Header{World: "w", EpisodeID: "ep-1"})
		if err != nil {
			t.Fatalf("recording %d: %v", i+1, err)
		}
		seen[filepath.Base(r.Path())] = true
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct files for %d recordings", len(seen), n)
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != n {
		t.Fatalf("%d files (%v), want %d", len(ents), err, n)
	}
}

func TestReadTrajectory_Errors(t *testing.T) {
	const h = `{"type":"header","task":"","world":"w","world_version":"1","fixture":"","seed":0,"now":"","episode_id":""}`
	const c = `{"type":"call","tool":"t","arguments":{},"result":1}`
	const e = `{"type":"end","calls":1,"state_sha256":{}}`
	tests := []struct {
		name string // case
		text string // the file
		err  string // substring of the error
	}{
		{"Empty", "", "empty trajectory"},
		{"NoHeader", c + "\n", `line 1: type "call", want "header"`},
		{"NotJSON", h + "\nnope\n", "line 2: not a JSON object"},
		{"BlankLine", h + "\n\n", "line 2: empty line"},
		{"UnknownKey", h + "\n" + strings.Replace(c, `"tool"`, `"tol":"x","tool"`, 1) + "\n", `line 2 (call): json: unknown field "tol"`},
		{"ResultAndError", h + "\n" + `{"type":"call","tool":"t","arguments":{},"result":1,"error":{"error_type":"x","message":"y"}}` + "\n", "want exactly one of result and error"},
		{"NeitherResultNorError", h + "\n" + `{"type":"call","tool":"t","arguments":{}}` + "\n", "want exactly one of result and error"},
		{"NoTool", h + "\n" + strings.Replace(c, `"tool":"t"`, `"tool":""`, 1) + "\n", "tool is empty"},
		{"SecondHeader", h + "\n" + h + "\n", `line 2: type "header", want "call"`},
		{"AfterEnd", h + "\n" + e + "\n" + c + "\n", `line 3: a "call" line after the end line`},
		{"NoWorld", strings.Replace(h, `"world":"w"`, `"world":""`, 1) + "\n", "world is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := task.ReadTrajectory(strings.NewReader(tt.text))
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want one containing %q", err, tt.err)
			}
		})
	}
}

// FuzzReadTrajectory: ReadTrajectory never panics, and what it accepts
// reads back the same once written out again.
func FuzzReadTrajectory(f *testing.F) {
	f.Add([]byte(`{"type":"header","task":"a","world":"w","world_version":"1","fixture":"f","seed":3,"now":"n","episode_id":"e","startup":{"k":[1,2.5]}}` + "\n" +
		`{"type":"call","tool":"t","arguments":{"x":1},"result":{"id":"y"},"reward":0.5,"done":false}` + "\n" +
		`{"type":"call","tool":"t","arguments":null,"arguments_text":"{bad","error":{"error_type":"invalid_args","message":"m"}}` + "\n" +
		`{"type":"end","calls":2,"result":{"task":"a","reward":1,"done":true,"checks":[]},"state_sha256":{"main":"00"}}` + "\n"))
	f.Add([]byte(`{"type":"header","world":"w"}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := task.ReadTrajectory(bytes.NewReader(data))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.Encode(tr.Header)
		for _, c := range tr.Calls {
			enc.Encode(c)
		}
		if tr.End != nil {
			enc.Encode(tr.End)
		}
		again, err := task.ReadTrajectory(&buf)
		if err != nil {
			t.Fatalf("a re-written trajectory does not read: %v\n%s", err, buf.String())
		}
		if !reflect.DeepEqual(again.Header.Task, tr.Header.Task) || len(again.Calls) != len(tr.Calls) || (again.End == nil) != (tr.End == nil) {
			t.Fatalf("round trip differs:\n%+v\n%+v", tr, again)
		}
	})
}

// TestRecording_DiskFull fills the recording's file system: the write that
// fails stops the recording, its cut-off part is removed, and the file
// reads back as the whole lines before it and no end line. Before, the
// part stayed and the next line ran into it: the file no longer parsed.
func TestRecording_DiskFull(t *testing.T) {
	dir := testfs.MountTmpfs(t, "64k")
	rec, err := task.NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rec.Start(task.Header{World: "company", EpisodeID: "full"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	args := json.RawMessage(`{"note":"` + strings.Repeat("x", 10<<10) + `"}`)
	line, err := task.NewCallLine("invoice", args, map[string]int{"amount": 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	written := 0
	for ; written < 100; written++ {
		if err = r.Call(line); err != nil {
			break
		}
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("after %d calls: %v, want ENOSPC", written, err)
	}
	// Room again (another file removed, say): the recording stays stopped,
	// so the file never has a gap.
	if err := r.Call(line); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("recording stopped after %d calls", written)) || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("a call after the stop: %v", err)
	}
	if err := r.End(task.EndLine{}); err == nil {
		t.Error("End after the stop succeeded")
	}
	f, err := os.Open(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := task.ReadTrajectory(f)
	if err != nil {
		t.Fatalf("the file does not read back: %v", err)
	}
	if len(tr.Calls) != written || tr.End != nil {
		t.Errorf("read back %d calls and end %v, want %d calls and no end", len(tr.Calls), tr.End, written)
	}
}

// TestEpisode_RecordingStopped: once a line of an episode cannot be
// written, every later call of the episode fails as that one did, the
// first included (its own line is the one the failed write dropped).
func TestEpisode_RecordingStopped(t *testing.T) {
	ctx := context.Background()
	tk, _ := companyTask(t, "invoice_750")
	rec, err := task.NewRecorder(testfs.MountTmpfs(t, "64k"))
	if err != nil {
		t.Fatal(err)
	}
	ep, err := task.Open(ctx, company.World, tk, composition.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	if err := ep.Record(rec); err != nil {
		t.Fatal(err)
	}
	// Refused, and recorded with its arguments: 8 KiB a line.
	args := []byte(`{"amount": 750, "memo": "` + strings.Repeat("m", 8<<10) + `"}`)
	var calls int
	var ie *env.InfraError
	for ; calls < 100; calls++ {
		if _, err = ep.CallJSON(ctx, "invoice", args); errors.As(err, &ie) {
			break
		}
	}
	if ie == nil || ie.Kind != env.FaultDiskFull {
		t.Fatalf("after %d calls: %v, want the disk-full fault", calls, err)
	}
	for i := range 2 {
		if _, err := ep.CallJSON(ctx, "invoice", []byte(`{"amount": 1}`)); !errors.As(err, &ie) || !strings.Contains(err.Error(), "recording stopped") {
			t.Errorf("call %d after the stop: %v, want the fault saying the recording stopped", i+1, err)
		}
	}
}

// A trajectory's header carries the hash of its task's definition, and a
// replay under another definition of the same task id (tasks.yaml edited
// since, or another server's) warns, naming both hashes; where before the
// header held only the id and the replay graded under whatever definition
// it found, silently. A header without the hash (an older recording) is
// replayed without the warning: nothing says which definition it ran.
func TestReplayTrajectory_TaskDefinition(t *testing.T) {
	ctx := context.Background()
	w := newLedger("ledger_def")
	tk := env.Task{ID: "t", Instruction: "Add an entry of 5.", Checks: []env.Check{{SQL: "SELECT count(*) FROM entries WHERE amount = 5"}}}
	ep := mustOpen(t, w, tk, composition.Options{})
	startRecording(t, ep)
	mustCall(t, ep, "add", `{"amount": 5}`)
	tr := closeAndRead(t, ep)
	if tr.Header.TaskSHA256 != task.DefinitionHash(tk) {
		t.Fatalf("header task_sha256 %q, want %q", tr.Header.TaskSHA256, task.DefinitionHash(tk))
	}
	rep, err := task.ReplayTrajectory(ctx, w, []env.Task{tk}, tr, composition.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Warnings) != 0 || len(rep.Mismatches) != 0 {
		t.Fatalf("replay under the same definition: %+v, want no warning", rep)
	}

	edited := tk
	edited.Checks = []env.Check{{SQL: "SELECT count(*) FROM entries WHERE amount = 7"}}
	rep, err = task.ReplayTrajectory(ctx, w, []env.Task{edited}, tr, composition.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	old, now := task.DefinitionHash(tk), task.DefinitionHash(edited)
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], old[:12]) || !strings.Contains(rep.Warnings[0], now[:12]) || !strings.Contains(rep.Warnings[0], `task "t"`) {
		t.Fatalf("replay under an edited definition: warnings %q, want one naming %.12s and %.12s", rep.Warnings, old, now)
	}

	tr.Header.TaskSHA256 = ""
	rep, err = task.ReplayTrajectory(ctx, w, []env.Task{edited}, tr, composition.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Warnings) != 0 {
		t.Fatalf("replay of a header without task_sha256: warnings %q, want none", rep.Warnings)
	}
}

// An episode restored on a server whose task of the same id is defined
// otherwise (its tasks.yaml edited since the checkpoint, or another
// replica's) is recorded with the hash of the definition its calls are
// graded under there, and its replay under that definition warns of
// nothing; the checkpoint keeps the hash it was taken under. Before, the
// restored header kept the checkpoint's hash, and the replay under the
// definition the calls were graded under warned that it was another.
func TestResume_RecordsTheTaskDefinition(t *testing.T) {
	ctx := context.Background()
	w := newLedger("ledger_resume_def")
	tk := env.Task{ID: "t", Instruction: "Add an entry of 5.", Checks: []env.Check{{SQL: "SELECT count(*) FROM entries WHERE amount = 5"}}}
	ep := mustOpen(t, w, tk, composition.Options{})
	mustCall(t, ep, "add", `{"amount": 5}`)
	cp, saved, err := ep.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Header.TaskSHA256 != task.DefinitionHash(tk) {
		t.Fatalf("checkpoint's header task_sha256 %q, want the definition it was taken under, %q", saved.Header.TaskSHA256, task.DefinitionHash(tk))
	}
	edited := tk
	edited.Instruction = "Add an entry of 7."
	edited.Checks = []env.Check{{SQL: "SELECT count(*) FROM entries WHERE amount = 7"}}
	rec, err := task.NewRecorder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	resumed, err := task.Resume(ctx, w, edited, saved, composition.Options{Checkpoint: cp, Dir: t.TempDir()}, rec, "ck")
	if err != nil {
		t.Fatal(err)
	}
	mustCall(t, resumed, "add", `{"amount": 7}`)
	tr := closeAndRead(t, resumed)
	if want := task.DefinitionHash(edited); tr.Header.TaskSHA256 != want {
		t.Fatalf("restored header task_sha256 %q, want %q, the definition its calls were graded under", tr.Header.TaskSHA256, want)
	}
	if tr.End == nil || tr.End.Result == nil || tr.End.Result.Reward != 1 {
		t.Fatalf("end %+v, want the edited task graded 1", tr.End)
	}
	rep, err := task.ReplayResumed(ctx, w, []env.Task{edited}, tr, cp, saved, composition.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Calls != 1 || len(rep.Mismatches) != 0 || len(rep.Warnings) != 0 {
		t.Errorf("replay under the definition the calls ran under: %+v, want no warning", rep)
	}
	rep, err = task.ReplayResumed(ctx, w, []env.Task{tk}, tr, cp, saved, composition.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "another definition") {
		t.Errorf("replay under the checkpoint's definition: warnings %q, want one", rep.Warnings)
	}
}

// An episode restored under another definition of its task than the one
// its checkpoint's grading was made under is graded anew under the new
// one as it is restored: its state document's checks and its latest
// grading are the new definition's, and Regraded says so. Before, they
// were the checkpoint's grading under the old definition until the next
// call was graded. Restored under the same definition, or before any
// grading, nothing is graded.
func TestResume_RegradesUnderAnotherDefinition(t *testing.T) {
	ctx := context.Background()
	w := newLedger("ledger_resume_regrade")
	tk := env.Task{ID: "t", Instruction: "Add an entry of 5.", Checks: []env.Check{{Name: "five", SQL: "SELECT count(*) FROM entries WHERE amount = 5"}}}
	edited := tk
	edited.Instruction = "Add an entry of 7."
	edited.Checks = []env.Check{{Name: "seven", SQL: "SELECT count(*) FROM entries WHERE amount = 5 + 2"}}
	ep := mustOpen(t, w, tk, composition.Options{})
	cpBefore, savedBefore, err := ep.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mustCall(t, ep, "add", `{"amount": 5}`)
	if _, err := ep.Grade(ctx); err != nil {
		t.Fatal(err)
	}
	cp, saved, err := ep.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	resume := func(tk env.Task, cp *composition.Checkpoint, saved task.Saved) *task.Episode {
		t.Helper()
		ep, err := task.Resume(ctx, w, tk, saved, composition.Options{Checkpoint: cp, Dir: t.TempDir()}, nil, "ck")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ep.Close() })
		return ep
	}

	got := resume(edited, cp, saved)
	last, ok := got.LastGrade()
	if !ok || last.Reward != 0 || last.Done || len(last.Checks) != 1 || last.Checks[0].Name != "seven" || last.Checks[0].Passed {
		t.Fatalf("latest grading under the edited task %+v (%v), want check seven failed, reward 0", last, ok)
	}
	if r, ok := got.Regraded(); !ok || !reflect.DeepEqual(r, last) {
		t.Errorf("Regraded() = %+v, %v; want the latest grading", r, ok)
	}
	if checks := got.State().Checks; len(checks) != 1 || checks[0].Name != "seven" {
		t.Errorf("state document's checks %+v, want the edited task's", checks)
	}

	same := resume(tk, cp, saved)
	if last, ok := same.LastGrade(); !ok || !reflect.DeepEqual(last, *saved.Last) {
		t.Errorf("latest grading under the same task %+v, want the checkpoint's %+v", last, *saved.Last)
	}
	if _, ok := same.Regraded(); ok {
		t.Error("an episode restored under the definition it was graded under was graded anew")
	}

	ungraded := resume(edited, cpBefore, savedBefore)
	if _, ok := ungraded.LastGrade(); ok {
		t.Error("an episode restored before its first grading was graded")
	}
	if _, ok := ungraded.Regraded(); ok {
		t.Error("Regraded of an episode restored before its first grading")
	}
}
