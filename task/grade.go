package task

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/big"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/nilerr"
	"github.com/seahaven/seahaven/sqlitestore"
)

// Result is one grading of a task: the reward, whether the episode is done,
// and what each check found.
type Result struct {
	// Task is the task's id.
	Task string `json:"task"`
	// Reward is in [0, 1]: the weighted fraction of the goal checks passed,
	// times the weighted fraction of the guard checks passed (see Grade).
	Reward float64 `json:"reward"`
	// Done is true when the reward is 1 or a Go check said so.
	Done bool `json:"done"`
	// Idle is true when the episode changed no store and its task does not
	// say that changing nothing can be correct: the reward is then 0.
	Idle bool `json:"idle,omitempty"`
	// Checks are the per-check results, in the task's order.
	Checks []env.CheckResult `json:"checks"`
}

// Passed reports whether every check passed.
func (r Result) Passed() bool {
	return !slices.ContainsFunc(r.Checks, func(c env.CheckResult) bool { return !c.Passed })
}

// WriteText writes the result for people: one line per check, then the
// reward.
//
//	PASS  invoiced (weight 1): expected 1, found 1
//	FAIL  no collateral damage (weight 1): expected changes only to ...
//	reward 0.50  done false
func (r Result) WriteText(w io.Writer) error {
	var b bytes.Buffer
	for _, c := range r.Checks {
		mark := "FAIL"
		if c.Passed {
			mark = "PASS"
		} else if c.Score > 0 {
			mark = fmt.Sprintf("%.0f%%", c.Score*100)
		}
		fmt.Fprintf(&b, "  %-4s  %s (weight %s): %s\n", mark, c.Name, strconv.FormatFloat(c.Weight, 'g', -1, 64), c.Detail)
	}
	fmt.Fprintf(&b, "  reward %s  done %t", strconv.FormatFloat(r.Reward, 'f', 2, 64), r.Done)
	if r.Idle {
		b.WriteString("  (nothing changed: the task is not no_change_correct)")
	}
	b.WriteString("\n")
	_, err := w.Write(b.Bytes())
	return err
}

// Grade grades an instance against a task, in two kinds of checks. Goal
// checks (sql, func, must_change) say what the agent achieved; guard
// checks (only_changed, unchanged) say what it must not have done. The
// reward is the weighted fraction of the goal checks passed (1 when the
// task has none) times the weighted fraction of the guard checks passed
// (1 when it has none): a guard can only take reward away, never grant
// it. An episode whose calls changed no store (an empty change log) scores
// 0 unless the task is NoChangeCorrect, so that a check true of the
// fixture already (a row count, "the EU account untouched") pays nothing
// for doing nothing. Every check still reports what it found.
//
// Every check runs on the
// instance's read-only inspection view and its change log, never on the
// stores the agent's calls write: a check that tries to write is refused by
// the view, and Grade returns that error. Grade returns an error, naming
// the task and the check, when a check cannot be evaluated: SQL that fails
// or returns other than one column, a table pattern naming a node or table
// the composition does not have or a table whose rows the change log never
// records (an untracked, virtual or shadow table), a Go check that fails or
// scores outside [0, 1]. A check the agent did not satisfy is not an error: it scores 0.
// A grading that returns after ctx ended (a Go check that ignored it) is
// an error wrapping ctx's cause: its caller may have given up on it.
//
// Grade is safe for concurrent use with the instance's calls; it does not
// run inside one.
//
// When the instance's change log outgrew its bound and lost its oldest
// records (composition.Options.MaxChangeLogBytes), a change-log check whose
// answer depends on the lost records is an error that says so: an
// only_changed or unchanged check that the kept records pass, a
// must_change check they fail. A Go check gets the kept records, whose
// first Seq is then above 1.
func Grade(ctx context.Context, inst *composition.Instance, t env.Task) (Result, error) {
	return grade(ctx, inst, shapeOf(inst.Sealed()), t)
}

// logView is the change log a grading reads: the records kept, and how
// many older ones were dropped.
type logView struct {
	records []env.ChangeRecord
	dropped int
}

// truncated is the error of a check whose answer depends on dropped
// records.
func (l logView) truncated() error {
	return fmt.Errorf("the change log was truncated (its oldest %s dropped to keep it within the server's bound, --max-changelog-bytes) and this check's answer depends on them", plural(l.dropped, "record"))
}

// grade is Grade with the instance's shape at hand.
func grade(ctx context.Context, inst *composition.Instance, sh *shape, t env.Task) (Result, error) {
	v := inst.Inspect()
	var lv logView
	lv.records, lv.dropped = inst.ChangeLogAndDropped()
	t = t.Normalize()
	if len(t.Checks) == 0 {
		return Result{}, fmt.Errorf("task %s: no checks to grade", t.ID)
	}
	res := Result{Task: t.ID, Checks: make([]env.CheckResult, 0, len(t.Checks))}
	var goalTotal, goalEarned, guardTotal, guardEarned float64
	allPassed, funcDone := true, false
	for _, c := range t.Checks {
		out, err := runCheck(ctx, v, lv, sh, c)
		if err != nil {
			return Result{}, fmt.Errorf("task %s: check %q: %w", t.ID, c.Name, err)
		}
		if math.IsNaN(out.Score) || out.Score < 0 || out.Score > 1 {
			return Result{}, fmt.Errorf("task %s: check %q: score %v is outside [0, 1]", t.ID, c.Name, out.Score)
		}
		w := c.EffectiveWeight()
		passed := out.Score == 1
		res.Checks = append(res.Checks, env.CheckResult{Name: c.Name, Passed: passed, Score: out.Score, Weight: w, Detail: out.Detail})
		// A guard check (only_changed, unchanged) can only take reward away.
		if k := c.Kind(); k == env.CheckOnlyChanged || k == env.CheckUnchanged {
			guardTotal += w
			guardEarned += w * out.Score
		} else {
			goalTotal += w
			goalEarned += w * out.Score
		}
		allPassed = allPassed && passed
		funcDone = funcDone || out.Done
	}
	if ctx.Err() != nil {
		// A Go check that ignored its context returned past its end: its
		// caller has been told the grading failed, so it is no grading.
		return Result{}, fmt.Errorf("task %s: the grading returned after its context ended: %w", t.ID, context.Cause(ctx))
	}
	goals, guards := 1.0, 1.0
	if goalTotal > 0 {
		goals = goalEarned / goalTotal
	}
	if guardTotal > 0 {
		guards = guardEarned / guardTotal
	}
	res.Reward = goals * guards
	if allPassed {
		res.Reward = 1 // no rounding below 1 when every check passed
	}
	if len(lv.records) == 0 && lv.dropped == 0 && !t.NoChangeCorrect {
		res.Idle, res.Reward, allPassed = true, 0, false
	}
	res.Done = allPassed || funcDone
	return res, nil
}

// runFunc runs a Go check, turning its panic into an error naming where it
// panicked: a grader's bug fails the grading, as an error it returned
// would, and does not unwind through the caller (a server's step, which ran
// and is recorded, or seahaven grade). A nil pointer returned as its error
// (var e *MyError; return e) is a bug of the same kind, said so.
func runFunc(ctx context.Context, v *composition.View, fn env.GradeFunc, log []env.ChangeRecord) (res env.GradeResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the Go check panicked%s: %v", panicSite(), r)
		}
	}()
	res, err = fn(ctx, v, log)
	if nilerr.Is(err) {
		return res, fmt.Errorf("the Go check returned a nil %T as its error, which is not a nil error: return nil itself when the check could run", err)
	}
	return res, err
}

// panicSite returns " at file:line" of the code that panicked, called from
// the deferred function that recovered it, or "".
func panicSite() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "runtime.") && f.File != "" {
			return fmt.Sprintf(" at %s:%d", filepath.Base(f.File), f.Line)
		}
		if !more {
			return ""
		}
	}
}

func runCheck(ctx context.Context, v *composition.View, lv logView, sh *shape, c env.Check) (env.GradeResult, error) {
	log := lv.records
	kind := c.Kind()
	if kind == "" {
		return env.GradeResult{}, fmt.Errorf("set exactly one of sql, only_changed, must_change, unchanged or a Go func")
	}
	// Only the check's own kind has patterns.
	pats, err := sh.patterns(ctx, v, slices.Concat(c.OnlyChanged, c.MustChange, c.Unchanged))
	if err != nil {
		return env.GradeResult{}, err
	}
	switch kind {
	case env.CheckSQL:
		return sqlCheck(ctx, v, c)
	case env.CheckFunc:
		return runFunc(ctx, v, c.Func, slices.Clone(log))
	case env.CheckOnlyChanged:
		if others := matching(log, pats, false); len(others) > 0 {
			return env.Fail("expected changes only to %s; found %s", join(pats), countRecords(others, "other change")), nil
		}
		if lv.dropped > 0 {
			return env.GradeResult{}, lv.truncated()
		}
		if len(log) == 0 {
			return env.Pass("no changes"), nil
		}
		return env.Pass("%s, all to %s", plural(len(log), "change"), join(pats)), nil
	case env.CheckMustChange:
		var missing, found []string
		for _, p := range pats {
			n := len(matching(log, []env.TablePattern{p}, true))
			if n == 0 {
				missing = append(missing, p.String())
			} else {
				found = append(found, fmt.Sprintf("%s (%d)", p, n))
			}
		}
		if len(missing) > 0 && lv.dropped > 0 {
			return env.GradeResult{}, lv.truncated()
		}
		if len(missing) > 0 {
			return env.Fail("expected a change to %s; found none", strings.Join(missing, ", ")), nil
		}
		return env.Pass("changed: %s", strings.Join(found, ", ")), nil
	default: // env.CheckUnchanged
		if hit := matching(log, pats, true); len(hit) > 0 {
			return env.Fail("expected no change to %s; found %s", join(pats), countRecords(hit, "change")), nil
		}
		if lv.dropped > 0 {
			return env.GradeResult{}, lv.truncated()
		}
		return env.Pass("no change to %s", join(pats)), nil
	}
}

// matching returns the records of log that match one of pats, or (match
// false) those that match none.
func matching(log []env.ChangeRecord, pats []env.TablePattern, match bool) []env.ChangeRecord {
	var out []env.ChangeRecord
	for _, r := range log {
		if slices.ContainsFunc(pats, func(p env.TablePattern) bool { return p.Matches(r) }) == match {
			out = append(out, r)
		}
	}
	return out
}

func sqlCheck(ctx context.Context, v *composition.View, c env.Check) (env.GradeResult, error) {
	rows, err := v.Query(ctx, c.SQL, c.Args...)
	if err != nil {
		return env.GradeResult{}, err
	}
	if len(rows.Columns) != 1 {
		return env.GradeResult{}, fmt.Errorf("sql returns %d columns (%s); a check reads exactly one", len(rows.Columns), strings.Join(rows.Columns, ", "))
	}
	want := "a true value"
	if c.Equals != nil {
		want = jsonText(c.Equals)
	}
	switch len(rows.Values) {
	case 0:
		return env.Fail("expected %s, found no row", want), nil
	case 1:
	default:
		return env.Fail("expected one row with %s, found %d rows", want, len(rows.Values)), nil
	}
	got := rows.Values[0][0]
	var ok bool
	if c.Equals == nil {
		ok = truthy(got)
	} else if ok, err = equal(c.Equals, got); err != nil {
		return env.GradeResult{}, err
	}
	if ok {
		return env.Pass("expected %s, found %s", want, sqlText(got)), nil
	}
	return env.Fail("expected %s, found %s", want, sqlText(got)), nil
}

// equal compares an expected JSON value with a value SQLite returned (nil,
// int64, float64, string or []byte).
func equal(want, got any) (bool, error) {
	w, err := normalize(want)
	if err != nil {
		return false, fmt.Errorf("equals: %w", err)
	}
	if b, ok := got.([]byte); ok {
		got = string(b)
	}
	switch w := w.(type) {
	case bool:
		n, ok := number(got)
		return ok && ((w && n == 1) || (!w && n == 0)), nil
	case []any, map[string]any: // the query returns JSON text
		s, ok := got.(string)
		if !ok {
			return false, nil
		}
		if got, err = normalizeText(s); err != nil {
			return false, nil
		}
	}
	return jsonEqual(w, got), nil
}

// normalize round-trips v through JSON so that numbers are json.Number.
func normalize(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return normalizeText(string(b))
}

// normalizeText decodes JSON text, with numbers as json.Number.
func normalizeText(s string) (any, error) {
	var out any
	err := strictJSON([]byte(s), &out)
	return out, err
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// numbersEqual compares exactly when both are integers, by value otherwise:
// as float64s, or, for two numbers past its range (1e400, which a value of
// type any keeps as written), as the decimal values they write.
func numbersEqual(w json.Number, got any) bool {
	wi, werr := strconv.ParseInt(w.String(), 10, 64)
	switch g := got.(type) {
	case int64:
		if werr == nil {
			return wi == g
		}
	case json.Number:
		if gi, err := strconv.ParseInt(g.String(), 10, 64); werr == nil && err == nil {
			return wi == gi
		}
	}
	wf, err := w.Float64()
	if g, ok := got.(json.Number); ok && err != nil {
		a, _, errA := big.ParseFloat(w.String(), 10, bigPrec, big.ToNearestEven)
		b, _, errB := big.ParseFloat(g.String(), 10, bigPrec, big.ToNearestEven)
		return errA == nil && errB == nil && a.Cmp(b) == 0
	}
	if err != nil {
		return false
	}
	gf, ok := number(got)
	return ok && wf == gf
}

// bigPrec is the precision, in bits, numbersEqual compares numbers past
// float64's range at: more than a float64's 53, as they are no float64s.
const bigPrec = 256

func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		return numbersEqual(x, b)
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, jsonEqual)
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && maps.EqualFunc(x, y, jsonEqual)
	}
	return a == b
}

// numericPrefix is the number SQLite reads at the start of a text: after
// the spaces it skips (sqlite3Isspace: \v too, which \s leaves out).
var numericPrefix = regexp.MustCompile(`^[ \t\n\v\f\r]*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?`)

// truthy reads a value as SQLite's WHERE does: NULL is false, numbers are
// true unless zero, text and blobs by their leading number.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case int64:
		return x != 0
	case float64:
		return x != 0
	case []byte:
		return truthy(string(x))
	case string:
		m := numericPrefix.FindString(x)
		if m == "" {
			return false
		}
		// A number too large for a float is an infinity to SQLite, which
		// is true; ParseFloat returns it with ErrRange.
		f, err := strconv.ParseFloat(strings.TrimLeft(m, " \t\n\v\f\r"), 64)
		return (err == nil || errors.Is(err, strconv.ErrRange)) && f != 0
	}
	return false
}

// jsonText writes an expected value as JSON.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// sqlText writes a value SQLite returned.
func sqlText(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return fmt.Sprintf("x'%x'", x)
	case string:
		return strconv.Quote(x)
	}
	return fmt.Sprint(v)
}

func join(pats []env.TablePattern) string {
	s := make([]string, len(pats))
	for i, p := range pats {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// plural returns "1 change" or "3 changes".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// countRecords describes change records, counted with noun: "2 other changes:
// main.staff:insert {"id":"…"}, …", at most five of them.
func countRecords(recs []env.ChangeRecord, noun string) string {
	const most = 5
	var parts []string
	for i, r := range recs {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more", len(recs)-most))
			break
		}
		key, _ := json.Marshal(r.Key)
		parts = append(parts, fmt.Sprintf("%s.%s:%s %s", r.World, r.Table, r.Op, key))
	}
	return fmt.Sprintf("%s: %s", plural(len(recs), noun), strings.Join(parts, ", "))
}

// shape is what a task is checked against: a sealed composition's surface,
// startup keywords and node paths with their aliases.
type shape struct {
	s     *composition.Sealed
	paths map[string]string // a canonical path or alias -> canonical path
}

func shapeOf(s *composition.Sealed) *shape {
	sh := &shape{s: s, paths: map[string]string{}}
	for _, n := range s.Nodes {
		sh.paths[n.Path] = n.Path
		for _, a := range n.Aliases {
			sh.paths[a] = n.Path
		}
	}
	return sh
}

// resolve parses a table pattern and puts its node's canonical path in it.
func (sh *shape) resolve(text string) (env.TablePattern, error) {
	p, err := env.ParseTablePattern(text)
	if err != nil {
		return p, err
	}
	canon, ok := sh.paths[p.Node]
	if !ok {
		nodes := make([]string, 0, len(sh.s.Nodes))
		for _, n := range sh.s.Nodes {
			nodes = append(nodes, n.Path)
		}
		return p, fmt.Errorf("table pattern %q: %s has no node %q (nodes: %s)", text, sh.s.Root.Name(), p.Node, strings.Join(nodes, ", "))
	}
	p.Node = canon
	return p, nil
}

// patterns resolves table patterns and checks, on the inspection view,
// that each named table exists and is one the change log records: a
// pattern naming a table of the world's UntrackedTables, a virtual table
// or one of its shadow tables, or one of SQLite's own, would match no
// record whatever the agent wrote to it.
func (sh *shape) patterns(ctx context.Context, v *composition.View, texts []string) ([]env.TablePattern, error) {
	out := make([]env.TablePattern, 0, len(texts))
	for _, text := range texts {
		p, err := sh.resolve(text)
		if err != nil {
			return nil, err
		}
		if p.Table != "*" {
			schema := composition.SchemaName(p.Node)
			rows, err := v.Rows(ctx, `SELECT type FROM pragma_table_list(?) WHERE schema = ? AND name = ?`, p.Table, schema, p.Table)
			if err != nil {
				return nil, err
			}
			if len(rows) == 0 || rows[0]["type"] == "view" {
				return nil, fmt.Errorf("table pattern %q: node %s has no table %q", text, p.Node, p.Table)
			}
			if why := sh.unrecorded(p, rows[0]["type"]); why != "" {
				return nil, fmt.Errorf("table pattern %q: table %q of node %s is %s, whose rows the change log never records: check it with sql", text, p.Table, p.Node, why)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// unrecorded says why the change log records no row of the table p
// names, of the type pragma table_list gives it; "" when it records them.
func (sh *shape) unrecorded(p env.TablePattern, typ any) string {
	switch {
	case typ == "virtual":
		return "a virtual table"
	case typ == "shadow":
		return "a virtual table's shadow table"
	case len(p.Table) >= 7 && sqlitestore.SameName(p.Table[:7], "sqlite_"):
		return "SQLite's own"
	}
	if n, ok := sh.s.Node(p.Node); ok && slices.ContainsFunc(n.World.Spec().UntrackedTables, func(u string) bool { return sqlitestore.SameName(u, p.Table) }) {
		return "in its world's UntrackedTables"
	}
	return ""
}

// fits checks a task against the composition: its allow list, startup
// keywords and table patterns.
func (sh *shape) fits(t env.Task) error {
	for _, name := range t.Tools {
		if _, ok := sh.s.Lookup(name); !ok {
			return fmt.Errorf("tools: %q is not on %s's surface", name, sh.s.Root.Name())
		}
	}
	for k := range t.Startup {
		if !slices.Contains(sh.s.StartupKeys, k) {
			return fmt.Errorf("startup keyword %q: no startup hook of %s's tree accepts it", k, sh.s.Root.Name())
		}
	}
	if err := sh.s.CheckStartup(t.Startup); err != nil {
		return fmt.Errorf("startup: %w", err)
	}
	for _, c := range t.Checks {
		for _, text := range slices.Concat(c.OnlyChanged, c.MustChange, c.Unchanged) {
			if _, err := sh.resolve(text); err != nil {
				return fmt.Errorf("check %q: %w", c.Name, err)
			}
		}
	}
	return nil
}
