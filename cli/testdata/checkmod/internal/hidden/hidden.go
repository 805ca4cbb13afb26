// Package hidden declares a world the check program cannot import by name.
package hidden

import "github.com/seahaven/seahaven/env"

var world = env.NewWorld(env.WorldSpec{Name: "hidden", Version: "1.0.0"})

// Name returns the hidden world's name.
func Name() string { return world.Name() }
