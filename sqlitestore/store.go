package sqlitestore

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ncruces/go-sqlite3"
)

// Options configures a Store.
type Options struct {
	// Path is the absolute path of the node's store file.
	Path string
	// Seed seeds this store's SQL random() and randomblob() stream.
	Seed uint64
	// RandomState, when set, is where that stream stands instead, as
	// RandomState returned it from another store: a checkpoint's.
	RandomState []byte
	// Clock is the instance clock every SQL date and time function reads for
	// 'now'; nil means time.Now.
	Clock func() time.Time
	// Untracked lists tables excluded from change capture, named in any
	// case of their ASCII letters (as SQLite names tables).
	Untracked []string
	// Pool, when set, caps the open connections of every store sharing it.
	Pool *Pool
	// MaxMemory caps the memory of the store's connection in bytes;
	// zero means DefaultMaxMemory.
	MaxMemory int64
	// Lazy makes Open only check that the file exists: the connection is
	// opened (and the file read) on first use. Use it for files already
	// verified, such as private copies of a hashed fixture.
	Lazy bool
	// Data, with Lazy, is the file's initial content: Open does not look for
	// the file, and the store writes Data to Path (a new file) on its first
	// use or on Materialize. Use it for private copies of a verified fixture
	// file that an instance may never touch. The store keeps Data until it
	// has written it and never modifies it.
	Data []byte
	// ExclusiveLock makes the store's connection hold its file's lock for as
	// long as it is open (SQLite's exclusive locking mode): write
	// transactions then cost about a third, but another connection (an
	// Inspector) can read the file only after Yield or Release.
	ExclusiveLock bool
	// ShareKey, with Pool and Data, names Data's content (a hash of it):
	// stores with the same ShareKey start from the same bytes, so their
	// files have the same schema until one of them changes it. When such a
	// store's connection is released or the store closes, the connection is
	// parked in the Pool instead of closed, and the next store of the same
	// key that needs a connection rebinds a parked one to its own file,
	// which costs a small fraction of opening one. A store whose schema
	// changed (any DDL), or whose connection was given PRAGMAs, temporary
	// objects, attached databases or raw use (Conn), never parks that
	// connection; after DDL it opens its own connections from then on.
	// Parking needs Linux; elsewhere ShareKey is ignored.
	ShareKey string
}

// Result reports what an Exec statement changed.
type Result struct {
	// RowsAffected counts the rows the statement itself inserted, updated or
	// deleted (not those changed by triggers or foreign-key actions); zero
	// for statements that change no rows.
	RowsAffected int64
	// LastInsertID is the connection's last inserted rowid.
	LastInsertID int64
}

// Rows is the result of a query: every row, or the rows read before a
// ReadLimit stopped reading.
type Rows struct {
	// Columns are the result column names.
	Columns []string
	// Values holds one slice per row; each value is nil, int64, float64,
	// string or []byte.
	Values [][]any
	// Truncated names the limit that stopped reading before the last row,
	// TruncatedRows or TruncatedBytes; "" when every row was read.
	Truncated string
}

// Values of Rows.Truncated.
const (
	// TruncatedRows: the query has more rows than ReadLimit.MaxRows.
	TruncatedRows = "rows"
	// TruncatedBytes: the next row would take the rows read past
	// ReadLimit.MaxBytes.
	TruncatedBytes = "bytes"
)

// ReadLimit bounds what one query reads into memory. A zero field sets no
// bound.
type ReadLimit struct {
	// MaxRows is the most rows read.
	MaxRows int
	// MaxBytes bounds the size of the rows read, counted as RowSize counts
	// it. A row that would take the total past it is not read, nor any
	// after it.
	MaxBytes int64
	// Pacer, when set, paces the query: it pauses while the queries
	// sharing the Pacer have together used up their share of the CPU.
	// Only Inspector.QueryLimit paces.
	Pacer *Pacer
}

// Maps returns each row as column name -> value. When two columns share a
// name, the later one wins.
func (r *Rows) Maps() []map[string]any {
	out := make([]map[string]any, len(r.Values))
	for i, row := range r.Values {
		out[i] = rowMap(r.Columns, row)
	}
	return out
}

// Store is one node's SQLite store file and its connection.
//
// The connection is opened lazily and may be closed (or, with
// Options.ShareKey, parked) by Release or by a Pool while the store is idle;
// the next operation reopens it transparently, with the same settings, SQL
// functions and seeded random stream. Temporary tables and PRAGMAs set
// through Exec belong to the connection and do not survive a reopen.
//
// A Store is not safe for concurrent use: use it from one goroutine at a time
// (its methods are serialized by a mutex, but transactions and captures belong
// to the store, not to a goroutine). The exception is its Pool, which may
// release it from another goroutine while it is neither pinned nor in a
// transaction.
type Store struct {
	path      string
	clock     func() time.Time
	untracked map[string]bool
	maxMemory int64
	exclusive bool
	pool      *Pool
	pins      atomic.Int32

	mu     sync.Mutex // guards cn, closed, data, rng, frames, captures, undo, written and meta
	cn     *conn      // nil while released
	closed bool
	data   []byte // the file's content while it is not written yet (Options.Data)
	rng    *rand.PCG
	frames []*Frame
	// rawCommit is set when a COMMIT or END on the raw connection rolled
	// the frames' transaction back, so that their Commit says why.
	rawCommit bool
	captures  []*Capture
	undo      uint64 // moves whenever rows may have changed without a preupdate event
	written   int64  // pages written by the connections closed so far and harvested from the open one (see Written)
	// meta and metaVersion keep the capture metadata of the last connection
	// and the schema cookie it was loaded at, so a reopened connection skips
	// reloading it while the schema is unchanged.
	meta        map[string]*tableMeta
	metaVersion int64

	// shelf is the pool shelf the store's connections park on and are
	// taken from ("" when the store does not share); baseCookie is the
	// schema cookie of the store's initial content; private is set once
	// the store's file may no longer match its shelf.
	shelf      string
	baseCookie int64
	private    bool
	// shareKey is Options.ShareKey when the store starts from Data in a
	// pool; the store then takes the capture metadata of its initial
	// schema from the pool (see Pool.sharedMeta).
	shareKey string

	poolElem *list.Element // guarded by pool.mu
	lastUse  time.Time     // guarded by pool.mu: the last operation or Unpin
}

// Create makes a new store file at opts.Path and applies schema to it in one
// transaction (genesis). It fails with an error wrapping fs.ErrExist when the
// file exists; when the schema fails, the error names the failing statement
// and no file is left behind.
func Create(ctx context.Context, schema string, opts Options) (*Store, error) {
	s, err := newStore(opts)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, &opError{"create", s.path, err}
	}
	if err := f.Close(); err != nil {
		os.Remove(s.path)
		return nil, &opError{"create", s.path, err}
	}
	err = s.do(ctx, true, func(cn *conn) error {
		if _, err := cn.exec("BEGIN IMMEDIATE", nil); err != nil {
			return err
		}
		if err := cn.script(schema, nil, nil, nil); err != nil {
			return err
		}
		_, err := cn.exec("COMMIT", nil)
		return err
	})
	if err != nil {
		s.Close()
		os.Remove(s.path)
		return nil, err
	}
	return s, nil
}

// Open opens an existing store file, typically a private copy of a frozen
// fixture file. It fails with an error wrapping fs.ErrNotExist when the file
// is missing, and with SQLite's "file is not a database" when it is not one.
func Open(ctx context.Context, opts Options) (*Store, error) {
	s, err := newStore(opts)
	if err != nil {
		return nil, err
	}
	if opts.Lazy && opts.Data != nil {
		s.data = opts.Data
		return s, nil
	}
	if _, err := os.Stat(s.path); err != nil {
		return nil, &opError{"open", s.path, err}
	}
	if opts.Lazy {
		return s, nil
	}
	if err := s.do(ctx, true, func(*conn) error { return nil }); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func newStore(opts Options) (*Store, error) {
	if !filepath.IsAbs(opts.Path) {
		return nil, fmt.Errorf("sqlitestore: Options.Path must be an absolute path, got %q", opts.Path)
	}
	s := &Store{
		path:      filepath.Clean(opts.Path),
		clock:     opts.Clock,
		maxMemory: opts.MaxMemory,
		exclusive: opts.ExclusiveLock,
		pool:      opts.Pool,
		untracked: make(map[string]bool, len(opts.Untracked)),
	}
	s.rng = newRandom(opts.Seed)
	if opts.RandomState != nil {
		if err := s.rng.UnmarshalBinary(opts.RandomState); err != nil {
			return nil, fmt.Errorf("sqlitestore: Options.RandomState: %w", err)
		}
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	for _, t := range opts.Untracked {
		s.untracked[foldASCII(t)] = true
	}
	if opts.ShareKey != "" && opts.Pool != nil && len(opts.Data) >= 100 {
		s.baseCookie = headerCookie(opts.Data[cookieOffset:])
		s.shareKey = opts.ShareKey
		if rebindSupported {
			s.shelf = fmt.Sprintf("%s\x00%d", opts.ShareKey, opts.MaxMemory)
		}
	}
	return s, nil
}

// opError names the file an operation failed on.
type opError struct {
	op, path string
	err      error
}

func (e *opError) Error() string {
	return "sqlitestore: " + e.op + " " + e.path + ": " + strings.TrimPrefix(e.err.Error(), "sqlitestore: ")
}

// Unwrap returns the cause and, when the file system failed the operation
// (the cause is an *fs.PathError), ErrStorage.
func (e *opError) Unwrap() []error {
	if _, ok := errors.AsType[*fs.PathError](e.err); ok {
		return []error{e.err, ErrStorage}
	}
	return []error{e.err}
}

// Path returns the store file's path. The file of a store opened with
// Options.Data exists once the store has been used or materialized.
func (s *Store) Path() string { return s.path }

// Materialize writes the file of a store opened with Options.Data and not
// used yet, so that another connection (an Inspector) can read it. It does
// nothing for any other store.
func (s *Store) Materialize() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return s.materializeLocked()
}

// materializeLocked writes the initial content of a store opened with
// Options.Data to a new file, once.
func (s *Store) materializeLocked() error {
	if s.data == nil {
		return nil
	}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return &opError{"create", s.path, err}
	}
	_, err = f.Write(s.data)
	if err = cmp.Or(err, f.Close()); err != nil {
		os.Remove(s.path)
		return &opError{"create", s.path, err}
	}
	s.data = nil
	return nil
}

// Exec runs one statement with args bound by position. Arguments may be nil,
// bool, any int or uint kind, float32/64, string, []byte, time.Time (stored
// as RFC 3339 text in UTC), json.RawMessage (stored as text), named types of
// those kinds, or pointers to them. A done ctx interrupts the statement with an
// error wrapping ctx.Err(); the store stays usable.
//
// The store's transactions are its frames (Begin): a statement that would
// begin, commit or roll back a transaction (BEGIN, COMMIT, END, ROLLBACK, a
// SAVEPOINT outside a transaction, or a savepoint statement naming a frame's
// savepoint) fails with an error wrapping ErrTransactionControl and does
// nothing; SAVEPOINT, RELEASE and ROLLBACK TO inside a frame are allowed,
// but a RELEASE or ROLLBACK TO naming a savepoint opened before the
// innermost frame began, or before the last frame that began inside it,
// fails with an error wrapping ErrSavepointScope. While a frame is open
// whose transaction SQLite rolled back on its own, every statement fails
// with an error wrapping ErrRolledBack. An ATTACH or DETACH fails with an
// error wrapping ErrAttach and does nothing: the store's connection reaches
// its own file only. While a capture runs, a VACUUM of the store's file
// fails with an error wrapping ErrVacuum and does nothing. A PRAGMA setting
// journal_mode, writable_schema or schema_version fails with an error
// wrapping ErrPragma and does nothing. While a capture holds rows of a
// table, an ALTER TABLE renaming it, or one of its columns, fails with an
// error naming the table and does nothing (see Capture).
func (s *Store) Exec(ctx context.Context, sql string, args ...any) (Result, error) {
	return statement(s, ctx, sql, func(cn *conn) (Result, error) { return cn.exec(sql, args) })
}

// Query runs one statement with args (as Exec, with its refusals) and reads
// every row.
func (s *Store) Query(ctx context.Context, sql string, args ...any) (*Rows, error) {
	return statement(s, ctx, sql, func(cn *conn) (*Rows, error) { return cn.query(sql, args) })
}

// statement runs sql through run with Exec's refusals.
func statement[T any](s *Store, ctx context.Context, sql string, run func(*conn) (T, error)) (T, error) {
	var out T
	err := s.do(ctx, true, func(cn *conn) error {
		if err := s.refreshMetaLocked(cn); err != nil {
			return err
		}
		if len(s.captures) > 0 && isDropOrAlter(sql) {
			// A DROP TABLE IF EXISTS prepared while its table did not
			// exist was authorized as nothing: prepare it against the
			// schema it runs on, so dropRowsLocked knows its table. An
			// ALTER TABLE renaming a table the captures hold rows of is
			// refused as it is prepared (renameRefusalLocked): here, not
			// as SQLite prepares it again while it steps, where the
			// refusal would be a bare "not authorized".
			cn.forget(sql)
		}
		_, info, err := cn.prepare(sql)
		switch {
		case errors.Is(err, errManyStatements):
			err = fmt.Errorf("%w; use ExecScript", err)
		case err == nil:
			err = s.allowLocked(cn, sql, info)
		}
		if err != nil {
			return err
		}
		existed, err := s.dropRowsLocked(cn, info)
		if err != nil {
			return err
		}
		auto := cn.c.GetAutocommit()
		if auto {
			s.harvestWritesLocked()
		}
		if out, err = run(cn); err != nil {
			if auto && cn.c.GetAutocommit() {
				s.dropWritesLocked() // the statement's own transaction rolled back
			}
			return err
		}
		return s.afterLocked(cn, info, existed)
	})
	return out, err
}

// afterLocked does what a statement of Exec, Query or ExecScript that ran
// leaves to do: note the savepoint it opened, reload the capture metadata
// it left stale, and note the rows it created, and the values of the
// columns it dropped, for the running captures.
// Reloaded now, not before the next statement, the metadata knows a table
// the statement dropped (or whose creation a ROLLBACK TO undid) gone when
// the raw connection creates another, which SQLite may give the gone
// table's root page: when an ALTER TABLE ran in the transaction, the next
// reload would take the new table for the gone one renamed (see
// tableMeta.renamedTo and Store.loadMetaLocked).
func (s *Store) afterLocked(cn *conn, info stmtInfo, existed bool) error {
	s.noteSavepointLocked(info)
	if err := s.refreshMetaLocked(cn); err != nil {
		return err
	}
	s.keepDroppedLocked(cn)
	return s.createdRowsLocked(cn, info, existed)
}

// ExecScript runs several statements, without arguments, in order, with
// Exec's refusals. It stops at the first failure; the error names the
// failing statement.
func (s *Store) ExecScript(ctx context.Context, sql string) error {
	return s.do(ctx, true, func(cn *conn) error {
		var existed bool
		return cn.script(sql, func() error { return s.refreshMetaLocked(cn) }, func(text string, info stmtInfo) (err error) {
			if err := s.allowLocked(cn, text, info); err != nil {
				return err
			}
			existed, err = s.dropRowsLocked(cn, info)
			return err
		}, func(info stmtInfo) error {
			return s.afterLocked(cn, info, existed)
		})
	})
}

// InTransaction reports whether the store's connection is inside a
// transaction.
func (s *Store) InTransaction() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inTxnLocked()
}

// InUnownedTransaction reports whether the store's connection is inside a
// transaction no frame owns: one a BEGIN or SAVEPOINT on the raw
// connection (see Conn) began outside any frame.
func (s *Store) InUnownedTransaction() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.frames) == 0 && s.inTxnLocked()
}

// CommitUnowned commits the transaction no frame owns, if there is one
// (see InUnownedTransaction), and reports whether there was. When the
// COMMIT fails (a deferred foreign key), the transaction is rolled back
// and the error returned.
func (s *Store) CommitUnowned() (bool, error) {
	var open bool
	err := s.do(context.Background(), false, func(cn *conn) error {
		if cn == nil || len(s.frames) > 0 || cn.c.GetAutocommit() {
			return nil
		}
		open = true
		_, err := cn.exec("COMMIT", nil)
		if err != nil {
			s.dropWritesLocked()
			cn.rollbackOpen()
		}
		s.harvestWritesLocked()
		return err
	})
	return open, err
}

// Written returns how many pages the store's connections have written to
// its file: a number that moves when a transaction that changed the file
// commits (a statement that autocommits, a raw connection's included),
// whatever it wrote (a tracked table or not, rows or the schema), and that
// a transaction rolled back, a commit that failed, a statement of Exec or
// Query that failed and a read leave as they were. (A transaction larger
// than the page cache writes pages before it ends, and one that wrote rows
// back as they were writes their pages: such ones move it too.)
func (s *Store) Written() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.harvestWritesLocked()
	return s.written
}

// harvestWritesLocked adds the pages the open connection has written since
// the last harvest to s.written, unless a transaction is open: its pages
// count once it commits, and not when it rolls back (dropWritesLocked).
// Without a statement of the store's since the last harvest, and no raw
// use of the connection, there is nothing to add, and SQLite is not asked.
func (s *Store) harvestWritesLocked() {
	if s.cn != nil && (s.cn.unharvested || s.cn.exposed) && s.cn.c.GetAutocommit() {
		n, _, _ := s.cn.c.Status(sqlite3.DBSTATUS_CACHE_WRITE, true)
		s.written += n
		s.cn.unharvested = false
	}
}

// dropWritesLocked forgets the pages the open connection has written since
// the last harvest: those of a transaction rolled back, or whose commit
// failed.
func (s *Store) dropWritesLocked() {
	if s.cn != nil {
		s.cn.c.Status(sqlite3.DBSTATUS_CACHE_WRITE, true)
		s.cn.unharvested = false
	}
}

// IsOpen reports whether the store currently holds an open connection.
func (s *Store) IsOpen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cn != nil
}

// Pin marks the store as in use by a call: a Pool never releases a pinned
// store. Pins nest; each Pin needs one Unpin.
func (s *Store) Pin() { s.pins.Add(1) }

// Unpin undoes one Pin. It panics when the store is not pinned.
func (s *Store) Unpin() {
	if s.pins.Add(-1) < 0 {
		panic("sqlitestore: Unpin of a store that is not pinned")
	}
	if s.pool != nil {
		s.pool.touch(s) // the idle time counts from the end of the call
		s.pool.settle()
	}
}

// Release closes the store's connection to save memory when the store is
// neither pinned nor in a transaction (nor holds a frame whose transaction
// SQLite rolled back on its own); otherwise it does nothing. The next
// operation reopens the connection transparently. Release is also what a
// Pool calls.
func (s *Store) Release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.pins.Load() > 0 || s.holdsTxnLocked() {
		return nil
	}
	return guard(s.closeConnLocked)
}

// Yield lets other connections read the file of a store opened with
// ExclusiveLock, which holds its file's lock for as long as its connection
// is open, so that an Inspector reading the file would wait for it. Yield
// drops the lock and keeps the connection; the store's next operation takes
// the lock again. It does nothing for a store without ExclusiveLock, a
// released or closed one, one whose connection is not in exclusive mode yet
// (a parkable connection before its second write transaction, which holds
// no lock between transactions), and one in a transaction (whose writes are
// not committed yet).
func (s *Store) Yield() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.cn == nil || !s.cn.exclusive || s.inTxnLocked() {
		return nil
	}
	return guard(func() error {
		// The lock goes on the first access in normal locking mode. The
		// three statements run in one Exec: with the last PRAGMA in an Exec
		// of its own, the file was still locked after Yield
		// (TestStore_ExclusiveLock).
		return formatError(context.Background(), s.cn.c.Exec("PRAGMA locking_mode=NORMAL; SELECT 1 FROM main.sqlite_schema LIMIT 1; PRAGMA locking_mode=EXCLUSIVE;"))
	})
}

// releaseIdle is the Pool's Release: it gives up at once when the store is in
// use by its own goroutine. A non-zero cutoff also spares a store used after
// it.
func (s *Store) releaseIdle(cutoff time.Time) bool {
	if !s.mu.TryLock() {
		return false
	}
	defer s.mu.Unlock()
	if s.closed || s.cn == nil || s.pins.Load() > 0 || s.holdsTxnLocked() {
		return false
	}
	if !cutoff.IsZero() {
		s.pool.mu.Lock()
		recent := s.lastUse.After(cutoff)
		s.pool.mu.Unlock()
		if recent {
			return false
		}
	}
	guard(s.closeConnLocked)
	return true
}

// Conn returns the store's raw SQLite connection, opened if needed, as an
// escape hatch for world authors. It stays valid while the store is pinned or
// in a transaction; once the store is released or closed it is closed. Do not
// replace its authorizer or preupdate hook, which the store uses. Exec's
// refusals do not apply to it: what it runs is the caller's own, and a
// write to a database it attaches is in no change log. A DROP TABLE and a
// CREATE TABLE ... AS SELECT move rows with no preupdate event: a DROP
// TABLE of a captured table prepared on it fails the running captures, and
// the rows of a table a CREATE TABLE on it created are read as inserted
// when each capture finishes. A COMMIT or END on it while frames are open
// rolls the transaction back (the frames then end with ErrRolledBack), and
// while frames are open its savepoint statements are held to the
// innermost frame's scope as Exec's are (ErrSavepointScope), refused by
// the authorizer. So is an ALTER TABLE on it that Exec refuses as renaming
// a table a running capture holds rows of (one created on it while the
// capture ran among them), or one of its columns (see Capture), and a
// PRAGMA setting what Exec refuses to (ErrPragma): it would stay set for
// the store's later frames.
func (s *Store) Conn(ctx context.Context) (*sqlite3.Conn, error) {
	var c *sqlite3.Conn
	err := s.do(ctx, true, func(cn *conn) error {
		// Changes on the raw connection are keyed by the metadata loaded
		// now for as long as it holds (see Capture.replay).
		if err := s.refreshMetaLocked(cn); err != nil {
			return err
		}
		for _, c := range s.captures {
			if err := s.trackTablesLocked(cn, c); err != nil {
				return err
			}
		}
		// What runs on the raw connection is out of sight: captures read
		// their rows back from now on.
		cn.exposed = true
		s.undo++
		// A COMMIT (or END) on the raw connection while frames are open
		// would commit their work behind their owners' backs: kept in the
		// file whether the call then fails or not, and in no change log.
		// SQLite rolls the transaction back instead, as it does for a
		// RAISE(ROLLBACK), and the frames end lost (ErrRolledBack). An
		// exposed connection is never parked, so it stays this store's.
		cn.c.CommitHook(func() bool {
			if cn.own || len(s.frames) == 0 {
				return true
			}
			cn.noteUndo()
			s.rawCommit = true
			return false
		})
		c = cn.c
		return nil
	})
	return c, err
}

// Close closes the store's connection, rolling back any open transaction.
// Further operations fail with ErrClosed. Close is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for _, c := range s.captures {
		c.done = true
	}
	s.captures = nil
	return guard(s.closeConnLocked)
}
