// Package sqlitestore holds one node's state in an SQLite file: the store a
// world's tools read and write, the change capture behind an instance's change
// log, and the read-only inspection connection an eval queries across every
// node. It is the only package of the project that talks to SQLite (through
// the low-level API of github.com/ncruces/go-sqlite3).
//
// # What a store adds to SQLite
//
// Every connection a [Store] opens is set up the same way:
//
//   - journal_mode=MEMORY and synchronous=OFF: instance stores are
//     disposable copies, so nothing is fsynced and the rollback journal stays
//     in memory, while ROLLBACK and ROLLBACK TO still work. Freezing writes a
//     real, fsynced file with [Store.VacuumInto]. With Options.ExclusiveLock
//     (instances use it) the connection also holds its file's lock while it
//     is open; [Store.Yield] lets an [Inspector] read the file.
//   - foreign_keys=ON (set explicitly), FTS5, R*Tree and Geopoly registered
//     (on every connection, inspections too), a small page cache
//     ([CacheSizeKiB]), strings and blobs capped at [MaxLength], a memory cap
//     ([DefaultMaxMemory] or Options.MaxMemory) and a busy timeout.
//   - random() and randomblob(N) draw from a PCG stream seeded by
//     Options.Seed, so DEFAULT (randomblob(8)) replays byte for byte. The
//     stream lives in the Store and continues across reopens.
//   - Every date and time function (date, time, datetime, julianday,
//     unixepoch, strftime, timediff, and CURRENT_TIMESTAMP, CURRENT_DATE,
//     CURRENT_TIME) reads Options.Clock for 'now', including in schema
//     DEFAULTs; 'localtime' is UTC. The overrides delegate to SQLite's own
//     functions on a few helper connections shared by the whole process.
//   - Prepared statements are cached per connection, keyed by SQL text.
//   - Each statement runs with its context installed as the connection's
//     interrupt: a done context stops a runaway query with an error wrapping
//     ctx.Err() and context.Cause(ctx), and the store stays usable. SQLite's
//     out-of-memory panics are recovered and returned as errors wrapping
//     [ErrOutOfMemory].
//   - SQLite's errors keep SQLite's message ("sqlitestore: UNIQUE constraint
//     failed: charges.id") and wrap the driver's error; see [Error]. The
//     driver reports a write that fails for want of space as a bare "disk I/O
//     error"; the store's error says the disk is full (wrapping
//     syscall.ENOSPC) when the file system is still out of space, and that
//     the disk may be full when the rollback has given the space back.
//   - An error that reports a failure of the store's files rather than of a
//     statement (an I/O error, a full disk, a file that cannot be opened or
//     is gone, a corrupt file) wraps [ErrStorage], so callers can tell a
//     failing host from failing SQL.
//
// # Transactions and change capture
//
// [Store.Begin] opens a [Frame]: BEGIN IMMEDIATE at the outermost level, a
// savepoint inside. The frames own the transaction: Exec, Query and
// ExecScript refuse BEGIN, COMMIT, END and ROLLBACK ([ErrTransactionControl]),
// and once SQLite rolls a frame's transaction back on its own
// (RAISE(ROLLBACK), an OR ROLLBACK conflict, an interrupted write) they
// refuse every statement ([ErrRolledBack]) until the frames end, rather than
// run it in autocommit. A RELEASE or ROLLBACK TO may name only a savepoint
// opened in the innermost frame since it, or the last frame inside it,
// began ([ErrSavepointScope]), so no statement undoes or merges a frame's
// work from outside it. ATTACH and DETACH are refused ([ErrAttach]): a
// store's statements reach its own file only. So is a VACUUM while a
// capture runs ([ErrVacuum]): it may renumber the rowids that key rows.
// [Store.StartCapture] and [Capture.Finish] bracket a call
// and return its net row changes, one insert, update or delete per row,
// sorted by table and key. Capture uses SQLite's preupdate hook for the first
// before-image of each touched row and reads the rows' current images at the
// end, so it is exact under ROLLBACK TO, REPLACE, foreign-key cascades,
// trigger writes, UPSERT, STRICT and WITHOUT ROWID tables, schema changes
// inside the call, and a DELETE without WHERE however its statement was
// prepared (the store's authorizer turns SQLite's truncate optimisation,
// which fires no preupdate hook, off). A DROP TABLE and a CREATE TABLE ...
// AS SELECT move rows with no preupdate event either: the store reads the
// table's rows before the one and after the other, so they are reported
// deleted and inserted. A DROP COLUMN erases the column's values with no
// event, and a rollback undoing it brings them back: run through Exec or
// ExecScript, it has the store read the table's rows first, so a row first
// touched after a drop that a rollback undid is reported as it was, a
// column added again under the dropped one's name too; run on the raw
// connection ([Store.Conn]), it fails the capture then. An ALTER TABLE
// that renames a table, or a column of one, whose rows a running capture
// holds is refused as it is prepared, before it changes anything: the
// capture reports rows by table and column name. So is one renaming a
// table the raw connection created while it ran, whose rows it reads by
// the table's name when it finishes. Temporary
// tables, FTS5 and R*Tree shadow tables, tables in Options.Untracked and
// VIRTUAL generated columns are left out. A row written
// twice yields one net change; a row changed and changed back yields none.
// Rows are keyed by primary key (by rowid without one); a table whose key
// cannot tell its rows apart exactly ([KeyProblems]: a key that may hold
// NULL, has no type affinity or a collation other than BINARY, or a rowid
// with no free name) fails the capture that touches it.
//
// # Connection lifecycle
//
// A store's connection opens lazily, on the first operation. [Store.Release]
// closes it when the store is neither pinned ([Store.Pin]) nor in a
// transaction, and the next operation reopens it transparently with the same
// settings, functions and random stream (temporary tables and PRAGMAs set
// through Exec belong to the connection and are lost). A [Pool] shared by many
// stores releases a store once it has been unpinned and unused for
// IdleAfter ([DefaultIdleAfter]), from a sweeper goroutine that runs only
// while some connection is open, and keeps at most MaxOpen connections open
// by releasing the least recently used idle stores. [OpenConnections]
// counts the connections open in the process.
//
// Stores opened with Options.ShareKey (private copies of one frozen file)
// do not close a released connection: it is parked in the Pool, unbound from
// the file, and the next store of the same key rebinds it to its own file
// with its page cache dropped, which costs about 50 µs instead of an open.
// The rules that keep this invisible (what is reset, what makes a
// connection close instead) are in park.go and in docs/scale.md. Such a
// connection, once it has made 64 reads and writes in one binding, maps its
// file and reads and writes it by copying memory (filemap_linux.go); the
// mapping shares the page cache with every other reader of the file, and is
// dropped when the connection is parked.
//
// What a store costs (its memory, an open against a rebind, a write call,
// a date function) and why an open costs about 1 ms are measured in
// docs/scale.md; the benchmarks in bench_test.go and, for an open against
// a rebind, park_test.go reproduce the timings.
//
// # Concurrency
//
// A [Store] is used by one goroutine at a time; its methods are serialized by
// a mutex so that its [Pool] can release it from another goroutine while it is
// idle. [Frame] and [Capture] values belong to their store's goroutine.
// [Inspector] and [Pool] are safe for concurrent use. A connection belongs
// to one store at a time (a parked one to none), and each connection is an
// independent SQLite instance, so different stores run in parallel.
package sqlitestore
