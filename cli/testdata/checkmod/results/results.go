// Package results returns a struct tagged with an option json v2 ignores.
package results

import "github.com/seahaven/seahaven/env"

// World returns balances.
var World = env.NewWorld(env.WorldSpec{Name: "results", Version: "1.0.0"})

// Balance is what Balances returns: its Rest was meant to be embedded.
type Balance struct {
	Account string         `json:"account"`
	Rest    map[string]any `json:",inline"`
}

// Balances returns the balances.
var Balances = env.Tool(World, "balances", "List the balances.",
	func(c *env.Ctx, _ struct{}) ([]Balance, error) { return nil, nil })
