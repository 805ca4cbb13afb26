// Command library serves, checks and manages the library world: every
// subcommand of seahaven, over this module's own world.
package main

import (
	"github.com/seahaven/seahaven/cli"

	"example.com/library"
)

func main() { cli.Run(library.World) }
