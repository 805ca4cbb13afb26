// Package shared reaches one ledger node by two routes.
package shared

import (
	"example.com/checkmod/worlds/ledger"

	"github.com/seahaven/seahaven/env"
)

// Mirror adds the ledger and contributes its tool.
var Mirror = env.NewWorld(env.WorldSpec{Name: "mirror", Version: "1.0.0"})

// World adds the ledger directly and through the mirror.
var World = env.NewWorld(env.WorldSpec{Name: "shared", Version: "1.0.0"})

func init() {
	Mirror.AddWorld(ledger.World)
	World.AddWorld(ledger.World, env.ToolPrefix("a_"))
	World.AddWorld(Mirror, env.ToolPrefix("b_"))
}
