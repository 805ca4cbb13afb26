// Package badschema is a world whose schema does not apply: a syntax error
// that nothing but a store notices.
package badschema

import "github.com/seahaven/seahaven/env"

// World is the badschema world.
var World = env.NewWorld(env.WorldSpec{
	Name: "badschema", Version: "1.0.0",
	Schema: `CREATE TABLE b (id TEXT PRIMARY KEY, x INTEGR NOT NULL,) STRICT;`,
})
