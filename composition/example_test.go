package composition_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
)

// The spec's first example: a company world adds payments; the agent sees
// one flat list, the host's tool calls the added world in process, and an
// eval reads both stores through one connection and one change log.
func Example() {
	ctx := context.Background()
	payments := env.NewWorld(env.WorldSpec{
		Name: "payments", Version: "1.0.0", StateFormat: "seahaven.state/1",
		Schema: "CREATE TABLE charges (id TEXT PRIMARY KEY, amount INTEGER NOT NULL) STRICT;",
	})
	type Charge struct {
		ID     string `json:"id"`
		Amount int64  `json:"amount"`
	}
	type ChargeArgs struct {
		Amount int64 `json:"amount"`
	}
	createCharge := env.Tool(payments, "create_charge", "Charge the account and return the charge.",
		func(c *env.Ctx, in ChargeArgs) (Charge, error) {
			ch := Charge{ID: c.IDs.UUID(), Amount: in.Amount}
			_, err := c.DB.Exec("INSERT INTO charges (id, amount) VALUES (?, ?)", ch.ID, ch.Amount)
			return ch, err
		})

	company := env.NewWorld(env.WorldSpec{
		Name: "company", Version: "0.1.0", StateFormat: "seahaven.state/1",
		Schema: "CREATE TABLE invoices (id TEXT PRIMARY KEY, charge_id TEXT NOT NULL) STRICT;",
	})
	company.AddWorld(payments, env.Name("payments"), env.ToolPrefix("pay_"))
	type Filed struct {
		ID       string `json:"id"`
		ChargeID string `json:"charge_id"`
	}
	env.Tool(company, "invoice", "Charge the company's payment account and file an invoice against the charge.",
		func(c *env.Ctx, in ChargeArgs) (Filed, error) {
			charge, err := env.Call(c.Context(), c.Worlds.Get("payments"), createCharge, ChargeArgs{Amount: in.Amount})
			if err != nil {
				return Filed{}, err
			}
			filed := Filed{ID: c.IDs.UUID(), ChargeID: charge.ID}
			_, err = c.DB.Exec("INSERT INTO invoices (id, charge_id) VALUES (?, ?)", filed.ID, filed.ChargeID)
			return filed, err
		})

	inst, err := composition.Open(ctx, company, composition.Options{Now: "2026-06-01T09:00:00.000Z"})
	if err != nil {
		panic(err)
	}
	defer inst.Close()

	// One flat list: the host's own tools, then what each added world contributes.
	for _, t := range inst.Tools() {
		fmt.Println(t.Name)
	}
	if _, err := inst.CallJSON(ctx, "invoice", []byte(`{"amount": 500}`)); err != nil {
		panic(err)
	}

	// Two files, one read-only connection: the added store is attached under its path.
	joined, err := inst.Inspect().One(ctx, "SELECT invoices.id, charges.amount FROM invoices"+
		" JOIN payments.charges AS charges ON charges.id = invoices.charge_id")
	if err != nil {
		panic(err)
	}
	fmt.Println("amount:", joined["amount"])

	// One change log, and every record says which store it came from.
	for _, r := range inst.ChangeLog() {
		fmt.Println(r.World, r.Table, r.Op)
	}
	// Output:
	// invoice
	// pay_create_charge
	// amount: 500
	// main invoices insert
	// payments charges insert
}

// The spec's sharing example: two worlds adding the same payments world land
// on one node; a store scope opens another.
func Example_sharing() {
	ctx := context.Background()
	payments := env.NewWorld(env.WorldSpec{Name: "payments", Version: "1.0.0",
		Schema: "CREATE TABLE charges (id TEXT PRIMARY KEY, amount INTEGER NOT NULL) STRICT;"})
	type ChargeArgs struct {
		Amount int64 `json:"amount"`
	}
	createCharge := env.Tool(payments, "create_charge", "Charge the account and return the charge.",
		func(c *env.Ctx, in ChargeArgs) (map[string]any, error) {
			id := c.IDs.UUID()
			_, err := c.DB.Exec("INSERT INTO charges (id, amount) VALUES (?, ?)", id, in.Amount)
			return map[string]any{"id": id, "amount": in.Amount}, err
		})
	shop := env.NewWorld(env.WorldSpec{Name: "shop", Version: "1.0.0",
		Schema: "CREATE TABLE orders (id TEXT PRIMARY KEY, total INTEGER NOT NULL) STRICT;"})
	// The shop charges through payments and hides it from the agent entirely.
	shop.AddWorld(payments, env.ToolAllowList())
	type OrderArgs struct {
		Total int64 `json:"total"`
	}
	env.Tool(shop, "place_order", "Place an order and charge for it.",
		func(c *env.Ctx, in OrderArgs) (map[string]any, error) {
			charge, err := env.Call(c.Context(), c.Worlds.Get("payments"), createCharge, ChargeArgs{Amount: in.Total})
			if err != nil {
				return nil, err
			}
			id := c.IDs.UUID()
			_, err = c.DB.Exec("INSERT INTO orders (id, total) VALUES (?, ?)", id, in.Total)
			return map[string]any{"order_id": id, "charge_id": charge["id"]}, err
		})
	company := env.NewWorld(env.WorldSpec{Name: "company", Version: "0.1.0",
		Schema: "CREATE TABLE staff (id TEXT PRIMARY KEY) STRICT;"})
	company.AddWorld(payments, env.Name("payments"), env.ToolPrefix("pay_"))
	company.AddWorld(shop, env.Name("shop"), env.ToolPrefix("shop_"))
	company.AddWorld(payments, env.Name("payments_eu"), env.Store("eu"), env.ToolPrefix("eu_"))

	inst, err := composition.Open(ctx, company, composition.Options{})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	nodes := map[string]env.CompositionRecord{}
	var paths []string
	for _, r := range inst.Composition() {
		nodes[r.Path] = r
		paths = append(paths, r.Path)
	}
	sort.Strings(paths)
	// Four stores, not five: the shop's payments is the company's own account.
	fmt.Println(paths)
	fmt.Println(nodes["payments"].Aliases, nodes["payments"].Scope == nil, *nodes["payments_eu"].Scope)

	for _, call := range []struct{ tool, args string }{
		{"shop_place_order", `{"total": 500}`},
		{"pay_create_charge", `{"amount": 20}`},
		{"eu_create_charge", `{"amount": 7}`},
	} {
		if _, err := inst.CallJSON(ctx, call.tool, []byte(call.args)); err != nil {
			panic(err)
		}
	}
	view := inst.Inspect()
	charges, _ := view.Rows(ctx, "SELECT amount FROM payments.charges ORDER BY amount")
	eu, _ := view.Rows(ctx, "SELECT amount FROM payments_eu.charges")
	fmt.Println(amounts(charges), amounts(eu))
	// Output:
	// [main payments payments_eu shop]
	// [shop/payments] true eu
	// [20 500] [7]
}

func amounts(rows []env.Row) []any {
	var out []any
	for _, r := range rows {
		out = append(out, r["amount"])
	}
	return out
}

// The spec's handle rule: a handle kept past its call fails with the exact
// WorldBug message.
func Example_staleHandle() {
	ctx := context.Background()
	payments := env.NewWorld(env.WorldSpec{Name: "payments", Version: "1.0.0",
		Schema: "CREATE TABLE charges (id TEXT PRIMARY KEY, amount INTEGER NOT NULL) STRICT;"})
	company := env.NewWorld(env.WorldSpec{Name: "company", Version: "0.1.0",
		Schema: "CREATE TABLE staff (id TEXT PRIMARY KEY) STRICT;"})
	company.AddWorld(payments, env.Name("payments"))
	var kept *env.Handle
	env.Tool(company, "keep_the_handle", "The one thing a host tool must not do: hold a handle past its call.",
		func(c *env.Ctx, _ struct{}) (map[string]string, error) {
			kept = c.Worlds.Get("payments")
			return map[string]string{"held": "yes"}, nil
		})
	inst, err := composition.Open(ctx, company, composition.Options{})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	if _, err := inst.CallJSON(ctx, "keep_the_handle", nil); err != nil {
		panic(err)
	}
	_, err = kept.DB().Rows("SELECT * FROM charges")
	var bug *env.WorldBug
	fmt.Println(errors.As(err, &bug), err)
	// Output:
	// true a world handle was used after the call it belongs to returned
}

// The spec's startup example: broadcast keywords reach every hook naming
// them; a keyword bound by AddWorld wins on its node and nowhere else.
func Example_startup() {
	ctx := context.Background()
	payments := env.NewWorld(env.WorldSpec{Name: "payments", Version: "1.0.0",
		Schema: "CREATE TABLE charges (id TEXT PRIMARY KEY, amount INTEGER NOT NULL) STRICT;"})
	type Config struct {
		Region string `json:"region" default:"us"`
		Plan   string `json:"plan" default:"free"`
	}
	env.OnStartup(payments, func(c *env.Ctx, k Config) error {
		c.State["region"] = k.Region
		c.State["plan"] = k.Plan
		return nil
	})
	company := env.NewWorld(env.WorldSpec{Name: "company", Version: "0.1.0",
		Schema: "CREATE TABLE staff (id TEXT PRIMARY KEY) STRICT;"})
	company.AddWorld(payments, env.Name("payments"))
	company.AddWorld(payments, env.Name("payments_eu"), env.Store("eu"), env.Startup(map[string]any{"region": "eu"}))
	env.Tool(company, "accounts", "What each payments account was configured as.",
		func(c *env.Ctx, _ struct{}) (map[string]string, error) {
			return map[string]string{
				"payments":    c.Worlds.Get("payments").State()["region"].(string),
				"payments_eu": c.Worlds.Get("payments_eu").State()["region"].(string),
				"plan":        c.Worlds.Get("payments").State()["plan"].(string),
			}, nil
		})
	inst, err := composition.Open(ctx, company, composition.Options{Startup: map[string]any{"region": "uk", "plan": "enterprise"}})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	out, err := inst.CallJSON(ctx, "accounts", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// map[payments:uk payments_eu:eu plan:enterprise]
}

// The spec's fixture example: fill every store in one bulk block, freeze,
// and create a new instance from the fixture.
func Example_fixture() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fixtures-")
	defer os.RemoveAll(dir)
	payments := env.NewWorld(env.WorldSpec{Name: "payments", Version: "1.0.0",
		Schema: "CREATE TABLE charges (id TEXT PRIMARY KEY, amount INTEGER NOT NULL) STRICT;"})
	company := env.NewWorld(env.WorldSpec{Name: "company", Version: "0.1.0", FixturesDir: dir,
		Schema: "CREATE TABLE staff (id TEXT PRIMARY KEY) STRICT;"})
	company.AddWorld(payments, env.Name("payments"))

	inst, err := composition.Open(ctx, company, composition.Options{Now: "2026-06-01T09:00:00.000Z"})
	if err != nil {
		panic(err)
	}
	err = inst.Bulk(ctx, func(c *env.Ctx) error {
		if _, err := c.DB.Exec("INSERT INTO staff (id) VALUES ('u1')"); err != nil {
			return err
		}
		_, err := c.Worlds.Get("payments").DB().Exec("INSERT INTO charges (id, amount) VALUES ('c1', 500)")
		return err
	})
	if err != nil {
		panic(err)
	}
	if _, err := inst.Freeze(ctx, "acme", "One person, one charge.", composition.FreezeOptions{}); err != nil {
		panic(err)
	}
	inst.Close()

	inst, err = composition.Open(ctx, company, composition.Options{Fixture: "acme"})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	charged, err := inst.Inspect().One(ctx, "SELECT amount FROM payments.charges")
	fmt.Println(charged["amount"], err, inst.Composition()[1].Path)
	// Output:
	// 500 <nil> payments
}

// The spec's typed access: call a tool by the tool itself, at the instance
// or through a handle; an in-process call returns the tool's own value.
func Example_typed() {
	ctx := context.Background()
	type Charge struct {
		ID     string `json:"id"`
		Amount int64  `json:"amount"`
	}
	type ChargeArgs struct {
		Amount int64 `json:"amount"`
	}
	payments := env.NewWorld(env.WorldSpec{Name: "payments", Version: "1.0.0",
		Schema: "CREATE TABLE charges (id TEXT PRIMARY KEY, amount INTEGER NOT NULL) STRICT;"})
	createCharge := env.Tool(payments, "create_charge", "Charge the account and return the charge.",
		func(c *env.Ctx, in ChargeArgs) (Charge, error) {
			ch := Charge{ID: c.IDs.UUID(), Amount: in.Amount}
			_, err := c.DB.Exec("INSERT INTO charges (id, amount) VALUES (?, ?)", ch.ID, ch.Amount)
			return ch, err
		})
	company := env.NewWorld(env.WorldSpec{Name: "company", Version: "0.1.0",
		Schema: "CREATE TABLE staff (id TEXT PRIMARY KEY) STRICT;"})
	company.AddWorld(payments, env.Name("payments"), env.ToolPrefix("pay_"))
	inst, err := composition.Open(ctx, company, composition.Options{})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	charge, err := env.Call(ctx, inst, createCharge, ChargeArgs{Amount: 500})
	fmt.Println(charge.Amount, err)
	out, err := inst.CallJSON(ctx, "pay_create_charge", []byte(`{"amount": 7}`))
	fmt.Println(out.(Charge).Amount, err)
	// Output:
	// 500 <nil>
	// 7 <nil>
}

// CheckKeys finds, in every world of a tree, the tables whose primary key
// the change log cannot key rows by; the seal refuses them too.
func ExampleCheckKeys() {
	legacy := env.NewWorld(env.WorldSpec{Name: "legacy", Version: "1.0.0",
		Schema: "CREATE TABLE codes (code PRIMARY KEY NOT NULL, label TEXT);"})
	host := env.NewWorld(env.WorldSpec{Name: "host", Version: "1.0.0",
		Schema: "CREATE TABLE staff (id TEXT PRIMARY KEY) STRICT;"})
	host.AddWorld(legacy)
	fmt.Println(composition.CheckKeys(host))
	_, err := composition.Seal(host)
	fmt.Println(err != nil)
	// Output:
	// world legacy: the change log cannot key the rows of table codes: its primary-key column code has no type affinity (declared type ""), so it may hold values SQLite finds equal though they differ, such as 1 and 1.0; declare it INTEGER, REAL, NUMERIC or TEXT
	// true
}
