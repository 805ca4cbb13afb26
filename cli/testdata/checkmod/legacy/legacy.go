// Package legacy is a world whose table's key may hold NULL, which the change
// log cannot key rows by, and which leaves out a table it does not create.
package legacy

import "github.com/seahaven/seahaven/env"

// World is the legacy world.
var World = env.NewWorld(env.WorldSpec{
	Name: "legacy", Version: "1.0.0",
	Schema:          `CREATE TABLE codes (code TEXT PRIMARY KEY, label TEXT NOT NULL);`,
	UntrackedTables: []string{"log"},
})
