// Package company is the examples' company world: its own staff and
// invoices, a payments account, a shop (which charges through the same
// account), a second payments account in the "eu" scope, and team chat.
//
//	main (company)
//	├── payments        (payments, pay_)      alias shop/payments
//	├── shop            (shop, shop_)
//	│   └── payments    → the company's own account
//	├── payments_eu     (payments, store "eu", eu_)
//	└── chat            (chat, chat_)
package company

import (
	"embed"
	"io/fs"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/chat"
	"github.com/seahaven/seahaven/examples/worlds/payments"
	"github.com/seahaven/seahaven/examples/worlds/shop"
)

// fixtures holds the company's own fixtures and tasks file, built into
// the binary.
//
//go:embed fixtures
var fixtures embed.FS

// Fixtures is the company's fixtures directory, as a file system.
var Fixtures = func() fs.FS {
	sub, err := fs.Sub(fixtures, "fixtures")
	if err != nil {
		panic(err)
	}
	return sub
}()

// World is the company world.
var World = env.NewWorld(env.WorldSpec{
	Name:           "company",
	Version:        "0.1.0",
	Description:    "A small company: staff, invoices, two payment accounts, a shop and team chat.",
	Fixtures:       Fixtures,
	DefaultFixture: AcmeID,
	Schema: `CREATE TABLE staff (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  role TEXT NOT NULL DEFAULT 'staff'
) STRICT;
CREATE TABLE invoices (
  id TEXT PRIMARY KEY,
  charge_id TEXT NOT NULL,
  amount INTEGER NOT NULL,
  issued_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
) STRICT;`,
})

// Worlds declares the company's child names for static checking.
type Worlds struct {
	Payments   *env.Handle
	Shop       *env.Handle
	PaymentsEU *env.Handle `world:"payments_eu"`
	Chat       *env.Handle
}

func init() {
	World.AddWorld(payments.World, env.Name("payments"), env.ToolPrefix("pay_"))
	World.AddWorld(shop.World, env.Name("shop"), env.ToolPrefix("shop_"))
	World.AddWorld(payments.World, env.Name("payments_eu"), env.Store("eu"), env.ToolPrefix("eu_"),
		env.Startup(map[string]any{"region": "eu"}))
	World.AddWorld(chat.World, env.Name("chat"), env.ToolPrefix("chat_"))
	env.DeclareWorlds[Worlds](World)
}

// InvoiceArgs are the arguments of invoice.
type InvoiceArgs struct {
	Amount int64 `json:"amount" doc:"Amount in cents." min:"1" max:"1000000000000"`
}

// Invoice is a filed invoice.
type Invoice struct {
	ID       string `json:"id"`
	ChargeID string `json:"charge_id"`
	Amount   int64  `json:"amount"`
}

// InvoiceTool charges the company's account and files an invoice.
var InvoiceTool = env.Tool(World, "invoice", "Charge the company's payment account and file an invoice against the charge.",
	func(c *env.Ctx, in InvoiceArgs) (Invoice, error) {
		w := env.WorldsOf[Worlds](c)
		charge, err := env.Call(c.Context(), w.Payments, payments.CreateCharge, payments.ChargeArgs{Amount: in.Amount})
		if err != nil {
			return Invoice{}, err
		}
		inv := Invoice{ID: c.IDs.UUID(), ChargeID: charge.ID, Amount: in.Amount}
		_, err = c.DB.Exec("INSERT INTO invoices (id, charge_id, amount) VALUES (?, ?, ?)", inv.ID, inv.ChargeID, inv.Amount)
		return inv, err
	})

// Accounts reports what each payments account was configured as.
var Accounts = env.Tool(World, "accounts", "What each payments account was configured as.",
	func(c *env.Ctx, _ struct{}) (map[string]string, error) {
		w := env.WorldsOf[Worlds](c)
		return map[string]string{
			"payments":    w.Payments.State()["region"].(string),
			"payments_eu": w.PaymentsEU.State()["region"].(string),
			"plan":        w.Payments.State()["plan"].(string),
		}, nil
	})

// HireArgs are the arguments of hire.
type HireArgs struct {
	Name string `json:"name" doc:"The new colleague's name." maxlen:"200"`
	Role string `json:"role,omitempty" default:"staff" doc:"Their role." maxlen:"100"`
}

// Hire adds a colleague and announces them in #general.
var Hire = env.Tool(World, "hire", "Add a colleague to the staff and announce them in the general channel.",
	func(c *env.Ctx, in HireArgs) (env.Row, error) {
		id := c.IDs.UUID()
		if _, err := c.DB.Exec("INSERT INTO staff (id, name, role) VALUES (?, ?, ?)", id, in.Name, in.Role); err != nil {
			return nil, err
		}
		if _, err := c.Worlds.Get("chat").Call("send_message", map[string]any{"channel": "general", "text": "Welcome, " + in.Name + "!", "author": "company"}); err != nil {
			return nil, err
		}
		return env.Row{"id": id, "name": in.Name, "role": in.Role}, nil
	})

// ListStaff lists the company's staff.
var ListStaff = env.Tool(World, "list_staff", "List the company's staff.",
	func(c *env.Ctx, _ struct{}) ([]env.Row, error) {
		return c.DB.Rows("SELECT id, name, role FROM staff ORDER BY name, id")
	})
