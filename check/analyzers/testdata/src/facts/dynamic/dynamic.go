// Package dynamic registers children the analyzer cannot see completely.
package dynamic

import (
	"facts/payments"

	"github.com/seahaven/seahaven/env"
)

// Late adds a child outside init.
var Late = env.NewWorld(env.WorldSpec{Name: "late", Version: "1"}) // want Late:"world late children unknown"

// Register adds a child when someone calls it.
func Register() { Late.AddWorld(payments.World) }

// Variable adds a child under a name held in a variable.
var Variable = env.NewWorld(env.WorldSpec{Name: "variable", Version: "1"}) // want Variable:"world variable children unknown"

var childName = "payments"

// Spread adds a child with options from a slice.
var Spread = env.NewWorld(env.WorldSpec{Name: "spread", Version: "1"}) // want Spread:"world spread children unknown"

var opts = []env.AddOption{env.Name("x")}

// Held adds a child with an option held in a variable.
var Held = env.NewWorld(env.WorldSpec{Name: "held", Version: "1"}) // want Held:"world held children unknown"

var named = env.Name("y")

// Reassigned is replaced in init.
var Reassigned = env.NewWorld(env.WorldSpec{Name: "reassigned", Version: "1"}) // want Reassigned:"world \\? children unknown"

func spec() env.WorldSpec { return env.WorldSpec{Name: "hidden"} }

// Hidden is declared from a spec the analyzer cannot read: its name is
// unknown, but it is a new world, so its children are known.
var Hidden = env.NewWorld(spec()) // want Hidden:"world \\? children \\[payments\\]"

func init() {
	Variable.AddWorld(payments.World, env.Name(childName))
	Spread.AddWorld(payments.World, opts...)
	Held.AddWorld(payments.World, named)
	Reassigned = env.NewWorld(env.WorldSpec{Name: "other", Version: "1"})
	Hidden.AddWorld(payments.World)
}
