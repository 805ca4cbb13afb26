// Package startup is a world whose startup hook fails on every instance,
// so every reset of a server of the world fails.
package startup

import (
	"errors"

	"github.com/seahaven/seahaven/env"
)

// World is the startup world.
var World = env.NewWorld(env.WorldSpec{
	Name: "startup", Version: "1.0.0",
	Schema: `CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;`,
})

func init() {
	env.OnStartupMap(World, nil, func(c *env.Ctx, kw map[string]any) error {
		return errors.New("no settings to start from")
	})
}
