package composition_test

import (
	"context"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
)

// The inspection view is what task graders read through.
var _ env.Inspector = (*composition.View)(nil)

func TestView_Inspector(t *testing.T) {
	w, _ := ledger("inspected")
	inst := MustOpen(t, w, composition.Options{})
	call(t, inst, "add", `{"amount": 5}`)
	var v env.Inspector = inst.Inspect()
	rows, err := v.Rows(context.Background(), "SELECT count(*) AS n FROM entries")
	if err != nil || len(rows) != 1 || rows[0]["n"] != int64(1) {
		t.Fatalf("Rows = %v, %v; want one row n=1", rows, err)
	}
	if _, err := v.Rows(context.Background(), "DELETE FROM entries"); err == nil {
		t.Fatal("a write through the Inspector was not refused")
	}
}
