package task_test

import (
	"context"
	"testing"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/task"
)

// DefinitionHash changes with everything that says what an episode of the
// task runs and how it is graded, and with nothing else: not where the
// task was declared, its difficulty, the order of a set, nor a default
// spelled out.
func TestDefinitionHash(t *testing.T) {
	seed := int64(3)
	base := func() env.Task {
		return env.Task{
			ID: "t", Instruction: "Add an entry.", Difficulty: "easy", Fixture: "acme", Now: "2026-06-01T09:00:00Z",
			Startup: map[string]any{"owner": "ada"}, Seed: &seed, Tools: []string{"add", "note"},
			Checks: []env.Check{
				{SQL: "SELECT count(*) FROM entries WHERE amount = ?", Args: []any{5}, Equals: 1},
				{Name: "only entries", OnlyChanged: []string{"main.entries", "main.notes:insert"}},
				{Name: "go", Weight: 2, Func: func(context.Context, env.Inspector, []env.ChangeRecord) (env.GradeResult, error) {
					return env.GradeResult{Score: 1}, nil
				}},
			},
			Source: "tasks.yaml:1",
		}
	}
	want := task.DefinitionHash(base())
	if len(want) != 64 {
		t.Fatalf("DefinitionHash = %q, want 64 hex digits", want)
	}
	same := map[string]func(*env.Task){
		"source":           func(k *env.Task) { k.Source = "tasks.yaml:40" },
		"difficulty":       func(k *env.Task) { k.Difficulty = "hard" },
		"tools reordered":  func(k *env.Task) { k.Tools = []string{"note", "add"} },
		"patterns ordered": func(k *env.Task) { k.Checks[1].OnlyChanged = []string{"main.notes:insert", "main.entries"} },
		"weight 1 given":   func(k *env.Task) { k.Checks[0].Weight = 1 },
		"default name":     func(k *env.Task) { k.Checks[0].Name = "sql #1" },
		"1.0 for 1":        func(k *env.Task) { k.Checks[0].Equals = 1.0 },
		"now lower-case":   func(k *env.Task) { k.Now = "2026-06-01t09:00:00.000z" },
		"now with offset":  func(k *env.Task) { k.Now = "2026-06-01T11:00:00+02:00" },
	}
	for name, edit := range same {
		k := base()
		edit(&k)
		if got := task.DefinitionHash(k); got != want {
			t.Errorf("%s: hash %s, want %s as before", name, got, want)
		}
	}
	other := map[string]func(*env.Task){
		"id":                func(k *env.Task) { k.ID = "u" },
		"instruction":       func(k *env.Task) { k.Instruction = "Add two entries." },
		"fixture":           func(k *env.Task) { k.Fixture = "" },
		"now":               func(k *env.Task) { k.Now = "2026-06-02T09:00:00Z" },
		"startup":           func(k *env.Task) { k.Startup["owner"] = "bob" },
		"seed":              func(k *env.Task) { k.Seed = nil },
		"tools":             func(k *env.Task) { k.Tools = []string{"add"} },
		"every tool":        func(k *env.Task) { k.Tools = nil },
		"no_change_correct": func(k *env.Task) { k.NoChangeCorrect = true },
		"sql":               func(k *env.Task) { k.Checks[0].SQL = "SELECT count(*) FROM entries WHERE amount >= ?" },
		"args":              func(k *env.Task) { k.Checks[0].Args = []any{6} },
		"equals":            func(k *env.Task) { k.Checks[0].Equals = 2 },
		"equals a string":   func(k *env.Task) { k.Checks[0].Equals = "1" },
		"weight":            func(k *env.Task) { k.Checks[2].Weight = 3 },
		"check name":        func(k *env.Task) { k.Checks[2].Name = "code" },
		"kind": func(k *env.Task) {
			k.Checks[1].OnlyChanged, k.Checks[1].Unchanged = nil, []string{"main.entries", "main.notes:insert"}
		},
		"pattern":          func(k *env.Task) { k.Checks[1].OnlyChanged = []string{"main.entries"} },
		"checks reordered": func(k *env.Task) { k.Checks[1], k.Checks[2] = k.Checks[2], k.Checks[1] },
	}
	seen := map[string]string{want: "base"}
	for name, edit := range other {
		k := base()
		edit(&k)
		got := task.DefinitionHash(k)
		if prev, ok := seen[got]; ok {
			t.Errorf("%s: hash %s, the same as %s's", name, got, prev)
		}
		seen[got] = name
	}
}
