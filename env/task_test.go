package env_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/env"
)

// validTask returns a task that passes Validate.
func validTask() env.Task {
	return env.Task{
		ID:          "invoice_750",
		Instruction: "Invoice the client 750 cents.",
		Checks:      []env.Check{{SQL: "SELECT count(*) FROM invoices WHERE amount = 750", Equals: 1}},
	}
}

func TestTask_Validate(t *testing.T) {
	grader := func(context.Context, env.Inspector, []env.ChangeRecord) (env.GradeResult, error) {
		return env.Pass("ok"), nil
	}
	tests := []struct {
		name   string          // case
		change func(*env.Task) // applied to validTask()
		want   string          // substring of the error; "" means valid
	}{
		{"OK", func(*env.Task) {}, ""},
		{"AllKinds", func(t *env.Task) {
			t.Difficulty, t.Now, t.Seed, t.Tools = "hard", "2026-06-01T09:00:00Z", new(int64(7)), []string{"invoice"}
			t.Checks = append(t.Checks,
				env.Check{OnlyChanged: []string{"main.invoices", "payments.charges:insert"}},
				env.Check{MustChange: []string{"payments.*"}, Weight: 2.5},
				env.Check{Unchanged: []string{"shop/payments.charges:delete"}},
				env.Check{Func: grader})
		}, ""},
		{"BadID", func(t *env.Task) { t.ID = "has space" }, "must match"},
		{"EmptyID", func(t *env.Task) { t.ID = "" }, "must match"},
		{"NoInstruction", func(t *env.Task) { t.Instruction = "  " }, "instruction is empty"},
		{"BadDifficulty", func(t *env.Task) { t.Difficulty = "trivial" }, `difficulty "trivial"`},
		{"BadNow", func(t *env.Task) { t.Now = "June 1st" }, "not an RFC 3339 instant"},
		{"LowerCaseNow", func(t *env.Task) { t.Now = "2026-06-01t09:00:00z" }, ""},
		{"NowOutOfRange", func(t *env.Task) { t.Now = "9999-01-01T00:00:00Z" }, `task invoice_750: now "9999-01-01T00:00:00Z" is outside the clock's range, 1000-01-01T00:00:00.000Z to 9000-01-01T00:00:00.000Z`},
		{"EmptyTools", func(t *env.Task) { t.Tools = []string{} }, "empty allow list"},
		{"BadTool", func(t *env.Task) { t.Tools = []string{"pay.create"} }, "is not a tool name"},
		{"DuplicateTool", func(t *env.Task) { t.Tools = []string{"invoice", "invoice"} }, "listed twice"},
		{"NoChecks", func(t *env.Task) { t.Checks = nil }, "no checks"},
		{"NoKind", func(t *env.Task) { t.Checks = []env.Check{{Name: "empty"}} }, "set exactly one of"},
		{"TwoKinds", func(t *env.Task) {
			t.Checks = []env.Check{{SQL: "SELECT 1", MustChange: []string{"main.staff"}}}
		}, "set exactly one of"},
		{"NegativeWeight", func(t *env.Task) { t.Checks[0].Weight = -1 }, "weight -1"},
		{"NaNWeight", func(t *env.Task) { t.Checks[0].Weight = math.NaN() }, "weight NaN"},
		{"EqualsWithoutSQL", func(t *env.Task) {
			t.Checks = []env.Check{{MustChange: []string{"main.staff"}, Equals: 1}}
		}, "go with sql only"},
		{"EmptyPatterns", func(t *env.Task) { t.Checks = []env.Check{{Unchanged: []string{}}} }, "empty list of tables"},
		{"BadPattern", func(t *env.Task) { t.Checks = []env.Check{{OnlyChanged: []string{"charges"}}} }, `table pattern "charges"`},
		{"DuplicateName", func(t *env.Task) {
			t.Checks = []env.Check{{Name: "a", SQL: "SELECT 1"}, {Name: "a", SQL: "SELECT 2"}}
		}, `name "a" is used twice`},
		{"DefaultNameClash", func(t *env.Task) {
			t.Checks = []env.Check{{Name: "sql #2", SQL: "SELECT 1"}, {SQL: "SELECT 2"}}
		}, `name "sql #2" is used twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := validTask()
			tt.change(&task)
			err := task.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestParseTablePattern(t *testing.T) {
	tests := []struct {
		in   string           // pattern text
		want env.TablePattern // parsed; zero when an error is expected
		err  string           // substring of the error
	}{
		{in: "payments.charges", want: env.TablePattern{Node: "payments", Table: "charges"}},
		{in: "main.staff:insert", want: env.TablePattern{Node: "main", Table: "staff", Op: "insert"}},
		{in: "shop/payments.*:delete", want: env.TablePattern{Node: "shop/payments", Table: "*", Op: "delete"}},
		{in: "payments_eu.charges:update", want: env.TablePattern{Node: "payments_eu", Table: "charges", Op: "update"}},
		{in: "charges", err: "want <node>.<table>"},
		{in: "Payments.charges", err: "is not a node path"},
		{in: "pay//x.charges", err: "is not a node path"},
		{in: "payments.", err: `table ""`},
		{in: "payments.char ges", err: "must be * or match"},
		{in: "payments.charges:upsert", err: `operation "upsert"`},
	}
	for _, tt := range tests {
		got, err := env.ParseTablePattern(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseTablePattern(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseTablePattern(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if got.String() != tt.in {
			t.Errorf("String() = %q, want %q", got.String(), tt.in)
		}
	}
}

func TestTablePattern_Matches(t *testing.T) {
	rec := env.ChangeRecord{World: "payments_eu", Table: "charges", Op: env.OpUpdate}
	tests := []struct {
		pattern string // pattern text
		want    bool   // matches rec
	}{
		{"payments_eu.charges", true},
		{"payments_eu.*", true},
		{"payments_eu.charges:update", true},
		{"payments_eu.charges:insert", false},
		{"payments.charges", false},
		{"payments_eu.refunds", false},
	}
	for _, tt := range tests {
		p, err := env.ParseTablePattern(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Matches(rec); got != tt.want {
			t.Errorf("%s.Matches = %v, want %v", tt.pattern, got, tt.want)
		}
	}
}

func TestWorld_AddTask(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		w := env.NewWorld(env.WorldSpec{Name: "tasks_ok", Version: "1"})
		a := validTask()
		a.Checks = append(a.Checks, env.Check{Name: "named", MustChange: []string{"main.invoices"}})
		b := validTask()
		b.ID = "second"
		w.AddTask(a)
		w.AddTask(b)
		got := w.Tasks()
		if len(got) != 2 || got[0].ID != "invoice_750" || got[1].ID != "second" {
			t.Fatalf("Tasks() = %+v", got)
		}
		if got[0].Checks[0].Name != "sql #1" || got[0].Checks[1].Name != "named" {
			t.Errorf("check names %q, %q", got[0].Checks[0].Name, got[0].Checks[1].Name)
		}
		if !strings.HasPrefix(got[0].Source, "task_test.go:") {
			t.Errorf("Source = %q, want the AddTask line", got[0].Source)
		}
		if c := w.Clone().Tasks(); len(c) != 2 {
			t.Errorf("Clone has %d tasks, want 2", len(c))
		}
	})
	t.Run("ErrDuplicate", func(t *testing.T) {
		w := env.NewWorld(env.WorldSpec{Name: "tasks_dup", Version: "1"})
		w.AddTask(validTask())
		msg := taskBug(t, func() { w.AddTask(validTask()) })
		if !strings.Contains(msg, `task "invoice_750" is already registered (at task_test.go:`) {
			t.Errorf("message %q", msg)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		w := env.NewWorld(env.WorldSpec{Name: "tasks_bad", Version: "1"})
		bad := validTask()
		bad.Checks = nil
		msg := taskBug(t, func() { w.AddTask(bad) })
		if msg != "tasks_bad.AddTask: task invoice_750: no checks: a task needs at least one to be graded" {
			t.Errorf("message %q", msg)
		}
		if len(w.Tasks()) != 0 {
			t.Error("an invalid task was registered")
		}
	})
}

// taskBug runs fn, which must panic with a *env.WorldBug from this file,
// and returns its message.
func taskBug(t *testing.T, fn func()) (msg string) {
	t.Helper()
	defer func() {
		b, ok := recover().(*env.WorldBug)
		if !ok {
			t.Fatal("no *env.WorldBug panic")
		}
		if !strings.Contains(b.Where, "task_test.go:") {
			t.Fatalf("Where = %q, want the AddTask line", b.Where)
		}
		msg = b.Message
	}()
	fn()
	return ""
}
