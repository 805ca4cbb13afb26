package composition_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/env"
)

// formatLog renders change records one per line for comparison:
// "call tool [internal] world table op key before=… after=…".
func formatLog(log []env.ChangeRecord) string {
	var b strings.Builder
	for _, r := range log {
		fmt.Fprintf(&b, "%d %s", r.Call, r.Tool)
		if r.Internal {
			b.WriteString(" internal")
		}
		fmt.Fprintf(&b, " %s %s %s %v", r.World, r.Table, r.Op, r.Key)
		if r.Before != nil {
			fmt.Fprintf(&b, " before=%v", r.Before)
		}
		if r.After != nil {
			fmt.Fprintf(&b, " after=%v", r.After)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// wantLog fails t unless inst's change log, formatted, is lines.
func wantLog(t *testing.T, inst *composition.Instance, lines ...string) {
	t.Helper()
	if got, want := formatLog(inst.ChangeLog()), logLines(lines...); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
}

func logLines(ls ...string) string {
	if len(ls) == 0 {
		return ""
	}
	return strings.Join(ls, "\n") + "\n"
}

// kvWorld is a world of one table with tools that touch row 'a'.
func kvWorld(name string) *env.World {
	w := env.NewWorld(env.WorldSpec{Name: name, Version: "1.0.0",
		Schema: "CREATE TABLE kv (id TEXT PRIMARY KEY, v INTEGER NOT NULL) STRICT;"})
	env.Tool(w, "clear", "Delete every row.", func(c *env.Ctx, _ noArgs) (any, error) {
		_, err := c.DB.Exec("DELETE FROM kv")
		return nil, err
	})
	env.Tool(w, "bump", "Add one to row a.", func(c *env.Ctx, _ noArgs) (any, error) {
		_, err := c.DB.Exec("UPDATE kv SET v = v + 1 WHERE id = 'a'")
		return nil, err
	})
	env.Tool(w, "drop", "Delete row a.", func(c *env.Ctx, _ noArgs) (any, error) {
		_, err := c.DB.Exec("DELETE FROM kv WHERE id = 'a'")
		return nil, err
	})
	return w
}

// TestChangeLog_DeleteAllPreparedOutsideCalls runs a DELETE without WHERE in
// a call after the same statement ran where nothing is captured (a bulk
// block, the instance's DB): every deleted row is in the log.
func TestChangeLog_DeleteAllPreparedOutsideCalls(t *testing.T) {
	want := logLines(
		"1 clear main kv delete map[id:a] before=map[id:a v:1]",
		"1 clear main kv delete map[id:b] before=map[id:b v:2]",
	)
	for _, tt := range []struct {
		name    string
		prepare func(inst *composition.Instance) error // runs DELETE FROM kv outside any call
	}{
		{"Bulk", func(inst *composition.Instance) error {
			return inst.Bulk(context.Background(), func(c *env.Ctx) error {
				_, err := c.DB.Exec("DELETE FROM kv")
				return err
			})
		}},
		{"InstanceDB", func(inst *composition.Instance) error {
			_, err := inst.DB().Exec("DELETE FROM kv")
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inst := compositiontest.Open(t, kvWorld("clr"), composition.Options{})
			if err := tt.prepare(inst); err != nil {
				t.Fatal(err)
			}
			if _, err := inst.DB().Exec("INSERT INTO kv VALUES ('a', 1), ('b', 2)"); err != nil {
				t.Fatal(err)
			}
			compositiontest.Call(t, inst, "clear", `{}`)
			if got := formatLog(inst.ChangeLog()); got != want {
				t.Errorf("log:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestChangeLog_DirectWritesAroundNestedCalls writes an added world's store
// directly and calls its tools on the same row in one call: each frame's
// records describe exactly its own changes, in the order they were made.
func TestChangeLog_DirectWritesAroundNestedCalls(t *testing.T) {
	host := env.NewWorld(env.WorldSpec{Name: "dhost", Version: "1.0.0", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(kvWorld("dkv"), env.Name("kv"))
	steps := map[string][]string{
		"insert_bump":        {"INSERT INTO kv VALUES ('a', 1)", "bump"},
		"insert_drop":        {"INSERT INTO kv VALUES ('a', 1)", "drop"},
		"insert_bump_update": {"INSERT INTO kv VALUES ('a', 1)", "bump", "UPDATE kv SET v = 10 WHERE id = 'a'"},
		"tx_insert_bump":     {"tx:INSERT INTO kv VALUES ('a', 1)", "bump", "UPDATE kv SET v = 10 WHERE id = 'a'"},
		"tx_bump_fails":      {"INSERT INTO kv VALUES ('a', 1)", "txfail:bump"},
		"raw_insert_bump":    {"raw:INSERT INTO kv VALUES ('a', 1)", "bump", "raw:UPDATE kv SET v = 10 WHERE id = 'a'"},
	}
	for name, ss := range steps {
		env.Tool(host, name, "Write kv directly and through its tools.", func(c *env.Ctx, _ noArgs) (any, error) {
			kv := c.Worlds.Get("kv")
			var raw *sqlite3.Conn
			for _, s := range ss {
				var err error
				switch {
				case strings.HasPrefix(s, "tx:"):
					err = kv.DB().Transaction(func() error {
						_, err := kv.DB().Exec(strings.TrimPrefix(s, "tx:"))
						return err
					})
				case strings.HasPrefix(s, "txfail:"):
					// The nested call's savepoint is released, then the
					// transaction around it rolls back: nothing stays.
					kv.DB().Transaction(func() error {
						kv.DB().Exec("UPDATE kv SET v = 5 WHERE id = 'a'")
						if _, err := kv.Call(strings.TrimPrefix(s, "txfail:"), map[string]any{}); err != nil {
							return err
						}
						return errors.New("changed my mind")
					})
				case strings.HasPrefix(s, "raw:"):
					// One raw connection, taken before the nested call.
					if raw == nil {
						c, err := kv.DB().Conn()
						if err != nil {
							return nil, err
						}
						raw = c.(*sqlite3.Conn)
					}
					err = raw.Exec(strings.TrimPrefix(s, "raw:"))
				case strings.Contains(s, " "):
					_, err = kv.DB().Exec(s)
				default:
					_, err = kv.Call(s, map[string]any{})
				}
				if err != nil {
					return nil, err
				}
			}
			return nil, nil
		})
	}
	for _, tt := range []struct {
		tool string
		want string
	}{
		{"insert_bump", logLines(
			"1 insert_bump kv kv insert map[id:a] after=map[id:a v:1]",
			"1 bump internal kv kv update map[id:a] before=map[id:a v:1] after=map[id:a v:2]",
		)},
		{"insert_drop", logLines(
			"1 insert_drop kv kv insert map[id:a] after=map[id:a v:1]",
			"1 drop internal kv kv delete map[id:a] before=map[id:a v:1]",
		)},
		{"insert_bump_update", logLines(
			"1 insert_bump_update kv kv insert map[id:a] after=map[id:a v:1]",
			"1 bump internal kv kv update map[id:a] before=map[id:a v:1] after=map[id:a v:2]",
			"1 insert_bump_update kv kv update map[id:a] before=map[id:a v:2] after=map[id:a v:10]",
		)},
		{"tx_insert_bump", logLines(
			"1 tx_insert_bump kv kv insert map[id:a] after=map[id:a v:1]",
			"1 bump internal kv kv update map[id:a] before=map[id:a v:1] after=map[id:a v:2]",
			"1 tx_insert_bump kv kv update map[id:a] before=map[id:a v:2] after=map[id:a v:10]",
		)},
		{"raw_insert_bump", logLines(
			"1 raw_insert_bump kv kv insert map[id:a] after=map[id:a v:1]",
			"1 bump internal kv kv update map[id:a] before=map[id:a v:1] after=map[id:a v:2]",
			"1 raw_insert_bump kv kv update map[id:a] before=map[id:a v:2] after=map[id:a v:10]",
		)},
		{"tx_bump_fails", logLines(
			"1 tx_bump_fails kv kv insert map[id:a] after=map[id:a v:1]",
		)},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			inst := compositiontest.Open(t, host, composition.Options{})
			compositiontest.Call(t, inst, tt.tool, `{}`)
			if got := formatLog(inst.ChangeLog()); got != tt.want {
				t.Errorf("log:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestChangeLog_SavepointAcrossANestedCall opens a savepoint on an added
// world's store in a direct transaction, writes a row, has a nested call
// update it and rolls back to the savepoint: that would undo what the log
// already holds (the direct insert and the nested call's update), so it is
// a WorldBug and the rows stay as the log says.
func TestChangeLog_SavepointAcrossANestedCall(t *testing.T) {
	host := env.NewWorld(env.WorldSpec{Name: "shost", Version: "1.0.0", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(kvWorld("skv"), env.Name("kv"))
	env.Tool(host, "undo", "Roll back across a nested call.", func(c *env.Ctx, _ noArgs) (any, error) {
		kv := c.Worlds.Get("kv")
		var undoErr error
		err := kv.DB().Transaction(func() error {
			for _, q := range []string{"SAVEPOINT u", "INSERT INTO kv VALUES ('a', 1)"} {
				if _, err := kv.DB().Exec(q); err != nil {
					return err
				}
			}
			if _, err := kv.Call("bump", map[string]any{}); err != nil {
				return err
			}
			_, undoErr = kv.DB().Exec("ROLLBACK TO u") // ignored, as careless code would
			return nil
		})
		if err != nil {
			return nil, err
		}
		return nil, undoErr
	})
	inst := compositiontest.Open(t, host, composition.Options{})
	_, err := inst.CallJSON(context.Background(), "undo", []byte(`{}`))
	var bug *env.WorldBug
	if !errors.As(err, &bug) || !strings.HasPrefix(bug.Message, `DB.Exec("ROLLBACK TO u"): no savepoint of that name was opened in this frame`) {
		t.Fatalf("err = %v, want a WorldBug naming ROLLBACK TO u", err)
	}
	row, err := inst.Inspect().One(context.Background(), "SELECT group_concat(id || '=' || v) AS rows FROM kv.kv")
	if err != nil {
		t.Fatal(err)
	}
	if row["rows"] != "a=2" {
		t.Errorf("rows %v, want a=2", row["rows"])
	}
	wantLog(t, inst,
		"1 undo kv kv insert map[id:a] after=map[id:a v:1]",
		"1 bump internal kv kv update map[id:a] before=map[id:a v:1] after=map[id:a v:2]",
	)
}

// TestChangeLog_FailedCallLeavesNothing ends a call's transaction from
// inside it, through SQL a tool runs in the call's transaction or in a
// savepoint of it: whatever the tool or its middleware writes afterwards
// must not run in autocommit, and the failed call leaves no row and no
// record.
func TestChangeLog_FailedCallLeavesNothing(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "lost", Version: "1.0.0", Schema: `
CREATE TABLE kv (id TEXT PRIMARY KEY, v INTEGER NOT NULL) STRICT;
CREATE TABLE audit (n INTEGER PRIMARY KEY, note TEXT NOT NULL) STRICT;
CREATE TRIGGER no_negative BEFORE INSERT ON kv WHEN NEW.v < 0 BEGIN SELECT RAISE(ROLLBACK, 'negative'); END;`})
	w.Use(func(c *env.Ctx, next func() (any, error)) (any, error) {
		out, err := next()
		// Middleware that writes whatever the tool did.
		c.DB.Exec("INSERT INTO audit (note) VALUES (?)", c.Call.Tool)
		return out, err
	})
	tools := map[string]string{
		"raise":       "INSERT INTO kv VALUES ('b', -1)",
		"or_rollback": "INSERT OR ROLLBACK INTO kv VALUES ('a', 2)",
		"commit":      "COMMIT",
		"end":         "END TRANSACTION",
		"rollback":    "ROLLBACK",
		"begin":       "BEGIN",
		"release":     "RELEASE sqlitestore_1",
	}
	for name, stmt := range tools {
		// The statement runs in the tool's transaction, or in a savepoint
		// (DB.Transaction) that ends before the tool writes again.
		for _, inTx := range []bool{false, true} {
			if inTx {
				name += "_in_transaction"
			}
			env.Tool(w, name, "Write, end the transaction, write again.", func(c *env.Ctx, _ noArgs) (any, error) {
				if _, err := c.DB.Exec("INSERT INTO kv VALUES ('a', 1)"); err != nil {
					return nil, err
				}
				var ctlErr error
				if inTx {
					c.DB.Transaction(func() error {
						_, ctlErr = c.DB.Exec(stmt)
						return nil // ignored, as careless code would
					})
				} else {
					_, ctlErr = c.DB.Exec(stmt) // ignored, as careless code would
				}
				c.DB.Exec("INSERT INTO kv VALUES ('c', 3)")
				if ctlErr == nil {
					return nil, errors.New("the statement ran")
				}
				return nil, ctlErr
			})
		}
	}
	for _, tool := range w.Tools() {
		name := tool.Name
		stmt := tools[strings.TrimSuffix(name, "_in_transaction")]
		t.Run(name, func(t *testing.T) {
			inst := compositiontest.Open(t, w, composition.Options{})
			_, err := inst.CallJSON(context.Background(), name, []byte(`{}`))
			if err == nil {
				t.Fatal("the call succeeded")
			}
			var bug *env.WorldBug
			switch strings.TrimSuffix(name, "_in_transaction") {
			case "raise", "or_rollback":
				if errors.As(err, &bug) {
					t.Errorf("err = %v, want SQLite's error, not a WorldBug", err)
				}
			default:
				if !errors.As(err, &bug) || !strings.Contains(bug.Message, stmt) || !strings.Contains(bug.Message, "DB.Transaction") {
					t.Errorf("err = %v, want a WorldBug naming %q and DB.Transaction", err, stmt)
				}
			}
			row, err := inst.Inspect().One(context.Background(), "SELECT (SELECT count(*) FROM kv) + (SELECT count(*) FROM audit) AS n")
			if err != nil {
				t.Fatal(err)
			}
			if row["n"] != int64(0) {
				t.Errorf("%v rows left by the failed call, want none", row["n"])
			}
			if log := inst.ChangeLog(); len(log) != 0 {
				t.Errorf("records of the failed call:\n%s", formatLog(log))
			}
			// The instance keeps working.
			if _, err := inst.DB().Exec("INSERT INTO kv VALUES ('z', 1)"); err != nil {
				t.Errorf("a statement after the failed call: %v", err)
			}
		})
	}
}

// TestChangeLog_DirectWritesPastTheDeadline writes an added world's store
// directly, has one statement on it fail (so the capture must read the rows
// back) and runs past the call's deadline: the committed rows keep their
// records.
func TestChangeLog_DirectWritesPastTheDeadline(t *testing.T) {
	host := env.NewWorld(env.WorldSpec{Name: "lhost", Version: "1.0.0", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(kvWorld("lkv"), env.Name("kv"))
	// The deadline passes inside the tool (a server's own time limit
	// cancels with DeadlineExceeded as the cause), with no clock involved.
	ctx, expire := context.WithCancelCause(context.Background())
	defer expire(nil)
	env.Tool(host, "late", "Write kv directly, then run out of time.", func(c *env.Ctx, _ noArgs) (any, error) {
		db := c.Worlds.Get("kv").DB()
		if _, err := db.Exec("INSERT INTO kv VALUES ('a', 1)"); err != nil {
			return nil, err
		}
		db.Exec("INSERT INTO kv VALUES ('a', 2)") // fails: the key is taken
		expire(context.DeadlineExceeded)
		return nil, nil
	})
	inst := compositiontest.Open(t, host, composition.Options{})
	inst.CallJSON(ctx, "late", []byte(`{}`)) // the tool succeeded; the call may report the lost time
	row, err := inst.Inspect().One(context.Background(), "SELECT count(*) AS n FROM kv.kv")
	if err != nil {
		t.Fatal(err)
	}
	if row["n"] != int64(1) {
		t.Fatalf("%v rows, want the one committed", row["n"])
	}
	wantLog(t, inst, "1 late kv kv insert map[id:a] after=map[id:a v:1]")
}

// TestDB_TransactionControlIsAWorldBug runs transaction control through
// every door a world has to a store: each is a WorldBug naming the method
// and the statement, and changes nothing.
func TestDB_TransactionControlIsAWorldBug(t *testing.T) {
	w := kvWorld("tcdb")
	env.Tool(w, "one", "Roll back through One.", func(c *env.Ctx, _ noArgs) (any, error) {
		c.DB.Exec("INSERT INTO kv VALUES ('a', 1)")
		return c.DB.One("rollback")
	})
	inst := compositiontest.Open(t, w, composition.Options{})
	check := func(t *testing.T, err error, want string) {
		t.Helper()
		var bug *env.WorldBug
		if !errors.As(err, &bug) || !strings.HasPrefix(bug.Message, want) {
			t.Fatalf("err = %v, want a WorldBug beginning %q", err, want)
		}
	}
	_, err := inst.CallJSON(context.Background(), "one", []byte(`{}`))
	check(t, err, `DB.One("rollback"): a world does not begin, commit or roll back transactions`)
	_, err = inst.DB().Exec("BEGIN IMMEDIATE")
	check(t, err, `DB.Exec("BEGIN IMMEDIATE")`)
	_, err = inst.DB().Rows("SAVEPOINT x")
	check(t, err, `DB.Rows("SAVEPOINT x")`)
	_, err = inst.DB().One("COMMIT")
	check(t, err, `DB.One("COMMIT")`)
	check(t, inst.DB().Transaction(func() error { return nil }), "inst.DB().Transaction: use Bulk")
	row, err := inst.DB().One("SELECT count(*) AS n FROM kv")
	if err != nil || row["n"] != int64(0) {
		t.Fatalf("rows after the refusals: %v, %v; want 0", row, err)
	}
}

// TestDB_AttachIsAWorldBug has a host tool run the agent's SQL on the
// host's store, as a run_sql tool does: an ATTACH of an added world's file,
// and the write through it that would follow, never reach that file, so
// the change log misses nothing. Each refusal is a WorldBug naming the
// statement.
func TestDB_AttachIsAWorldBug(t *testing.T) {
	host := env.NewWorld(env.WorldSpec{Name: "ahost", Version: "1.0.0", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(kvWorld("akv"), env.Name("kv"))
	type sqlArgs struct {
		SQL string `json:"sql"`
	}
	env.Tool(host, "run_sql", "Run one SQL statement.", func(c *env.Ctx, a sqlArgs) (any, error) {
		return c.DB.Rows(a.SQL)
	})
	inst := compositiontest.Open(t, host, composition.Options{})
	ctx := context.Background()
	if err := inst.Bulk(ctx, func(c *env.Ctx) error {
		_, err := c.Worlds.Get("kv").DB().Exec("INSERT INTO kv VALUES ('a', 1)")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	before := len(inst.ChangeLog())
	sibling := filepath.Join(inst.Dir(), "state.kv.sqlite")
	for _, sql := range []string{
		"ATTACH DATABASE '" + sibling + "' AS kv",
		"ATTACH '" + sibling + "' AS sib",
		"DETACH DATABASE kv",
	} {
		args, _ := json.Marshal(sqlArgs{sql})
		_, err := inst.CallJSON(ctx, "run_sql", args)
		var bug *env.WorldBug
		want := fmt.Sprintf("DB.Rows(%q): a world's store reaches its own file only: ATTACH and DETACH are refused", sql)
		if !errors.As(err, &bug) || !strings.HasPrefix(bug.Message, want) {
			t.Fatalf("run_sql %s: err = %v, want a WorldBug beginning %q", sql, err, want)
		}
	}
	for _, sql := range []string{"UPDATE kv.kv SET v = 99", "UPDATE sib.kv SET v = 99"} {
		args, _ := json.Marshal(sqlArgs{sql})
		if _, err := inst.CallJSON(ctx, "run_sql", args); err == nil || !strings.Contains(err.Error(), "no such table") {
			t.Fatalf("run_sql %s: err = %v, want no such table", sql, err)
		}
	}
	row, err := inst.Inspect().One(ctx, "SELECT v FROM kv.kv WHERE id = 'a'")
	if err != nil || row["v"] != int64(1) {
		t.Fatalf("kv row a after the refusals: %v, %v; want v = 1", row, err)
	}
	if got := inst.ChangeLog()[before:]; len(got) != 0 {
		t.Errorf("change log grew by %v", got)
	}
}

// TestChangeLog_DirectWritesUseTheOwnName: a host middleware on a
// contributed tool (published as x_bump) writes the child's store
// directly; those records name the tool by its own name, bump, as the
// tool's frame records do, never by the published one.
func TestChangeLog_DirectWritesUseTheOwnName(t *testing.T) {
	host := env.NewWorld(env.WorldSpec{Name: "ohost", Version: "1.0.0", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(kvWorld("okv"), env.Name("kid"), env.ToolPrefix("x_"), env.ToolAllowList("bump"))
	host.Use(func(c *env.Ctx, next func() (any, error)) (any, error) {
		if _, err := c.Worlds.Get("kid").DB().Exec("INSERT OR IGNORE INTO kv VALUES ('a', 0)"); err != nil {
			return nil, err
		}
		return next()
	})
	inst := compositiontest.Open(t, host, composition.Options{})
	compositiontest.Call(t, inst, "x_bump", `{}`)
	wantLog(t, inst,
		"1 bump kid kv insert map[id:a] after=map[id:a v:0]",
		"1 bump kid kv update map[id:a] before=map[id:a v:0] after=map[id:a v:1]",
	)
}

// TestChangeLog_VacuumInACallIsAWorldBug: a VACUUM may renumber the rowids
// that key a table without a primary key, so a call may not run one, on
// its own store (in its transaction) or directly on an added world's
// (where SQLite would run it): either is a WorldBug naming the statement,
// and the log stays exact. Between calls, the instance's DB vacuums.
func TestChangeLog_VacuumInACallIsAWorldBug(t *testing.T) {
	child := env.NewWorld(env.WorldSpec{Name: "vkid", Version: "1.0.0", Schema: "CREATE TABLE n (v TEXT);"})
	host := env.NewWorld(env.WorldSpec{Name: "vhost", Version: "1.0.0", Schema: "CREATE TABLE n (v TEXT);"})
	host.AddWorld(child, env.Name("kid"))
	type sqlArgs struct {
		Own bool     `json:"own,omitempty"`
		SQL []string `json:"sql"`
	}
	env.Tool(host, "run", "Run SQL on the host's or the child's store.", func(c *env.Ctx, a sqlArgs) (any, error) {
		db := c.Worlds.Get("kid").DB()
		if a.Own {
			db = c.DB
		}
		for _, q := range a.SQL {
			if _, err := db.Exec(q); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	inst := compositiontest.Open(t, host, composition.Options{})
	ctx := context.Background()
	compositiontest.Call(t, inst, "run", `{"sql": ["INSERT INTO n VALUES ('a'), ('b'), ('c')"]}`)
	for _, own := range []bool{false, true} {
		args, _ := json.Marshal(sqlArgs{Own: own, SQL: []string{"DELETE FROM n WHERE v = 'a'", "VACUUM"}})
		_, err := inst.CallJSON(ctx, "run", args)
		var bug *env.WorldBug
		const want = `DB.Exec("VACUUM"): VACUUM is refused during a call`
		if !errors.As(err, &bug) || !strings.HasPrefix(bug.Message, want) {
			t.Fatalf("own %t: err = %v, want a WorldBug beginning %q", own, err, want)
		}
	}
	compositiontest.Call(t, inst, "run", `{"sql": ["UPDATE n SET v = upper(v)"]}`)
	wantLog(t, inst,
		"1 run kid n insert map[rowid:1] after=map[v:a]",
		"1 run kid n insert map[rowid:2] after=map[v:b]",
		"1 run kid n insert map[rowid:3] after=map[v:c]",
		// The direct delete of the refused call's stretch stays committed.
		"2 run kid n delete map[rowid:1] before=map[v:a]",
		"4 run kid n update map[rowid:2] before=map[v:b] after=map[v:B]",
		"4 run kid n update map[rowid:3] before=map[v:c] after=map[v:C]",
	)
	if _, err := inst.DB().Exec("VACUUM"); err != nil {
		t.Errorf("VACUUM between calls: %v", err)
	}
}

// TestChangeLog_StorePragmaIsAWorldBug: a tool that turns the journal off
// would keep the rows of a DB.Transaction it rolls back, with no record of
// them: the PRAGMA is a WorldBug naming it, the transaction still rolls
// back, and the log and the store agree.
func TestChangeLog_StorePragmaIsAWorldBug(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "jo", Version: "1.0.0", Schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, v INT NOT NULL);"})
	env.Tool(w, "go", "", func(c *env.Ctx, _ noArgs) (any, error) {
		_, perr := c.DB.Exec("PRAGMA journal_mode=OFF")
		err := c.DB.Transaction(func() error {
			if _, err := c.DB.Exec("INSERT INTO t VALUES (1, 1)"); err != nil {
				return err
			}
			return errors.New("undo")
		})
		if err == nil || err.Error() != "undo" {
			return nil, fmt.Errorf("transaction: %v", err)
		}
		return nil, perr
	})
	inst := compositiontest.Open(t, w, composition.Options{})
	_, err := inst.CallJSON(context.Background(), "go", []byte(`{}`))
	var bug *env.WorldBug
	const want = `DB.Exec("PRAGMA journal_mode=OFF"): the store keeps journal_mode, writable_schema and schema_version its own: ` +
		`a failed call and each ROLLBACK TO roll back through its journal, and the change log reads the schema SQLite keeps; a world may read these PRAGMAs, not set them`
	if !errors.As(err, &bug) || bug.Message != want {
		t.Fatalf("err = %v, want the WorldBug %q", err, want)
	}
	row, err := inst.Inspect().One(context.Background(), "SELECT count(*) AS n FROM t")
	if err != nil || row["n"] != int64(0) || len(inst.ChangeLog()) != 0 {
		t.Errorf("%v rows in t (%v), %d records; want none", row["n"], err, len(inst.ChangeLog()))
	}
}

// TestChangeLog_StorePragmaOnTheRawConnection: the journal turned off on
// the raw connection would stay off for later calls, whose rolled-back
// transactions would keep their rows with no record of them: SQLite
// refuses the PRAGMA there ("not authorized"), and a later call's
// DB.Transaction that fails still rolls back.
func TestChangeLog_StorePragmaOnTheRawConnection(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "jr", Version: "1.0.0", Schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL);"})
	env.Tool(w, "raw", "", func(c *env.Ctx, a struct {
		SQL string `json:"sql"`
	}) (any, error) {
		conn, err := c.DB.Conn()
		if err != nil {
			return nil, err
		}
		return nil, conn.(*sqlite3.Conn).Exec(a.SQL)
	})
	env.Tool(w, "try", "", func(c *env.Ctx, _ noArgs) (any, error) {
		err := c.DB.Transaction(func() error {
			if _, err := c.DB.Exec("INSERT INTO t VALUES (1, 'rolled back')"); err != nil {
				return err
			}
			return errors.New("undo")
		})
		if err == nil || err.Error() != "undo" {
			return nil, fmt.Errorf("transaction: %v", err)
		}
		return nil, nil
	})
	inst := compositiontest.Open(t, w, composition.Options{})
	for _, sql := range []string{"PRAGMA journal_mode=OFF", "PRAGMA writable_schema=1", "PRAGMA schema_version=99"} {
		args, _ := json.Marshal(map[string]string{"sql": sql})
		_, err := inst.CallJSON(context.Background(), "raw", args)
		if err == nil || !strings.Contains(err.Error(), "not authorized") {
			t.Errorf("%s on the raw connection: err = %v, want SQLite's not authorized", sql, err)
		}
	}
	compositiontest.Call(t, inst, "try", `{}`)
	row, err := inst.Inspect().One(context.Background(), "SELECT count(*) AS n FROM t")
	if err != nil || row["n"] != int64(0) || len(inst.ChangeLog()) != 0 {
		t.Errorf("%v rows in t (%v), %d records; want none", row["n"], err, len(inst.ChangeLog()))
	}
}

// TestChangeLog_DropAndCreateTable: a tool that drops a table and creates
// one from a query moves rows SQLite reports no event for; the log has a
// delete for every row dropped, an insert for every row created, and
// nothing when the call fails.
func TestChangeLog_DropAndCreateTable(t *testing.T) {
	w := kvWorld("ddl")
	type sqlArgs struct {
		SQL  []string `json:"sql"`
		Fail bool     `json:"fail,omitempty"`
	}
	env.Tool(w, "run", "Run SQL.", func(c *env.Ctx, a sqlArgs) (any, error) {
		for _, q := range a.SQL {
			if _, err := c.DB.Exec(q); err != nil {
				return nil, err
			}
		}
		if a.Fail {
			return nil, env.Errorf("failed on purpose")
		}
		return nil, nil
	})
	inst := compositiontest.Open(t, w, composition.Options{})
	if _, err := inst.DB().Exec("INSERT INTO kv VALUES ('a', 1), ('b', 2)"); err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{
		`{"sql": ["CREATE TABLE copy AS SELECT id, v FROM kv", "DROP TABLE kv"], "fail": true}`,
		`{"sql": ["CREATE TABLE copy AS SELECT id, v FROM kv", "DROP TABLE kv"]}`,
	} {
		_, _ = inst.CallJSON(context.Background(), "run", json.RawMessage(args))
	}
	wantLog(t, inst,
		"2 run main copy insert map[rowid:1] after=map[id:a v:1]",
		"2 run main copy insert map[rowid:2] after=map[id:b v:2]",
		"2 run main kv delete map[id:a] before=map[id:a v:1]",
		"2 run main kv delete map[id:b] before=map[id:b v:2]",
	)
}

// TestChangeLog_RawTransactionOnADirectStore begins a transaction on the
// raw connection of an added world's store used directly, outside its
// frames: a nested call or a Transaction inside it is a WorldBug, and so
// is leaving it open when the call ends, where the transaction is
// committed. The log then describes exactly the rows the files hold, and
// the inspection view reads them. Before, a nested call's frame was a
// savepoint inside it and a later ROLLBACK took rows the log kept, and a
// transaction left open held its rows uncommitted (and the file locked)
// across calls while the log described them.
func TestChangeLog_RawTransactionOnADirectStore(t *testing.T) {
	host := env.NewWorld(env.WorldSpec{Name: "rthost", Version: "1.0.0", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(kvWorld("rtkv"), env.Name("kv"), env.ToolPrefix("kv_"))
	type rawArgs struct {
		Steps []string `json:"steps"`
	}
	env.Tool(host, "raw", "Run steps on kv: SQL on its raw connection, direct SQL (db:), a nested call (call:) or a Transaction (tx:).",
		func(c *env.Ctx, in rawArgs) (any, error) {
			kv := c.Worlds.Get("kv")
			conn, err := kv.DB().Conn()
			if err != nil {
				return nil, err
			}
			for _, s := range in.Steps {
				kind, arg, _ := strings.Cut(s, ":")
				switch kind {
				case "db":
					_, err = kv.DB().Exec(arg)
				case "call":
					_, err = kv.Call(arg, noArgs{})
				case "tx":
					err = kv.DB().Transaction(func() error {
						_, err := kv.DB().Exec(arg)
						return err
					})
				default:
					err = conn.(*sqlite3.Conn).Exec(s)
				}
				if err != nil {
					return nil, err
				}
			}
			return nil, nil
		})
	for _, tt := range []struct {
		name    string
		steps   []string
		wantErr bool
		rows    string // kv's rows after the call, id=v
		log     []string
	}{
		{name: "Committed", steps: []string{"BEGIN", "db:INSERT INTO kv VALUES ('a', 1)", "COMMIT", "call:bump"},
			rows: "a=2", log: []string{
				"1 raw kv kv insert map[id:a] after=map[id:a v:1]",
				"1 bump internal kv kv update map[id:a] before=map[id:a v:1] after=map[id:a v:2]",
			}},
		{name: "RolledBack", steps: []string{"BEGIN", "db:INSERT INTO kv VALUES ('a', 1)", "ROLLBACK"}},
		{name: "NestedCallInside", steps: []string{"BEGIN", "db:INSERT INTO kv VALUES ('a', 1)", "call:bump", "ROLLBACK"},
			wantErr: true, rows: "a=1", log: []string{"1 raw kv kv insert map[id:a] after=map[id:a v:1]"}},
		{name: "TransactionInside", steps: []string{"SAVEPOINT s", "tx:INSERT INTO kv VALUES ('a', 1)", "ROLLBACK"},
			wantErr: true},
		{name: "LeftOpen", steps: []string{"BEGIN", "db:INSERT INTO kv VALUES ('a', 1)"},
			wantErr: true, rows: "a=1", log: []string{"1 raw kv kv insert map[id:a] after=map[id:a v:1]"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			inst := compositiontest.Open(t, host, composition.Options{})
			args, _ := json.Marshal(rawArgs{Steps: tt.steps})
			_, err := inst.CallJSON(ctx, "raw", args)
			var bug *env.WorldBug
			if tt.wantErr != errors.As(err, &bug) {
				t.Fatalf("call = %v, want a WorldBug: %v", err, tt.wantErr)
			}
			if bug != nil && !strings.Contains(bug.Message, "a transaction begun on a store's raw connection (DB().Conn()) is open") {
				t.Errorf("WorldBug = %q", bug.Message)
			}
			row, err := inst.Inspect().One(ctx, "SELECT coalesce(group_concat(id || '=' || v), '') AS rows FROM kv.kv")
			if err != nil {
				t.Fatal(err)
			}
			if row["rows"] != tt.rows {
				t.Errorf("kv's rows = %q, want %q", row["rows"], tt.rows)
			}
			wantLog(t, inst, tt.log...)
			// The store is usable by the next call.
			compositiontest.Call(t, inst, "kv_bump", `{}`)
		})
	}
}

// TestChangeLog_UntrackedPerNode pins the spec's per-node exclusion: each
// world's UntrackedTables leave its own node's table of that name out of
// the change log, and no other node's.
func TestChangeLog_UntrackedPerNode(t *testing.T) {
	const schema = "CREATE TABLE audit (id INTEGER PRIMARY KEY, what TEXT) STRICT;"
	child := env.NewWorld(env.WorldSpec{Name: "utchild", Version: "1", Schema: schema})
	env.Tool(child, "note", "Write an audit row.", func(c *env.Ctx, _ noArgs) (any, error) {
		return c.DB.Exec("INSERT INTO audit (what) VALUES ('child')")
	})
	host := env.NewWorld(env.WorldSpec{Name: "uthost", Version: "1", Schema: schema, UntrackedTables: []string{"audit"}})
	host.AddWorld(child, env.Name("child"), env.ToolAllowList())
	env.Tool(host, "both", "Write an audit row here and in the child.", func(c *env.Ctx, _ noArgs) (any, error) {
		if _, err := c.DB.Exec("INSERT INTO audit (what) VALUES ('host')"); err != nil {
			return nil, err
		}
		return c.Worlds.Get("child").Call("note", noArgs{})
	})
	inst := compositiontest.Open(t, host, composition.Options{})
	compositiontest.Call(t, inst, "both", `{}`)
	var got []string
	for _, r := range inst.ChangeLog() {
		got = append(got, r.World+"."+r.Table)
	}
	if !slices.Equal(got, []string{"child.audit"}) {
		t.Fatalf("change log tables %v, want the child's audit alone", got)
	}
}

// TestChangeLog_AliasWritesUseTheCanonicalPath pins the spec's path tags on
// a shared node: the shop reaches the company's payments account by the
// alias shop/payments, and what it writes there, through a nested call or
// directly, is recorded under the node's one path, payments, beside the
// shop's own rows, sorted by path.
func TestChangeLog_AliasWritesUseTheCanonicalPath(t *testing.T) {
	pay, add := ledger("aliaspay")
	shop := env.NewWorld(env.WorldSpec{Name: "aliasshop", Version: "1", Schema: "CREATE TABLE orders (id TEXT PRIMARY KEY) STRICT;"})
	shop.AddWorld(pay, env.Name("payments"), env.ToolAllowList())
	env.Tool(shop, "place_order", "Charge, then file the order.", func(c *env.Ctx, _ noArgs) (any, error) {
		h := c.Worlds.Get("payments")
		if _, err := env.Call(c.Context(), h, add, amountArgs{Amount: 5}); err != nil {
			return nil, err
		}
		if _, err := h.DB().Exec("INSERT INTO entries (id, amount) VALUES ('direct', 6)"); err != nil {
			return nil, err
		}
		return c.DB.Exec("INSERT INTO orders (id) VALUES ('o1')")
	})
	company := env.NewWorld(env.WorldSpec{Name: "aliasco", Version: "1", Schema: "CREATE TABLE staff (id TEXT PRIMARY KEY) STRICT;"})
	company.AddWorld(shop, env.Name("shop"), env.ToolPrefix("shop_"))
	company.AddWorld(pay, env.Name("payments"), env.ToolPrefix("pay_"))
	inst := compositiontest.Open(t, company, composition.Options{})
	if c := inst.Composition(); len(c) != 3 || c[2].Path != "payments" || !slices.Equal(c[2].Aliases, []string{"shop/payments"}) {
		t.Fatalf("composition %+v, want payments aliased as shop/payments", c)
	}
	compositiontest.Call(t, inst, "shop_place_order", `{}`)
	var got []string
	for _, r := range inst.ChangeLog() {
		got = append(got, r.World+"."+r.Table)
	}
	want := []string{"payments.entries", "payments.entries", "shop.orders"}
	if !slices.Equal(got, want) {
		t.Fatalf("change log %v, want %v", got, want)
	}
}

// TestChangeLog_RenameAfterAnEarlierStretch renames a table in one stretch
// of a call (a nested call, a DB.Transaction) after an earlier stretch of
// the same call wrote a row of it. The records name a table as it is called
// when their stretch ends and are sorted by that name, so the later
// stretch's record of the row, under the new name, would sort before the
// earlier one's: the rename is refused as a frame renaming a table whose
// rows it wrote itself is, and the log describes the rows as they are. It
// is refused before it runs, so direct statements, which commit as they
// run, leave no rename in the store that no record describes. A rename of
// a table the call wrote no row of stays allowed. One prepared on the raw
// connection before the row was written runs, and the call fails saying
// what stays in the store unlogged.
func TestChangeLog_RenameAfterAnEarlierStretch(t *testing.T) {
	const schema = "CREATE TABLE items (k TEXT PRIMARY KEY, v INTEGER) STRICT; CREATE TABLE other (k TEXT PRIMARY KEY) STRICT;"
	type sqlArgs struct {
		SQL []string `json:"sql"`
		Raw bool     `json:"raw,omitempty"` // on the raw connection
	}
	run := func(db env.DB, qs []string) error {
		for _, q := range qs {
			if _, err := db.Exec(q); err != nil {
				return err
			}
		}
		return nil
	}
	child := env.NewWorld(env.WorldSpec{Name: "rnchild", Version: "1.0.0", Schema: schema})
	env.Tool(child, "run", "Run SQL.", func(c *env.Ctx, a sqlArgs) (any, error) {
		if !a.Raw {
			return nil, run(c.DB, a.SQL)
		}
		conn, err := c.DB.Conn()
		if err != nil {
			return nil, err
		}
		for _, q := range a.SQL {
			if err := conn.(*sqlite3.Conn).Exec(q); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	host := env.NewWorld(env.WorldSpec{Name: "rnhost", Version: "1.0.0", Schema: schema})
	host.AddWorld(child, env.Name("kv"), env.ToolAllowList())
	// Each step is "direct:", "rawdirect:", "call:", "rawcall:",
	// "txfail:", "own:" or "tx:" and statements separated by "; ": run
	// on kv's store directly (on its raw connection), by a nested call of
	// kv's run (on its raw connection, or in a DB.Transaction on kv's
	// store that then fails), on the host's store, or in a DB.Transaction
	// on it; or "rawprepare:" and one statement, prepared on kv's raw
	// connection, which the step "rawstep:" runs.
	type stepArgs struct {
		Steps []string `json:"steps"`
	}
	env.Tool(host, "steps", "Run steps.", func(c *env.Ctx, a stepArgs) (any, error) {
		kv := c.Worlds.Get("kv")
		var prepared *sqlite3.Stmt
		defer func() {
			if prepared != nil {
				prepared.Close()
			}
		}()
		for _, s := range a.Steps {
			kind, sql, _ := strings.Cut(s, ":")
			qs := strings.Split(sql, "; ")
			var err error
			switch kind {
			case "direct":
				err = run(kv.DB(), qs)
			case "rawprepare":
				var conn any
				if conn, err = kv.DB().Conn(); err == nil {
					prepared, _, err = conn.(*sqlite3.Conn).Prepare(sql)
				}
			case "rawstep":
				err = prepared.Exec()
			case "rawdirect":
				var conn any
				if conn, err = kv.DB().Conn(); err != nil {
					break
				}
				for _, q := range qs {
					if err = conn.(*sqlite3.Conn).Exec(q); err != nil {
						break
					}
				}
			case "call", "rawcall":
				_, err = kv.Call("run", sqlArgs{SQL: qs, Raw: kind == "rawcall"})
			case "txfail":
				kv.DB().Transaction(func() error {
					if _, err := kv.Call("run", sqlArgs{SQL: qs}); err != nil {
						return err
					}
					return errors.New("changed my mind")
				})
			case "own":
				err = run(c.DB, qs)
			case "tx":
				err = c.DB.Transaction(func() error { return run(c.DB, qs) })
			}
			if err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	const (
		insert     = "INSERT INTO items VALUES ('k', 1)"
		rename     = "ALTER TABLE items RENAME TO a_items; UPDATE a_items SET v = 2"
		refusal    = "renaming table items refused: change capture"
		rawRefusal = "not authorized"
	)
	for _, tt := range []struct {
		name  string
		steps []string
		err   string   // what the call's error says; "" when it succeeds
		log   []string // the change log
		items string   // the store whose table items must still hold k with v = 1; "" when none
	}{
		// One stretch: the rule the others follow.
		{name: "OneFrame", steps: []string{"call:" + insert + "; " + rename}, err: refusal},
		{name: "DirectThenNested", steps: []string{"direct:" + insert, "call:" + rename}, err: refusal,
			log: []string{"1 steps kv items insert map[k:k] after=map[k:k v:1]"}, items: "kv"},
		// The rename alone, with no statement after it in its stretch,
		// through the store's API and on the raw connection, where the
		// store reloads nothing after it.
		{name: "DirectThenNestedRenameOnly", steps: []string{"direct:" + insert, "call:ALTER TABLE items RENAME TO a_items"}, err: refusal,
			log: []string{"1 steps kv items insert map[k:k] after=map[k:k v:1]"}, items: "kv"},
		{name: "DirectThenNestedRawRenameOnly", steps: []string{"direct:" + insert, "rawcall:ALTER TABLE items RENAME TO a_items"}, err: rawRefusal,
			log: []string{"1 steps kv items insert map[k:k] after=map[k:k v:1]"}, items: "kv"},
		// Direct statements commit as they run: a rename run after them
		// would stay in the store with no record describing it.
		{name: "DirectThenDirect", steps: []string{"direct:" + insert, "direct:" + rename}, err: refusal,
			log: []string{"1 steps kv items insert map[k:k] after=map[k:k v:1]"}, items: "kv"},
		{name: "OneDirectStretch", steps: []string{"direct:" + insert + "; " + rename}, err: refusal,
			log: []string{"1 steps kv items insert map[k:k] after=map[k:k v:1]"}, items: "kv"},
		{name: "OneRawDirectStretch", steps: []string{"rawdirect:" + insert + "; " + rename}, err: rawRefusal,
			log: []string{"1 steps kv items insert map[k:k] after=map[k:k v:1]"}, items: "kv"},
		// Prepared before the row was written, the rename runs: the
		// stretch fails, and the error says the rename and the row stay
		// in the store with no record.
		{name: "RawRenamePreparedBefore", steps: []string{"rawprepare:ALTER TABLE items RENAME TO a_items", "direct:" + insert, "rawstep:"},
			err: "change capture cannot report the rows of table items: it was renamed to a_items while the capture ran; " +
				"the statements run directly on node kv's DB committed as they ran: what they changed stays in its store, and the change log does not describe it"},
		// A table the raw connection created in the stretch, whose rows
		// its capture reads by the table's name as the stretch ends: a
		// rename would leave them in no record.
		{name: "RawCreatedThenRenamed", steps: []string{"rawcall:CREATE TABLE z AS SELECT 1 AS q; ALTER TABLE z RENAME TO y"}, err: rawRefusal},
		{name: "RawDirectCreatedThenRenamed", steps: []string{"rawdirect:CREATE TABLE z AS SELECT 1 AS q; ALTER TABLE z RENAME TO y"}, err: rawRefusal,
			log: []string{"1 steps kv z insert map[rowid:1] after=map[q:1]"}},
		{name: "RawCreatedThenRenamedDirect", steps: []string{"rawcall:CREATE TABLE z AS SELECT 1 AS q", "direct:ALTER TABLE z RENAME TO y"},
			err: "renaming table z refused: change capture follows captures that reported rows of it", log: []string{"1 run internal kv z insert map[rowid:1] after=map[q:1]"}},
		{name: "NestedThenNested", steps: []string{"call:" + insert, "call:" + rename}, err: refusal,
			log: []string{"1 run internal kv items insert map[k:k] after=map[k:k v:1]"}, items: "kv"},
		{name: "FrameThenTransaction", steps: []string{"own:" + insert, "tx:" + rename}, err: refusal},
		// The earlier stretch's records went with its rows.
		{name: "RolledBackThenNested", steps: []string{"txfail:" + insert, "call:ALTER TABLE items RENAME TO a_items; INSERT INTO a_items VALUES ('j', 2)"},
			log: []string{"1 run internal kv a_items insert map[k:j] after=map[k:j v:2]"}},
		{name: "OtherTable", steps: []string{"direct:INSERT INTO other VALUES ('k')", "call:ALTER TABLE items RENAME TO a_items; INSERT INTO a_items VALUES ('k', 2)"},
			log: []string{
				"1 run internal kv a_items insert map[k:k] after=map[k:k v:2]",
				"1 steps kv other insert map[k:k] after=map[k:k]",
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inst := compositiontest.Open(t, host, composition.Options{})
			args, _ := json.Marshal(stepArgs{Steps: tt.steps})
			_, err := inst.CallJSON(context.Background(), "steps", args)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("call: %v, want an error saying %q", err, tt.err)
			}
			wantLog(t, inst, tt.log...)
			if tt.items != "" {
				rows := compositiontest.Rows(t, inst, "SELECT k, v FROM "+composition.SchemaName(tt.items)+".items")
				if len(rows) != 1 || rows[0]["v"] != int64(1) {
					t.Errorf("%s.items holds %v, want k with v = 1", tt.items, rows)
				}
			}
		})
	}
}

// TestChangeLog_RawColumnChangeEarlier has a world's startup hook, or an
// earlier call, drop a column of a table on the raw connection, or rename
// one and drop another there. A later call writes a row of the table, then
// changes the table's columns in a savepoint it rolls back: the rollback
// undoes only what ran since the savepoint, so the call's record of the
// row is exact, the earlier change being long committed.
func TestChangeLog_RawColumnChangeEarlier(t *testing.T) {
	const schema = "CREATE TABLE items (k TEXT PRIMARY KEY, a TEXT, b TEXT, v INTEGER) STRICT; INSERT INTO items VALUES ('k', 'a', 'b', 1);"
	raw := func(c *env.Ctx, qs ...string) error {
		conn, err := c.DB.Conn()
		if err != nil {
			return err
		}
		for _, q := range qs {
			if err := conn.(*sqlite3.Conn).Exec(q); err != nil {
				return err
			}
		}
		return nil
	}
	for _, h := range []struct {
		name    string
		changes []string
		b       string // b's name after the changes
	}{
		{"Drop", []string{"ALTER TABLE items DROP COLUMN a"}, "b"},
		{"RenameDrop", []string{"ALTER TABLE items RENAME COLUMN b TO x", "ALTER TABLE items DROP COLUMN a"}, "x"},
	} {
		for _, where := range []string{"Startup", "Call"} {
			t.Run(h.name+"/"+where, func(t *testing.T) {
				w := env.NewWorld(env.WorldSpec{Name: "rawcols", Version: "1.0.0", Schema: schema})
				if where == "Startup" {
					env.OnStartup(w, func(c *env.Ctx, _ struct{}) error { return raw(c, h.changes...) })
				}
				env.Tool(w, "change", "Change the columns on the raw connection.", func(c *env.Ctx, _ noArgs) (any, error) {
					return nil, raw(c, h.changes...)
				})
				env.Tool(w, "write", "Write a row, then add a column in a savepoint rolled back.", func(c *env.Ctx, _ noArgs) (any, error) {
					if _, err := c.DB.Exec("UPDATE items SET v = 2"); err != nil {
						return nil, err
					}
					return nil, raw(c, "SAVEPOINT s", "ALTER TABLE items ADD COLUMN z TEXT", "ROLLBACK TO s", "RELEASE s")
				})
				inst := compositiontest.Open(t, w, composition.Options{})
				call := 1
				if where == "Call" {
					if _, err := inst.CallJSON(context.Background(), "change", nil); err != nil {
						t.Fatal(err)
					}
					call = 2
				}
				if _, err := inst.CallJSON(context.Background(), "write", nil); err != nil {
					t.Fatal(err)
				}
				img := func(v int) string { return fmt.Sprint(map[string]any{h.b: "b", "k": "k", "v": v}) }
				wantLog(t, inst, fmt.Sprintf("%d write main items update map[k:k] before=%s after=%s", call, img(1), img(2)))
			})
		}
	}
}
