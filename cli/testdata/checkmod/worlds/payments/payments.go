// Package payments is a world whose descriptions name its own tools.
package payments

import "github.com/seahaven/seahaven/env"

// World is the payments world.
var World = env.NewWorld(env.WorldSpec{
	Name: "payments", Version: "1.0.0",
	Schema: `CREATE TABLE charges (id TEXT PRIMARY KEY, amount INTEGER NOT NULL) STRICT;`,
})

// CreateCustomer creates a customer.
var CreateCustomer = env.Tool(World, "create_customer", "Create a customer.",
	func(c *env.Ctx, _ struct{}) (string, error) { return "c1", nil })

// CreateCharge charges a customer.
var CreateCharge = env.Tool(World, "create_charge", "Charge a customer; call create_customer first.",
	func(c *env.Ctx, _ struct{}) (string, error) { return "ch1", nil })
