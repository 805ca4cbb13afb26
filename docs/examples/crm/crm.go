// Package crm is the world docs/authoring.md builds, one section at a time:
// customers with typed tools, an added payments account reached through a
// handle, startup keywords, an audit middleware and an error handler.
//
//	main (crm)          customers, customer_charges, audit
//	└── payments        charges    (pay_create_charge, pay_list_charges)
package crm

import (
	"errors"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/payments"
)

// World is the CRM world.
var World = env.NewWorld(env.WorldSpec{
	Name:        "crm",
	Version:     "0.1.0",
	Description: "Customers, and the charges made to them.",
	Schema: `CREATE TABLE customers (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL UNIQUE,
  plan TEXT NOT NULL DEFAULT 'free',
  seats INTEGER NOT NULL DEFAULT 1,
  note TEXT,
  created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
) STRICT;
CREATE TABLE customer_charges (
  customer_id TEXT NOT NULL REFERENCES customers (id),
  charge_id TEXT NOT NULL,
  PRIMARY KEY (customer_id, charge_id)
) STRICT;
CREATE TABLE audit (
  seq INTEGER PRIMARY KEY,
  tool TEXT NOT NULL,
  node TEXT NOT NULL,
  principal TEXT NOT NULL,
  at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
) STRICT;`,
	UntrackedTables: []string{"audit"},
})

// Worlds names the worlds the CRM adds, for env.WorldsOf.
type Worlds struct {
	Payments *env.Handle
}

func init() {
	World.AddWorld(payments.World, env.ToolPrefix("pay_"), env.ToolBlockList("refund_charge"))
	env.DeclareWorlds[Worlds](World)
}

// AddCustomerArgs are the arguments of add_customer.
type AddCustomerArgs struct {
	Email string  `json:"email" doc:"The customer's email address." maxlen:"254"`
	Plan  string  `json:"plan" doc:"The customer's plan." enum:"free,pro,enterprise" default:"free"`
	Seats int     `json:"seats" doc:"Seats on the plan." min:"1" max:"500" default:"1"`
	Note  *string `json:"note" doc:"A free-text note, or null." maxlen:"500"`
}

// Customer is one customer.
type Customer struct {
	ID    string `json:"id"`
	Email string `json:"email"`
	Plan  string `json:"plan"`
	Seats int    `json:"seats"`
}

// AddCustomer adds a customer.
var AddCustomer = env.Tool(World, "add_customer", "Add a customer and return it.",
	func(c *env.Ctx, in AddCustomerArgs) (Customer, error) {
		cu := Customer{ID: c.IDs.UUID(), Email: in.Email, Plan: in.Plan, Seats: in.Seats}
		_, err := c.DB.Exec("INSERT INTO customers (id, email, plan, seats, note) VALUES (?, ?, ?, ?, ?)",
			cu.ID, cu.Email, cu.Plan, cu.Seats, in.Note)
		return cu, err
	})

// ListCustomers lists the customers.
var ListCustomers = env.Tool(World, "list_customers", "List the customers, oldest first.",
	func(c *env.Ctx, _ struct{}) ([]env.Row, error) {
		return c.DB.Rows("SELECT id, email, plan, seats, note, created_at FROM customers ORDER BY created_at, id")
	})

// ChargeCustomerArgs are the arguments of charge_customer.
type ChargeCustomerArgs struct {
	CustomerID string `json:"customer_id" doc:"The customer to charge."`
	Amount     int64  `json:"amount" doc:"Amount in cents." min:"1"`
}

// ChargeCustomer charges a customer through the CRM's payments account.
var ChargeCustomer = env.Tool(World, "charge_customer", "Charge a customer through the CRM's payment account.",
	func(c *env.Ctx, in ChargeCustomerArgs) (payments.Charge, error) {
		found, err := c.DB.One("SELECT id FROM customers WHERE id = ?", in.CustomerID)
		if err != nil {
			return payments.Charge{}, err
		}
		if found == nil {
			return payments.Charge{}, env.Errorf("no customer %q", in.CustomerID)
		}
		w := env.WorldsOf[Worlds](c)
		charge, err := env.Call(c.Context(), w.Payments, payments.CreateCharge, payments.ChargeArgs{Amount: in.Amount})
		if err != nil {
			return payments.Charge{}, err
		}
		_, err = c.DB.Exec("INSERT INTO customer_charges (customer_id, charge_id) VALUES (?, ?)", in.CustomerID, charge.ID)
		return charge, err
	})

// Session holds the CRM's startup keywords.
type Session struct {
	Principal string `json:"principal" default:"agent" doc:"Who the agent acts for."`
}

func init() {
	env.OnStartup(World, func(c *env.Ctx, k Session) error {
		c.State["principal"] = k.Principal
		return nil
	})
}

func init() {
	World.Use(handleErrors)
	World.Use(audit)
}

// handleErrors lets the product's own errors through and turns anything
// else (a constraint, a driver error) into one sentence an agent may see,
// keeping the cause for logs.
func handleErrors(c *env.Ctx, next func() (any, error)) (any, error) {
	out, err := next()
	var bug *env.WorldBug
	if _, ok := env.AsToolError(err); err == nil || ok || errors.As(err, &bug) {
		return out, err
	}
	return nil, &env.ToolError{Kind: env.KindExecution, Message: c.Call.Tool + " failed; nothing was changed", Err: err}
}

// audit records every successful call in the CRM's own store, with the node
// that owns the tool and who the agent acts for.
func audit(c *env.Ctx, next func() (any, error)) (any, error) {
	out, err := next()
	if err != nil {
		return nil, err
	}
	_, err = c.DB.Exec("INSERT INTO audit (tool, node, principal) VALUES (?, ?, ?)", c.Call.Tool, c.Call.Node, c.State["principal"])
	return out, err
}
