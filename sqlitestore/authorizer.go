package sqlitestore

import (
	"strings"

	"github.com/ncruces/go-sqlite3"
)

// stmtInfo is what the store's authorizer saw of a statement when it was
// prepared.
type stmtInfo struct {
	kind      stmtKind
	savepoint string // the savepoint a savepoint statement names
	attach    bool   // an ATTACH or DETACH, which the authorizer refused
	// drop and create name the table of the main schema a DROP TABLE or
	// a CREATE TABLE names, as written: SQLite erases the one's rows and
	// fills the other's (CREATE TABLE ... AS SELECT) with no preupdate
	// event, so change capture reads them (see Store.dropRowsLocked).
	drop, create string
	// alter names the table of the main schema an ALTER TABLE names, as
	// written (the functions it calls as it is prepared read it), and
	// dropColumn says the statement drops one of its columns:
	// SQLite erases the column's values with no preupdate event, and a
	// rollback undoing the drop brings them back, so change capture reads
	// them first (see Store.dropRowsLocked).
	alter      string
	dropColumn bool
	// pragma names a PRAGMA that sets what the store keeps its own (see
	// ErrPragma).
	pragma string
	// rename is the error refusing an ALTER TABLE that renames a table,
	// or a column of one, whose rows a running capture holds, which the
	// authorizer denied (see Store.renameRefusalLocked).
	rename error
	// params is the statement's number of parameters, counted once as it
	// is prepared (SQLite's count never changes for its text).
	params int
}

// stmtKind is what a statement does to the connection's transaction, as the
// store's authorizer saw it when the statement was prepared; zero for a
// statement that does none of these.
type stmtKind uint8

const (
	// stmtTxn begins, commits or rolls back a transaction: BEGIN, COMMIT,
	// END, ROLLBACK (not ROLLBACK TO).
	stmtTxn stmtKind = iota + 1
	// stmtSavepoint is a SAVEPOINT, which begins a transaction when there
	// is none.
	stmtSavepoint
	// stmtRelease is a RELEASE of a savepoint.
	stmtRelease
	// stmtRollbackTo is a ROLLBACK TO a savepoint.
	stmtRollbackTo
	// stmtOwnSavepoint names a savepoint of the store's own frames.
	stmtOwnSavepoint
)

// watchSchema is the store connection's authorizer: it allows everything
// but an ATTACH or DETACH of the store's API (see ErrAttach), and notes
// statements that change tables, so capture metadata is reloaded before
// it is trusted again, and statements that leave state in the
// connection or change the file's schema, so the connection is not parked
// (see Options.ShareKey). It runs when a statement is prepared, so a
// statement prepared and never run counts too.
//
// It refuses an ALTER TABLE that renames a table, or a column of one,
// whose rows a running capture holds (see Store.renameRefusalLocked), on the
// store's API and on the raw connection alike, and a PRAGMA setting what
// the store keeps its own (see ErrPragma) on the raw connection, which
// Store.Exec refuses itself, saying why.
//
// It notes what the statement does to the transaction (see stmtKind), for
// Store.Exec to refuse transaction control, and in the connection's layout
// log the tables whose columns it may change, and the rollbacks, which may
// undo such changes.
//
// It also turns SQLite's truncate optimisation off for every table of the
// main schema: a DELETE without WHERE would otherwise erase the table whole,
// with no preupdate event, when its statement was prepared while no capture
// ran (SQLite checks for the hook when it prepares, and statements are
// cached and kept across parking). SQLITE_IGNORE on SQLITE_DELETE is
// SQLite's documented way to have the rows deleted one by one; the deletes
// from sqlite_schema that DROP statements authorize, and the delete of the
// dropped table a DROP TABLE or DROP VIEW authorizes right after the drop
// itself, are left alone, as IGNORE there would skip the DROP.
func (cn *conn) watchSchema(action sqlite3.AuthorizerActionCode, name, arg, schema, _ string) sqlite3.AuthorizerReturnCode {
	dropping, refusing := cn.dropping, cn.refusing
	cn.dropping = ""
	if action != sqlite3.AUTH_READ {
		cn.refusing = nil
	}
	switch action {
	case sqlite3.AUTH_DROP_TABLE, sqlite3.AUTH_DROP_VIEW, sqlite3.AUTH_DROP_VTABLE:
		cn.dropping = name
	}
	switch action {
	case sqlite3.AUTH_TRANSACTION:
		cn.info.kind = stmtTxn
		if strings.EqualFold(name, "ROLLBACK") {
			cn.noteLayoutUndo() // on the raw connection, nothing else notes it
			cn.layout.rollback = cn.layout.all
		}
	case sqlite3.AUTH_SAVEPOINT:
		cn.info.savepoint = arg
		switch {
		case hasPrefixFold(arg, frameSavepoint):
			cn.info.kind = stmtOwnSavepoint
		case strings.EqualFold(name, "BEGIN"):
			cn.info.kind = stmtSavepoint
		case strings.EqualFold(name, "RELEASE"):
			cn.info.kind = stmtRelease
		default:
			cn.info.kind = stmtRollbackTo
		}
		if !cn.own && cn.store != nil && !cn.store.rawSavepointLocked(cn.info) {
			return sqlite3.AUTH_DENY
		}
		if strings.EqualFold(name, "ROLLBACK") {
			cn.noteLayoutUndo()
			cn.layout.rollback = cn.layout.all
		}
	case sqlite3.AUTH_UPDATE:
		if refusing != nil {
			// The update of the schema table that renames, right after
			// the renaming function and the reads of its arguments: it
			// fails as a plain "not authorized" (a function denied would
			// have SQLite point into its own statement, not the user's).
			cn.info.rename = refusing
			return sqlite3.AUTH_DENY
		}
	case sqlite3.AUTH_DELETE:
		if schema == "main" && !hasPrefixFold(name, "sqlite_") && name != dropping {
			return sqlite3.AUTH_IGNORE
		}
	case sqlite3.AUTH_CREATE_TABLE, sqlite3.AUTH_DROP_TABLE, sqlite3.AUTH_ALTER_TABLE,
		sqlite3.AUTH_CREATE_VTABLE, sqlite3.AUTH_DROP_VTABLE:
		table := name
		if action == sqlite3.AUTH_ALTER_TABLE {
			table = arg // name is the schema's
			// On the raw connection info holds earlier statements' too.
			cn.info.alter = ""
			if name == "main" {
				cn.info.alter = table
			}
		}
		cn.layout.noteTable(table)
		cn.changedAfter = cn.rolledBack
		if schema == "main" {
			switch action {
			case sqlite3.AUTH_DROP_TABLE:
				cn.info.drop = name
				if !cn.own && cn.exposed && cn.store != nil {
					cn.store.rawDropLocked(name)
				}
			case sqlite3.AUTH_CREATE_TABLE:
				cn.info.create = name
				if !cn.own && cn.exposed && cn.store != nil {
					cn.store.rawCreateLocked(name)
				}
			}
		}
		cn.metaDirty = true
		cn.ddlSeq++
		cn.ddl, cn.tainted = true, true
	case sqlite3.AUTH_FUNCTION:
		// As it is prepared, an ALTER TABLE calls one of these, which
		// only SQLite's own statements may, unless it adds a column.
		f := strings.ToLower(arg)
		if (f == "sqlite_rename_table" || f == "sqlite_rename_column") && cn.info.alter != "" && cn.store != nil {
			cn.refusing = cn.store.renameRefusalLocked(cn.info.alter, f == "sqlite_rename_column")
		}
		if renamingFuncs[f] {
			cn.layout.noteRename(!cn.own)
		}
		if f == "sqlite_rename_column" && cn.info.alter != "" {
			cn.layout.columnRenames.note(cn.info.alter, cn.layout.seq, !cn.own)
		}
		if f == "sqlite_drop_column" {
			cn.info.dropColumn = true
			if cn.info.alter != "" {
				cn.layout.columnDrops.note(cn.info.alter, cn.layout.seq, !cn.own)
			}
		}
	case sqlite3.AUTH_ATTACH, sqlite3.AUTH_DETACH:
		if cn.preparing {
			// A user's ATTACH or DETACH (see ErrAttach); capture reads
			// the main schema only, so writes to an attached file would
			// be in no change log.
			cn.info.attach = true
			return sqlite3.AUTH_DENY
		}
		// The ATTACH a VACUUM runs while it steps: it may renumber rowids.
		cn.metaDirty = true
		cn.ddlSeq++
		cn.tainted = true
	case sqlite3.AUTH_CREATE_INDEX, sqlite3.AUTH_DROP_INDEX,
		sqlite3.AUTH_CREATE_TRIGGER, sqlite3.AUTH_DROP_TRIGGER,
		sqlite3.AUTH_CREATE_VIEW, sqlite3.AUTH_DROP_VIEW, sqlite3.AUTH_ANALYZE:
		cn.ddl, cn.tainted = true, true
		cn.changedAfter = cn.rolledBack
	case sqlite3.AUTH_CREATE_TEMP_INDEX, sqlite3.AUTH_CREATE_TEMP_TABLE,
		sqlite3.AUTH_CREATE_TEMP_TRIGGER, sqlite3.AUTH_CREATE_TEMP_VIEW:
		cn.tainted = true
	case sqlite3.AUTH_PRAGMA:
		// A PRAGMA with an argument may change the connection's settings,
		// unless it only reads (table_info(t) and the table-valued
		// pragma_* functions); the locking mode is reset whenever a
		// connection is parked.
		if arg != "" && !readOnlyPragmas[strings.ToLower(name)] {
			cn.tainted = true
		}
		if arg != "" && storePragmas[strings.ToLower(name)] {
			if !cn.own {
				// On the raw connection, which no statement check
				// reads: a journal turned off there would stay off,
				// and later calls' rollbacks would keep their rows
				// with no change describing them.
				return sqlite3.AUTH_DENY
			}
			cn.info.pragma = name
		}
	}
	return sqlite3.AUTH_OK
}

// renamingFuncs are the functions SQLite's own statements call as an ALTER
// TABLE that renames a table or column, or drops a column, is prepared.
// A dropped column counts as a rename: the reload after one notes the
// columns the raw connection dropped (Capture.noteVanished). A column is
// taken for renamed only when a RENAME COLUMN of its table was noted
// (layoutLog.columnRenames): a rollback undoing a drop and a column added
// since looks, to the metadata, like a renamed column.
var renamingFuncs = map[string]bool{"sqlite_rename_table": true, "sqlite_rename_column": true, "sqlite_drop_column": true}

// readOnlyPragmas are the PRAGMAs whose argument names what to read, not a
// setting; locking_mode is reset when a connection is parked.
var readOnlyPragmas = map[string]bool{
	"table_info": true, "table_xinfo": true, "table_list": true,
	"index_info": true, "index_xinfo": true, "index_list": true,
	"foreign_key_list": true, "foreign_key_check": true,
	"integrity_check": true, "quick_check": true,
	"locking_mode": true,
}

// storePragmas are the PRAGMAs whose settings the store keeps its own:
// journal_mode (a call's rollback, and each ROLLBACK TO, needs the
// journal), writable_schema and schema_version (a schema rewritten under
// SQLite leaves change capture and the inspection view describing tables
// that are not there, or a corrupt file).
var storePragmas = map[string]bool{"journal_mode": true, "writable_schema": true, "schema_version": true}
