package composition_test

import (
	"context"
	"errors"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/env"
)

// TestInstance_ReentrantCallRolledBack: a call a tool makes into its own
// instance with its context commits into the tool's transaction, so when
// that transaction rolls back, the nested call's change records go with its
// rows. The change log holds exactly what the store keeps.
func TestInstance_ReentrantCallRolledBack(t *testing.T) {
	ctx := context.Background()
	w, _ := ledger("reentry")
	var inst *composition.Instance
	nested := func(c *env.Ctx) error {
		_, err := inst.Call(c.Context(), "add", amountArgs{5})
		return err
	}
	env.Tool(w, "nested_then_fail", "Call add, then fail.", func(c *env.Ctx, in amountArgs) (string, error) {
		if err := nested(c); err != nil {
			return "", err
		}
		return "", env.Errorf("refused after a nested call")
	})
	env.Tool(w, "nested_in_failed_transaction", "Add, then call add in a transaction that fails.", func(c *env.Ctx, in amountArgs) (string, error) {
		if _, err := c.DB.Exec("INSERT INTO entries (id, amount) VALUES ('kept', 1)"); err != nil {
			return "", err
		}
		err := c.DB.Transaction(func() error {
			if err := nested(c); err != nil {
				return err
			}
			return errors.New("undo the nested call")
		})
		if err == nil {
			return "", errors.New("the transaction did not fail")
		}
		return "ok", nil
	})
	env.Tool(w, "nested_then_succeed", "Call add, then succeed.", func(c *env.Ctx, in amountArgs) (string, error) {
		return "ok", nested(c)
	})
	for _, tc := range []struct {
		tool    string
		fails   bool
		rows    int64 // entries kept
		records int   // change records of the call
	}{
		{"nested_then_fail", true, 0, 0},
		{"nested_in_failed_transaction", false, 1, 1},
		{"nested_then_succeed", false, 1, 1},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			inst = compositiontest.Open(t, w, composition.Options{})
			_, err := inst.CallJSON(ctx, tc.tool, []byte(`{"amount": 1}`))
			if (err != nil) != tc.fails {
				t.Fatalf("call: %v", err)
			}
			row, err := inst.Inspect().One(ctx, "SELECT count(*) AS n FROM entries")
			if err != nil || row["n"] != tc.rows {
				t.Fatalf("rows = %v, %v; want %d", row["n"], err, tc.rows)
			}
			if log := inst.ChangeLog(); len(log) != tc.records {
				t.Fatalf("change log = %+v, want %d records (the store keeps %d rows)", log, tc.records, tc.rows)
			}
		})
	}
}

// TestInstance_ReentrantCallRecordsChain: a call a tool makes into its own
// instance cuts the tool's frame, as it cuts direct writes: the tool's
// records of a row before the nested call, the nested call's, and the
// tool's after it are separate, in that order, so each record's before is
// the row as the one before it left it. A DB.Transaction cuts the frame
// too, so its rollback drops the records of what it undid and no other.
func TestInstance_ReentrantCallRecordsChain(t *testing.T) {
	ctx := context.Background()
	w := env.NewWorld(env.WorldSpec{Name: "rechain", Version: "1.0.0", Schema: "CREATE TABLE kv (id TEXT PRIMARY KEY, v INTEGER NOT NULL) STRICT;"})
	var inst *composition.Instance
	exec := func(c *env.Ctx, sql string) error {
		_, err := c.DB.Exec(sql)
		return err
	}
	env.Tool(w, "bump", "Add one to row a.", func(c *env.Ctx, _ noArgs) (any, error) {
		return nil, exec(c, "UPDATE kv SET v = v + 1 WHERE id = 'a'")
	})
	env.Tool(w, "make", "Insert row a.", func(c *env.Ctx, _ noArgs) (any, error) {
		return nil, exec(c, "INSERT INTO kv VALUES ('a', 1)")
	})
	env.Tool(w, "set_bump_set", "Set a, bump it through the instance, set it again.", func(c *env.Ctx, _ noArgs) (any, error) {
		if err := exec(c, "UPDATE kv SET v = 10 WHERE id = 'a'"); err != nil {
			return nil, err
		}
		if _, err := inst.Call(c.Context(), "bump", noArgs{}); err != nil {
			return nil, err
		}
		return nil, exec(c, "UPDATE kv SET v = v * 2 WHERE id = 'a'")
	})
	env.Tool(w, "move_make_update", "Move row a away, have the instance insert a, update it.", func(c *env.Ctx, _ noArgs) (any, error) {
		if err := exec(c, "UPDATE kv SET id = 'b' WHERE id = 'a'"); err != nil {
			return nil, err
		}
		if _, err := inst.Call(c.Context(), "make", noArgs{}); err != nil {
			return nil, err
		}
		return nil, exec(c, "UPDATE kv SET v = 7 WHERE id = 'a'")
	})
	env.Tool(w, "set_then_failed_transaction", "Set a, then bump it in a transaction that fails.", func(c *env.Ctx, _ noArgs) (any, error) {
		if err := exec(c, "UPDATE kv SET v = 10 WHERE id = 'a'"); err != nil {
			return nil, err
		}
		c.DB.Transaction(func() error {
			if _, err := inst.Call(c.Context(), "bump", noArgs{}); err != nil {
				return err
			}
			return errors.New("undo the bump")
		})
		return nil, nil
	})
	for _, tt := range []struct {
		tool string
		want string
	}{
		{"set_bump_set", logLines(
			"2 set_bump_set main kv update map[id:a] before=map[id:a v:1] after=map[id:a v:10]",
			"2 bump main kv update map[id:a] before=map[id:a v:10] after=map[id:a v:11]",
			"2 set_bump_set main kv update map[id:a] before=map[id:a v:11] after=map[id:a v:22]",
		)},
		{"move_make_update", logLines(
			"2 move_make_update main kv delete map[id:a] before=map[id:a v:1]",
			"2 make main kv insert map[id:a] after=map[id:a v:1]",
			"2 move_make_update main kv update map[id:a] before=map[id:a v:1] after=map[id:a v:7]",
			"2 move_make_update main kv insert map[id:b] after=map[id:b v:1]",
		)},
		{"set_then_failed_transaction", logLines(
			"2 set_then_failed_transaction main kv update map[id:a] before=map[id:a v:1] after=map[id:a v:10]",
		)},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			inst = compositiontest.Open(t, w, composition.Options{})
			if _, err := inst.CallJSON(ctx, "make", []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			if _, err := inst.CallJSON(ctx, tt.tool, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			log := inst.ChangeLog()[1:]
			if got := formatLog(log); got != tt.want {
				t.Errorf("log:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}
