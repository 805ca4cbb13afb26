package task_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/sqlitestore"
	"github.com/seahaven/seahaven/task"
)

// graded opens a fresh ledger, adds one entry, and grades a task made of
// checks.
func graded(t *testing.T, checks ...env.Check) (task.Result, error) {
	t.Helper()
	w := newLedger("ledger_" + strings.ToLower(strings.NewReplacer("/", "_", "#", "").Replace(t.Name())))
	tk := env.Task{ID: "t", Instruction: "Add an entry.", Checks: checks}
	ep := mustOpen(t, w, tk, composition.Options{})
	mustCall(t, ep, "add", `{"amount": 5}`)
	return task.Grade(context.Background(), ep.Instance(), tk)
}

func TestGrade_Checks(t *testing.T) {
	partial := func(context.Context, env.Inspector, []env.ChangeRecord) (env.GradeResult, error) {
		return env.GradeResult{Score: 0.5, Detail: "half"}, nil
	}
	reads := func(ctx context.Context, v env.Inspector, log []env.ChangeRecord) (env.GradeResult, error) {
		rows, err := v.Rows(ctx, "SELECT amount FROM entries")
		if err != nil {
			return env.GradeResult{}, err
		}
		if len(rows) == 1 && rows[0]["amount"] == int64(5) && len(log) == 1 {
			return env.Pass("one entry of 5"), nil
		}
		return env.Fail("rows %v, %d records", rows, len(log)), nil
	}
	tests := []struct {
		name   string    // case
		check  env.Check // the only check
		passed bool      // the check passed
		detail string    // the check's detail
	}{
		{"CountEquals", env.Check{SQL: "SELECT count(*) FROM entries", Equals: 1}, true, "expected 1, found 1"},
		{"CountDiffers", env.Check{SQL: "SELECT count(*) FROM entries", Equals: 2}, false, "expected 2, found 1"},
		{"FloatEqualsInteger", env.Check{SQL: "SELECT 1.0", Equals: 1}, true, "expected 1, found 1"},
		{"Fraction", env.Check{SQL: "SELECT 1.5", Equals: 1.5}, true, "expected 1.5, found 1.5"},
		{"FractionIsNotInteger", env.Check{SQL: "SELECT 1.5", Equals: 1}, false, "expected 1, found 1.5"},
		{"LargeIntegersExact", env.Check{SQL: "SELECT 9007199254740993", Equals: int64(9007199254740992)}, false, "expected 9007199254740992, found 9007199254740993"},
		{"TrueIsOne", env.Check{SQL: "SELECT 1", Equals: true}, true, "expected true, found 1"},
		{"FalseIsZero", env.Check{SQL: "SELECT 0", Equals: false}, true, "expected false, found 0"},
		{"TrueIsNotTwo", env.Check{SQL: "SELECT 2", Equals: true}, false, "expected true, found 2"},
		{"String", env.Check{SQL: "SELECT 'a'", Equals: "a"}, true, `expected "a", found "a"`},
		{"StringIsNotNumber", env.Check{SQL: "SELECT 1", Equals: "1"}, false, `expected "1", found 1`},
		{"Array", env.Check{SQL: "SELECT json_array(1, 'x', json('null'))", Equals: []any{1.0, "x", nil}}, true, `expected [1,"x",null], found "[1,\"x\",null]"`},
		{"ArrayDiffers", env.Check{SQL: "SELECT json_array(1, 2)", Equals: []int{2, 1}}, false, `expected [2,1], found "[1,2]"`},
		{"Object", env.Check{SQL: "SELECT json_object('b', 2, 'a', json_array(1))", Equals: map[string]any{"a": []any{1}, "b": 2}}, true, `expected {"a":[1],"b":2}`},
		{"ObjectNotJSON", env.Check{SQL: "SELECT 'nope'", Equals: map[string]any{}}, false, `expected {}, found "nope"`},
		{"Args", env.Check{SQL: "SELECT count(*) FROM entries WHERE amount = ?", Args: []any{5}, Equals: 1}, true, "expected 1, found 1"},
		{"Truthy", env.Check{SQL: "SELECT count(*) > 0 FROM entries"}, true, "expected a true value, found 1"},
		{"TruthyText", env.Check{SQL: "SELECT '2 entries'"}, true, `expected a true value, found "2 entries"`},
		{"TruthyTextPastFloats", env.Check{SQL: "SELECT '1e999 entries'"}, true, `expected a true value, found "1e999 entries"`},
		{"TruthyTextAfterVerticalTab", env.Check{SQL: "SELECT char(11) || '2 entries'"}, true, `expected a true value, found "\v2 entries"`},
		{"FalsyTextBelowFloats", env.Check{SQL: "SELECT '1e-999'"}, false, `expected a true value, found "1e-999"`},
		{"FalsyText", env.Check{SQL: "SELECT 'abc'"}, false, `expected a true value, found "abc"`},
		{"FalsyZeroText", env.Check{SQL: "SELECT '0.0 entries'"}, false, `expected a true value, found "0.0 entries"`},
		{"FalsyNull", env.Check{SQL: "SELECT NULL"}, false, "expected a true value, found NULL"},
		{"FalsyBlob", env.Check{SQL: "SELECT x'00'"}, false, "expected a true value, found x'00'"},
		{"NoRow", env.Check{SQL: "SELECT 1 WHERE 0", Equals: 1}, false, "expected 1, found no row"},
		{"TwoRows", env.Check{SQL: "SELECT 1 UNION ALL SELECT 1", Equals: 1}, false, "expected one row with 1, found 2 rows"},
		{"OnlyChanged", env.Check{OnlyChanged: []string{"main.entries"}}, true, "1 change, all to main.entries"},
		{"OnlyChangedOtherTable", env.Check{OnlyChanged: []string{"main.notes"}}, false, `expected changes only to main.notes; found 1 other change: main.entries:insert {"id":1}`},
		{"OnlyChangedOtherOp", env.Check{OnlyChanged: []string{"main.entries:delete"}}, false, "found 1 other change: main.entries:insert"},
		{"MustChange", env.Check{MustChange: []string{"main.entries:insert"}}, true, "changed: main.entries:insert (1)"},
		{"MustChangeMissing", env.Check{MustChange: []string{"main.entries", "main.notes"}}, false, "expected a change to main.notes; found none"},
		{"Unchanged", env.Check{Unchanged: []string{"main.notes"}}, true, "no change to main.notes"},
		{"UnchangedWildcard", env.Check{Unchanged: []string{"main.*"}}, false, `expected no change to main.*; found 1 change: main.entries:insert {"id":1}`},
		{"FuncReads", env.Check{Func: reads}, true, "one entry of 5"},
		{"FuncPartial", env.Check{Func: partial}, false, "half"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := graded(t, tt.check)
			if err != nil {
				t.Fatal(err)
			}
			c := res.Checks[0]
			if c.Passed != tt.passed || !strings.Contains(c.Detail, tt.detail) {
				t.Fatalf("passed %v %q, want %v %q", c.Passed, c.Detail, tt.passed, tt.detail)
			}
			if want := map[bool]float64{true: 1, false: 0}[tt.passed]; tt.name != "FuncPartial" && (res.Reward != want || c.Score != want) {
				t.Fatalf("reward %v score %v, want %v", res.Reward, c.Score, want)
			}
			if res.Done != tt.passed {
				t.Fatalf("done %v, want %v", res.Done, tt.passed)
			}
		})
	}
}

func TestGrade_DetailNamesFiveRecords(t *testing.T) {
	// A failing change-log check names at most five of the records it
	// found, and counts the rest.
	tk := env.Task{ID: "t", Instruction: "Add an entry.", Checks: []env.Check{{OnlyChanged: []string{"main.entries"}}}}
	ep := mustOpen(t, newLedger("ledger_detail_five"), tk, composition.Options{})
	for range 6 {
		mustCall(t, ep, "note", `{"body": "n"}`)
	}
	res, err := task.Grade(context.Background(), ep.Instance(), tk)
	if err != nil {
		t.Fatal(err)
	}
	want := `expected changes only to main.entries; found 6 other changes: main.notes:insert {"id":1}, main.notes:insert {"id":2}, ` +
		`main.notes:insert {"id":3}, main.notes:insert {"id":4}, main.notes:insert {"id":5}, and 1 more`
	if got := res.Checks[0].Detail; got != want {
		t.Fatalf("detail %q\nwant   %q", got, want)
	}
}

func TestGrade_Reward(t *testing.T) {
	stop := func(context.Context, env.Inspector, []env.ChangeRecord) (env.GradeResult, error) {
		return env.GradeResult{Score: 0, Done: true, Detail: "cannot recover"}, nil
	}
	tests := []struct {
		name   string      // case
		checks []env.Check // the task's checks
		reward float64     // want
		done   bool        // want
	}{
		{"AllPass", []env.Check{{SQL: "SELECT 1"}, {MustChange: []string{"main.entries"}}}, 1, true},
		{"Weighted", []env.Check{{SQL: "SELECT 1", Weight: 3}, {SQL: "SELECT 0"}}, 0.75, false},
		{"DefaultWeights", []env.Check{{SQL: "SELECT 1"}, {SQL: "SELECT 0"}, {SQL: "SELECT 0"}, {SQL: "SELECT 1"}}, 0.5, false},
		{"PartialScore", []env.Check{{SQL: "SELECT 1"}, {Func: func(context.Context, env.Inspector, []env.ChangeRecord) (env.GradeResult, error) {
			return env.GradeResult{Score: 0.5}, nil
		}}}, 0.75, false},
		{"FuncEndsEpisode", []env.Check{{SQL: "SELECT 1"}, {Func: stop}}, 0.5, true},
		// Guards (only_changed, unchanged) multiply: they take reward away,
		// never grant it.
		{"GuardPassesGoalFails", []env.Check{{SQL: "SELECT 0"}, {Unchanged: []string{"main.notes"}}}, 0, false},
		{"GoalPassesGuardFails", []env.Check{{SQL: "SELECT 1"}, {OnlyChanged: []string{"main.notes"}}}, 0, false},
		{"HalfTheGuards", []env.Check{{SQL: "SELECT 1"}, {Unchanged: []string{"main.notes"}}, {OnlyChanged: []string{"main.notes"}}}, 0.5, false},
		{"WeightedGoalsTimesGuards", []env.Check{{SQL: "SELECT 1", Weight: 3}, {SQL: "SELECT 0"}, {Unchanged: []string{"main.notes"}, Weight: 2}, {Unchanged: []string{"main.entries"}, Weight: 2}}, 0.375, false},
		{"GuardsAlone", []env.Check{{Unchanged: []string{"main.notes"}}}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := graded(t, tt.checks...)
			if err != nil {
				t.Fatal(err)
			}
			if res.Reward != tt.reward || res.Done != tt.done || res.Task != "t" || len(res.Checks) != len(tt.checks) {
				t.Fatalf("got %+v, want reward %v done %v", res, tt.reward, tt.done)
			}
		})
	}
}

func TestGrade_Errors(t *testing.T) {
	writes := func(ctx context.Context, v env.Inspector, _ []env.ChangeRecord) (env.GradeResult, error) {
		if _, err := v.Rows(ctx, "INSERT INTO notes (body) VALUES ('graded')"); err != nil {
			return env.GradeResult{}, err
		}
		return env.Pass("wrote"), nil
	}
	tests := []struct {
		name  string    // case
		check env.Check // the only check
		err   string    // substring of the error
	}{
		{"TwoColumns", env.Check{Name: "c", SQL: "SELECT 1, 2"}, `task t: check "c": sql returns 2 columns (1, 2); a check reads exactly one`},
		{"BadSQL", env.Check{Name: "c", SQL: "SELECT FROM"}, `task t: check "c": sqlitestore: near "FROM": syntax error`},
		{"SQLWrites", env.Check{Name: "c", SQL: "DELETE FROM entries RETURNING 1"}, `task t: check "c": sqlitestore: not authorized (the inspection connection is read-only)`},
		{"FuncWrites", env.Check{Name: "c", Func: writes}, `task t: check "c": sqlitestore: not authorized (the inspection connection is read-only)`},
		{"FuncFails", env.Check{Name: "c", Func: func(context.Context, env.Inspector, []env.ChangeRecord) (env.GradeResult, error) {
			return env.GradeResult{}, errors.New("grader broke")
		}}, `task t: check "c": grader broke`},
		// A panic fails the grading naming where it happened, instead of
		// unwinding through the caller (a server's step lost its record).
		{"FuncPanics", env.Check{Name: "c", Func: func(context.Context, env.Inspector, []env.ChangeRecord) (env.GradeResult, error) {
			panic("grader bug")
		}}, `task t: check "c": the Go check panicked at grade_test.go:`},
		{"FuncTypedNilError", env.Check{Name: "c", Func: func(context.Context, env.Inspector, []env.ChangeRecord) (env.GradeResult, error) {
			var te *env.ToolError
			return env.GradeResult{}, te
		}}, `task t: check "c": the Go check returned a nil *env.ToolError as its error, which is not a nil error`},
		{"ScoreAboveOne", env.Check{Name: "c", Func: func(context.Context, env.Inspector, []env.ChangeRecord) (env.GradeResult, error) {
			return env.GradeResult{Score: 1.5}, nil
		}}, `task t: check "c": score 1.5 is outside [0, 1]`},
		{"UnknownNode", env.Check{Name: "c", OnlyChanged: []string{"payments.charges"}}, `has no node "payments" (nodes: main)`},
		{"UnknownTable", env.Check{Name: "c", MustChange: []string{"main.charges"}}, `task t: check "c": table pattern "main.charges": node main has no table "charges"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newLedger("ledger_err_" + strings.ToLower(tt.name))
			tk := env.Task{ID: "t", Instruction: "x", Checks: []env.Check{{SQL: "SELECT 1"}}}
			ep := mustOpen(t, w, tk, composition.Options{})
			mustCall(t, ep, "add", `{"amount": 5}`)
			tk.Checks = []env.Check{tt.check}
			_, err := task.Grade(context.Background(), ep.Instance(), tk)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want one containing %q", err, tt.err)
			}
			// Nothing a grader did reached the stores.
			rows, err := ep.Instance().Inspect().Rows(context.Background(), "SELECT (SELECT count(*) FROM entries) AS e, (SELECT count(*) FROM notes) AS n")
			if err != nil || rows[0]["e"] != int64(1) || rows[0]["n"] != int64(0) {
				t.Fatalf("stores after grading: %v, %v", rows, err)
			}
			if n := len(ep.Instance().ChangeLog()); n != 1 {
				t.Fatalf("%d change records, want 1", n)
			}
		})
	}
}

// TestGrade_PastItsContext: a grading whose Go check ignores its context
// and returns after it ended is an error, and the episode keeps nothing of
// it, where before its result was kept and recorded: its caller (a
// server's step, answered at the deadline) had been told it failed.
func TestGrade_PastItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	late := func(context.Context, env.Inspector, []env.ChangeRecord) (env.GradeResult, error) {
		cancel() // the context ends while the check ignores it
		return env.Pass("late"), nil
	}
	tk := env.Task{ID: "t", Instruction: "x", Checks: []env.Check{{Name: "c", Func: late}}}
	ep := mustOpen(t, newLedger("ledger_late_grade"), tk, composition.Options{})
	mustCall(t, ep, "add", `{"amount": 5}`)
	if _, err := ep.Grade(ctx); !errors.Is(err, context.Canceled) || !strings.Contains(fmt.Sprint(err), "task t: the grading returned after its context ended") {
		t.Fatalf("err = %v, want the grading refused for returning after its context ended", err)
	}
	if r, ok := ep.LastGrade(); ok {
		t.Errorf("the episode kept the late grading: %+v", r)
	}
}

// TestGrade_FailedLeavesNoChecks: a grading that fails leaves the episode
// no latest grading, so its state document has no checks, where it kept
// the checks of the grading before, which described an earlier state.
func TestGrade_FailedLeavesNoChecks(t *testing.T) {
	fail := false
	check := func(context.Context, env.Inspector, []env.ChangeRecord) (env.GradeResult, error) {
		if fail {
			return env.GradeResult{}, errors.New("grader broke")
		}
		return env.Pass("fine"), nil
	}
	tk := env.Task{ID: "t", Instruction: "x", Checks: []env.Check{{Name: "c", Func: check}}}
	ep := mustOpen(t, newLedger("ledger_failed_grade"), tk, composition.Options{})
	mustCall(t, ep, "add", `{"amount": 5}`)
	if _, err := ep.Grade(context.Background()); err != nil || len(ep.State().Checks) != 1 {
		t.Fatalf("the first grading: %v, checks %v", err, ep.State().Checks)
	}
	fail = true
	if _, err := ep.Grade(context.Background()); err == nil {
		t.Fatal("the failing grading succeeded")
	}
	if checks := ep.State().Checks; checks != nil {
		t.Errorf("checks %+v after a failed grading, want none", checks)
	}
	if r, ok := ep.LastGrade(); ok {
		t.Errorf("LastGrade %+v after a failed grading, want none", r)
	}
	fail = false
	if _, err := ep.Grade(context.Background()); err != nil || len(ep.State().Checks) != 1 {
		t.Errorf("a grading after the failed one: %v, checks %v", err, ep.State().Checks)
	}
}

func TestResult_WriteText(t *testing.T) {
	res := task.Result{Task: "t", Reward: 0.75, Checks: []env.CheckResult{
		{Name: "a", Passed: true, Score: 1, Weight: 3, Detail: "expected 1, found 1"},
		{Name: "b", Score: 0, Weight: 1, Detail: "expected 2, found 1"},
		{Name: "c", Score: 0.5, Weight: 1, Detail: "half"},
	}}
	var b strings.Builder
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := `  PASS  a (weight 3): expected 1, found 1
  FAIL  b (weight 1): expected 2, found 1
  50%   c (weight 1): half
  reward 0.75  done false
`
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	if res.Passed() {
		t.Error("Passed() with failing checks")
	}
}

// TestGrade_TruncatedLog grades an episode whose change log lost its
// oldest record (a note) to its bound. A change-log check the kept records
// decide grades as usual; one whose answer depends on the dropped record is
// an error that says the log was truncated.
func TestGrade_TruncatedLog(t *testing.T) {
	tests := []struct {
		name   string    // case
		check  env.Check // the only check
		passed bool      // the check passed, when it is decided
		err    bool      // the check depends on the dropped record
	}{
		{"SQL", env.Check{SQL: "SELECT count(*) FROM notes", Equals: 1}, true, false},
		{"OnlyChangedDecided", env.Check{OnlyChanged: []string{"main.notes"}}, false, false},
		{"OnlyChangedUnknown", env.Check{OnlyChanged: []string{"main.entries"}}, false, true},
		{"MustChangeDecided", env.Check{MustChange: []string{"main.entries"}}, true, false},
		{"MustChangeUnknown", env.Check{MustChange: []string{"main.notes"}}, false, true},
		{"UnchangedDecided", env.Check{Unchanged: []string{"main.entries"}}, false, false},
		{"UnchangedUnknown", env.Check{Unchanged: []string{"main.notes"}}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newLedger("ledger_truncated_" + strings.ToLower(tt.name))
			tk := env.Task{ID: "t", Instruction: "Add an entry.", Checks: []env.Check{tt.check}}
			ep := mustOpen(t, w, tk, composition.Options{MaxChangeLogBytes: 300})
			mustCall(t, ep, "note", `{"body":"`+strings.Repeat("n", 500)+`"}`)
			mustCall(t, ep, "add", `{"amount": 5}`)
			if d := ep.Instance().ChangeLogDropped(); d != 1 {
				t.Fatalf("%d records dropped, want the note's", d)
			}
			res, err := task.Grade(context.Background(), ep.Instance(), tk)
			if tt.err {
				if err == nil || !strings.Contains(err.Error(), "the change log was truncated (its oldest 1 record dropped") {
					t.Fatalf("Grade: %+v, %v; want an error saying the log was truncated", res, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Grade: %v", err)
			}
			if res.Checks[0].Passed != tt.passed {
				t.Errorf("passed %v (%s), want %v", res.Checks[0].Passed, res.Checks[0].Detail, tt.passed)
			}
		})
	}
}

// TestGrade_CallBetweenLogReads grades while calls run, with a call
// forced in once the grader waits for the instance to read the change
// log: the records and how many were dropped must come from one moment.
// The log holds an entry, and the call writes a note that pushes the entry
// out of the log's bound. The check wants a note: read before the call it
// fails (no note, nothing dropped), read after it it passes; the records
// from before the call with the count from after it would make its answer
// depend on a dropped record, an error.
//
// The instance's lock is a channel, whose waiters take it in the order
// they came; synctest.Wait returns once every goroutine waits, so each
// waiter is queued before the next one starts.
func TestGrade_CallBetweenLogReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		w := newLedger("ledger_call_between_log_reads")
		release := []chan struct{}{make(chan struct{}), make(chan struct{})}
		type holdArgs struct {
			N int `json:"n"`
		}
		env.Tool(w, "hold", "Wait for the test.", func(c *env.Ctx, in holdArgs) (any, error) {
			<-release[in.N]
			return nil, nil
		})
		tk := env.Task{ID: "t", Instruction: "Write a note.", Checks: []env.Check{{MustChange: []string{"main.notes"}}}}
		pool := sqlitestore.NewPool(8)
		pool.IdleAfter = -1 // no sweeper and no timer: the bubble's goroutines end with the test
		ep := mustOpen(t, w, tk, composition.Options{MaxChangeLogBytes: 300, Pool: pool})
		inst := ep.Instance()
		mustCall(t, ep, "add", `{"amount": 5}`)
		calls := make(chan error, 3)
		call := func(tool, args string) {
			go func() {
				_, err := inst.CallJSON(ctx, tool, []byte(args))
				calls <- err
			}()
			synctest.Wait()
		}
		call("hold", `{"n": 0}`) // holds the instance
		type graded struct {
			res task.Result
			err error
		}
		grades := make(chan graded, 1)
		go func() {
			res, err := task.Grade(ctx, inst, tk)
			grades <- graded{res, err}
		}()
		synctest.Wait()          // the grader waits for the instance
		call("hold", `{"n": 1}`) // and the next hold after it
		close(release[0])
		synctest.Wait() // the grader took the inspection view and waits to read the log, behind the second hold
		call("note", `{"body": "`+strings.Repeat("n", 150)+`"}`)
		close(release[1])
		g := <-grades
		for range 3 {
			if err := <-calls; err != nil {
				t.Fatal(err)
			}
		}
		if d := inst.ChangeLogDropped(); d != 1 {
			t.Fatalf("%d records dropped, want the entry's", d)
		}
		if g.err != nil {
			t.Fatalf("Grade: %v", g.err)
		}
		if c := g.res.Checks[0]; c.Passed {
			t.Errorf("the check passed (%s); the grader read the log before the note", c.Detail)
		}
	})
}

// An episode that changed nothing scores 0 and is not done, whatever its
// checks find, unless its task says changing nothing can be correct.
func TestGrade_Idle(t *testing.T) {
	checks := []env.Check{{SQL: "SELECT count(*) FROM entries", Equals: 0}, {Unchanged: []string{"main.entries"}}}
	for _, tt := range []struct {
		name            string
		noChangeCorrect bool
		reward          float64
		done, idle      bool
	}{
		{"Idle", false, 0, false, true},
		{"NoChangeCorrect", true, 1, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newLedger("ledger_idle_" + strings.ToLower(tt.name))
			tk := env.Task{ID: "t", Instruction: "Leave the ledger alone.", Checks: checks, NoChangeCorrect: tt.noChangeCorrect}
			ep := mustOpen(t, w, tk, composition.Options{})
			res, err := task.Grade(context.Background(), ep.Instance(), tk)
			if err != nil {
				t.Fatal(err)
			}
			if res.Reward != tt.reward || res.Done != tt.done || res.Idle != tt.idle {
				t.Fatalf("got %+v, want reward %v done %v idle %v", res, tt.reward, tt.done, tt.idle)
			}
			for _, c := range res.Checks {
				if !c.Passed {
					t.Errorf("check %s: %s; every check passes on the untouched ledger", c.Name, c.Detail)
				}
			}
		})
	}
}

// TestGrade_UnrecordedTables: a change-log check naming a table whose rows
// the change log never records (the world's UntrackedTables, a virtual
// table and its shadow tables, of FTS5 or R*Tree) cannot be evaluated,
// rather than pass or fail whatever the agent wrote to it.
func TestGrade_UnrecordedTables(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "unrecorded", Version: "1.0.0", UntrackedTables: []string{"Scratch"}, Schema: `
CREATE TABLE entries (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL) STRICT;
CREATE TABLE scratch (id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT;
CREATE VIRTUAL TABLE docs USING fts5(body);
CREATE VIRTUAL TABLE boxes USING rtree(id, minx, maxx);
CREATE VIEW totals AS SELECT sum(amount) AS total FROM entries;
CREATE TABLE counted (id INTEGER PRIMARY KEY AUTOINCREMENT);`})
	env.Tool(w, "scribble", "Write to the scratch table and the index.", func(c *env.Ctx, _ struct{}) (string, error) {
		if _, err := c.DB.Exec("INSERT INTO scratch (body) VALUES ('x')"); err != nil {
			return "", err
		}
		if _, err := c.DB.Exec("INSERT INTO boxes VALUES (1, 0, 10)"); err != nil {
			return "", err
		}
		_, err := c.DB.Exec("INSERT INTO docs (body) VALUES ('x')")
		return "ok", err
	})
	tests := []struct {
		name  string    // case
		check env.Check // the only check
		err   string    // substring of the error; "" for none
	}{
		{"MustChangeUntracked", env.Check{MustChange: []string{"main.scratch"}}, `table "scratch" of node main is in its world's UntrackedTables, whose rows the change log never records`},
		{"UnchangedUntracked", env.Check{Unchanged: []string{"main.scratch:insert"}}, `table "scratch" of node main is in its world's UntrackedTables`},
		{"OnlyChangedUntracked", env.Check{OnlyChanged: []string{"main.entries", "main.scratch"}}, `table "scratch" of node main is in its world's UntrackedTables`},
		{"Virtual", env.Check{MustChange: []string{"main.docs"}}, `table "docs" of node main is a virtual table, whose rows`},
		{"Shadow", env.Check{Unchanged: []string{"main.docs_data"}}, `table "docs_data" of node main is a virtual table's shadow table, whose rows`},
		{"RTree", env.Check{MustChange: []string{"main.boxes"}}, `table "boxes" of node main is a virtual table, whose rows`},
		{"RTreeShadow", env.Check{Unchanged: []string{"main.boxes_node"}}, `table "boxes_node" of node main is a virtual table's shadow table, whose rows`},
		{"SQLites", env.Check{Unchanged: []string{"main.sqlite_sequence"}}, `table "sqlite_sequence" of node main is SQLite's own, whose rows`},
		{"View", env.Check{Unchanged: []string{"main.totals"}}, `node main has no table "totals"`},
		{"OtherCase", env.Check{Unchanged: []string{"main.Entries"}}, `node main has no table "Entries"`},
		{"Tracked", env.Check{Unchanged: []string{"main.entries"}}, ""},
		{"Wildcard", env.Check{Unchanged: []string{"main.*"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := env.Task{ID: "t", Instruction: "x", Checks: []env.Check{tt.check}}
			ep := mustOpen(t, w, tk, composition.Options{})
			mustCall(t, ep, "scribble", `{}`)
			_, err := task.Grade(context.Background(), ep.Instance(), tk)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("err = %v, want one saying %q", err, tt.err)
			}
		})
	}
}
