package env

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/seahaven/seahaven/internal/rfc3339"
)

// Task is one thing an agent is asked to do in a world, and how to tell
// whether it did: an instruction, the instance it starts from (fixture, now,
// startup keywords, seed), the tools it may call, and a grader made of
// checks. A world declares tasks with (*World).AddTask; the task package
// also reads them from a tasks.yaml beside the world's fixtures, opens
// instances for them and grades them.
//
// A Task is a plain value. Its slices and maps are not copied by AddTask:
// do not change them after registering the task.
type Task struct {
	// ID names the task: ^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$, unique per world.
	ID string
	// Instruction is the text the agent is given.
	Instruction string
	// Difficulty is "", "easy", "medium" or "hard"; it is only listed.
	Difficulty string
	// Fixture is the id of the fixture the instance starts from; "" is a
	// genesis instance.
	Fixture string
	// Now is the clock's starting instant (RFC 3339); "" uses the fixture's.
	Now string
	// Startup holds broadcast startup keywords for the instance.
	Startup map[string]any
	// Seed seeds the instance; nil leaves the seed to whoever opens it.
	Seed *int64
	// Tools, when not nil, is the part of the surface the agent may call
	// during the task; a call to any other tool is refused as unknown. An
	// empty non-nil list is refused: leave it nil to allow every tool.
	Tools []string
	// Checks grade the episode. There is at least one.
	Checks []Check
	// NoChangeCorrect says that changing nothing can be the right answer
	// (a task that asks the agent to refuse, or only to look). Without
	// it, an episode whose calls changed no store scores 0 and is not
	// done, whatever its checks say (see package task, Grade).
	NoChangeCorrect bool
	// Source says where the task was declared (file:line); AddTask and the
	// tasks.yaml loader set it.
	Source string
}

// Check is one assertion of a task's grader. Exactly one of SQL,
// OnlyChanged, MustChange, Unchanged and Func is set. Every check runs on
// the instance's read-only inspection view and its change log, never on
// the stores the agent's calls write.
type Check struct {
	// Name identifies the check in results; "" gets a default from its kind
	// and position ("sql #1", "only_changed #2"). Names are unique per task.
	Name string
	// Weight is the check's share of the reward; 0 means 1. A check always
	// counts: there is no weight zero.
	Weight float64

	// SQL is a read-only query over the inspection view returning one
	// column. Its first row's value must equal Equals; when Equals is nil
	// it must be truthy (not NULL, not zero, as SQLite's WHERE reads it).
	// No row reads as NULL; a second row fails the check.
	SQL string
	// Args are SQL's positional arguments.
	Args []any
	// Equals is the value SQL must return: any JSON value. Numbers compare
	// by value (1 equals 1.0), true and false equal 1 and 0, and an array
	// or object compares with a JSON text the query returns. To expect
	// NULL, select "x IS NULL" instead.
	Equals any

	// OnlyChanged lists the table patterns that may change: a change to any
	// other table is collateral damage and fails the check.
	OnlyChanged []string
	// MustChange lists table patterns each of which must have at least one
	// change.
	MustChange []string
	// Unchanged lists table patterns none of which may change.
	Unchanged []string

	// Func grades with Go code over the inspection view and the change log.
	Func GradeFunc
}

// GradeFunc is a grader written in Go. It reads the instance through v (its
// read-only inspection view) and log (every change record so far) and
// returns its score. An error means the grader could not run, not that the
// agent failed: return a GradeResult with Score 0 for that.
type GradeFunc func(ctx context.Context, v Inspector, log []ChangeRecord) (GradeResult, error)

// GradeResult is what a GradeFunc returns.
type GradeResult struct {
	// Score is the fraction of the check earned, in [0, 1]; the check
	// passes when it is 1.
	Score float64
	// Done ends the episode even when other checks fail (an irreversible
	// mistake, say). An episode is also done when every check passes.
	Done bool
	// Detail says what was expected and what was found.
	Detail string
}

// Pass returns a passing GradeResult with a formatted detail.
func Pass(format string, args ...any) GradeResult {
	return GradeResult{Score: 1, Detail: fmt.Sprintf(format, args...)}
}

// Fail returns a failing GradeResult with a formatted detail.
func Fail(format string, args ...any) GradeResult {
	return GradeResult{Score: 0, Detail: fmt.Sprintf(format, args...)}
}

// CheckResult is the outcome of one check of a grading, as the state
// document and the grade command show it.
type CheckResult struct {
	// Name is the check's name.
	Name string `json:"name"`
	// Passed is true when the check earned its whole weight.
	Passed bool `json:"passed"`
	// Score is the fraction of the check earned, in [0, 1].
	Score float64 `json:"score"`
	// Weight is the check's weight.
	Weight float64 `json:"weight"`
	// Detail says what was expected and what was found.
	Detail string `json:"detail"`
}

// Inspector runs read-only SQL over an instance's inspection view: the root
// store as main and every other node attached under its path with / as __
// (payments.charges). The engine's view satisfies it; writes are refused.
type Inspector interface {
	// Rows runs a query and returns every row.
	Rows(ctx context.Context, sql string, args ...any) ([]Row, error)
}

// Check kinds, as CheckKind returns them and default names use them.
const (
	CheckSQL         = "sql"
	CheckOnlyChanged = "only_changed"
	CheckMustChange  = "must_change"
	CheckUnchanged   = "unchanged"
	CheckFunc        = "func"
)

// Kind returns the check's kind (one of the Check constants), or "" when it
// sets no kind or more than one.
func (c Check) Kind() string {
	var kinds []string
	if c.SQL != "" {
		kinds = append(kinds, CheckSQL)
	}
	if c.OnlyChanged != nil {
		kinds = append(kinds, CheckOnlyChanged)
	}
	if c.MustChange != nil {
		kinds = append(kinds, CheckMustChange)
	}
	if c.Unchanged != nil {
		kinds = append(kinds, CheckUnchanged)
	}
	if c.Func != nil {
		kinds = append(kinds, CheckFunc)
	}
	if len(kinds) != 1 {
		return ""
	}
	return kinds[0]
}

// EffectiveWeight returns the check's weight, 1 when Weight is 0.
func (c Check) EffectiveWeight() float64 { return cmp.Or(c.Weight, 1) }

var taskIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// ValidTaskID reports whether id is a valid task id:
// ^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$.
func ValidTaskID(id string) bool { return taskIDRE.MatchString(id) }

// Difficulties are the values Task.Difficulty may take besides "".
var Difficulties = []string{"easy", "medium", "hard"}

// Normalize returns the task with every check named: a check without a name
// gets "<kind> #<position>" (from 1). Validate and AddTask use it.
func (t Task) Normalize() Task {
	checks := slices.Clone(t.Checks)
	for i := range checks {
		if checks[i].Name == "" {
			checks[i].Name = fmt.Sprintf("%s #%d", cmp.Or(checks[i].Kind(), "check"), i+1)
		}
	}
	t.Checks = checks
	return t
}

// Validate checks a task's definition without a world: the id, the
// difficulty, now, the tools list, and every check (one kind each, unique
// names, a finite positive weight, well-formed table patterns, Equals only
// with SQL). Tool names and node paths are checked against a world's
// composition when the task package loads the world's tasks.
func (t Task) Validate() error {
	if !ValidTaskID(t.ID) {
		return fmt.Errorf("task id %q must match %s", t.ID, taskIDRE)
	}
	if strings.TrimSpace(t.Instruction) == "" {
		return fmt.Errorf("task %s: instruction is empty", t.ID)
	}
	if t.Difficulty != "" && !slices.Contains(Difficulties, t.Difficulty) {
		return fmt.Errorf("task %s: difficulty %q: want easy, medium or hard", t.ID, t.Difficulty)
	}
	if t.Now != "" {
		now, err := rfc3339.Parse(t.Now)
		if err != nil {
			return fmt.Errorf("task %s: now %q is not an RFC 3339 instant", t.ID, t.Now)
		}
		if !InClockRange(now) {
			return fmt.Errorf("task %s: now %q is outside the clock's range, %s to %s", t.ID, t.Now, MinTime, MaxTime)
		}
	}
	if _, ok := t.Startup[""]; ok {
		return fmt.Errorf("task %s: startup keyword is empty", t.ID)
	}
	if t.Tools != nil && len(t.Tools) == 0 {
		return fmt.Errorf("task %s: tools is an empty allow list; leave it out to allow every tool", t.ID)
	}
	seen := map[string]bool{}
	for _, name := range t.Tools {
		if !ValidToolName(name) {
			return fmt.Errorf("task %s: tools: %q is not a tool name", t.ID, name)
		}
		if seen[name] {
			return fmt.Errorf("task %s: tools: %q is listed twice", t.ID, name)
		}
		seen[name] = true
	}
	if len(t.Checks) == 0 {
		return fmt.Errorf("task %s: no checks: a task needs at least one to be graded", t.ID)
	}
	t = t.Normalize()
	names := map[string]bool{}
	for i, c := range t.Checks {
		if err := c.validate(); err != nil {
			return fmt.Errorf("task %s: check %d (%s): %w", t.ID, i+1, c.Name, err)
		}
		if names[c.Name] {
			return fmt.Errorf("task %s: check %d: name %q is used twice", t.ID, i+1, c.Name)
		}
		names[c.Name] = true
	}
	return nil
}

func (c Check) validate() error {
	kind := c.Kind()
	if kind == "" {
		return fmt.Errorf("set exactly one of sql, only_changed, must_change, unchanged or a Go func")
	}
	if c.Weight < 0 || math.IsNaN(c.Weight) || math.IsInf(c.Weight, 0) {
		return fmt.Errorf("weight %v: want a finite number above 0", c.Weight)
	}
	if kind != CheckSQL && (c.Equals != nil || c.Args != nil) {
		return fmt.Errorf("equals and args go with sql only")
	}
	for _, list := range [][]string{c.OnlyChanged, c.MustChange, c.Unchanged} {
		if list != nil && len(list) == 0 {
			return fmt.Errorf("%s: empty list of tables", kind)
		}
		for _, p := range list {
			if _, err := ParseTablePattern(p); err != nil {
				return fmt.Errorf("%s: %w", kind, err)
			}
		}
	}
	return nil
}

// TablePattern names the tables of one node a change check is about, and
// optionally one operation: "payments.charges", "main.staff:insert",
// "chat.*". Node is a canonical path or an alias ("main" for the root).
type TablePattern struct {
	// Node is the node's path.
	Node string
	// Table is a table name, or "*" for every table of the node.
	Table string
	// Op is OpInsert, OpUpdate or OpDelete, or "" for any.
	Op string
}

var tableNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseTablePattern parses "<node path>.<table>[:<op>]", where table may be
// "*" and op is insert, update or delete.
func ParseTablePattern(s string) (TablePattern, error) {
	rest, op, hasOp := strings.Cut(s, ":")
	node, table, ok := strings.Cut(rest, ".")
	if !ok {
		return TablePattern{}, fmt.Errorf("table pattern %q: want <node>.<table>[:<op>], e.g. payments.charges or main.staff:insert", s)
	}
	if node != "main" {
		for _, seg := range strings.Split(node, "/") {
			if err := CheckName(seg); err != nil {
				return TablePattern{}, fmt.Errorf("table pattern %q: node %q is not a node path (main, or world names joined by /)", s, node)
			}
		}
	}
	if table != "*" && !tableNameRE.MatchString(table) {
		return TablePattern{}, fmt.Errorf("table pattern %q: table %q must be * or match %s", s, table, tableNameRE)
	}
	if hasOp && op != OpInsert && op != OpUpdate && op != OpDelete {
		return TablePattern{}, fmt.Errorf("table pattern %q: operation %q: want insert, update or delete", s, op)
	}
	return TablePattern{Node: node, Table: table, Op: op}, nil
}

// Matches reports whether a change record falls under the pattern. The
// record's World is a canonical path; resolve an alias in Node before
// matching.
func (p TablePattern) Matches(r ChangeRecord) bool {
	return r.World == p.Node && (p.Table == "*" || p.Table == r.Table) && (p.Op == "" || p.Op == r.Op)
}

// String returns the pattern as ParseTablePattern reads it.
func (p TablePattern) String() string {
	s := p.Node + "." + p.Table
	if p.Op != "" {
		s += ":" + p.Op
	}
	return s
}

// AddTask registers a task on w. It panics with a *WorldBug from the
// calling line when the task is invalid (see Task.Validate) or its id is
// already registered on w. Checks without a name are named (see
// Task.Normalize).
func (w *World) AddTask(t Task) {
	where := callerLine()
	mustWorld(w, "World.AddTask", where)
	if err := t.Validate(); err != nil {
		panic(&WorldBug{Message: fmt.Sprintf("%s.AddTask: %v", w.spec.Name, err), Where: where, Err: err})
	}
	t = t.Normalize()
	t.Source = cmp.Or(t.Source, shortWhere(where))
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, old := range w.tasks {
		if old.ID == t.ID {
			panic(&WorldBug{Message: fmt.Sprintf("%s.AddTask: task %q is already registered (at %s)", w.spec.Name, t.ID, old.Source), Where: where})
		}
	}
	w.tasks = append(w.tasks, t)
}

// Tasks returns the tasks registered on w with AddTask, in registration
// order.
func (w *World) Tasks() []Task { return cloneRegistry(w, &w.tasks) }
