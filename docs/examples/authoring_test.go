package examples_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/seahaven/seahaven/check"
	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/docs/examples/crm"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/payments"
)

// stub returns a tool function that answers its own name.
func stub(name string) func(*env.Ctx, struct{}) (string, error) {
	return func(*env.Ctx, struct{}) (string, error) { return name, nil }
}

// newWorld declares a world with one table named after it.
func newWorld(name string) *env.World {
	return env.NewWorld(env.WorldSpec{Name: name, Version: "1.0.0",
		Schema: "CREATE TABLE " + name + "_rows (id TEXT PRIMARY KEY) STRICT;"})
}

// The input schema an agent sees is derived from the argument struct, and
// arguments are validated against it before the tool runs.
func Example_authoringSchema() {
	ctx := context.Background()
	inst, err := composition.Open(ctx, crm.World, composition.Options{})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	fmt.Println(string(inst.Tools()[0].InputSchema))
	for _, args := range []string{
		`{"email": "ada@example.com", "plan": "gold"}`,
		`{"email": "ada@example.com", "seats": 0}`,
		`{"email": "ada@example.com", "colour": "red"}`,
		`{"plan": "pro"}`,
		`{"email": 42}`,
	} {
		_, err := inst.CallJSON(ctx, "add_customer", []byte(args))
		te, _ := env.AsToolError(err)
		fmt.Println(te.Kind+":", te.Message)
	}
	// Output:
	// {"type":"object","properties":{"email":{"type":"string","description":"The customer's email address.","maxLength":254},"plan":{"type":"string","description":"The customer's plan.","default":"free","enum":["free","pro","enterprise"]},"seats":{"type":"integer","description":"Seats on the plan.","default":1,"minimum":1,"maximum":500},"note":{"type":["string","null"],"description":"A free-text note, or null.","maxLength":500}},"required":["email"],"additionalProperties":false}
	// invalid_args: invalid arguments: field "plan": value "gold" is not one of "free", "pro", "enterprise"
	// invalid_args: invalid arguments: field "seats": value 0 is less than minimum 1
	// invalid_args: invalid arguments: unknown field "colour" (known fields: email, plan, seats, note)
	// invalid_args: invalid arguments: missing required field "email"
	// invalid_args: invalid arguments: field "email": expected string, got number
}

// A tool's error rolls back what the tool wrote; a *env.ToolError is what
// the agent sees, word for word.
func Example_authoringErrors() {
	ctx := context.Background()
	Accounts := env.NewWorld(env.WorldSpec{Name: "accounts", Version: "1.0.0",
		Schema: "CREATE TABLE accounts (id TEXT PRIMARY KEY, balance INTEGER NOT NULL CHECK (balance >= 0)) STRICT;"})
	type WithdrawArgs struct {
		Account string `json:"account"`
		Amount  int64  `json:"amount" min:"1"`
	}
	env.Tool(Accounts, "withdraw", "Withdraw from an account.",
		func(c *env.Ctx, in WithdrawArgs) (env.Row, error) {
			res, err := c.DB.Exec("UPDATE accounts SET balance = balance - ? WHERE id = ? AND balance >= ?", in.Amount, in.Account, in.Amount)
			if err != nil {
				return nil, err
			}
			if res.RowsAffected == 0 {
				return nil, env.Errorf("account %s cannot cover %d", in.Account, in.Amount)
			}
			if in.Amount > 1000 {
				// Written above, refused here: the whole call rolls back.
				return nil, &env.ToolError{Kind: env.KindExecution, Message: "withdrawals over 1000 need a second approval"}
			}
			return c.DB.One("SELECT id, balance FROM accounts WHERE id = ?", in.Account)
		})

	inst, err := composition.Open(ctx, Accounts, composition.Options{})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	inst.DB().Exec("INSERT INTO accounts VALUES ('a1', 5000)")
	for _, amount := range []int{100, 9000, 2000} {
		out, err := inst.Call(ctx, "withdraw", map[string]any{"account": "a1", "amount": amount})
		fmt.Println(out, err)
	}
	// Output:
	// map[balance:4900 id:a1] <nil>
	// <nil> account a1 cannot cover 9000
	// <nil> withdrawals over 1000 need a second approval
}

// A list names tools as the added world contributes them, deeper prefixes
// included; the host's prefix goes on top. The surface is the host's own
// tools, then each added world's contribution in AddWorld order.
func Example_authoringSurface() {
	tax := env.NewWorld(env.WorldSpec{Name: "tax", Version: "1.0.0",
		Schema: "CREATE TABLE rates (region TEXT PRIMARY KEY, rate REAL NOT NULL) STRICT;"})
	env.Tool(tax, "quote", "Quote the tax on an amount.", stub("quote"))
	env.Tool(tax, "set_rate", "Set a region's rate.", stub("set_rate"))

	billing := env.NewWorld(env.WorldSpec{Name: "billing", Version: "1.0.0",
		Schema: "CREATE TABLE bills (id TEXT PRIMARY KEY) STRICT;"})
	env.Tool(billing, "issue", "Issue a bill.", stub("issue"))
	billing.AddWorld(tax, env.ToolPrefix("tax_"), env.ToolBlockList("set_rate"))

	shop := env.NewWorld(env.WorldSpec{Name: "shop", Version: "1.0.0",
		Schema: "CREATE TABLE orders (id TEXT PRIMARY KEY) STRICT;"})
	env.Tool(shop, "checkout", "Check out the cart.", stub("checkout"))
	shop.AddWorld(billing, env.ToolPrefix("bill_"), env.ToolAllowList("tax_quote"))
	shop.AddWorld(payments.World, env.ToolPrefix("pay_"), env.ToolAllowList("list_charges"))

	sealed, err := composition.Seal(shop)
	if err != nil {
		panic(err)
	}
	for _, r := range sealed.Surface {
		fmt.Printf("%-17s %s of node %s\n", r.Name, r.Def.Name, r.Owner.Path)
	}
	// Output:
	// checkout          checkout of node main
	// bill_tax_quote    quote of node billing/tax
	// pay_list_charges  list_charges of node payments
}

// Two worlds that add the same world share its store; Store opens another.
// A node's canonical path is its shallowest route; every other route is an
// alias, and each node is one file in the instance directory.
func Example_authoringSharing() {
	ctx := context.Background()
	shop := env.NewWorld(env.WorldSpec{Name: "shop", Version: "1.0.0",
		Schema: "CREATE TABLE orders (id TEXT PRIMARY KEY, total INTEGER NOT NULL) STRICT;"})
	// The shop charges through payments and hides it from the agent entirely.
	shop.AddWorld(payments.World, env.ToolAllowList())

	company := env.NewWorld(env.WorldSpec{Name: "company", Version: "0.1.0",
		Schema: "CREATE TABLE staff (id TEXT PRIMARY KEY) STRICT;"})
	company.AddWorld(payments.World, env.ToolPrefix("pay_"))
	company.AddWorld(shop, env.ToolPrefix("shop_"))
	company.AddWorld(payments.World, env.Name("payments_eu"), env.Store("eu"), env.ToolPrefix("eu_"))

	inst, err := composition.Open(ctx, company, composition.Options{})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	for k, r := range inst.Composition() {
		scope := "null"
		if r.Scope != nil {
			scope = *r.Scope
		}
		fmt.Printf("%-12s world=%-9s scope=%-4s aliases=%v file=%s\n", r.Path, r.World, scope, r.Aliases, inst.Sealed().Nodes[k].File)
	}
	// Output:
	// main         world=company   scope=null aliases=[] file=state.sqlite
	// payments     world=payments  scope=null aliases=[shop/payments] file=state.payments.sqlite
	// shop         world=shop      scope=null aliases=[] file=state.shop.sqlite
	// payments_eu  world=payments  scope=eu   aliases=[] file=state.payments_eu.sqlite
}

// A host reaches an added world through a handle: its tools (by own name or
// typed), its store, its state. The lists shape the agent's surface only,
// an added world's errors reach the host unwrapped, and there is no
// atomicity across stores.
func Example_authoringHandles() {
	ctx := context.Background()
	company := env.NewWorld(env.WorldSpec{Name: "company", Version: "0.1.0",
		Schema: "CREATE TABLE invoices (id TEXT PRIMARY KEY, charge_id TEXT NOT NULL, amount INTEGER NOT NULL CHECK (amount <= 100000)) STRICT;"})
	// Agents may list charges; only the company's own code may refund.
	company.AddWorld(payments.World, env.ToolPrefix("pay_"), env.ToolAllowList("list_charges"))

	type InvoiceArgs struct {
		Amount int64 `json:"amount"`
	}
	env.Tool(company, "invoice", "Charge the account and file an invoice.",
		func(c *env.Ctx, in InvoiceArgs) (string, error) {
			pay := c.Worlds.Get("payments")
			charge, err := env.Call(c.Context(), pay, payments.CreateCharge, payments.ChargeArgs{Amount: in.Amount})
			if err != nil {
				return "", err // payments' own error, unwrapped
			}
			id := c.IDs.UUID()
			_, err = c.DB.Exec("INSERT INTO invoices (id, charge_id, amount) VALUES (?, ?, ?)", id, charge.ID, in.Amount)
			return id, err // a failure here rolls back the invoice, not the charge
		})
	type RefundArgs struct {
		Invoice string `json:"invoice"`
	}
	env.Tool(company, "void_invoice", "Void an invoice and refund its charge.",
		func(c *env.Ctx, in RefundArgs) (any, error) {
			inv, err := c.DB.One("SELECT charge_id FROM invoices WHERE id = ?", in.Invoice)
			if err != nil || inv == nil {
				return nil, env.Errorf("no invoice %q", in.Invoice)
			}
			// refund_charge is not on the agent's surface, but host code may call it.
			return c.Worlds.Get("payments").Call("refund_charge", payments.RefundArgs{ChargeID: inv["charge_id"].(string)})
		})

	inst, err := composition.Open(ctx, company, composition.Options{})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	var names []string
	for _, t := range inst.Tools() {
		names = append(names, t.Name)
	}
	fmt.Println(strings.Join(names, " "))
	id, _ := inst.Call(ctx, "invoice", InvoiceArgs{Amount: 500})
	fmt.Println(inst.Call(ctx, "void_invoice", RefundArgs{Invoice: id.(string)}))
	_, err = inst.Call(ctx, "invoice", InvoiceArgs{Amount: 0})
	fmt.Println(err)
	_, err = inst.Call(ctx, "invoice", InvoiceArgs{Amount: 250000})
	fmt.Println(err)
	view := inst.Inspect()
	invoices, _ := view.One(ctx, "SELECT count(*) AS n FROM invoices")
	charges, _ := view.One(ctx, "SELECT count(*) AS n FROM payments.charges")
	fmt.Println("invoices:", invoices["n"], "charges:", charges["n"])
	// Output:
	// invoice void_invoice pay_list_charges
	// {6eda0917-7c19-4a09-a73d-eb368e3811f0 true} <nil>
	// invalid arguments: field "amount": value 0 is less than minimum 1
	// sqlitestore: CHECK constraint failed: amount <= 100000
	// invoices: 1 charges: 2
}

// A handle belongs to the call that made it. Kept past it, every use fails
// with the same WorldBug, instead of quietly reaching another instance.
func Example_authoringStaleHandle() {
	ctx := context.Background()
	company := newWorld("company")
	company.AddWorld(payments.World)

	var kept *env.Handle
	env.Tool(company, "keep_the_handle", "The one thing a host tool must not do: hold a handle past its call.",
		func(c *env.Ctx, _ struct{}) (string, error) {
			kept = c.Worlds.Get("payments")
			return "held", nil
		})
	env.Tool(company, "open_inside", "The other: make an instance inside a call.",
		func(c *env.Ctx, _ struct{}) (string, error) {
			inst, err := composition.Open(c.Context(), company, composition.Options{})
			if err == nil {
				inst.Close()
			}
			return "", err
		})

	inst, err := composition.Open(ctx, company, composition.Options{})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	inst.CallJSON(ctx, "keep_the_handle", nil)
	_, err = kept.DB().Rows("SELECT * FROM charges")
	fmt.Println(err)
	_, err = inst.CallJSON(ctx, "open_inside", nil)
	fmt.Println(err)
	// Output:
	// a world handle was used after the call it belongs to returned
	// composition.Open: an instance cannot be made inside a call; reach added worlds through ctx.Worlds
}

// env.Call checks the argument and result types at compile time. At the
// instance it resolves over the agent's surface; through a handle, over the
// handle's subtree. A world that is a node twice names no one store.
func Example_authoringTyped() {
	ctx := context.Background()
	company := newWorld("company")
	company.AddWorld(payments.World, env.ToolPrefix("pay_"))
	inst, err := composition.Open(ctx, company, composition.Options{})
	if err != nil {
		panic(err)
	}
	defer inst.Close()

	charge, err := env.Call(ctx, inst, payments.CreateCharge, payments.ChargeArgs{Amount: 500})
	fmt.Println(charge.Amount, err) // charge is a payments.Charge
	out, err := inst.CallJSON(ctx, "pay_create_charge", []byte(`{"amount": 7}`))
	fmt.Println(out.(payments.Charge).Amount, err) // only the wire serialises

	twice := newWorld("twice")
	twice.AddWorld(payments.World, env.ToolPrefix("pay_"))
	twice.AddWorld(payments.World, env.Name("payments_eu"), env.Store("eu"), env.ToolPrefix("eu_"))
	env.Tool(twice, "charge_eu", "Charge the EU account.",
		func(c *env.Ctx, in payments.ChargeArgs) (payments.Charge, error) {
			return env.Call(c.Context(), c.Worlds.Get("payments_eu"), payments.CreateCharge, in)
		})
	inst2, err := composition.Open(ctx, twice, composition.Options{})
	if err != nil {
		panic(err)
	}
	defer inst2.Close()
	_, err = env.Call(ctx, inst2, payments.CreateCharge, payments.ChargeArgs{Amount: 500})
	fmt.Println(err)
	out, err = inst2.CallJSON(ctx, "charge_eu", []byte(`{"amount": 9}`))
	fmt.Println(out.(payments.Charge).Amount, err)
	// Output:
	// 500 <nil>
	// 7 <nil>
	// create_charge is a tool of payments, which is a node of this tree more than once (pay_create_charge at payments, eu_create_charge at payments_eu): call it through the handle of the account you mean, ctx.Worlds.Get(name)
	// 9 <nil>
}

// Startup keywords a caller passes are broadcast to every hook that names
// them; a keyword bound by AddWorld wins on its node and nowhere else.
func Example_authoringStartup() {
	ctx := context.Background()
	company := newWorld("company")
	company.AddWorld(payments.World, env.ToolAllowList())
	company.AddWorld(payments.World, env.Name("payments_eu"), env.Store("eu"), env.ToolAllowList(),
		env.Startup(map[string]any{"region": "eu"}))
	env.Tool(company, "accounts", "What each payments account was configured as.",
		func(c *env.Ctx, _ struct{}) (map[string]any, error) {
			return map[string]any{
				"payments":    c.Worlds.Get("payments").State()["region"],
				"payments_eu": c.Worlds.Get("payments_eu").State()["region"],
				"plan":        c.Worlds.Get("payments").State()["plan"],
			}, nil
		})

	inst, err := composition.Open(ctx, company, composition.Options{
		Startup: map[string]any{"region": "uk", "plan": "enterprise"},
	})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	fmt.Println(inst.CallJSON(ctx, "accounts", nil))

	_, err = composition.Open(ctx, company, composition.Options{Startup: map[string]any{"colour": "red"}})
	fmt.Println(err)
	// Output:
	// map[payments:uk payments_eu:eu plan:enterprise] <nil>
	// unknown startup keyword "colour": no startup hook of company's tree accepts it (accepted: plan, region)
}

// An agent call descends the middleware of every world on its route, root
// first, each layer with its own world's context; a call through a handle
// runs only the owning world's chain.
func Example_authoringMiddleware() {
	ctx := context.Background()
	var trace []string
	layer := func(name string) env.Middleware {
		return func(c *env.Ctx, next func() (any, error)) (any, error) {
			trace = append(trace, fmt.Sprintf("%s(tool=%s node=%s internal=%t)", name, c.Call.Tool, c.Call.Node, c.Call.Internal))
			return next()
		}
	}
	ledger := newWorld("ledger")
	ledger.Use(layer("ledger"))
	post := env.Tool(ledger, "post", "Post an entry.", stub("post"))

	company := newWorld("company")
	company.Use(layer("company"))
	company.AddWorld(ledger, env.ToolPrefix("gl_"))
	env.Tool(company, "close_month", "Close the month: posts to the ledger.",
		func(c *env.Ctx, _ struct{}) (string, error) {
			return env.Call(c.Context(), c.Worlds.Get("ledger"), post, struct{}{})
		})

	inst, err := composition.Open(ctx, company, composition.Options{})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	for _, tool := range []string{"gl_post", "close_month"} {
		trace = nil
		inst.CallJSON(ctx, tool, nil)
		fmt.Println(tool+":", strings.Join(trace, " → "))
	}
	// Output:
	// gl_post: company(tool=gl_post node=ledger internal=false) → ledger(tool=gl_post node=ledger internal=false)
	// close_month: company(tool=close_month node=main internal=false) → ledger(tool=post node=ledger internal=true)
}

// check.World holds a world to the lints of `seahaven check`: here a
// declared struct names a child no AddWorld registered (SH502), and a
// registered child is missing from it (SH503).
func Example_authoringCheck() {
	company := newWorld("company")
	company.AddWorld(payments.World, env.ToolPrefix("pay_"))
	company.AddWorld(newWorld("chat"))
	type CompanyWorlds struct {
		Payments *env.Handle
		Billing  *env.Handle
	}
	env.DeclareWorlds[CompanyWorlds](company)

	for _, f := range check.World(context.Background(), company) {
		fmt.Println(f.Code, f.Severity+":", f.Message)
	}
	// Output:
	// SH503 warning: company registers the child "chat", which no declared struct names (declared: examples_test.CompanyWorlds)
	// SH502 error: examples_test.CompanyWorlds.Billing names the child "billing", which no AddWorld on company registered (registered: payments, chat)
}
