// Package check holds the dynamic half of `seahaven check`: the lints that
// need a world's value rather than its source. [World] runs every one of
// them on a world, so a world's own test can call it:
//
//	func TestWorldChecksClean(t *testing.T) {
//		if fs := check.World(context.Background(), company.World); check.HasErrors(fs) {
//			t.Fatal(check.Format(fs))
//		}
//	}
//
// # Codes
//
// Every finding names a code; docs/lints.md has the rule, the reasoning and
// the fix for each. [Rules] lists them all, the static ones included.
//
//   - SH206 (warning): a prefixed tool's description names a sibling tool the
//     agent cannot call by that name.
//   - SH207 (warning): one tool of a shared node reaches the surface under two
//     names.
//   - SH208, SH209, SH210 (errors): static; see package check/analyzers.
//   - SH301 (error): a tracked table of a world of the tree has a primary
//     key the change log cannot key rows by exactly (see
//     composition.CheckKeys).
//   - SH302 (error): the schema of a world of the tree does not apply to an
//     empty store.
//   - SH303 (warning): the UntrackedTables of a world of the tree names a
//     table its schema does not create (a misspelt name leaves the table it
//     meant in the change log).
//   - SH401–SH405 (errors): a fixture of the world does not parse (SH401),
//     a node file's hash differs from the sidecar's (SH402), a node's schema
//     drifted from its world's (SH403), the sidecar's now is missing or not
//     an instant (SH404), a node file is missing or not a SQLite database
//     (SH405).
//   - SH406 (error): a fixture's nodes disagree with the world's composition,
//     in the sentence instance creation refuses with.
//   - SH407 (error): the world's tasks file does not load, or a task does
//     not fit the world (a tool not on the surface, a startup keyword no
//     hook accepts, a table pattern naming no node, a fixture the world
//     does not have, an id declared twice).
//   - SH408 (error): the world's DefaultFixture is not one of its fixtures,
//     so a server of the world refuses to start.
//   - SH409 (error): an instance cannot be made, as a reset makes it, from
//     a fixture SH401–SH406 find whole, or, for a world with no
//     DefaultFixture, from genesis: most often a startup hook fails on it.
//   - SH502 (error): a struct declared with env.DeclareWorlds names a child no
//     AddWorld registered.
//   - SH503 (warning): a registered child no declared struct names.
//   - SH504 (error): the composition does not seal.
//   - SH505 (error): a world's package panics when it is loaded, so its
//     worlds cannot be checked (a tool whose arguments have no schema);
//     reported by `seahaven check`, since a package that panics cannot run
//     World.
//
// # Positions
//
// A finding's Pos is "file:line:col". Registration findings point at the
// registration's line (AddWorld, DeclareWorlds, NewWorld), with column 1,
// since a world records lines only. Fixture findings point at the
// fixture's sidecar, at the line of the key at fault when it can be found.
// An embedded fixture's sidecar is named by the source file it was embedded
// from, found at or below the world's package directory, or else as
// "<world> embedded fixtures/<id>/fixture.yaml".
//
// # Concurrency
//
// World is safe for concurrent use; it reads a world's registrations and its
// fixtures and writes only temporary copies of node files and the instances
// it makes (SH409), which it removes, and the copy on disk of embedded
// fixtures the engine keeps for reuse (see composition.FixturesDir).
// Format, HasErrors and Sort are pure functions.
package check
