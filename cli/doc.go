// Package cli is the seahaven command, importable: every subcommand (serve,
// fixtures, check, grade, new, bench, healthcheck, version) over the worlds
// it is given. A world author's whole main is one line,
//
//	func main() { cli.Run(library.World) }
//
// and cmd/seahaven is that line over the example worlds. [New] returns the
// program for calling a subcommand from Go, such as serving from inside a
// program of one's own:
//
//	err := cli.New(library.World).Run(ctx, []string{"serve", "--addr", ":8000"})
//
// The first world given is the default of --world; a world's
// env.WorldSpec.DefaultFixture is the fixture serve's resets start from,
// its Fixtures (or FixturesDir) what fixtures, grade and serve read, and its
// fixture generator (env.World.SetFixtureGenerator) what fixtures build
// runs. See docs/authoring.md, "Your own binary".
package cli
