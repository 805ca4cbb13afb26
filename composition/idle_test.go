package composition_test

import (
	"context"
	"testing"
	"time"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/sqlitestore"
)

// waitFor polls cond until it holds, failing the test if it never does.
// The deadline only stops a broken test; nothing is asserted about time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestInstance_IdleRelease(t *testing.T) {
	ctx := context.Background()
	base := sqlitestore.OpenConnections()
	// Long enough that the call's connections are still open when counted
	// on a loaded machine, short enough to wait for.
	pool := &sqlitestore.Pool{MaxOpen: 100, IdleAfter: 250 * time.Millisecond}
	inst := compositiontest.Open(t, company.World, composition.Options{Fixture: company.AcmeID, Dir: t.TempDir(), Pool: pool})
	count := func() any {
		t.Helper()
		row, err := inst.Inspect().One(ctx, "SELECT (SELECT count(*) FROM invoices) + (SELECT count(*) FROM payments.charges) AS n")
		if err != nil {
			t.Fatal(err)
		}
		return row["n"]
	}
	before := count()
	compositiontest.Call(t, inst, "invoice", `{"amount": 700}`)
	// The pool's own count: the process-wide one also moves as earlier
	// tests' connections close.
	if got := pool.Open(); got == 0 {
		t.Fatalf("pool.Open() = %d right after a call, want its connections open", got)
	}
	waitFor(t, "the idle instance's connections to be released", func() bool {
		return pool.Open() == 0 && sqlitestore.OpenConnections() <= base
	})

	// A released instance and view reopen on their next use.
	if got := count(); got != before.(int64)+2 {
		t.Errorf("rows after reopening = %v, want %v", got, before.(int64)+2)
	}
	waitFor(t, "the view's connection to be released again", func() bool { return sqlitestore.OpenConnections() <= base })
	compositiontest.Call(t, inst, "invoice", `{"amount": 800}`)
	if got := count(); got != before.(int64)+4 {
		t.Errorf("rows after a second call = %v, want %v", got, before.(int64)+4)
	}
}
