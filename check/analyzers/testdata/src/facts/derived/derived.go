// Package derived makes worlds from other worlds.
package derived

import (
	"facts/company"

	"github.com/seahaven/seahaven/env"
)

// Copy is a clone: its name is known, its children are the original's at
// the moment of cloning, which the analyzer cannot know.
var Copy = company.World.Clone() // want Copy:"world company children unknown"

// Moved is a clone pointed at other fixtures.
var Moved = company.World.WithFixturesDir("/tmp") // want Moved:"world company children unknown"

// Alias is the same world under another variable.
var Alias = company.World // want Alias:"world company children unknown"

// Host adds the clone, which is named after its original.
var Host = env.NewWorld(env.WorldSpec{Name: "host", Version: "1"}) // want Host:"world host children \\[company chat\\]"

func init() {
	Host.AddWorld(Copy)
	Host.AddWorld(company.Chat)
}
