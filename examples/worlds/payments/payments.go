// Package payments is the payments world of the examples: one account of
// charges. Hosts add it, often more than once under different scopes.
package payments

import (
	"cmp"
	"fmt"

	"github.com/seahaven/seahaven/env"
)

// World is the payments world.
var World = env.NewWorld(env.WorldSpec{
	Name:        "payments",
	Version:     "1.0.0",
	Description: "A payment account: charges and refunds.",
	Schema: `CREATE TABLE charges (
  id TEXT PRIMARY KEY,
  amount INTEGER NOT NULL CHECK (amount > 0),
  refunded INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
) STRICT;`,
})

// Charge is one charge of the account.
type Charge struct {
	ID     string `json:"id"`
	Amount int64  `json:"amount"`
}

// ChargeArgs are the arguments of create_charge.
type ChargeArgs struct {
	Amount int64 `json:"amount" doc:"Amount in cents." min:"1" max:"1000000000000"`
}

// CreateCharge charges the account.
var CreateCharge = env.Tool(World, "create_charge", "Charge the account and return the charge.",
	func(c *env.Ctx, in ChargeArgs) (Charge, error) {
		ch := Charge{ID: c.IDs.UUID(), Amount: in.Amount}
		_, err := c.DB.Exec("INSERT INTO charges (id, amount) VALUES (?, ?)", ch.ID, ch.Amount)
		return ch, err
	})

// RefundArgs are the arguments of refund_charge.
type RefundArgs struct {
	ChargeID string `json:"charge_id" doc:"The id of the charge to refund." maxlen:"64"`
}

// Refund is the result of refund_charge.
type Refund struct {
	ChargeID string `json:"charge_id"`
	Refunded bool   `json:"refunded"`
}

// RefundCharge refunds a charge in full.
var RefundCharge = env.Tool(World, "refund_charge", "Refund a charge in full. The charge must exist and not be refunded yet.",
	func(c *env.Ctx, in RefundArgs) (Refund, error) {
		res, err := c.DB.Exec("UPDATE charges SET refunded = 1 WHERE id = ? AND refunded = 0", in.ChargeID)
		if err != nil {
			return Refund{}, err
		}
		if res.RowsAffected == 0 {
			return Refund{}, env.Errorf("no refundable charge %q", in.ChargeID)
		}
		return Refund{ChargeID: in.ChargeID, Refunded: true}, nil
	})

// ListArgs are the arguments of list_charges.
type ListArgs struct {
	Limit int `json:"limit,omitempty" doc:"At most this many charges, newest first (default 50)." min:"1" max:"500"`
}

// ListCharges lists the account's charges.
var ListCharges = env.Tool(World, "list_charges", "List the account's charges, newest first.",
	func(c *env.Ctx, in ListArgs) ([]env.Row, error) {
		return c.DB.Rows("SELECT id, amount, refunded, created_at FROM charges ORDER BY created_at DESC, id LIMIT ?", cmp.Or(in.Limit, 50))
	})

// Config is the account's configuration, set by a startup hook.
type Config struct {
	Region string `json:"region" default:"us" doc:"Where the account is." maxlen:"32"`
	Plan   string `json:"plan" default:"free" doc:"The account's plan." maxlen:"32"`
}

func init() {
	env.OnStartup(World, func(c *env.Ctx, k Config) error {
		if k.Region == "" {
			return fmt.Errorf("region must not be empty")
		}
		c.State["region"] = k.Region
		c.State["plan"] = k.Plan
		return nil
	})
}
