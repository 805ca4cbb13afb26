// Package calls reaches other worlds the wrong ways.
package calls

import (
	"example.com/checkmod/worlds/ledger"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
)

// World adds the ledger.
var World = env.NewWorld(env.WorldSpec{Name: "calls", Version: "1.0.0"})

func init() {
	World.AddWorld(ledger.World)
}

// Settle posts to the ledger, by a misspelt name, after making an instance.
var Settle = env.Tool(World, "settle", "Settle the books.",
	func(c *env.Ctx, _ struct{}) (any, error) {
		inst, err := composition.Open(c.Context(), ledger.World, composition.Options{})
		if err != nil {
			return nil, err
		}
		defer inst.Close()
		return c.Worlds.Get("ledgr").Call("post", nil)
	})
