package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/payments"
)

// newTaxed declares a company whose billing world adds a tax world, so the
// tree has a node two levels down (billing/tax).
func newTaxed() *env.World {
	tax := env.NewWorld(env.WorldSpec{Name: "tax", Version: "1.0.0",
		Schema: "CREATE TABLE rates (region TEXT PRIMARY KEY, rate REAL NOT NULL) STRICT;"})
	billing := env.NewWorld(env.WorldSpec{Name: "billing", Version: "1.0.0",
		Schema: "CREATE TABLE bills (id TEXT PRIMARY KEY, total INTEGER NOT NULL) STRICT;"})
	billing.AddWorld(tax)
	company := env.NewWorld(env.WorldSpec{Name: "company", Version: "0.1.0",
		Schema: "CREATE TABLE staff (id TEXT PRIMARY KEY, name TEXT NOT NULL) STRICT;"})
	company.AddWorld(payments.World, env.ToolPrefix("pay_"))
	company.AddWorld(billing)
	return company
}

// The inspection view: the root store as main, every other node attached
// read-only under its path with / as __.
func Example_evalInspect() {
	ctx := context.Background()
	inst, err := composition.Open(ctx, newTaxed(), composition.Options{})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	inst.Bulk(ctx, func(c *env.Ctx) error {
		c.DB.Exec("INSERT INTO staff (id, name) VALUES ('u1', 'Ada')")
		_, err := c.Worlds.Get("billing").Worlds().Get("tax").DB().Exec("INSERT INTO rates VALUES ('eu', 0.2)")
		return err
	})
	inst.CallJSON(ctx, "pay_create_charge", []byte(`{"amount": 500}`))

	view := inst.Inspect()
	rows, err := view.Rows(ctx, "SELECT name FROM pragma_database_list ORDER BY seq")
	fmt.Println(rows, err)
	row, err := view.One(ctx, `SELECT (SELECT count(*) FROM staff) AS staff,
		(SELECT sum(amount) FROM payments.charges) AS charged,
		(SELECT rate FROM billing__tax.rates WHERE region = 'eu') AS eu_rate`)
	fmt.Println(row, err)
	_, err = view.Rows(ctx, "DELETE FROM payments.charges")
	fmt.Println(err)
	// Output:
	// [map[name:main] map[name:payments] map[name:billing] map[name:billing__tax]] <nil>
	// map[charged:500 eu_rate:0.2 staff:1] <nil>
	// sqlitestore: not authorized (the inspection connection is read-only)
}

// The change log: one record per row a call changed, net per frame, tagged
// with the node it lives in; a host's nested call is marked internal.
func Example_evalChangeLog() {
	ctx := context.Background()
	company := env.NewWorld(env.WorldSpec{Name: "company", Version: "0.1.0",
		Schema: "CREATE TABLE invoices (id TEXT PRIMARY KEY, charge_id TEXT NOT NULL, status TEXT NOT NULL) STRICT;"})
	company.AddWorld(payments.World, env.ToolPrefix("pay_"))
	env.Tool(company, "invoice", "Charge the account and file an invoice.",
		func(c *env.Ctx, in payments.ChargeArgs) (string, error) {
			charge, err := env.Call(c.Context(), c.Worlds.Get("payments"), payments.CreateCharge, in)
			if err != nil {
				return "", err
			}
			// Written three times in this call: the log holds one net insert.
			c.DB.Exec("INSERT INTO invoices VALUES ('inv-1', ?, 'draft')", charge.ID)
			c.DB.Exec("UPDATE invoices SET status = 'sent' WHERE id = 'inv-1'")
			c.DB.Exec("UPDATE invoices SET status = 'open' WHERE id = 'inv-1'")
			// Inserted and deleted in this call: no record at all.
			c.DB.Exec("INSERT INTO invoices VALUES ('tmp', '', 'draft')")
			c.DB.Exec("DELETE FROM invoices WHERE id = 'tmp'")
			return "inv-1", nil
		})
	env.Tool(company, "void", "Void the invoice and refund its charge.",
		func(c *env.Ctx, _ struct{}) (any, error) {
			inv, err := c.DB.One("SELECT charge_id FROM invoices WHERE id = 'inv-1'")
			if err != nil || inv == nil {
				return nil, env.Errorf("no invoice to void")
			}
			if _, err := c.DB.Exec("DELETE FROM invoices WHERE id = 'inv-1'"); err != nil {
				return nil, err
			}
			return c.Worlds.Get("payments").Call("refund_charge", map[string]any{"charge_id": inv["charge_id"]})
		})
	inst, err := composition.Open(ctx, company, composition.Options{Seed: 7})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	for _, step := range []struct{ tool, args string }{
		{"invoice", `{"amount": 500}`},          // call 1
		{"pay_list_charges", `{}`},              // call 2: reads only, no records
		{"pay_create_charge", `{"amount": 20}`}, // call 3
		{"void", `{}`},                          // call 4
	} {
		if _, err := inst.CallJSON(ctx, step.tool, []byte(step.args)); err != nil {
			panic(err)
		}
	}
	for _, r := range inst.ChangeLog() {
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
	}
	// Output:
	// {"seq":1,"call":1,"tool":"invoice","internal":false,"world":"main","table":"invoices","op":"insert","key":{"id":"inv-1"},"before":null,"after":{"charge_id":"b9dcccf6-55be-4561-8a61-40f1609a6446","id":"inv-1","status":"open"}}
	// {"seq":2,"call":1,"tool":"create_charge","internal":true,"world":"payments","table":"charges","op":"insert","key":{"id":"b9dcccf6-55be-4561-8a61-40f1609a6446"},"before":null,"after":{"amount":500,"created_at":"2026-01-01 00:00:00","id":"b9dcccf6-55be-4561-8a61-40f1609a6446","refunded":0}}
	// {"seq":3,"call":3,"tool":"create_charge","internal":false,"world":"payments","table":"charges","op":"insert","key":{"id":"8a88ccd2-83e5-4fe4-a506-120454865f01"},"before":null,"after":{"amount":20,"created_at":"2026-01-01 00:00:00","id":"8a88ccd2-83e5-4fe4-a506-120454865f01","refunded":0}}
	// {"seq":4,"call":4,"tool":"void","internal":false,"world":"main","table":"invoices","op":"delete","key":{"id":"inv-1"},"before":{"charge_id":"b9dcccf6-55be-4561-8a61-40f1609a6446","id":"inv-1","status":"open"},"after":null}
	// {"seq":5,"call":4,"tool":"refund_charge","internal":true,"world":"payments","table":"charges","op":"update","key":{"id":"b9dcccf6-55be-4561-8a61-40f1609a6446"},"before":{"amount":500,"created_at":"2026-01-01 00:00:00","id":"b9dcccf6-55be-4561-8a61-40f1609a6446","refunded":0},"after":{"amount":500,"created_at":"2026-01-01 00:00:00","id":"b9dcccf6-55be-4561-8a61-40f1609a6446","refunded":1}}
}

// A failed call: the frames still open when it fails roll back, and one
// that committed before (an added world's tool, under a host middleware
// that fails after it returned) keeps its rows and its records.
func Example_evalFailedCall() {
	ctx := context.Background()
	company := env.NewWorld(env.WorldSpec{Name: "company", Version: "0.1.0",
		Schema: "CREATE TABLE audit (id INTEGER PRIMARY KEY, tool TEXT NOT NULL) STRICT;"})
	company.AddWorld(payments.World, env.ToolPrefix("pay_"))
	// Every call is audited; a charge over 1000 is refused once it is made.
	company.Use(func(c *env.Ctx, next func() (any, error)) (any, error) {
		c.DB.Exec("INSERT INTO audit (tool) VALUES (?)", c.Call.Tool)
		out, err := next()
		var args struct{ Amount int64 }
		json.Unmarshal(c.Call.Arguments, &args)
		if err == nil && args.Amount > 1000 {
			return nil, env.Errorf("charges over 1000 need an approval")
		}
		return out, err
	})
	inst, err := composition.Open(ctx, company, composition.Options{Seed: 7})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	_, err = inst.CallJSON(ctx, "pay_create_charge", []byte(`{"amount": 5000}`))
	fmt.Println(err)
	for _, r := range inst.ChangeLog() {
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
	}
	row, err := inst.Inspect().One(ctx, "SELECT (SELECT count(*) FROM audit) AS audited, (SELECT count(*) FROM payments.charges) AS charges")
	fmt.Println(row, err)
	// Output:
	// charges over 1000 need an approval
	// {"seq":1,"call":1,"tool":"create_charge","internal":false,"world":"payments","table":"charges","op":"insert","key":{"id":"b9dcccf6-55be-4561-8a61-40f1609a6446"},"before":null,"after":{"amount":5000,"created_at":"2026-01-01 00:00:00","id":"b9dcccf6-55be-4561-8a61-40f1609a6446","refunded":0}}
	// map[audited:0 charges:1] <nil>
}

// The composition report: one record per node, as the files on disk
// describe it. A node whose world changed version but not schema says which
// version the fixture was frozen with.
func Example_evalComposition() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "fixtures-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	inst, err := composition.Open(ctx, newCompany(dir), composition.Options{})
	if err != nil {
		panic(err)
	}
	if _, err := inst.Freeze(ctx, "acme", "Empty stores.", composition.FreezeOptions{}); err != nil {
		panic(err)
	}
	inst.Close()

	// payments 1.1.0: the same schema under a new version.
	payments110 := env.NewWorld(env.WorldSpec{Name: "payments", Version: "1.1.0", Schema: payments.World.Spec().Schema})
	company := env.NewWorld(env.WorldSpec{Name: "company", Version: "0.1.0", FixturesDir: dir,
		Schema: "CREATE TABLE staff (id TEXT PRIMARY KEY, name TEXT NOT NULL) STRICT;"})
	company.AddWorld(payments110, env.ToolPrefix("pay_"))
	inst, err = composition.Open(ctx, company, composition.Options{Fixture: "acme"})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	for _, r := range inst.Composition() {
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
	}
	// Output:
	// {"path":"main","world":"company","world_version":"0.1.0","scope":null,"aliases":[],"schema_hash":"5f514ab9b920178bb85e512adf4abd0b79bd35446fd4d1e59e6918ad802c2be9","frozen_world_version":null}
	// {"path":"payments","world":"payments","world_version":"1.1.0","scope":null,"aliases":[],"schema_hash":"0ab9a45400946dd87323c418887b9d89eff995178e7a69921db1a3fef9f543be","frozen_world_version":"1.0.0"}
}

// The state document an eval grades on: Instance.State in process, the
// state message and GET /state over OpenEnv.
func Example_evalState() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "fixtures-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	company := newCompany(dir)
	inst, err := composition.Open(ctx, company, composition.Options{Now: "2026-06-01T09:00:00.000Z"})
	if err != nil {
		panic(err)
	}
	if _, err := inst.Freeze(ctx, "acme", "Empty stores.", composition.FreezeOptions{}); err != nil {
		panic(err)
	}
	inst.Close()

	inst, err = composition.Open(ctx, company, composition.Options{Fixture: "acme", Seed: 7, EpisodeID: "ep-1"})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	inst.CallJSON(ctx, "pay_create_charge", []byte(`{"amount": 500}`))
	b, _ := json.MarshalIndent(inst.State(), "", "  ")
	fmt.Println(string(b))
	// Output:
	// {
	//   "episode_id": "ep-1",
	//   "step_count": 1,
	//   "state_format": "seahaven.state/1",
	//   "world": "company",
	//   "world_version": "0.1.0",
	//   "seed": 7,
	//   "now": "2026-06-01T09:00:00.000Z",
	//   "clock_mode": "frozen",
	//   "composition": {
	//     "main": {
	//       "path": "main",
	//       "world": "company",
	//       "world_version": "0.1.0",
	//       "scope": null,
	//       "aliases": [],
	//       "schema_hash": "5f514ab9b920178bb85e512adf4abd0b79bd35446fd4d1e59e6918ad802c2be9",
	//       "frozen_world_version": null
	//     },
	//     "payments": {
	//       "path": "payments",
	//       "world": "payments",
	//       "world_version": "1.0.0",
	//       "scope": null,
	//       "aliases": [],
	//       "schema_hash": "0ab9a45400946dd87323c418887b9d89eff995178e7a69921db1a3fef9f543be",
	//       "frozen_world_version": null
	//     }
	//   },
	//   "fixture": {
	//     "id": "acme",
	//     "format_version": 2,
	//     "file_sha256": {
	//       "main": "9d9a56c996f2ec259336a28b0d1acff6c0facd82dfa93d6477e2b315bfa27904",
	//       "payments": "f1dd6b8808ec2ff1d54c26c96f6a9b04885e50fdb54ebfc01fb0ba6c37a7b1e9"
	//     }
	//   },
	//   "change_log": [
	//     {
	//       "seq": 1,
	//       "call": 1,
	//       "tool": "create_charge",
	//       "internal": false,
	//       "world": "payments",
	//       "table": "charges",
	//       "op": "insert",
	//       "key": {
	//         "id": "b9dcccf6-55be-4561-8a61-40f1609a6446"
	//       },
	//       "before": null,
	//       "after": {
	//         "amount": 500,
	//         "created_at": "2026-06-01 09:00:00",
	//         "id": "b9dcccf6-55be-4561-8a61-40f1609a6446",
	//         "refunded": 0
	//       }
	//     }
	//   ]
	// }
}
