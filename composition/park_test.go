package composition_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/sqlitestore"
)

// Instances of one fixture share parked connections (a released store's
// connection is rebound to the next store of the same frozen file), and that
// changes nothing anyone can observe: the same calls on instances whose
// connections are evicted after every call, and on instances that keep
// theirs, give the same results, change logs, state documents and rows.
func TestInstance_ParkedConnectionsChangeNothing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("parked connections need Linux")
	}
	ctx := context.Background()
	const instances, rounds = 12, 4
	run := func(pool *sqlitestore.Pool, release bool) (out []string, parkedSeen int) {
		dir := t.TempDir()
		insts := make([]*composition.Instance, instances)
		for i := range insts {
			insts[i] = compositiontest.Open(t, company.World, composition.Options{Fixture: company.AcmeID, Dir: dir, Pool: pool, Seed: int64(100 + i)})
		}
		for r := range rounds {
			for i, inst := range insts {
				res := compositiontest.Call(t, inst, "invoice", fmt.Sprintf(`{"amount": %d}`, 100*(i+1)+r))
				b, _ := json.Marshal(res)
				out = append(out, string(b))
				if release {
					inst.Release()
					parkedSeen = max(parkedSeen, pool.Parked())
				}
			}
		}
		for _, inst := range insts {
			log, _ := json.Marshal(inst.ChangeLog())
			state, _ := json.Marshal(inst.State())
			row, err := inst.Inspect().One(ctx, "SELECT (SELECT group_concat(id || ':' || amount) FROM invoices) AS inv, (SELECT group_concat(id || ':' || amount) FROM payments.charges) AS ch")
			if err != nil {
				t.Fatal(err)
			}
			rows, _ := json.Marshal(row)
			out = append(out, string(log), string(state), string(rows))
			inst.Close()
		}
		return out, parkedSeen
	}
	shared := sqlitestore.NewPool(64)
	got, parked := run(shared, true)
	shared.CloseParked()
	if parked == 0 {
		t.Fatal("no connection was ever parked: the test does not exercise rebinding")
	}
	want, _ := run(sqlitestore.NewPool(1000), false)
	if len(got) != len(want) {
		t.Fatalf("%d outputs, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("output %d differs with parked connections:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}
