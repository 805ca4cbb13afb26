// Package broken has a composition that does not seal.
package broken

import (
	"example.com/checkmod/worlds/ledger"

	"github.com/seahaven/seahaven/env"
)

// World allows a tool the ledger does not have.
var World = env.NewWorld(env.WorldSpec{Name: "broken", Version: "1.0.0"})

func init() {
	World.AddWorld(ledger.World, env.ToolAllowList("pots"))
}
