package sqlitestore

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ncruces/go-sqlite3"
)

// Attachment is a store file attached to an Inspector under a schema name.
type Attachment struct {
	// Schema is the name the store is attached under (a node's path with
	// "/" replaced by "__").
	Schema string
	// Path is the absolute path of the store file.
	Path string
}

// MaxInspectSQL is the longest statement an Inspector runs, in bytes, from
// its first token to its last: MaxSQL, as on every connection.
const MaxInspectSQL = MaxSQL

// Inspector is a read-only connection over a root store with other stores
// attached read-only, for evals: one statement can join across stores. The
// root file is opened read-only, every attachment is attached read-only, and
// an authorizer then denies INSERT, UPDATE and DELETE outside the temp schema,
// ATTACH, DETACH, schema changes, pragma writes, VACUUM and transaction
// control; introspection pragmas and the read-only checks integrity_check
// and quick_check (over every attached schema when none is named) are
// allowed. Its date and time functions read the instance clock, and random()
// and randomblob() draw from InspectorOptions.Random. No query reads the
// paths of the store files: pragma_database_list's file column reads as
// NULL, and so does any value a query returns that is one of those paths
// (the file column of PRAGMA database_list). Each query sees the
// rows the stores have committed by then, in a read transaction that ends
// with the query: the connection holds no lock between queries. Temporary
// storage (sorts, temp tables) is kept in the connection's memory, under its
// memory cap, never in files; the statements it keeps prepared hold at most
// an eighth of that cap. Its instr, replace, trim, ltrim, rtrim, LIKE and
// GLOB give SQLite's results in time a query's context bounds (see
// textfuncs.go and likefuncs.go).
//
// An Inspector is safe for concurrent use; queries run one at a time.
type Inspector struct {
	mu     sync.Mutex // guards cn, closed, denied and ending
	cn     *conn
	closed bool
	// denied names the transaction-control statement the authorizer refused
	// while the current query was prepared ("" for none).
	denied string
	// ending is set while the Inspector rolls back a transaction left open,
	// which the authorizer then lets through.
	ending bool
	// files are the store files' names as PRAGMA database_list gives them,
	// which QueryLimit reads as NULL.
	files map[string]bool
}

// InspectorOptions configures OpenInspector.
type InspectorOptions struct {
	// Clock is what 'now' reads in SQL; nil means time.Now.
	Clock func() time.Time
	// Random returns the values random() and randomblob() draw from. nil
	// means a stream seeded with 0, so a query that samples reads the same
	// rows every time.
	Random func() uint64
}

// OpenInspector opens rootPath read-only as the main schema and attaches each
// attachment read-only under its schema name. It refuses more attachments
// than AttachLimit reports, duplicate or reserved schema names, and relative
// paths.
func OpenInspector(ctx context.Context, rootPath string, attach []Attachment, opts InspectorOptions) (*Inspector, error) {
	if !filepath.IsAbs(rootPath) {
		return nil, fmt.Errorf("sqlitestore: inspector root must be an absolute path, got %q", rootPath)
	}
	if limit := AttachLimit(); len(attach) > limit {
		return nil, fmt.Errorf("sqlitestore: cannot attach %d stores: this SQLite build attaches at most %d databases per connection", len(attach), limit)
	}
	seen := map[string]bool{"main": true, "temp": true}
	for _, a := range attach {
		key := foldASCII(a.Schema)
		switch {
		case a.Schema == "":
			return nil, fmt.Errorf("sqlitestore: attachment of %s has no schema name", a.Path)
		case key == "main" || key == "temp":
			return nil, fmt.Errorf("sqlitestore: attachment schema name %q is reserved", a.Schema)
		case seen[key]:
			return nil, fmt.Errorf("sqlitestore: attachment schema name %q is used twice", a.Schema)
		case !filepath.IsAbs(a.Path):
			return nil, fmt.Errorf("sqlitestore: attachment %q must have an absolute path, got %q", a.Schema, a.Path)
		}
		seen[key] = true
	}
	in := &Inspector{}
	err := guard(func() error {
		cn, err := openConn(ctx, fileURI(rootPath, "ro"), 0, opts.Clock, opts.Random)
		if err != nil {
			return &opError{"open", rootPath, err}
		}
		ok := false
		defer func() {
			if !ok { // an error, or a panic on its way up
				cn.close()
			}
		}()
		if err := in.setup(ctx, cn, rootPath, attach); err != nil {
			return err
		}
		ok = true
		in.cn = cn
		return nil
	})
	if err != nil {
		return nil, err
	}
	return in, nil
}

// setup attaches attach to cn, keeps the names of the connection's store
// files in i.files and sets i.authorize as its authorizer.
func (i *Inspector) setup(ctx context.Context, cn *conn, rootPath string, attach []Attachment) error {
	old := cn.c.SetInterrupt(ctx)
	defer cn.c.SetInterrupt(old)
	if ro, _ := cn.c.ReadOnly("main"); !ro {
		return fmt.Errorf("sqlitestore: %s did not open read-only", rootPath)
	}
	cn.tooLong = fmt.Sprintf("statement too long: the inspection connection runs statements of at most %d bytes", MaxInspectSQL)
	// Sorts, DISTINCT, materialized subqueries and temp tables then live in
	// the connection's memory, bounded by its cap, instead of unlinked files
	// in the OS temp directory that nothing bounds.
	if err := cn.c.Exec("PRAGMA temp_store=MEMORY"); err != nil {
		return &opError{"open", rootPath, formatError(ctx, err)}
	}
	if err := installTextFuncs(cn.c); err != nil {
		return fmt.Errorf("sqlitestore: installing the text functions: %w", formatError(ctx, err))
	}
	if err := installLikeFuncs(cn.c); err != nil {
		return fmt.Errorf("sqlitestore: installing LIKE and GLOB: %w", formatError(ctx, err))
	}
	if _, err := cn.query("SELECT count(*) FROM main.sqlite_schema", nil); err != nil {
		return &opError{"open", rootPath, formatError(ctx, err)}
	}
	for _, a := range attach {
		schema := quoteIdent(a.Schema)
		st, _, err := cn.c.Prepare("ATTACH DATABASE ?1 AS " + schema)
		if err != nil {
			return &opError{"attach", a.Path, formatError(ctx, err)}
		}
		if err = st.BindText(1, fileURI(a.Path, "ro")); err == nil {
			err = st.Exec()
		}
		st.Close()
		if err == nil {
			_, err = cn.query("SELECT count(*) FROM "+schema+".sqlite_schema", nil)
		}
		if err != nil {
			return &opError{"attach", a.Path, formatError(ctx, err)}
		}
	}
	const list = "SELECT file FROM pragma_database_list"
	rows, err := cn.query(list, nil)
	if err != nil {
		return &opError{"open", rootPath, formatError(ctx, err)}
	}
	cn.forget(list)
	i.files = map[string]bool{}
	for _, r := range rows.Values {
		if f, ok := r[0].(string); ok && f != "" {
			i.files[f] = true
		}
	}
	// Set last: statements prepared before are expired by SQLite.
	return formatError(ctx, cn.c.SetAuthorizer(i.authorize))
}

// authorize is the Inspector's authorizer. It allows reads and
// introspection, and denies everything else: writes (to the temp schema
// too), schema changes and transaction control, noting the
// transaction-control statement refused so that Query can say why. While
// the Inspector ends a transaction left open it allows that. The caller of
// the statement being prepared holds mu.
func (i *Inspector) authorize(action sqlite3.AuthorizerActionCode, name3rd, name4th, schema, _ string) sqlite3.AuthorizerReturnCode {
	switch action {
	case sqlite3.AUTH_TRANSACTION, sqlite3.AUTH_SAVEPOINT:
		if i.ending {
			return sqlite3.AUTH_OK
		}
		i.denied = transactionStatement(action, name3rd)
		return sqlite3.AUTH_DENY
	case sqlite3.AUTH_READ:
		if strings.EqualFold(name3rd, "pragma_database_list") && strings.EqualFold(name4th, "file") {
			return sqlite3.AUTH_IGNORE // a server path: reads as NULL
		}
		return sqlite3.AUTH_OK
	case sqlite3.AUTH_SELECT, sqlite3.AUTH_FUNCTION, sqlite3.AUTH_RECURSIVE:
		return sqlite3.AUTH_OK
	case sqlite3.AUTH_INSERT, sqlite3.AUTH_UPDATE, sqlite3.AUTH_DELETE:
		if schema != "temp" && rtreeShadow(name3rd) {
			// An R*Tree (or Geopoly) table prepares its writes to its
			// shadow tables as a query first reads it: denied, it could
			// not be read at all. The stores' files are open read-only,
			// so none of them runs.
			return sqlite3.AUTH_OK
		}
		// The temp schema too: a temp table named like a store's table
		// would shadow it for every unqualified query after it. Sorts and
		// materialised subqueries still use temporary storage, which is
		// not a schema.
		return sqlite3.AUTH_DENY
	case sqlite3.AUTH_PRAGMA:
		switch strings.ToLower(name3rd) {
		case "table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list",
			"database_list", "table_list", "compile_options", "function_list", "collation_list":
			return sqlite3.AUTH_OK // introspection; the argument is an object name
		case "integrity_check", "quick_check":
			return sqlite3.AUTH_OK // verification reads only; the argument is a table name or an error count
		case "query_only", "user_version", "application_id", "schema_version", "data_version",
			"page_count", "page_size", "freelist_count", "journal_mode", "foreign_keys", "encoding":
			if name4th == "" { // reading only
				return sqlite3.AUTH_OK
			}
		}
		return sqlite3.AUTH_DENY // optimize, incremental_vacuum and wal_checkpoint act without an argument
	default: // ATTACH (and VACUUM, reported as ATTACH), DETACH, DDL, ANALYZE, REINDEX, triggers, views
		return sqlite3.AUTH_DENY
	}
}

// rtreeShadow reports whether table may be a shadow table of an R*Tree or
// Geopoly table: its name ends in _node, _rowid or _parent.
func rtreeShadow(table string) bool {
	for _, suffix := range []string{"_node", "_rowid", "_parent"} {
		if len(table) > len(suffix) && SameName(table[len(table)-len(suffix):], suffix) {
			return true
		}
	}
	return false
}

// transactionStatement names the statement of a transaction-control action:
// BEGIN, COMMIT or ROLLBACK for a transaction (name3rd), SAVEPOINT, RELEASE
// or ROLLBACK TO for a savepoint.
func transactionStatement(action sqlite3.AuthorizerActionCode, op string) string {
	if action == sqlite3.AUTH_SAVEPOINT {
		switch strings.ToUpper(op) {
		case "BEGIN":
			return "SAVEPOINT"
		case "ROLLBACK":
			return "ROLLBACK TO"
		}
	}
	return strings.ToUpper(op)
}

// Query runs one read-only statement with args (bound as Store.Exec binds
// them) and reads every row. It is QueryLimit without a limit.
func (i *Inspector) Query(ctx context.Context, sql string, args ...any) (*Rows, error) {
	return i.QueryLimit(ctx, ReadLimit{}, sql, args...)
}

// QueryLimit runs one read-only statement with args (bound as Store.Exec
// binds them) and reads its rows until lim stops it (Rows.Truncated then
// says which limit). A done ctx interrupts it. A statement that would write
// or change the connection fails with an error wrapping ErrReadOnly;
// BEGIN, COMMIT, ROLLBACK, SAVEPOINT and RELEASE fail with an error
// wrapping ErrTransaction. Whatever the outcome, no transaction stays open
// after it. A statement longer than MaxInspectSQL fails with an error
// saying so. Running out of the connection's memory (a huge sort) fails with
// an error wrapping ErrOutOfMemory. A query given a lim.Pacer pauses
// while it runs whenever the queries sharing the Pacer have used up their
// share of the CPU.
func (i *Inspector) QueryLimit(ctx context.Context, lim ReadLimit, sql string, args ...any) (*Rows, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.closed {
		return nil, ErrClosed
	}
	if ctx.Err() != nil {
		return nil, contextError(ctx)
	}
	var rows *Rows
	err := guard(func() error {
		old := i.cn.c.SetInterrupt(lim.Pacer.interrupt(ctx))
		defer i.cn.c.SetInterrupt(old)
		i.denied = ""
		var err error
		rows, err = i.cn.queryLimit(sql, args, lim)
		if rows != nil {
			hideFiles(rows.Values, i.files)
		}
		if err != nil && i.denied != "" {
			return transactionError(i.denied)
		}
		return readOnlyError(formatError(ctx, err))
	})
	i.trimCacheLocked()
	if err = cmp.Or(err, i.endTransactionLocked()); err != nil {
		return nil, err
	}
	return rows, nil
}

// inspectStmtMemory bounds the memory an Inspector's cached statements
// hold together. Kept, they take from the connection's memory cap what
// the queries need: twenty distinct statements near MaxInspectSQL would
// leave too little to prepare another.
const inspectStmtMemory = DefaultMaxMemory / 8

// trimCacheLocked closes the oldest cached statements, the one just run
// included, while the connection's statements hold more than
// inspectStmtMemory. The caller holds mu.
func (i *Inspector) trimCacheLocked() {
	for len(i.cn.order) > 0 {
		used, _, err := i.cn.c.Status(sqlite3.DBSTATUS_STMT_USED, false)
		if err != nil || used <= inspectStmtMemory {
			return
		}
		i.cn.forget(i.cn.order[0])
	}
}

// hideFiles sets each value of rows that names one of files to nil: the
// file column of PRAGMA database_list, which the authorizer cannot hide as
// it hides the column of the pragma_database_list table.
func hideFiles(rows [][]any, files map[string]bool) {
	for _, r := range rows {
		for j, v := range r {
			if s, ok := v.(string); ok && files[s] {
				r[j] = nil
			}
		}
	}
}

// endTransactionLocked rolls back a transaction the connection is still
// in, so that it never holds a lock between queries (a read lock kept would
// make every commit of the stores wait, then fail). The caller holds mu.
func (i *Inspector) endTransactionLocked() error {
	return guard(func() error {
		if i.cn.c.GetAutocommit() {
			return nil
		}
		i.ending = true
		defer func() { i.ending = false }()
		// Not interruptible: the rollback must finish whatever ctx says.
		old := i.cn.c.SetInterrupt(context.Background())
		defer i.cn.c.SetInterrupt(old)
		return formatError(context.Background(), i.cn.c.Exec("ROLLBACK"))
	})
}

// Close closes the connection. It is idempotent.
func (i *Inspector) Close() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.closed {
		return nil
	}
	i.closed = true
	return guard(func() error { return formatError(context.Background(), i.cn.close()) })
}
