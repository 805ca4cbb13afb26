package check_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/seahaven/seahaven/check"
	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/env"
)

// tasksYAML is a tasks file of the world of TestWorld_Tasks, with a check
// key misspelt on line 7 when bad.
func tasksYAML(bad bool) string {
	weight := "weight"
	if bad {
		weight = "wieght"
	}
	return `tasks:
  - id: count_staff
    instruction: Count the staff.
    checks:
      - name: counted
        sql: SELECT count(*) FROM staff
        ` + weight + `: 2
  - id: hire
    instruction: Hire someone.
    tools: [hire, fire]
    checks:
      - must_change: [main.staff]
`
}

// TestWorld_Tasks: a tasks file that does not load is SH407 at the key's
// line of the author's file; a task naming a tool the world does not have
// is SH407 at the task's line; both for a FixturesDir and for embedded
// fixtures.
func TestWorld_Tasks(t *testing.T) {
	newStaff := func(spec env.WorldSpec) *env.World {
		spec.Name, spec.Version, spec.Schema = "staffing", "1.0.0", staffSchema
		w := env.NewWorld(spec)
		env.Tool(w, "hire", "Hire someone.", func(c *env.Ctx, _ struct{}) (string, error) { return "ok", nil })
		return w
	}
	r, _ := check.Lookup("SH407")
	for _, tt := range []struct {
		name string
		bad  bool   // whether the file misspells a key
		want string // the finding's message
		line int    // the finding's line
	}{
		{"UnknownKey", true, "the tasks file does not load: tasks[0].checks[0].wieght: unknown key", 7},
		{"ToolNotOnTheSurface", false, `task hire: tools: "fire" is not on staffing's surface`, 8},
	} {
		t.Run(tt.name+"/Dir", func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "tasks.yaml")
			if err := os.WriteFile(file, []byte(tasksYAML(tt.bad)), 0o644); err != nil {
				t.Fatal(err)
			}
			got := check.World(context.Background(), newStaff(env.WorldSpec{FixturesDir: dir}))
			want := check.Finding{Pos: fmt.Sprintf("%s:%d:1", file, tt.line), Code: "SH407", Severity: r.Severity}
			if len(got) != 1 || got[0].Pos != want.Pos || got[0].Code != want.Code || got[0].Severity != want.Severity || len(got[0].Message) < len(tt.want) || got[0].Message[:len(tt.want)] != tt.want {
				t.Errorf("findings:\n%s\nwant one at %s starting %q", check.Format(got), want.Pos, tt.want)
			}
		})
		t.Run(tt.name+"/Embedded", func(t *testing.T) {
			fsys := fstest.MapFS{"tasks.yaml": {Data: []byte(tasksYAML(tt.bad))}}
			got := check.World(context.Background(), newStaff(env.WorldSpec{Fixtures: fsys}))
			pos := fmt.Sprintf("staffing embedded fixtures/tasks.yaml:%d:1", tt.line)
			if len(got) != 1 || got[0].Pos != pos || got[0].Code != "SH407" || len(got[0].Message) < len(tt.want) || got[0].Message[:len(tt.want)] != tt.want {
				t.Errorf("findings:\n%s\nwant one at %s starting %q", check.Format(got), pos, tt.want)
			}
		})
	}
	t.Run("GoTask", func(t *testing.T) {
		w := newStaff(env.WorldSpec{})
		task := env.Task{ID: "fire_all", Instruction: "Fire everyone.", Tools: []string{"fire"}, Checks: []env.Check{{Unchanged: []string{"main.staff"}}}}
		w.AddTask(task)
		line := currentLine() - 1
		got := check.World(context.Background(), w)
		self, _, _ := check.SplitPos(w.Where())
		pos := fmt.Sprintf("%s:%d:1", self, line)
		want := `task fire_all: tools: "fire" is not on staffing's surface`
		if len(got) != 1 || got[0].Pos != pos || got[0].Message != want {
			t.Errorf("findings:\n%s\nwant one at %s: %s", check.Format(got), pos, want)
		}
	})
	t.Run("Clean", func(t *testing.T) {
		fixed := `tasks:
  - id: count_staff
    instruction: Count the staff.
    tools: [hire]
    checks:
      - sql: SELECT count(*) FROM staff
`
		fsys := fstest.MapFS{"tasks.yaml": {Data: []byte(fixed)}}
		if got := check.World(context.Background(), newStaff(env.WorldSpec{Fixtures: fsys})); len(got) != 0 {
			t.Errorf("findings:\n%s", check.Format(got))
		}
	})
}

// TestWorld_TaskFixture: a task naming a fixture the world's fixtures
// directory does not hold is SH407 at the task's line, in the tasks file
// and in Go; one naming a fixture that is there is clean.
func TestWorld_TaskFixture(t *testing.T) {
	const tasks = `tasks:
  - id: count_staff
    instruction: Count the staff.
    fixture: demo
    checks:
      - sql: SELECT count(*) FROM staff
  - id: count_more
    instruction: Count the staff again.
    fixture: nosuch
    checks:
      - sql: SELECT count(*) FROM staff
`
	spec := env.WorldSpec{Name: "staffing", Version: "1.0.0", Schema: staffSchema}
	dir := compositiontest.Fixture(t, env.NewWorld(spec), composition.Options{}, "demo", func(*composition.Instance) {})
	file := filepath.Join(dir, "tasks.yaml")
	if err := os.WriteFile(file, []byte(tasks), 0o644); err != nil {
		t.Fatal(err)
	}
	spec.FixturesDir = dir
	w := env.NewWorld(spec)
	w.AddTask(env.Task{ID: "go_task", Instruction: "Count.", Fixture: "gone", Checks: []env.Check{{SQL: "SELECT 1"}}})
	line := currentLine() - 1
	self, _, _ := check.SplitPos(w.Where())
	got := check.Format(check.World(context.Background(), w))
	want := fmt.Sprintf(`%s:%d:1: SH407 error: task go_task: fixture: "gone" is not a fixture of staffing (its fixtures: demo), so every reset of the task fails
%s:7:1: SH407 error: task count_more: fixture: "nosuch" is not a fixture of staffing (its fixtures: demo), so every reset of the task fails
`, self, line, file)
	// Findings are sorted by file; the order of the two files depends on
	// where the test's directory is.
	if !slices.Equal(slices.Sorted(strings.Lines(got)), slices.Sorted(strings.Lines(want))) {
		t.Errorf("findings:\n%s\nwant\n%s", got, want)
	}

	t.Run("NoFixtures", func(t *testing.T) {
		fsys := fstest.MapFS{"tasks.yaml": {Data: []byte(tasks)}}
		got := check.Format(check.World(context.Background(), env.NewWorld(env.WorldSpec{Name: "staffing", Version: "1.0.0", Schema: staffSchema, Fixtures: fsys})))
		want := `staffing embedded fixtures/tasks.yaml:2:1: SH407 error: task count_staff: fixture: "demo" is not a fixture of staffing (it has none), so every reset of the task fails
staffing embedded fixtures/tasks.yaml:7:1: SH407 error: task count_more: fixture: "nosuch" is not a fixture of staffing (it has none), so every reset of the task fails
`
		if got != want {
			t.Errorf("findings:\n%s\nwant\n%s", got, want)
		}
	})
}

// currentLine returns the line it is called on.
func currentLine() int {
	_, _, line, _ := runtime.Caller(1)
	return line
}

// TestWorld_DefaultFixture: a DefaultFixture the world's fixtures do not
// hold is SH408 at its NewWorld line, where before the world checked clean
// and its server refused to start; one they hold is clean.
func TestWorld_DefaultFixture(t *testing.T) {
	spec := env.WorldSpec{Name: "staffing", Version: "1.0.0", Schema: staffSchema}
	spec.FixturesDir = compositiontest.Fixture(t, env.NewWorld(spec), composition.Options{}, "demo", func(*composition.Instance) {})
	spec.DefaultFixture = "dmo"
	w := env.NewWorld(spec)
	line := currentLine() - 1
	self, _, _ := check.SplitPos(w.Where())
	got := check.Format(check.World(context.Background(), w))
	want := fmt.Sprintf("%s:%d:1: SH408 error: world staffing: DefaultFixture \"dmo\" is not one of its fixtures (its fixtures: demo), so a server of the world refuses to start\n", self, line)
	if got != want {
		t.Errorf("findings:\n%s\nwant\n%s", got, want)
	}
	spec.DefaultFixture = "demo"
	if fs := check.World(context.Background(), env.NewWorld(spec)); len(fs) > 0 {
		t.Errorf("a default fixture the world has: %s", check.Format(fs))
	}
	spec.FixturesDir = ""
	got = check.Format(check.World(context.Background(), env.NewWorld(spec)))
	if !strings.Contains(got, `SH408 error: world staffing: DefaultFixture "demo" is not one of its fixtures (it has none)`) {
		t.Errorf("a world without fixtures: findings:\n%s", got)
	}
}
