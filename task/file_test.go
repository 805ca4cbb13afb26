package task_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/task"
)

func TestParse_OK(t *testing.T) {
	got, err := task.Parse(filepath.Join("fixtures", task.FileName), []byte(`# every key
tasks:
  - id: t1
    instruction: Do it.
    difficulty: hard
    fixture: acme
    now: 2026-06-01T09:00:00Z
    seed: -3
    startup: {owner: ada, n: 2, when: 2026-01-01}
    tools: [add, note]
    checks:
      - sql: SELECT ?
        args: [1, "x", 2.5, true, null]
        equals: {a: [1, 2.5, "s", false], b: 2026-06-01 09:00:00}
        weight: 0.5
      - name: collateral
        only_changed: [main.entries]
      - must_change: [main.entries:insert]
      - unchanged: [main.notes]
  - id: t2
    instruction: >-
      Two
      lines.
    checks:
      - sql: SELECT 1
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []env.Task{{
		ID: "t1", Instruction: "Do it.", Difficulty: "hard", Fixture: "acme", Now: "2026-06-01T09:00:00Z",
		Seed: new(int64(-3)), Startup: map[string]any{"owner": "ada", "n": int64(2), "when": "2026-01-01"},
		Tools: []string{"add", "note"},
		Checks: []env.Check{
			{Name: "sql #1", SQL: "SELECT ?", Args: []any{int64(1), "x", 2.5, true, nil}, Weight: 0.5,
				Equals: map[string]any{"a": []any{int64(1), 2.5, "s", false}, "b": "2026-06-01 09:00:00"}},
			{Name: "collateral", OnlyChanged: []string{"main.entries"}},
			{Name: "must_change #3", MustChange: []string{"main.entries:insert"}},
			{Name: "unchanged #4", Unchanged: []string{"main.notes"}},
		},
		Source: "tasks.yaml:3",
	}, {
		ID: "t2", Instruction: "Two lines.", Checks: []env.Check{{Name: "sql #1", SQL: "SELECT 1"}}, Source: "tasks.yaml:20",
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse:\n got %#v\nwant %#v", got, want)
	}
}

func TestParse_Errors(t *testing.T) {
	const head = "tasks:\n  - id: a\n    instruction: x\n"
	const check = "    checks:\n      - sql: SELECT 1\n"
	tests := []struct {
		name string // case
		text string // file contents
		line int    // FileError.Line
		key  string // FileError.Key
		msg  string // substring of FileError.Msg
	}{
		{"Empty", "", 0, "", "is empty"},
		{"NotYAML", "tasks: [\n", 1, "", "did not find expected"},
		// yaml.v3 names the line the scalar before the tab began on.
		{"TabIndent", head + "\tdifficulty: easy\n", 4, "", "found a tab character that violates indentation"},
		{"TwoDocuments", "tasks: []\n---\ntasks: []\n", 2, "", "more than one YAML document"},
		{"NotAMapping", "- a\n", 1, "", "want a mapping, got a list"},
		{"MissingTasks", "{}\n", 1, "tasks", "missing required key"},
		{"NullDocument", "~\n", 1, "tasks", "missing required key"},
		{"UnknownTopKey", "tasks: []\ntask: 1\n", 2, "task", "unknown key (known keys: tasks)"},
		{"UnknownTaskKey", head + "    instructions: y\n", 4, "tasks[0].instructions", "unknown key (known keys: id, instruction, difficulty, fixture, now, seed, startup, tools, checks, no_change_correct)"},
		{"UnknownCheckKey", head + check + "        expect: 1\n", 6, "tasks[0].checks[0].expect", "unknown key (known keys: name, weight, sql, args, equals, only_changed, must_change, unchanged)"},
		{"DuplicateKey", head + "    id: b\n", 4, "tasks[0].id", "duplicate key (first at line 2)"},
		{"DuplicateKeyInEquals", head + check + "        equals: {a: 1, a: 2}\n", 6, "tasks[0].checks[0].equals.a", "duplicate key"},
		{"NonStringKey", "tasks:\n  - 1: x\n", 2, "tasks[0]", "keys must be strings, not the integer 1"},
		{"WeightNotANumber", head + check + "        weight: heavy\n", 6, "tasks[0].checks[0].weight", `want a number, got the string "heavy"`},
		{"NameNotAString", head + check + "        name: 1\n", 6, "tasks[0].checks[0].name", "want a string, got the integer 1 (quote it to make it a string)"},
		{"SeedNotAnInteger", head + "    seed: 1.5\n", 4, "tasks[0].seed", "want an integer, got the number 1.5"},
		{"ToolsNotAList", head + "    tools: add\n", 4, "tasks[0].tools", `want a list, got the string "add"`},
		{"ToolNotAString", head + "    tools: [add, 2]\n", 4, "tasks[0].tools[1]", "want a string, got the integer 2"},
		{"ChecksNotAList", head + "    checks: {sql: x}\n", 4, "tasks[0].checks", "want a list, got a mapping"},
		{"StartupNotAMapping", head + "    startup: [1]\n", 4, "tasks[0].startup", "want a mapping, got a list"},
		// Of several bad keywords the first in the file is named, every time.
		{"StartupFirstBadKeyword", head + "    startup:\n      zz: {a: 1, a: 2}\n      mm: {b: 1, b: 2}\n      aa: {c: 1, c: 2}\n", 5, "tasks[0].startup.zz.a", "duplicate key"},
		{"TaskNotAMapping", "tasks:\n  - just text\n", 2, "tasks[0]", `want a mapping, got the string "just text"`},
		{"EmptyTools", head + "    tools: []\n" + check, 2, "tasks[0]", "tools is an empty allow list"},
		{"EmptyPatterns", head + "    checks:\n      - unchanged: []\n", 2, "tasks[0]", "unchanged: empty list of tables"},
		{"EqualsNull", head + check + "        equals: null\n", 6, "tasks[0].checks[0].equals", `null cannot be expected`},
		{"Invalid", head, 2, "tasks[0]", "task a: no checks"},
		{"InvalidPattern", head + "    checks:\n      - only_changed: [entries]\n", 2, "tasks[0]", `table pattern "entries"`},
		{"DuplicateID", head + check + "  - id: a\n    instruction: y\n" + check, 6, "tasks[1].id", `task "a" is already declared at line 2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join("fixtures", task.FileName)
			_, err := task.Parse(path, []byte(tt.text))
			var fe *task.FileError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *task.FileError", err)
			}
			if fe.Path != path || fe.Line != tt.line || fe.Key != tt.key || !strings.Contains(fe.Msg, tt.msg) {
				t.Fatalf("got %q (line %d, key %q), want line %d, key %q, message containing %q", err, fe.Line, fe.Key, tt.line, tt.key, tt.msg)
			}
			if !strings.HasPrefix(err.Error(), path+":") {
				t.Errorf("Error() = %q, want it to start with the path", err)
			}
		})
	}
}

func TestForWorldDir(t *testing.T) {
	check := []env.Check{{SQL: "SELECT 1"}}
	goTask := env.Task{ID: "in_go", Instruction: "Go.", Checks: check}
	const fileTask = "tasks:\n  - id: in_file\n    instruction: File.\n    checks:\n      - sql: SELECT 1\n"
	tests := []struct {
		name string // case
		file string // tasks.yaml contents; "" writes none
		add  []env.Task
		ids  []string // the ids returned, in order
		err  string   // substring of the error
	}{
		{name: "GoOnly", add: []env.Task{goTask}, ids: []string{"in_go"}},
		{name: "GoThenFile", file: fileTask, add: []env.Task{goTask}, ids: []string{"in_go", "in_file"}},
		{name: "None", ids: []string{}},
		{name: "DeclaredTwice", file: strings.ReplaceAll(fileTask, "in_file", "in_go"), add: []env.Task{goTask},
			err: `task "in_go" is declared twice (file_test.go:`},
		{name: "ToolNotOnSurface", add: []env.Task{{ID: "x", Instruction: "x", Tools: []string{"add", "refund"}, Checks: check}},
			err: `tools: "refund" is not on`},
		{name: "UnknownStartupKeyword", add: []env.Task{{ID: "x", Instruction: "x", Startup: map[string]any{"region": "eu"}, Checks: check}},
			err: `startup keyword "region": no startup hook`},
		{name: "StartupValueOfTheWrongType", add: []env.Task{{ID: "x", Instruction: "x", Startup: map[string]any{"owner": 5}, Checks: check}},
			err: `startup: startup hook of ledger_fwd_startupvalueofthewrongtype (node main): startup keywords: invalid arguments: field "owner": expected string, got number`},
		{name: "UnknownNode", add: []env.Task{{ID: "x", Instruction: "x", Checks: []env.Check{{Name: "c", Unchanged: []string{"payments.charges"}}}}},
			err: `check "c": table pattern "payments.charges": ledger_fwd_unknownnode has no node "payments" (nodes: main)`},
		{name: "BrokenFile", file: "tasks: 3\n", err: "tasks.yaml:1: tasks: want a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newLedger("ledger_fwd_" + strings.ToLower(tt.name))
			for _, tk := range tt.add {
				w.AddTask(tk)
			}
			dir := t.TempDir()
			if tt.file != "" {
				if err := os.WriteFile(filepath.Join(dir, task.FileName), []byte(tt.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := task.ForWorldDir(w, dir)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ids := []string{}
			for _, tk := range got {
				ids = append(ids, tk.ID)
			}
			if !reflect.DeepEqual(ids, tt.ids) {
				t.Fatalf("ids %v, want %v", ids, tt.ids)
			}
		})
	}
}

// TestForWorld_Embedded: the tasks file of a world's embedded Fixtures is
// read where it is embedded, and an error names it so, never a copy on
// disk.
func TestForWorld_Embedded(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "ledger_embedded", Version: "1.0.0", Schema: `CREATE TABLE entries (id INTEGER PRIMARY KEY) STRICT;`,
		Fixtures: fstest.MapFS{task.FileName: {Data: []byte("tasks:\n  - id: t\n    instruction: x\n    checks:\n      - sql: SELECT 1\n        wieght: 2\n")}}})
	_, err := task.ForWorld(w)
	want := "ledger_embedded embedded fixtures/tasks.yaml:6: tasks[0].checks[0].wieght: unknown key"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("ForWorld: %v, want an error starting %q", err, want)
	}
	if _, err := task.ForWorldDir(w, ""); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("ForWorldDir(w, \"\"): %v, want the world's own file read, an error starting %q", err, want)
	}
	if task.EmbeddedPath(w) != "ledger_embedded embedded fixtures/tasks.yaml" {
		t.Errorf("EmbeddedPath = %q", task.EmbeddedPath(w))
	}
}

// FuzzParse: whatever the bytes, Parse returns tasks that validate,
// with distinct ids, or a *FileError; it never panics.
func FuzzParse(f *testing.F) {
	f.Add([]byte("tasks:\n  - id: a\n    instruction: x\n    checks:\n      - sql: SELECT 1\n        equals: [1, {b: c}]\n"))
	f.Add([]byte("tasks:\n  - id: a\n    instruction: x\n    tools: [t]\n    checks:\n      - only_changed: [main.x:insert]\n        weight: 2\n"))
	f.Add([]byte("tasks:\n  - &a {id: a, instruction: x, checks: [{sql: s}]}\n  - *a\n"))
	f.Add([]byte("tasks: [{id: a, seed: 99999999999999999999}]"))
	f.Add([]byte("tasks: !!map {}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tasks, err := task.Parse(task.FileName, data)
		if err != nil {
			var fe *task.FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not a *FileError", err, err)
			}
			return
		}
		seen := map[string]bool{}
		for _, tk := range tasks {
			if err := tk.Validate(); err != nil {
				t.Fatalf("accepted an invalid task: %v", err)
			}
			if seen[tk.ID] {
				t.Fatalf("accepted id %q twice", tk.ID)
			}
			seen[tk.ID] = true
		}
	})
}
