// Package declared declares its child names and gets them wrong.
package declared

import (
	"example.com/checkmod/worlds/ledger"

	"github.com/seahaven/seahaven/env"
)

// World adds the ledger twice.
var World = env.NewWorld(env.WorldSpec{Name: "declared", Version: "1.0.0"})

// Worlds names a child that is not registered and forgets one that is.
type Worlds struct {
	Ledger  *env.Handle
	Billing *env.Handle
}

func init() {
	World.AddWorld(ledger.World)
	World.AddWorld(ledger.World, env.Name("archive"), env.Store("archive"), env.ToolAllowList())
	env.DeclareWorlds[Worlds](World)
}
