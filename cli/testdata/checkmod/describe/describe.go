// Package describe prefixes a world whose descriptions name its own tools.
package describe

import (
	"example.com/checkmod/worlds/payments"

	"github.com/seahaven/seahaven/env"
)

// World adds payments under a prefix.
var World = env.NewWorld(env.WorldSpec{Name: "describe", Version: "1.0.0"})

func init() {
	World.AddWorld(payments.World, env.ToolPrefix("pay_"))
}
