// Package panics registers a tool whose arguments have no schema: env.Tool
// panics when the package is loaded (SH505), and the other packages'
// worlds are checked all the same.
package panics

import "github.com/seahaven/seahaven/env"

var World = env.NewWorld(env.WorldSpec{Name: "panics", Version: "1.0.0", Schema: `CREATE TABLE p (id TEXT PRIMARY KEY) STRICT;`})

// PlotArgs are the arguments of plot: a complex128 has no JSON schema.
type PlotArgs struct {
	Z complex128 `json:"z"`
}

var Plot = env.Tool(World, "plot", "Plot a point.", func(c *env.Ctx, in PlotArgs) (string, error) { return "", nil })
