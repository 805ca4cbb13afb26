// Package app is the application service behind the OpenEnv protocol
// adapter: a [Backend] serves one world through the composition engine and
// implements [openenv.Backend] and the optional interfaces openenv probes
// for (readiness, composition, pool and instance-directory figures). It
// seals the world, lists its fixtures and tasks, makes and locks the
// instance directories, records trajectories, grades task episodes, and
// bounds the engine work running at once (tool calls, and inspect queries
// with their share of the CPU).
//
// A program serves a world by wiring the two:
//
//	backend, err := app.New(world, app.Config{})
//	...
//	srv := openenv.NewServer(backend, openenv.Config{})
//	http.ListenAndServe(":8000", srv.Handler())
//
// openenv imports no package of the engine; the import check (make check)
// keeps it so.
package app
