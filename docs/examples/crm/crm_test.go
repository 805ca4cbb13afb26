package crm_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/seahaven/seahaven/check"
	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/docs/examples/crm"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/fixture"
)

func TestChargeCustomer(t *testing.T) {
	ctx := context.Background()
	inst := compositiontest.Open(t, crm.World, composition.Options{Seed: 7})
	ada, err := env.Call(ctx, inst, crm.AddCustomer, crm.AddCustomerArgs{Email: "ada@example.com", Plan: "pro", Seats: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inst.CallJSON(ctx, "charge_customer", []byte(`{"customer_id": "`+ada.ID+`", "amount": 500}`)); err != nil {
		t.Fatal(err)
	}

	// One read-only connection sees both stores: the payments node is
	// attached under its path.
	row, err := inst.Inspect().One(ctx, `SELECT charges.amount FROM customer_charges
		JOIN payments.charges AS charges ON charges.id = customer_charges.charge_id
		WHERE customer_charges.customer_id = ?`, ada.ID)
	if err != nil {
		t.Fatal(err)
	}
	if row == nil || row["amount"] != int64(500) {
		t.Fatalf("charged amount = %v, want 500", row)
	}

	// One change log: the nested call into payments is marked internal, and
	// the untracked audit table is not in it.
	var got []string
	for _, r := range inst.ChangeLog() {
		got = append(got, fmt.Sprintf("%d %s %s.%s %s internal=%t", r.Call, r.Tool, r.World, r.Table, r.Op, r.Internal))
	}
	want := []string{
		"1 add_customer main.customers insert internal=false",
		"2 charge_customer main.customer_charges insert internal=false",
		"2 create_charge payments.charges insert internal=true",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("change log:\n%q\nwant\n%q", got, want)
	}
}

func TestAddCustomer_Refusals(t *testing.T) {
	tests := []struct {
		name string // case
		args string // raw arguments of add_customer
		want string // the error the agent sees
	}{
		{"UnknownPlan", `{"email": "ada@example.com", "plan": "gold"}`,
			`invalid arguments: field "plan": value "gold" is not one of "free", "pro", "enterprise"`},
		{"TooManySeats", `{"email": "ada@example.com", "seats": 501}`,
			`invalid arguments: field "seats": value 501 is greater than maximum 500`},
		{"UnknownField", `{"email": "ada@example.com", "colour": "red"}`,
			`invalid arguments: unknown field "colour" (known fields: email, plan, seats, note)`},
		{"MissingEmail", `{}`,
			`invalid arguments: missing required field "email"`},
		{"DuplicateEmail", `{"email": "grace@example.com"}`,
			`add_customer failed; nothing was changed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			inst := compositiontest.Open(t, crm.World, composition.Options{})
			if _, err := inst.CallJSON(ctx, "add_customer", []byte(`{"email": "grace@example.com"}`)); err != nil {
				t.Fatal(err)
			}
			_, err := inst.CallJSON(ctx, "add_customer", []byte(tt.args))
			te, ok := env.AsToolError(err)
			if !ok || te.Error() != tt.want {
				t.Fatalf("error %v, want the ToolError %q", err, tt.want)
			}
			if n := len(inst.ChangeLog()); n != 1 {
				t.Fatalf("%d change records after a refused call, want 1", n)
			}
		})
	}
}

func TestStartup_Principal(t *testing.T) {
	tests := []struct {
		name    string         // case
		startup map[string]any // broadcast keywords
		want    string         // the principal audited
	}{
		{"Default", nil, "agent"},
		{"Given", map[string]any{"principal": "grace@example.com"}, "grace@example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			inst := compositiontest.Open(t, crm.World, composition.Options{Startup: tt.startup})
			if _, err := inst.CallJSON(ctx, "pay_create_charge", []byte(`{"amount": 5}`)); err != nil {
				t.Fatal(err)
			}
			row, err := inst.Inspect().One(ctx, "SELECT tool, node, principal FROM audit")
			if err != nil {
				t.Fatal(err)
			}
			if row["tool"] != "pay_create_charge" || row["node"] != "payments" || row["principal"] != tt.want {
				t.Fatalf("audit row %v", row)
			}
		})
	}
	t.Run("UnknownKeyword", func(t *testing.T) {
		_, err := composition.Open(context.Background(), crm.World, composition.Options{Startup: map[string]any{"colour": "red"}})
		if err == nil {
			t.Fatal("an unknown startup keyword was accepted")
		}
	})
}

func TestWorldChecksClean(t *testing.T) {
	if fs := check.World(context.Background(), crm.World); len(fs) > 0 {
		t.Fatal(check.Format(fs))
	}
}

func TestBuildDemo(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := crm.BuildDemo(ctx, dir, false); err != nil {
		t.Fatal(err)
	}
	first, err := fixture.Read(dir, crm.DemoID)
	if err != nil {
		t.Fatal(err)
	}
	// Reproducible: a second build writes byte-identical node files.
	if err := crm.BuildDemo(ctx, dir, true); err != nil {
		t.Fatal(err)
	}
	second, err := fixture.Read(dir, crm.DemoID)
	if err != nil {
		t.Fatal(err)
	}
	if first.FileSHA256 != second.FileSHA256 || first.Nodes[0].FileSHA256 != second.Nodes[0].FileSHA256 {
		t.Fatalf("two builds froze different files: %s/%s, then %s/%s",
			first.FileSHA256, first.Nodes[0].FileSHA256, second.FileSHA256, second.Nodes[0].FileSHA256)
	}
	inst := compositiontest.Open(t, crm.World, composition.Options{Fixture: crm.DemoID, FixturesDir: dir})
	row, err := inst.Inspect().One(ctx, `SELECT (SELECT count(*) FROM customers) AS customers,
		(SELECT sum(amount) FROM payments.charges) AS charged`)
	if err != nil {
		t.Fatal(err)
	}
	if row["customers"] != int64(2) || row["charged"] != int64(12000) {
		t.Fatalf("demo holds %v", row)
	}
}
