package sqlitestore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/ext/fts5"
	"github.com/ncruces/go-sqlite3/ext/rtree"
)

// Connection settings applied to every connection this package opens.
const (
	// DefaultMaxMemory is the memory cap of one connection when
	// Options.MaxMemory is zero. SQLite's memory lives outside the Go heap;
	// a statement that needs more fails with an error wrapping ErrOutOfMemory.
	DefaultMaxMemory = 64 << 20
	// MaxLength is the largest string or blob a statement may build
	// (SQLITE_LIMIT_LENGTH); a larger one fails with "string or blob too big".
	MaxLength = 16 << 20
	// CacheSizeKiB is each connection's page cache (PRAGMA cache_size=-256).
	CacheSizeKiB = 256
	// BusyTimeout is how long a statement waits for another connection's lock
	// on the same file (an Inspector reading while the store commits).
	BusyTimeout = 5 * time.Second
	// stmtCacheSize caps the prepared statements kept per connection.
	stmtCacheSize = 128
)

// conn is one open SQLite connection with its prepared-statement cache and,
// for a store, its change-capture state. A conn is used by one goroutine at a
// time, under the lock of the Store or Inspector that owns it.
type conn struct {
	c     *sqlite3.Conn
	stmts map[string]cachedStmt
	order []string // cache keys, oldest first
	info  stmtInfo // what the authorizer saw of the statement being prepared
	// tooLong is the message refusing a statement longer than MaxSQL.
	tooLong string

	// Change capture (stores only).
	meta        map[string]*tableMeta // main-schema tables by name, loaded lazily
	metaDirty   bool                  // meta must be reloaded before it is trusted
	metaVersion int64                 // the schema cookie meta was loaded at
	ddlSeq      uint64                // counts statements prepared that change tables
	dropping    string                // the table of the DROP the authorizer saw last, for the delete it authorizes next
	refusing    error                 // the refusal of the rename whose renaming function the authorizer saw last, for the update of the schema table it authorizes next
	erasing     string                // the table the DROP TABLE of the store's API running now erases, whose rows the captures noted (see Store.dropRowsLocked)
	colDrop     *colDrop              // the rows of the table the DROP COLUMN of the store's API running now alters, read for the captures (see Store.dropRowsLocked)
	exposed     bool                  // handed out by Store.Conn
	rollbacks   uint64                // transactions rolled back on the connection, counted by its rollback hook (stores only)
	preparing   bool                  // prepareNext is preparing a statement of the store's API
	own         bool                  // the store is using the connection: a statement prepared or re-prepared (SQLite does so as it steps a statement the schema changed under) is not the raw connection user's
	store       *Store                // the store the connection is bound to, which noteUndo and the authorizer report to; nil for other connections and while parked
	// layout notes what may have changed the tables' columns since the
	// connection was bound to its store; loadSeq is layout.seq when meta
	// was loaded, and loadInTxn whether it was loaded inside a transaction
	// after schema changes made in it, which a rollback may undo. txnSeq
	// is layout.seq when the store last used the connection outside a
	// transaction: a rollback can undo only what was noted after it.
	// renameSeq is txnSeq when meta was loaded: a table or column can
	// have been renamed since only by an ALTER TABLE ... RENAME noted after it (see
	// Store.loadMetaLocked).
	// rolledBack says a rollback was noted since meta was loaded, and
	// changedAfter that a statement changing the schema was prepared
	// after it (see colDrop.unsure).
	layout                   *layoutLog
	loadSeq                  uint64
	loadInTxn                bool
	txnSeq                   uint64
	renameSeq                uint64
	rolledBack, changedAfter bool

	// Per-store state the SQL functions read, swapped when a parked
	// connection is rebound to another store.
	random func() uint64    // what random() and randomblob() draw from
	now    func() time.Time // 'now' of the date and time functions

	// Parking (Options.ShareKey).
	slot    *rebindFile // the rebindable main file; nil for other connections
	tainted bool        // per-connection state changed (a PRAGMA, a temp object, a VACUUM): never park
	ddl     bool        // the main schema may have changed: the store's file no longer matches its key
	txns    int         // write transactions begun since the connection was bound

	exclusive bool // in exclusive locking mode

	// unharvested says a statement ran since the store last harvested or
	// dropped the pages the connection wrote (see Store.Written).
	unharvested bool
}

// cachedStmt is a prepared statement of a connection's cache.
type cachedStmt struct {
	st   *sqlite3.Stmt
	info stmtInfo
}

// cookieOffset is where a database header keeps the schema cookie, a
// big-endian uint32.
const cookieOffset = 40

// headerCookie decodes the schema cookie from the header bytes at
// cookieOffset.
func headerCookie(b []byte) int64 { return int64(binary.BigEndian.Uint32(b)) }

// noteUndo records that rows may have changed without a preupdate event: a
// statement failed (SQLite rolled back its partial work, or the whole
// transaction) or a ROLLBACK ran. Either may also have undone schema
// changes (see noteLayoutUndo).
func (cn *conn) noteUndo() {
	if cn.store != nil {
		cn.store.undo++
	}
	cn.noteLayoutUndo()
}

// noteLayoutUndo records a rollback, which undoes the schema changes made
// since its savepoint: when schema changes were noted since the
// transaction (or the failed statement) began, any table's columns may now
// differ from what the metadata or a raw event holds.
func (cn *conn) noteLayoutUndo() {
	if cn.loadInTxn || cn.layout.seq != cn.txnSeq {
		cn.layout.noteAll()
		cn.metaDirty = true
		cn.rolledBack = true
	}
}

// rollbackOpen rolls back the transaction the connection is in, if any,
// noting the undo: one whose owner can no longer end it (its frames were
// lost, or a COMMIT of it failed).
func (cn *conn) rollbackOpen() {
	if !cn.c.GetAutocommit() {
		cn.noteUndo()
		cn.exec("ROLLBACK", nil)
	}
}

// running notes what sql, a statement of the store's about to run, may
// do: write pages (see Store.harvestWritesLocked), and roll back, when it
// mentions ROLLBACK in any letter case (noteUndo; a false alarm only
// costs a read).
func (cn *conn) running(sql string) {
	cn.unharvested = true
	if containsFold(sql, "rollback") {
		cn.noteUndo()
		cn.layout.rollback = cn.layout.all
	}
}

// alterPending reports whether a statement the raw connection's user
// prepared and has not closed mentions ALTER in any letter case: an ALTER
// TABLE the layout log noted as it was prepared may run when the user
// steps it, at any later time, with no new note unless the schema changed
// since (SQLite then prepares it again). A false alarm only keeps the
// raw connection's renames and drops in the log (see layoutLog.forgetRaw).
func (cn *conn) alterPending() bool {
	for st := range cn.c.Stmts() {
		if c, ok := cn.stmts[st.SQL()]; ok && c.st == st {
			continue // the store's own
		}
		if containsFold(st.SQL(), "alter") {
			return true
		}
	}
	return false
}

// containsFold reports whether s holds word in any letter case.
func containsFold(s, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(word)], word) {
			return true
		}
	}
	return false
}

// openConn opens a connection to uri and applies the settings shared by stores,
// inspectors and the in-memory schema probe; its SQL functions read now (nil:
// time.Now) and random (nil: a stream seeded with 0).
func openConn(ctx context.Context, uri string, maxMemory int64, now func() time.Time, random func() uint64) (*conn, error) {
	if maxMemory <= 0 {
		maxMemory = DefaultMaxMemory
	}
	c, err := sqlite3.OpenContext(sqlite3.WithMaxMemory(ctx, maxMemory), uri)
	if err != nil {
		return nil, formatError(ctx, err)
	}
	ok := false
	defer func() {
		if !ok { // an error, or a panic on its way up
			c.Close()
		}
	}()
	c.Limit(sqlite3.LIMIT_LENGTH, MaxLength)
	c.Limit(sqlite3.LIMIT_SQL_LENGTH, MaxSQL)
	if err := c.BusyTimeout(BusyTimeout); err != nil {
		return nil, formatError(ctx, err)
	}
	// FTS5 and R*Tree first: PRAGMA cache_size reads the schema, and a
	// shadow table is known as one only when its module is registered as
	// the schema is read (or its virtual table connected since). Read
	// before, an FTS5 or R*Tree table's shadow tables pass for ordinary
	// tables, which change capture would report the rows of.
	if err := fts5.Register(c); err != nil {
		return nil, fmt.Errorf("sqlitestore: registering fts5: %w", formatError(ctx, err))
	}
	if err := rtree.Register(c); err != nil {
		return nil, fmt.Errorf("sqlitestore: registering rtree: %w", formatError(ctx, err))
	}
	if err := c.Exec(fmt.Sprintf("PRAGMA foreign_keys=ON; PRAGMA cache_size=-%d;", CacheSizeKiB)); err != nil {
		return nil, formatError(ctx, err)
	}
	if now == nil {
		now = time.Now
	}
	if random == nil {
		random = newRandom(0).Uint64
	}
	cn := &conn{c: c, stmts: make(map[string]cachedStmt), metaDirty: true, now: now, random: random, layout: new(layoutLog),
		tooLong: fmt.Sprintf("statement too long: a connection runs statements of at most %d bytes; pass long values as parameters", MaxSQL)}
	// cn.now and cn.random, not now and random: a parked connection is
	// rebound to another store's.
	if err := installClock(c, func() time.Time { return cn.now() }); err != nil {
		return nil, fmt.Errorf("sqlitestore: installing the clock: %w", formatError(ctx, err))
	}
	if err := installRandom(c, func() uint64 { return cn.random() }); err != nil {
		return nil, fmt.Errorf("sqlitestore: installing random(): %w", formatError(ctx, err))
	}
	ok = true
	liveConns.Add(1)
	return cn, nil
}

// close finalizes every statement of the connection (the cache and any left
// by users of the raw connection) and closes it.
func (cn *conn) close() error {
	// Collected first: closing a statement removes it from what Stmts ranges over.
	for _, st := range slices.Collect(cn.c.Stmts()) {
		st.Close()
	}
	cn.stmts, cn.order = nil, nil
	liveConns.Add(-1)
	return cn.c.Close()
}

// forget closes and drops sql's statement from the cache, if it is there.
func (cn *conn) forget(sql string) {
	key := stmtKey(sql)
	c, ok := cn.stmts[key]
	if !ok {
		return
	}
	c.st.Close()
	delete(cn.stmts, key)
	cn.order = slices.DeleteFunc(cn.order, func(s string) bool { return s == key })
}

// stmtKey is the text sql's statement is cached under and prepared
// from: sql without the white space, semicolons and comments before it and
// the white space and semicolons after it.
func stmtKey(sql string) string {
	return strings.TrimRightFunc(skipFiller(sql), isFiller)
}

// errManyStatements is the error of a text holding more than one
// statement where one is run: Exec and Query point their callers to
// ExecScript.
var errManyStatements = errors.New("more than one statement")

// prepare returns the cached statement for sql, preparing it on a miss,
// and what it does to the transaction. sql must hold exactly one
// statement.
//
// The cache keeps the statement's own text (see stmtKey), and so does the
// statement itself, never what surrounds it in sql: a text padded with
// megabytes of white space or comments, each padding different, would
// otherwise pin that much memory per cached statement.
func (cn *conn) prepare(sql string) (*sqlite3.Stmt, stmtInfo, error) {
	if c, ok := cn.stmts[sql]; ok {
		return c.st, c.info, nil // sql is its own key: nothing around it
	}
	key := stmtKey(sql)
	if c, ok := cn.stmts[key]; ok {
		return c.st, c.info, nil
	}
	if len(key) < len(sql) {
		key = strings.Clone(key) // a slice of sql would keep sql whole
	}
	st, tail, info, err := cn.prepareNext(key)
	if err != nil {
		return nil, stmtInfo{}, err
	}
	if st == nil {
		return nil, stmtInfo{}, fmt.Errorf("sqlitestore: no statement in %q", abbreviate(sql, 80))
	}
	if skipFiller(tail) != "" {
		st.Close()
		return nil, stmtInfo{}, fmt.Errorf("sqlitestore: %w in %q", errManyStatements, abbreviate(sql, 80))
	}
	if tail != "" {
		// Comments after the statement, which it would keep with its
		// text: it is prepared again without them.
		st.Close()
		key = strings.Clone(stmtKey(key[:len(key)-len(tail)]))
		if c, ok := cn.stmts[key]; ok {
			return c.st, c.info, nil
		}
		if st, _, info, err = cn.prepareNext(key); err != nil {
			return nil, stmtInfo{}, err
		}
	}
	if len(cn.order) >= stmtCacheSize {
		cn.forget(cn.order[0])
	}
	cn.stmts[key] = cachedStmt{st, info}
	cn.order = append(cn.order, key)
	return st, info, nil
}

// prepareNext prepares the first statement of sql, uncached, and reports
// what it does to the transaction.
//
// It is the one place a statement of the store's API is prepared, which is
// how the authorizer tells a user's ATTACH or DETACH, refused here with an
// error wrapping ErrAttach, from the one VACUUM runs, which it authorizes
// while the VACUUM steps. A rename the authorizer refused fails with the
// error saying why (see Store.renameRefusalLocked).
func (cn *conn) prepareNext(sql string) (st *sqlite3.Stmt, tail string, info stmtInfo, err error) {
	cn.info, cn.preparing = stmtInfo{}, true
	st, tail, err = cn.c.Prepare(sql)
	info, cn.info, cn.preparing = cn.info, stmtInfo{}, false
	if st != nil {
		info.params = st.BindCount()
	}
	switch {
	case err != nil && info.attach:
		err = fmt.Errorf("%w: %s", ErrAttach, abbreviate(firstStatement(sql), 200))
	case err != nil && info.rename != nil:
		err = info.rename
	case errors.Is(err, sqlite3.TOOBIG) && len(sql) > MaxSQL:
		// Nothing else a statement of at most MaxSQL bytes holds is too
		// big to prepare.
		err = newError(sqlite3.TOOBIG, cn.tooLong, err)
	}
	return st, tail, info, err
}

// MaxSQL is the longest statement a store's connection runs, in bytes,
// from its first token to its last (SQLITE_LIMIT_SQL_LENGTH): a longer one
// fails with an error saying so. The driver reads no name SQLite hands it
// past a million bytes: a longer one (a result column named by its
// expression, a table or column name, a pragma's argument as the
// authorizer sees it) would panic, inside SQLite's own calls when it is
// the authorizer's, and leave the connection's memory corrupt. Values of
// any length up to MaxLength pass as parameters.
const MaxSQL = 1_000_000

// isFiller reports whether r is white space or the semicolon of an empty
// statement (a function, not a cutset, which strings.TrimLeft would
// build again at every statement).
func isFiller(r rune) bool {
	return r == ' ' || r == '\t' || r == '\r' || r == '\n' || r == '\f' || r == ';'
}

// skipFiller drops leading white space, empty statements and comments.
func skipFiller(sql string) string {
	for {
		sql = strings.TrimLeftFunc(sql, isFiller)
		rest, ok := skipComment(sql)
		if !ok {
			return sql
		}
		sql = rest
	}
}

// skipComment returns what follows the comment sql begins with ("" when
// the comment does not end), and whether sql begins with one.
func skipComment(sql string) (string, bool) {
	end := "\n"
	switch {
	case strings.HasPrefix(sql, "/*"):
		end = "*/"
	case !strings.HasPrefix(sql, "--"):
		return sql, false
	}
	_, rest, _ := strings.Cut(sql[2:], end)
	return rest, true
}

// exec runs one statement with args.
func (cn *conn) exec(sql string, args []any) (Result, error) {
	st, info, err := cn.prepare(sql)
	if err != nil {
		return Result{}, err
	}
	defer st.Reset()
	if err := bindArgs(st, info.params, args); err != nil {
		return Result{}, err
	}
	cn.running(sql)
	total := cn.c.TotalChanges()
	if err := st.Exec(); err != nil {
		cn.noteUndo()
		return Result{}, err
	}
	var res Result
	if cn.c.TotalChanges() != total {
		res.RowsAffected = cn.c.Changes()
	}
	res.LastInsertID = cn.c.LastInsertRowID()
	return res, nil
}

// query runs one statement with args and reads every row.
func (cn *conn) query(sql string, args []any) (*Rows, error) {
	return cn.queryLimit(sql, args, ReadLimit{})
}

// queryLimit runs one statement with args and reads its rows until lim
// stops it. A value's size is measured where SQLite holds it, before it is
// copied, so a row past lim.MaxBytes costs no Go memory.
func (cn *conn) queryLimit(sql string, args []any, lim ReadLimit) (*Rows, error) {
	st, info, err := cn.prepare(sql)
	if err != nil {
		return nil, err
	}
	defer st.Reset()
	if err := bindArgs(st, info.params, args); err != nil {
		return nil, err
	}
	cn.running(sql)
	n := st.ColumnCount()
	rows := &Rows{Columns: make([]string, n), Values: [][]any{}}
	for i := range n {
		rows.Columns[i] = st.ColumnName(i)
	}
	var size int64
	for st.Step() {
		if lim.MaxRows > 0 && len(rows.Values) == lim.MaxRows {
			rows.Truncated = TruncatedRows
			break
		}
		if lim.MaxBytes > 0 {
			if size += rowSize(st, n); size > lim.MaxBytes {
				rows.Truncated = TruncatedBytes
				break
			}
		}
		rows.Values = append(rows.Values, readRow(st, n))
	}
	if err := st.Err(); err != nil {
		cn.noteUndo()
		return nil, err
	}
	return rows, nil
}

// script runs every statement of sql in order. before, when not nil, runs
// before each statement is prepared; check, when not nil, runs once it is
// prepared; done, when not nil, runs once it ran. An error of any of them
// stops the script.
func (cn *conn) script(sql string, before func() error, check func(text string, info stmtInfo) error, done func(info stmtInfo) error) error {
	for {
		sql = skipFiller(sql)
		if sql == "" {
			return nil
		}
		if before != nil {
			if err := before(); err != nil {
				return err
			}
		}
		st, tail, info, err := cn.prepareNext(sql)
		if err != nil {
			return statementError(err, firstStatement(sql))
		}
		if st == nil {
			return nil
		}
		text := sql[:len(sql)-len(tail)]
		if check != nil {
			if err := check(text, info); err != nil {
				st.Close()
				return err
			}
		}
		cn.running(text)
		err = st.Exec()
		st.Close()
		if err != nil {
			cn.noteUndo()
			return statementError(err, text)
		}
		if done != nil {
			if err := done(info); err != nil {
				return err
			}
		}
		sql = tail
	}
}

// firstStatement returns sql up to its first semicolon outside quotes and
// comments: enough to name a statement SQLite could not prepare.
func firstStatement(sql string) string {
	for rest := sql; rest != ""; {
		if rest[0] == ';' {
			return sql[:len(sql)-len(rest)+1]
		}
		if strings.IndexByte("'\"`[", rest[0]) >= 0 {
			rest = skipName(rest)
		} else if after, ok := skipComment(rest); ok {
			rest = after
		} else {
			rest = rest[1:]
		}
	}
	return sql
}

// statementError records which statement of a script failed.
func statementError(err error, stmt string) error {
	err = formatError(context.Background(), err)
	if e, ok := err.(*Error); ok {
		e.Statement = strings.TrimSpace(stmt)
	}
	return err
}

// fileURI returns a URI for an absolute path with the given access mode
// ("rw": read-write, must exist; "ro": read-only).
func fileURI(path, mode string) string {
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?mode=" + mode
}

// quoteIdent quotes an SQL identifier.
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}
