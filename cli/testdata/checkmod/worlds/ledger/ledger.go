// Package ledger is a world with one tool, added by the other worlds.
package ledger

import "github.com/seahaven/seahaven/env"

// World is the ledger world.
var World = env.NewWorld(env.WorldSpec{
	Name: "ledger", Version: "1.0.0",
	Schema: `CREATE TABLE entries (id TEXT PRIMARY KEY, amount INTEGER NOT NULL) STRICT;`,
})

// Post posts an entry.
var Post = env.Tool(World, "post", "Post an entry to the ledger.",
	func(c *env.Ctx, _ struct{}) (string, error) { return "posted", nil })
