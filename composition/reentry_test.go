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
