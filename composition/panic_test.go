package composition_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/env"
)

// panicked returns the records of logs that say a panic was recovered.
func panicked(t *testing.T, logs *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(logs.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] == "composition: recovered a panic" {
			out = append(out, rec)
		}
	}
	logs.Reset()
	return out
}

// TestPanic_LoggedWithStack: world code that panics (a tool, a startup
// hook, a Bulk block, a Transaction's function) fails with "internal
// error: " and the value, and the instance's logger gets the panic at error
// level with its stack, once, so an author can find the line.
func TestPanic_LoggedWithStack(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "panicky", Version: "1", Schema: "CREATE TABLE t (id INTEGER PRIMARY KEY) STRICT;"})
	type hookArgs struct {
		Panic bool `json:"panic,omitempty"`
	}
	env.OnStartup(w, func(c *env.Ctx, k hookArgs) error {
		if k.Panic {
			panicInHook()
		}
		return nil
	})
	env.Tool(w, "boom", "Panics.", func(c *env.Ctx, _ noArgs) (string, error) {
		panicInTool()
		return "", nil
	})
	env.Tool(w, "boom_in_tx", "Panics inside a transaction, and says so.", func(c *env.Ctx, _ noArgs) (string, error) {
		err := c.DB.Transaction(func() error { panicInTransaction(); return nil })
		return err.Error(), nil
	})
	var logs bytes.Buffer
	opts := composition.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
	ctx := context.Background()

	_, err := composition.Open(ctx, w, composition.Options{Logger: opts.Logger, Dir: t.TempDir(), Startup: map[string]any{"panic": true}})
	want := []struct{ err, in, frame string }{{"startup hook of panicky (node main): internal error: in a hook", "a startup hook of panicky on node main", "panicInHook"}}
	got := []string{errText(err)}
	records := [][]map[string]any{panicked(t, &logs)}

	inst := compositiontest.Open(t, w, opts)
	_, err = inst.CallJSON(ctx, "boom", nil)
	want = append(want, struct{ err, in, frame string }{"internal error: in a tool", "tool boom on node main", "panicInTool"})
	got = append(got, errText(err))
	records = append(records, panicked(t, &logs))

	out, err := inst.CallJSON(ctx, "boom_in_tx", nil)
	want = append(want, struct{ err, in, frame string }{"internal error: in a transaction", "a Transaction on node main", "panicInTransaction"})
	got = append(got, errText(err)+errText(out))
	records = append(records, panicked(t, &logs))

	err = inst.Bulk(ctx, func(c *env.Ctx) error { panicInBulk(); return nil })
	want = append(want, struct{ err, in, frame string }{"internal error: in a block", "a Bulk block", "panicInBulk"})
	got = append(got, errText(err))
	records = append(records, panicked(t, &logs))

	for i, w := range want {
		if got[i] != w.err {
			t.Errorf("%s: error %q, want %q", w.in, got[i], w.err)
		}
		if len(records[i]) != 1 {
			t.Errorf("%s: %d records of the panic, want 1", w.in, len(records[i]))
			continue
		}
		rec := records[i][0]
		if rec["level"] != "ERROR" || rec["in"] != w.in || rec["panic"] != strings.TrimPrefix(w.err[strings.Index(w.err, "internal error: "):], "internal error: ") {
			t.Errorf("%s: logged %v", w.in, rec)
		}
		if stack, _ := rec["stack"].(string); !strings.Contains(stack, "composition_test."+w.frame) {
			t.Errorf("%s: the logged stack does not name %s:\n%s", w.in, w.frame, stack)
		}
	}
}

// errText returns err's text, or a string's, or "".
func errText(v any) string {
	switch v := v.(type) {
	case error:
		return v.Error()
	case string:
		return v
	}
	return ""
}

func panicInHook()        { panic("in a hook") }
func panicInTool()        { panic("in a tool") }
func panicInTransaction() { panic("in a transaction") }
func panicInBulk()        { panic("in a block") }

// TestNilPointerError: world code that returns a nil pointer as its error
// (var e *env.ToolError; return e), which is no nil error, fails with a
// *env.WorldBug saying so; the engine read the error with errors.As, whose
// call of its Unwrap panicked outside any recovery.
func TestNilPointerError(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "nilerr", Version: "1", Schema: "CREATE TABLE t (id INTEGER PRIMARY KEY) STRICT;"})
	type hookArgs struct {
		Fail bool `json:"fail,omitempty"`
	}
	env.OnStartup(w, func(c *env.Ctx, k hookArgs) error {
		if k.Fail {
			var te *env.ToolError
			return te
		}
		return nil
	})
	env.Tool(w, "typed_nil", "Returns a nil *env.ToolError.", func(c *env.Ctx, _ noArgs) (string, error) {
		if _, err := c.DB.Exec("INSERT INTO t VALUES (1)"); err != nil {
			return "", err
		}
		var te *env.ToolError
		return "", te
	})
	ctx := context.Background()
	inst := compositiontest.Open(t, w, composition.Options{})
	_, err := inst.CallJSON(ctx, "typed_nil", nil)
	var bug *env.WorldBug
	if want := "tool typed_nil on node main returned a nil *env.ToolError as its error, which is not a nil error: return nil itself when nothing failed"; !errors.As(err, &bug) || err.Error() != want {
		t.Errorf("call: %v (%T), want a WorldBug %q", err, err, want)
	}
	if rows := compositiontest.Rows(t, inst, "SELECT * FROM t"); len(rows) != 0 {
		t.Errorf("the failed call left rows: %v", rows)
	}
	_, err = composition.Open(ctx, w, composition.Options{Dir: t.TempDir(), Startup: map[string]any{"fail": true}})
	if want := "a startup hook of nilerr on node main returned a nil *env.ToolError as its error"; !errors.As(err, &bug) || !strings.Contains(err.Error(), want) {
		t.Errorf("open: %v (%T), want a WorldBug saying %q", err, err, want)
	}
}
