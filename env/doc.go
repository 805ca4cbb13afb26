// Package env is the domain world authors import: World, Tool, Ctx, Handle,
// Worlds, Middleware, startup hooks, ToolError, WorldBug, and the records an
// eval reads (ChangeRecord, CompositionRecord, StateDoc). It imports only the
// standard library (and the project's argument-schema helper); engines live
// elsewhere.
//
// # Declaring a world
//
//	var Payments = env.NewWorld(env.WorldSpec{
//		Name: "payments", Version: "1.0.0",
//		Schema: `CREATE TABLE charges (id TEXT PRIMARY KEY, amount INTEGER NOT NULL) STRICT;`,
//	})
//
//	var CreateCharge = env.Tool(Payments, "create_charge", "Charge the account and return the charge.",
//		func(c *env.Ctx, in ChargeArgs) (Charge, error) { ... })
//
// There are four registration verbs: Tool, (*World).Use for middleware,
// OnStartup for startup hooks, and (*World).AddWorld to compose. Misuse
// visible at a registration line panics with a *WorldBug from that line, as
// regexp.MustCompile does; whole-tree problems are found when the tree is
// sealed and returned as errors wrapping a *WorldBug.
//
// # Tasks
//
// A world may also declare tasks: an instruction for an agent, the instance
// it starts from, an optional tool allow list and a grader made of checks
// (SQL assertions, change-log assertions, Go functions over an Inspector).
// (*World).AddTask registers one; package task loads, opens and grades
// them.
//
// # Concurrency
//
// Registration is safe for concurrent use but is expected to finish during
// package initialisation; every registration anywhere in the process
// invalidates sealed compositions (see Generation), which live instances
// follow at their next use. A Ctx, its DB and the handles it gives out
// belong to one call and must not be used from another goroutine or after
// the call returns; the engine refuses such a use with the StaleHandle
// WorldBug whenever it can tell. ToolDef and ToolRef are immutable.
package env
