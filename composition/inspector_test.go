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

func TestView_Random(t *testing.T) {
	ctx := context.Background()
	w, _ := ledger("sampled")
	samples := func(seed int64) []any {
		t.Helper()
		inst := compositiontest.Open(t, w, composition.Options{Seed: seed})
		v := inst.Inspect()
		var out []any
		for range 2 {
			rows, err := v.Query(ctx, "SELECT random()")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rows.Values[0][0])
			inst.Release() // the stream continues across a reopen
		}
		return out
	}
	a, b := samples(7), samples(7)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("seed 7 sampled %v, then %v: want the same", a, b)
	}
	if a[0] == a[1] {
		t.Errorf("two queries drew the same value %v: the stream restarted", a[0])
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
