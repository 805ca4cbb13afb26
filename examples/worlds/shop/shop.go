// Package shop is the shop world of the examples: orders, charged through a
// payments account it hides from the agent.
package shop

import (
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/payments"
)

// World is the shop world.
var World = env.NewWorld(env.WorldSpec{
	Name:        "shop",
	Version:     "1.0.0",
	Description: "A shop: orders charged through its payments account.",
	Schema: `CREATE TABLE orders (
  id TEXT PRIMARY KEY,
  total INTEGER NOT NULL CHECK (total > 0),
  charge_id TEXT NOT NULL,
  placed_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
) STRICT;`,
})

func init() {
	// The shop charges through payments and hides it from the agent entirely.
	World.AddWorld(payments.World, env.ToolAllowList())
}

// OrderArgs are the arguments of place_order.
type OrderArgs struct {
	Total int64 `json:"total" doc:"Order total in cents." min:"1" max:"1000000000000"`
}

// Order is a placed order.
type Order struct {
	OrderID  string `json:"order_id"`
	ChargeID string `json:"charge_id"`
}

// PlaceOrder places an order and charges for it.
var PlaceOrder = env.Tool(World, "place_order", "Place an order and charge for it.",
	func(c *env.Ctx, in OrderArgs) (Order, error) {
		charge, err := env.Call(c.Context(), c.Worlds.Get("payments"), payments.CreateCharge, payments.ChargeArgs{Amount: in.Total})
		if err != nil {
			return Order{}, err
		}
		o := Order{OrderID: c.IDs.UUID(), ChargeID: charge.ID}
		_, err = c.DB.Exec("INSERT INTO orders (id, total, charge_id) VALUES (?, ?, ?)", o.OrderID, in.Total, o.ChargeID)
		return o, err
	})

// ListOrders lists the shop's orders.
var ListOrders = env.Tool(World, "list_orders", "List the shop's orders, oldest first.",
	func(c *env.Ctx, _ struct{}) ([]env.Row, error) {
		return c.DB.Rows("SELECT id, total, charge_id, placed_at FROM orders ORDER BY placed_at, id")
	})
