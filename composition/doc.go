// Package composition is Seahaven's engine: it seals a world's tree into
// nodes, canonical paths, aliases and an agent surface, and runs instances
// of it — one SQLite store per node in one instance directory, one clock,
// one change log, one read-only inspection view.
//
// A world that adds no others is a composition of exactly one node, path
// "main"; every mechanism here runs for it unchanged.
//
// # Calls and activations
//
// An instance runs one call at a time. An agent call (CallJSON, Call,
// CallDef) takes the instance's lock, waiting for it no longer than its
// context allows, and starts an activation; a nested call made from host
// code through a handle runs inside the same activation, on the child's own
// connection and transaction, without taking the lock again. So does a call
// made inside a Bulk block with the block's own context: re-entry is by that
// context's identity, never by a value a derived context inherits. Each node
// a call's route descends runs its middleware inside its own transaction
// frame; a failing frame rolls back only its own store (there is no
// cross-world atomicity).
//
// Within an activation, world code runs in turns: a startup hook, a Bulk
// block, one node's layer of a call, a nested call's layer. A Ctx's DB and
// Worlds, and the handles they make, belong to their turn, and are usable
// while their turn's code is the code running: not while it waits in a
// nested call or the next layer, not while another use of them is in
// progress, not after it returned. Go has no goroutine identity; this is
// the check a handle carried to another goroutine meets.
//
// # Re-sealing
//
// An instance re-seals its root's tree at its first Tools, call, Bulk or
// Freeze after any registration in the process (one integer compare
// otherwise). New tools appear; a tree that no longer seals, or whose nodes
// changed, fails those with a *env.WorldBug.
//
// # Connections and files
//
// Opening an ncruces connection costs 1.5–3 ms on the development machine
// (mostly page faults of its fresh memory) and holding one about 300 KiB of
// RSS outside the Go heap. An instance therefore opens a node's connection
// on first use and keeps it while it is busy, holding the file's lock
// (sqlitestore.Options.ExclusiveLock: a write transaction then costs about
// a third); the inspection view yields the locks before it reads. The
// instance's pool (DefaultPool unless Options.Pool) releases a node's
// connection once it has been unused for the pool's IdleAfter (two seconds
// by default), and the least recently used ones at once when more than
// MaxOpen are open; the inspection view closes its connection after the
// same idle delay. The next call reopens them transparently, so ten thousand
// idle instances hold no SQLite connection at all, while a busy instance
// pays nothing per call. Instance.Release drops an instance's connections at
// once.
//
// An instance started from a fixture writes a node's private copy of its
// frozen file when the node is first used (or inspected, or frozen), so a
// reset costs one directory and the files its episode touches.
// docs/scale.md has the measurements.
//
// # Concurrency
//
// Instance methods are safe for concurrent use and serialise on the
// instance's lock. Sealed values are immutable. Seal is safe for concurrent
// use.
package composition
