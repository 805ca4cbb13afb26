// Package stock embeds its fixtures and tasks; a task names a tool the
// world does not have, and its default fixture is none of its fixtures.
package stock

import (
	"embed"
	"io/fs"

	"github.com/seahaven/seahaven/env"
)

//go:embed fixtures
var fixtures embed.FS

// Fixtures is the world's fixtures directory, as a file system.
var Fixtures, _ = fs.Sub(fixtures, "fixtures")

// World is the stock world.
var World = env.NewWorld(env.WorldSpec{
	Name: "stock", Version: "1.0.0", Fixtures: Fixtures, DefaultFixture: "demo",
	Schema: `CREATE TABLE items (id TEXT PRIMARY KEY) STRICT;`,
})

// AddItem adds an item.
var AddItem = env.Tool(World, "add_item", "Add an item.", func(c *env.Ctx, _ struct{}) (string, error) { return "ok", nil })
