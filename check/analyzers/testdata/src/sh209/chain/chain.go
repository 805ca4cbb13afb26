// Package chain has a world with no children at all.
package chain

import "github.com/seahaven/seahaven/env"

var World = env.NewWorld(env.WorldSpec{Name: "solo", Version: "1"})

var Lonely = env.Tool(World, "lonely", "Has no children.", func(c *env.Ctx, _ struct{}) (any, error) {
	return c.Worlds.Get("friend").Call("hello", nil) // want `c.Worlds.Get\("friend"\) names no registered child of solo \(it adds no worlds\)`
})
