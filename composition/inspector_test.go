package composition_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/sqlitestore"
)

// The inspection view is what task graders read through.
var _ env.Inspector = (*composition.View)(nil)

func TestView_Inspector(t *testing.T) {
	w, _ := ledger("inspected")
	inst := compositiontest.Open(t, w, composition.Options{})
	compositiontest.Call(t, inst, "add", `{"amount": 5}`)
	var v env.Inspector = inst.Inspect()
	rows, err := v.Rows(context.Background(), "SELECT count(*) AS n FROM entries")
	if err != nil || len(rows) != 1 || rows[0]["n"] != int64(1) {
		t.Fatalf("Rows = %v, %v; want one row n=1", rows, err)
	}
	if _, err := v.Rows(context.Background(), "DELETE FROM entries"); err == nil {
		t.Fatal("a write through the Inspector was not refused")
	}
}

// TestView_Random samples random() through the view: a query's samples
// depend on the seed and the query alone, not on the queries before it (a
// console's, one cut off) nor on a reopen.
func TestView_Random(t *testing.T) {
	ctx := context.Background()
	w, _ := ledger("sampled")
	sample := func(v *composition.View, q string) any {
		t.Helper()
		rows, err := v.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return rows.Values[0][0]
	}
	const grade, other = "SELECT random()", "SELECT random() AS r"
	samples := func(seed int64, before ...string) []any {
		t.Helper()
		inst := compositiontest.Open(t, w, composition.Options{Seed: seed})
		v := inst.Inspect()
		for _, q := range before {
			sample(v, q)
		}
		a := sample(v, grade)
		inst.Release()
		return []any{a, sample(v, grade), sample(v, other)}
	}
	a := samples(7)
	if b := samples(7, other, "SELECT randomblob(64)", other); !reflect.DeepEqual(a, b) {
		t.Errorf("seed 7 sampled %v alone and %v after other queries: want the same", a, b)
	}
	if a[0] != a[1] {
		t.Errorf("one query sampled %v, then %v after a reopen: want the same", a[0], a[1])
	}
	if a[0] == a[2] {
		t.Errorf("two queries both sampled %v", a[0])
	}
	if c := samples(8); reflect.DeepEqual(a, c) {
		t.Errorf("seeds 7 and 8 both sampled %v", a)
	}
}

func TestView_QueryLimit(t *testing.T) {
	w, _ := ledger("limited")
	inst := compositiontest.Open(t, w, composition.Options{})
	rows, err := inst.Inspect().QueryLimit(context.Background(), sqlitestore.ReadLimit{MaxRows: 2},
		`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 3) SELECT x FROM c`)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows.Values) != 2 || rows.Truncated != sqlitestore.TruncatedRows {
		t.Errorf("%d rows, truncated %q; want 2, %q", len(rows.Values), rows.Truncated, sqlitestore.TruncatedRows)
	}
}
