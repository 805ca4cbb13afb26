package compositiontest_test

import (
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/examples/worlds/payments"
)

// A test of the payments world opens an instance, charges and reads the
// store. (The example is compiled, not run: it needs the test's *testing.T.)
func Example() {
	testCharge := func(t *testing.T) {
		inst := compositiontest.Open(t, payments.World, composition.Options{Seed: 1})
		compositiontest.Call(t, inst, "create_charge", `{"amount": 500}`)
		rows := compositiontest.Rows(t, inst, "SELECT amount FROM charges")
		if len(rows) != 1 || rows[0]["amount"] != int64(500) {
			t.Errorf("charges = %v", rows)
		}
	}
	_ = testCharge
}

func TestFixture(t *testing.T) {
	dir := compositiontest.Fixture(t, payments.World, composition.Options{Seed: 3}, "two", func(inst *composition.Instance) {
		compositiontest.Call(t, inst, "create_charge", `{"amount": 100}`)
		compositiontest.Call(t, inst, "create_charge", `{"amount": 200}`)
	})
	inst := compositiontest.Open(t, payments.World, composition.Options{Fixture: "two", FixturesDir: dir})
	rows := compositiontest.Rows(t, inst, "SELECT sum(amount) AS total FROM charges")
	if got := rows[0]["total"]; got != int64(300) {
		t.Errorf("total = %v, want 300", got)
	}
}

func TestOpen_OwnDir(t *testing.T) {
	a := compositiontest.Open(t, payments.World, composition.Options{})
	b := compositiontest.Open(t, payments.World, composition.Options{})
	compositiontest.Call(t, a, "create_charge", `{"amount": 1}`)
	if rows := compositiontest.Rows(t, b, "SELECT * FROM charges"); len(rows) != 0 {
		t.Errorf("instances share a store: %v", rows)
	}
}
