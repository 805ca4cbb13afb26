// Package brokenhost adds a world whose composition does not seal, so its
// own does not either: the finding is printed once.
package brokenhost

import (
	"example.com/checkmod/broken"

	"github.com/seahaven/seahaven/env"
)

// World adds the broken world.
var World = env.NewWorld(env.WorldSpec{Name: "brokenhost", Version: "1.0.0"})

func init() {
	World.AddWorld(broken.World, env.ToolPrefix("b_"))
}
