package composition_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/sqlitestore"
)

// The differential test of the change log against the SQL an eval
// author's world writes: triggers writing other tables (INSTEAD OF
// triggers on views among them, and temporary triggers on a store's
// tables), foreign keys that cascade and set NULL, REPLACE deleting the
// rows it conflicts with, UPSERT, WITHOUT ROWID, composite and rowid-alias
// keys, tables keyed by rowid, VIRTUAL and STORED generated columns,
// STRICT tables; blobs, integers at 2^63, reals at their edges (-0.0,
// 1e308, infinities; NaN, which SQLite stores as NULL), text holding NUL
// and bytes that are not UTF-8, in keys too; keys changed by UPDATE,
// DELETE without WHERE, DROP TABLE, CREATE TABLE ... AS SELECT, ALTER TABLE
// ADD, DROP and RENAME COLUMN and RENAME TO, temporary tables shadowing a
// store's, savepoints rolled back in part, deferred foreign keys that
// fail a commit, statements on the raw connection, and tools that fail
// after writing. Calls run on instances started from a frozen fixture,
// whose connections are parked and rebound between calls. Each call's
// records must chain, row by row, from a full read of every table before
// the call to one after it; after each call the inspection view must
// read exactly what each store's own connection reads; and a call, a
// statement or a nested call may fail only as its generator means it
// to (a tool failing by design, SQL that SQLite refuses by construction,
// a capture refusal the call's own statements cause: see sqlfRefusal).

// sqlfHost is the host world: its tool "run" runs ops (see sqlfRun), and
// it adds a world of its own as "kv", whose tool "exec" runs statements.
var sqlfHost = func() *env.World {
	child := env.NewWorld(env.WorldSpec{Name: "sqlfkv", Version: "1.0.0", Schema: `
CREATE TABLE p (id TEXT NOT NULL PRIMARY KEY, v INTEGER);
CREATE TABLE e (id INTEGER PRIMARY KEY, pid TEXT REFERENCES p (id) ON DELETE CASCADE ON UPDATE CASCADE, n REAL);
CREATE TABLE f (id INTEGER PRIMARY KEY, pid TEXT REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED);
CREATE TABLE q (a INTEGER NOT NULL, b TEXT NOT NULL, v, PRIMARY KEY (a, b)) WITHOUT ROWID;
CREATE TRIGGER p_up AFTER UPDATE ON p BEGIN INSERT OR REPLACE INTO q VALUES (length(NEW.id), NEW.id, NEW.v); END;
CREATE TRIGGER q_del AFTER DELETE ON q BEGIN UPDATE e SET n = -0.0 WHERE pid = OLD.b; END;`})
	env.Tool(child, "exec", "Run statements, then fail when asked.", func(c *env.Ctx, in sqlfArgs) (any, error) {
		for _, op := range in.Ops {
			if _, err := c.DB.Exec(op); err != nil {
				sqlfNoteError("kv", op, err)
			}
		}
		if in.Fail {
			return nil, errSqlfExec
		}
		return nil, nil
	})
	host := env.NewWorld(env.WorldSpec{Name: "sqlfhost", Version: "1.0.0", Schema: `
CREATE TABLE p (id INTEGER PRIMARY KEY, u TEXT UNIQUE, n INTEGER, r REAL,
  g INTEGER GENERATED ALWAYS AS (n * 2) VIRTUAL,
  s TEXT GENERATED ALWAYS AS (u || '/' || n) STORED);
CREATE TABLE c (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p (id) ON DELETE CASCADE ON UPDATE CASCADE, v TEXT,
  g TEXT GENERATED ALWAYS AS ('p' || pid) STORED);
CREATE TABLE d (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p (id) ON DELETE SET NULL ON UPDATE SET NULL, v BLOB);
CREATE TABLE w (k TEXT NOT NULL, j INTEGER NOT NULL, v ANY, PRIMARY KEY (k, j)) STRICT, WITHOUT ROWID;
CREATE TABLE ck (a TEXT NOT NULL, b INTEGER NOT NULL, v UNIQUE, PRIMARY KEY (a, b));
CREATE TABLE nk (a INTEGER, b TEXT, c);
CREATE UNIQUE INDEX nk_b ON nk (b) WHERE b > 'k';
CREATE TABLE st (id INTEGER PRIMARY KEY, i INTEGER, f REAL, t TEXT, b BLOB, a ANY) STRICT;
CREATE TABLE tk (k TEXT NOT NULL PRIMARY KEY, v);
CREATE TABLE rk (k REAL NOT NULL PRIMARY KEY, v) WITHOUT ROWID;
CREATE TABLE au (id INTEGER PRIMARY KEY, what TEXT);
CREATE TRIGGER p_ins AFTER INSERT ON p BEGIN INSERT INTO au (what) VALUES ('ins ' || NEW.id); END;
CREATE TRIGGER p_del BEFORE DELETE ON p BEGIN INSERT INTO au (what) VALUES ('del ' || OLD.id); UPDATE w SET v = OLD.id WHERE k = 'last'; END;
CREATE TRIGGER p_up AFTER UPDATE OF n ON p WHEN NEW.n = 3 BEGIN INSERT OR REPLACE INTO w VALUES ('three', NEW.id, NEW.u); END;
CREATE TRIGGER w_ins AFTER INSERT ON w BEGIN INSERT INTO nk VALUES (NEW.j, NEW.k, NEW.v); END;
CREATE VIEW pv AS SELECT id, u, n FROM p;
CREATE TRIGGER pv_ins INSTEAD OF INSERT ON pv BEGIN INSERT OR REPLACE INTO p (id, u, n) VALUES (NEW.id, NEW.u, NEW.n); INSERT INTO au (what) VALUES ('view ' || NEW.id); END;
CREATE TRIGGER pv_up INSTEAD OF UPDATE ON pv BEGIN UPDATE p SET id = NEW.id, u = NEW.u, n = NEW.n WHERE id = OLD.id; END;
CREATE TRIGGER pv_del INSTEAD OF DELETE ON pv BEGIN DELETE FROM p WHERE id = OLD.id; DELETE FROM w WHERE j = OLD.id; END;`})
	host.AddWorld(child, env.Name("kv"))
	env.Tool(host, "run", "Run ops.", func(c *env.Ctx, in sqlfArgs) (any, error) {
		var l sqlfLevel
		err := sqlfRun(c, in.Ops, &l, 0)
		if err == nil {
			sqlfDone = append(sqlfDone, l.ddl...)
		}
		sqlfReturned = err
		return nil, err
	})
	return host
}()

type sqlfArgs struct {
	Ops  []string `json:"ops"`
	Fail bool     `json:"fail,omitempty"`
}

// sqlfDone holds the renames and column drops the host's frame committed
// in the call running (see sqlfDDL).
var sqlfDone []sqlfDDL

// sqlfCreated holds the host's tables a CREATE TABLE or DROP TABLE that
// ran in the call running named, whether it was rolled back or not.
var sqlfCreated map[string]bool

// sqlfRan holds the statements the host's tool ran on its store in the
// call running, in order, and the rollbacks of its DB.Transactions.
var sqlfRan []sqlfStmt

// sqlfReturned is the error the host's tool returned in the call running.
var sqlfReturned error

// sqlfStmtErrs holds the errors of statements and nested calls, in the
// call running, that no statement's construction explains (see
// sqlfNoteError).
var sqlfStmtErrs []string

// The errors the ops fail with by design: "fail", "txfail" and
// "callfail".
var (
	errSqlfFail   = errors.New("run fails")
	errSqlfTxFail = errors.New("txfail fails")
	errSqlfExec   = errors.New("exec fails")
)

// sqlfStmt is a statement the host's tool ran (q, on the raw connection
// or through Exec, at a depth of DB.Transactions, and whether it
// succeeded), or the rollback of a DB.Transaction (q empty).
type sqlfStmt struct {
	q     string
	raw   bool
	depth int
	ok    bool
}

// sqlfNoteError keeps in sqlfStmtErrs the error of a statement or nested
// call on world unless the statement's construction explains it: SQLite
// refusing it (a constraint, a name that is not there), the store
// refusing transaction control or a savepoint of another frame, or a
// tool's designed failure; not a failure of the files, nor a busy or
// interrupted statement. The one refusal of the change capture a
// statement reports is of a rename (of a table, or a column of one, whose
// rows the call wrote), as it is prepared: with an error naming the
// table, or SQLite's "not authorized" on the raw connection. The others
// are reported when the capture ends.
func sqlfNoteError(world, q string, err error) {
	msg := err.Error()
	table, column, rename := sqlfRename(q)
	switch {
	case errors.Is(err, errSqlfExec), errors.Is(err, errSqlfTxFail), errors.Is(err, errSqlfFail):
		return
	case rename && strings.HasPrefix(q, "r:") && errors.Is(err, sqlite3.AUTH):
		return
	case rename && strings.Contains(msg, "change capture"):
		if m := sqlfRenameRefusedRe.FindStringSubmatch(msg); m != nil && m[2] == table && (m[1] != "") == column {
			return
		}
	case strings.Contains(msg, "change capture"):
	case errors.Is(err, sqlitestore.ErrSavepointScope), errors.Is(err, sqlitestore.ErrTransactionControl):
		return
	case strings.Contains(msg, "FOREIGN KEY constraint failed") && world == "kv":
		return // f's key is deferred: a nested call's commit fails on it
	default:
		// SQLite's own refusals: SQL that names what is not there (or is
		// a view, or is malformed), a constraint, a type a STRICT column
		// refuses.
		code := -1
		var serr *sqlite3.Error
		var scode sqlite3.ErrorCode
		var sterr *sqlitestore.Error
		switch {
		case errors.As(err, &serr):
			code = int(serr.Code())
		case errors.As(err, &scode):
			code = int(scode)
		case errors.As(err, &sterr):
			code = sterr.Code
		}
		if code == int(sqlite3.ERROR) || code == int(sqlite3.CONSTRAINT) || code == int(sqlite3.MISMATCH) {
			return
		}
	}
	sqlfStmtErrs = append(sqlfStmtErrs, fmt.Sprintf("%s: %s: %v", world, q, err))
}

// sqlfRenameRefusedRe matches the refusal of a rename as it is prepared:
// of a column (1) of a table (2).
var sqlfRenameRefusedRe = regexp.MustCompile(`renaming (a column of )?table (\S+) refused: change capture`)

// sqlfRename returns the table an ALTER TABLE ... RENAME op (with or
// without its kind) names, and whether it renames a column.
func sqlfRename(op string) (table string, column, ok bool) {
	i := strings.Index(op, "ALTER TABLE ")
	if i < 0 {
		return "", false, false
	}
	f := strings.Fields(op[i:])
	if len(f) < 5 || f[3] != "RENAME" {
		return "", false, false
	}
	return f[2], f[4] == "COLUMN", true
}

// sqlfRefusalRe matches the capture refusals a call's statements can
// cause (see sqlfRefusal).
var sqlfRefusalRe = regexp.MustCompile(`change capture cannot (?:report the rows of table (\S+): (?:its column (\S+) was renamed to (\S+) while|it was renamed to (\S+) while|(a DROP TABLE on the raw connection)|(a nested capture dropped it)|a DROP COLUMN on the raw connection erased (?:its column (\S+)|(a column of it)) unseen|its column (\S+) (was dropped and added again), and the raw connection changed the schema after a rollback|its column (\S+) (was renamed or dropped) while)|key a change to (\S+): the table's columns may have changed)`)

// sqlfRefusal reports whether err, with which a call whose host tool ran
// the statements ran failed, is a refusal of the change capture those
// statements cause, as docs/eval.md describes them: a table renamed, or
// a column, while rows of it were written in the call (or a rollback
// undoing such a rename), by a statement that ran; a DROP TABLE of the
// table on the raw connection; a table a DB.Transaction dropped that the
// raw connection may have created again; a DROP COLUMN of the table on
// the raw connection and a rollback after it (its column named, or not
// when one was added again under a name the table has); a column a DROP
// COLUMN dropped and an ADD COLUMN added again, and a rollback on the raw
// connection followed by a schema change there; a column renamed or
// dropped when a RENAME COLUMN and a DROP COLUMN of its table both ran; a
// change the raw connection
// made to a table whose columns a later statement may have changed (one
// naming the table, or a rollback), before it was keyed. Every
// table of the schemas here can be keyed, so "cannot key the rows" is
// never one.
func sqlfRefusal(err error, ran []sqlfStmt) bool {
	m := sqlfRefusalRe.FindStringSubmatch(err.Error())
	if m == nil {
		return false
	}
	ranQ := func(raw bool, match func(s sqlfStmt) bool) int {
		for i, s := range ran {
			if s.q != "" && (!raw || s.raw) && match(s) {
				return i
			}
		}
		return -1
	}
	is := func(qs ...string) func(sqlfStmt) bool {
		return func(s sqlfStmt) bool { return s.ok && slices.Contains(qs, s.q) }
	}
	table := m[1]
	switch {
	case m[2] != "":
		return ranQ(false, is(
			fmt.Sprintf("ALTER TABLE %s RENAME COLUMN %s TO %s", table, m[2], m[3]),
			fmt.Sprintf("ALTER TABLE %s RENAME COLUMN %s TO %s", table, m[3], m[2]))) >= 0
	case m[4] != "":
		return ranQ(false, is(
			fmt.Sprintf("ALTER TABLE %s RENAME TO %s", table, m[4]),
			fmt.Sprintf("ALTER TABLE %s RENAME TO %s", m[4], table))) >= 0
	case m[5] != "":
		return ranQ(true, func(s sqlfStmt) bool { return sqlfDDLTable(s.q, "DROP") == table }) >= 0
	case m[6] != "":
		return ranQ(false, func(s sqlfStmt) bool { return s.ok && !s.raw && s.depth > 0 && sqlfDDLTable(s.q, "DROP") == table }) >= 0 &&
			ranQ(true, func(s sqlfStmt) bool { return sqlfDDLTable(s.q, "CREATE") == table }) >= 0
	case m[7] != "" || m[8] != "":
		drop := ranQ(true, is(fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", table, m[7])))
		if m[8] != "" { // prepared is enough: it is noted then
			drop = ranQ(true, func(s sqlfStmt) bool {
				return sqlfDDLTable(s.q, "ALTER") == table && strings.Contains(s.q, " DROP COLUMN ")
			})
		}
		return drop >= 0 && slices.ContainsFunc(ran[drop+1:], func(s sqlfStmt) bool {
			return s.q == "" || s.ok && strings.HasPrefix(s.q, "ROLLBACK TO ") // a DB.Transaction rolled back, or a savepoint
		})
	case m[10] != "":
		drop := ranQ(false, is(fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", table, m[9])))
		return drop >= 0 && slices.ContainsFunc(ran[drop+1:], func(s sqlfStmt) bool {
			return s.raw && s.ok && strings.HasPrefix(s.q, "ROLLBACK TO ")
		})
	case m[12] != "":
		alters := func(verb string) func(sqlfStmt) bool {
			return func(s sqlfStmt) bool { return sqlfDDLTable(s.q, "ALTER") == table && strings.Contains(s.q, verb) }
		}
		return ranQ(false, alters(" RENAME COLUMN ")) >= 0 && ranQ(false, alters(" DROP COLUMN ")) >= 0
	default:
		table = m[13]
		first := ranQ(true, func(sqlfStmt) bool { return true })
		if first < 0 {
			return false
		}
		for _, s := range ran[first+1:] {
			if s.q == "" || s.ok && strings.HasPrefix(s.q, "ROLLBACK TO ") ||
				sqlfDDLTable(s.q, "CREATE") == table || sqlfDDLTable(s.q, "DROP") == table || sqlfDDLTable(s.q, "ALTER") == table {
				return true
			}
		}
		return false
	}
}

// sqlfDDLTable returns the table of the main schema a CREATE TABLE, DROP
// TABLE or ALTER TABLE (verb) q names, "" when q is none of those or
// names a temporary table.
func sqlfDDLTable(q, verb string) string {
	f := strings.Fields(q)
	if len(f) < 3 || f[0] != verb || f[1] != "TABLE" {
		return ""
	}
	name := f[2]
	if name == "IF" {
		name = f[slices.Index(f, "EXISTS")+1]
	}
	if strings.HasPrefix(name, "temp.") {
		return ""
	}
	return strings.TrimPrefix(name, "main.")
}

// sqlfDDL is a table renamed (col empty), a column renamed (to set) or a
// column dropped (to empty) in the host's store.
type sqlfDDL struct{ table, col, to string }

// sqlfLevel is what one level of ops (the call's, or a DB.Transaction's)
// did to the host's tables that a full read cannot tell: its committed
// renames and drops, and the savepoints open in it, by where in ddl each
// began.
type sqlfLevel struct {
	ddl []sqlfDDL
	sps []sqlfSavepoint
}

type sqlfSavepoint struct {
	name string
	mark int
}

// sqlfRun runs ops in c: "h:SQL" on the host's store, "r:SQL" on its raw
// connection, "k:SQL" on kv's directly, "call:JSON" and "callfail:JSON"
// kv's tool exec with the statements in JSON (failing after them),
// "tx:JSON" and "txfail:JSON"
// the ops in JSON in a DB.Transaction on the host that commits or fails,
// "fail" fails the call there. Statements that fail are noted (see
// sqlfNoteError) and passed over; depth counts the DB.Transactions ops
// run in.
func sqlfRun(c *env.Ctx, ops []string, l *sqlfLevel, depth int) error {
	kv := c.Worlds.Get("kv")
	for _, op := range ops {
		kind, arg, _ := strings.Cut(op, ":")
		switch kind {
		case "h", "r":
			var err error
			if kind == "h" {
				_, err = c.DB.Exec(arg)
			} else {
				conn, cerr := c.DB.Conn()
				if cerr != nil {
					return cerr
				}
				err = conn.(*sqlite3.Conn).Exec(arg)
			}
			sqlfRan = append(sqlfRan, sqlfStmt{q: arg, raw: kind == "r", depth: depth, ok: err == nil})
			if err != nil {
				sqlfNoteError("main", op, err)
				continue
			}
			l.note(arg)
			sqlfNoteTable(arg)
		case "k":
			if _, err := kv.DB().Exec(arg); err != nil {
				sqlfNoteError("kv", op, err)
			}
		case "call", "callfail":
			var sub []string
			if err := json.Unmarshal([]byte(arg), &sub); err != nil {
				return err
			}
			if _, err := kv.Call("exec", sqlfArgs{Ops: sub, Fail: kind == "callfail"}); err != nil {
				sqlfNoteError("kv", op, err)
			}
		case "tx", "txfail":
			var sub []string
			if err := json.Unmarshal([]byte(arg), &sub); err != nil {
				return err
			}
			var inner sqlfLevel
			err := c.DB.Transaction(func() error {
				if err := sqlfRun(c, sub, &inner, depth+1); err != nil {
					return err
				}
				if kind == "txfail" {
					return errSqlfTxFail
				}
				return nil
			})
			if err != nil {
				sqlfRan = append(sqlfRan, sqlfStmt{depth: depth + 1})
				sqlfNoteError("main", kind, err)
				continue
			}
			l.ddl = append(l.ddl, inner.ddl...)
		case "fail":
			return errSqlfFail
		}
	}
	return nil
}

// sqlfNoteTable notes in sqlfCreated the table a CREATE TABLE or DROP
// TABLE that ran names.
func sqlfNoteTable(q string) {
	if f := strings.Fields(q); len(f) > 2 && (f[0] == "CREATE" || f[0] == "DROP") && f[1] == "TABLE" {
		name := f[2]
		if name == "IF" {
			name = f[slices.Index(f, "EXISTS")+1]
		}
		sqlfCreated[name] = true
	}
}

// note keeps what a host statement that ran did to l's renames, drops and
// savepoints.
func (l *sqlfLevel) note(q string) {
	f := strings.Fields(q)
	switch {
	case len(f) == 2 && f[0] == "SAVEPOINT":
		l.sps = append(l.sps, sqlfSavepoint{f[1], len(l.ddl)})
	case len(f) == 3 && f[0] == "ROLLBACK":
		if i := l.savepoint(f[2]); i >= 0 {
			l.ddl = l.ddl[:l.sps[i].mark]
			l.sps = l.sps[:i+1]
		}
	case len(f) == 2 && f[0] == "RELEASE":
		if i := l.savepoint(f[1]); i >= 0 {
			l.sps = l.sps[:i]
		}
	case len(f) == 6 && f[0] == "ALTER" && f[3] == "RENAME" && f[4] == "TO":
		l.ddl = append(l.ddl, sqlfDDL{table: f[2], to: f[5]})
	case len(f) == 8 && f[0] == "ALTER" && f[3] == "RENAME" && f[4] == "COLUMN":
		l.ddl = append(l.ddl, sqlfDDL{table: f[2], col: f[5], to: f[7]})
	case len(f) == 6 && f[0] == "ALTER" && f[3] == "DROP" && f[4] == "COLUMN":
		l.ddl = append(l.ddl, sqlfDDL{table: f[2], col: f[5]})
	}
}

// savepoint returns the index of the innermost open savepoint of l named
// name, or -1.
func (l *sqlfLevel) savepoint(name string) int {
	for i := len(l.sps) - 1; i >= 0; i-- {
		if strings.EqualFold(l.sps[i].name, name) {
			return i
		}
	}
	return -1
}

// sqlfValues are the values statements write.
var sqlfValues = []string{
	"0", "1", "2", "3", "-1", "1.0", "2.5", "-0.0", "0.0", "'a'", "'A'", "'1'", "NULL",
	"x'61'", "x''", "x'00ff'", "randomblob(3)",
	"9223372036854775807", "-9223372036854775808", "9223372036854775806", "9223372036854775808",
	"1e308", "-1e308", "(1e308 * 10)", "(-1e308 * 10)", "(1e308 * 10 - 1e308 * 10)", "4.9e-324",
	"('a' || char(0) || 'b')", "char(0)", "''", "CAST(x'ff' AS TEXT)", "CAST(x'61ff00c3' AS TEXT)", "CAST(x'c328' AS TEXT)",
}

// sqlfInts, sqlfReals and sqlfBlobs are values of one type, for a STRICT
// table's typed columns.
var (
	sqlfInts  = []string{"0", "-1", "9223372036854775807", "-9223372036854775808", "NULL", "'7'"}
	sqlfReals = []string{"0.0", "-0.0", "1e308", "-1e308", "(1e308 * 10)", "(-1e308 * 10)", "(1e308 * 10 - 1e308 * 10)", "4.9e-324", "3", "-2.5"}
	sqlfBlobs = []string{"x''", "x'00'", "x'ff00fe'", "randomblob(4)", "NULL", "zeroblob(3)"}
)

// sqlfHostStatement returns a random statement on the host's store.
func sqlfHostStatement(r *rand.Rand) string {
	v := func() string { return sqlfValues[r.IntN(len(sqlfValues))] }
	id := func() int { return 1 + r.IntN(4) }
	pick := func(vs []string) string { return vs[r.IntN(len(vs))] }
	text := func() string {
		return []string{"'a'", "'b'", "'last'", "'three'", "('k' || char(0))", "CAST(x'ff' AS TEXT)", "CAST(x'fe61' AS TEXT)"}[r.IntN(7)]
	}
	tab := func() string {
		return []string{"p", "c", "d", "w", "ck", "nk", "st", "tk", "rk", "au", "tk2", "nk2", "z"}[r.IntN(13)]
	}
	switch r.IntN(52) {
	case 0, 1:
		return fmt.Sprintf("INSERT INTO p (id, u, n, r) VALUES (%d, %s, %s, %s)", id(), text(), v(), v())
	case 2:
		return fmt.Sprintf("INSERT OR REPLACE INTO p (id, u, n) VALUES (%d, %s, %d)", id(), text(), r.IntN(5))
	case 3:
		return fmt.Sprintf("REPLACE INTO p (u, n, r) VALUES (%s, %s, %s)", text(), v(), v())
	case 4:
		return fmt.Sprintf("INSERT INTO p (id, u, n) VALUES (%d, %s, %d) ON CONFLICT (id) DO UPDATE SET n = excluded.n, r = %s", id(), text(), r.IntN(5), v())
	case 5:
		return fmt.Sprintf("INSERT INTO p (id, u, n) VALUES (%d, %s, 1) ON CONFLICT (u) DO UPDATE SET id = excluded.id + 10 ON CONFLICT DO NOTHING", id(), text())
	case 6:
		return fmt.Sprintf("UPDATE p SET n = %d WHERE id = %d", r.IntN(5), id())
	case 7:
		return fmt.Sprintf("UPDATE p SET id = id + %d WHERE id = %d", 1+r.IntN(10), id())
	case 8:
		return fmt.Sprintf("DELETE FROM p WHERE id = %d", id())
	case 9:
		return "DELETE FROM p"
	case 10:
		return fmt.Sprintf("INSERT INTO c (pid, v) SELECT id, %s FROM p ORDER BY id LIMIT 2", v())
	case 11:
		return fmt.Sprintf("INSERT OR REPLACE INTO d (id, pid, v) SELECT %d, id, %s FROM p WHERE id >= %d LIMIT 1", id(), v(), id())
	case 12:
		return fmt.Sprintf("INSERT INTO pv VALUES (%d, %s, %d)", id(), text(), r.IntN(5))
	case 13:
		return fmt.Sprintf("UPDATE pv SET id = %d, n = 3 WHERE id = %d", id(), id())
	case 14:
		return fmt.Sprintf("DELETE FROM pv WHERE id = %d", id())
	case 15:
		return fmt.Sprintf("INSERT INTO w VALUES (%s, %d, %s) ON CONFLICT DO UPDATE SET v = excluded.v, j = j + 1", text(), id(), v())
	case 16:
		return fmt.Sprintf("UPDATE w SET j = j + %d WHERE k = %s", 1+r.IntN(3), text())
	case 17:
		return "DELETE FROM w"
	case 18:
		return fmt.Sprintf("INSERT OR REPLACE INTO ck VALUES (%s, %d, %s)", text(), id(), v())
	case 19:
		return fmt.Sprintf("UPDATE ck SET a = a || 'x', v = %s WHERE b = %d", v(), id())
	case 20:
		return fmt.Sprintf("INSERT INTO nk VALUES (%s, %s, %s)", v(), v(), v())
	case 21:
		return fmt.Sprintf("UPDATE nk SET rowid = rowid + %d WHERE a IS %s", 1+r.IntN(3), v())
	case 22:
		return "DELETE FROM nk"
	case 23:
		return fmt.Sprintf("INSERT OR REPLACE INTO st (id, i, f, t, b, a) VALUES (%d, %s, %s, %s, %s, %s)", id(), pick(sqlfInts), pick(sqlfReals), text(), pick(sqlfBlobs), v())
	case 24:
		return fmt.Sprintf("UPDATE st SET f = %s, a = %s, i = %s WHERE id = %d", pick(sqlfReals), v(), pick(sqlfInts), id())
	case 25:
		return fmt.Sprintf("INSERT OR REPLACE INTO tk VALUES (%s, %s)", v(), v())
	case 26:
		return fmt.Sprintf("UPDATE tk SET k = k || char(0) WHERE v IS %s", v())
	case 27:
		return fmt.Sprintf("INSERT OR REPLACE INTO rk VALUES (%s, %s)", v(), v())
	case 28:
		return fmt.Sprintf("UPDATE rk SET k = -k, v = %s WHERE k > %s", v(), pick(sqlfReals))
	case 29:
		return []string{"SAVEPOINT a", "SAVEPOINT b"}[r.IntN(2)]
	case 30:
		return []string{"ROLLBACK TO a", "ROLLBACK TO b"}[r.IntN(2)]
	case 31:
		return []string{"RELEASE a", "RELEASE b"}[r.IntN(2)]
	case 32:
		return fmt.Sprintf("DROP TABLE %s", []string{"nk", "tk", "ck", "z", "st", "p", "d"}[r.IntN(7)])
	case 33:
		return []string{
			"CREATE TABLE IF NOT EXISTS nk (a INTEGER, b TEXT, c)",
			"CREATE TABLE IF NOT EXISTS nk (a INTEGER NOT NULL PRIMARY KEY, b TEXT, c)",
			"CREATE TABLE IF NOT EXISTS tk (k TEXT NOT NULL PRIMARY KEY, v)",
			"CREATE TABLE IF NOT EXISTS tk (k TEXT PRIMARY KEY, v, x INTEGER DEFAULT 5) WITHOUT ROWID",
			"CREATE TABLE IF NOT EXISTS ck (a TEXT NOT NULL, b INTEGER NOT NULL, v, PRIMARY KEY (a, b))",
			"CREATE TABLE IF NOT EXISTS st (id INTEGER PRIMARY KEY, i INTEGER, f REAL, t TEXT, b BLOB, a ANY) STRICT",
			"CREATE TABLE IF NOT EXISTS p (id INTEGER PRIMARY KEY, u TEXT UNIQUE, n INTEGER, r REAL)",
			"CREATE TABLE IF NOT EXISTS d (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p (id) ON DELETE SET NULL ON UPDATE SET NULL, v BLOB)",
		}[r.IntN(8)]
	case 34:
		return fmt.Sprintf("CREATE TABLE IF NOT EXISTS z AS SELECT * FROM %s", tab())
	case 35:
		return fmt.Sprintf("ALTER TABLE %s ADD COLUMN x %s", tab(), pick([]string{"INTEGER", "TEXT DEFAULT 'd'", "REAL DEFAULT 3", "BLOB DEFAULT x'00'", "AS (1) VIRTUAL",
			"DEFAULT -0.0", "NUMERIC DEFAULT 1.0", "TEXT DEFAULT 1.5", "DEFAULT 9223372036854775808", "INTEGER NOT NULL DEFAULT -9223372036854775808", "REAL DEFAULT -0.0"}))
	case 36:
		return fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", tab(), []string{"x", "v", "c", "r", "t"}[r.IntN(5)])
	case 37:
		return []string{"ALTER TABLE tk RENAME TO tk2", "ALTER TABLE tk2 RENAME TO tk", "ALTER TABLE nk RENAME TO nk2", "ALTER TABLE nk2 RENAME TO nk"}[r.IntN(4)]
	case 38:
		return []string{"ALTER TABLE ck RENAME COLUMN v TO v2", "ALTER TABLE ck RENAME COLUMN v2 TO v", "ALTER TABLE nk RENAME COLUMN c TO c2", "ALTER TABLE nk RENAME COLUMN c2 TO c"}[r.IntN(4)]
	case 39:
		return []string{
			"CREATE TEMP TABLE IF NOT EXISTS tk (k TEXT PRIMARY KEY, v)",
			"CREATE TEMP TABLE IF NOT EXISTS w (k, j, v)",
			"CREATE TEMP TABLE IF NOT EXISTS p AS SELECT * FROM main.p",
			"DROP TABLE IF EXISTS temp.tk",
			"DROP TABLE IF EXISTS temp.w",
			"DROP TABLE IF EXISTS temp.p",
		}[r.IntN(6)]
	case 40:
		return []string{
			"CREATE TEMP TRIGGER IF NOT EXISTS tt_nk AFTER INSERT ON main.nk BEGIN INSERT INTO au (what) VALUES ('temp ' || NEW.a); UPDATE ck SET v = NEW.c WHERE b = 1; END",
			"CREATE TEMP TRIGGER IF NOT EXISTS tt_p AFTER UPDATE ON main.p BEGIN DELETE FROM au; INSERT OR REPLACE INTO rk VALUES (NEW.id, NEW.u); END",
			"CREATE TEMP VIEW IF NOT EXISTS tv AS SELECT k, j, v FROM main.w",
			"CREATE TEMP TRIGGER IF NOT EXISTS tv_ins INSTEAD OF INSERT ON tv BEGIN INSERT OR REPLACE INTO w VALUES (NEW.k, NEW.j, NEW.v); DELETE FROM c WHERE pid = NEW.j; END",
			"DROP TRIGGER IF EXISTS temp.tt_p",
		}[r.IntN(5)]
	case 41:
		return fmt.Sprintf("INSERT INTO tv VALUES (%s, %d, %s)", text(), id(), v())
	case 42:
		return fmt.Sprintf("INSERT INTO tk VALUES (%s, %s)", text(), v())
	case 43:
		return fmt.Sprintf("INSERT INTO %s SELECT * FROM %s", tab(), tab())
	case 44:
		return fmt.Sprintf("DELETE FROM %s", tab())
	case 45:
		return fmt.Sprintf("UPDATE %s SET rowid = -rowid WHERE rowid = %d", tab(), id())
	case 46:
		return []string{
			"CREATE TRIGGER IF NOT EXISTS ck_del AFTER DELETE ON ck BEGIN INSERT INTO au (what) VALUES ('ck ' || OLD.a); END",
			"CREATE TRIGGER IF NOT EXISTS st_up AFTER UPDATE ON st BEGIN UPDATE d SET v = NEW.b WHERE id = NEW.id; END",
			"DROP TRIGGER IF EXISTS ck_del",
		}[r.IntN(3)]
	case 47:
		return fmt.Sprintf("UPDATE OR REPLACE p SET u = %s WHERE id = %d", text(), id())
	case 48:
		return fmt.Sprintf("INSERT INTO nk (rowid, a, b, c) VALUES (%s, %s, %s, %s)", []string{"1", "2", "9223372036854775807", "-9223372036854775808"}[r.IntN(4)], v(), v(), v())
	case 49:
		return fmt.Sprintf("INSERT INTO p (id, u, n, r) VALUES (%s, 'big', 1, %s)", []string{"9223372036854775807", "-9223372036854775808"}[r.IntN(2)], v())
	case 50:
		return fmt.Sprintf("UPDATE st SET t = t || %s, b = CAST(b || %s AS BLOB)", text(), v())
	default:
		return fmt.Sprintf("INSERT INTO w VALUES (%s, %d, %s) RETURNING *", text(), id(), v())
	}
}

// sqlfChildStatement returns a random statement on kv's store.
func sqlfChildStatement(r *rand.Rand) string {
	v := func() string { return sqlfValues[r.IntN(len(sqlfValues))] }
	id := func() string {
		return []string{"'a'", "'b'", "'c'", "CAST(x'ff' AS TEXT)", "('a' || char(0))"}[r.IntN(5)]
	}
	switch r.IntN(18) {
	case 16:
		return fmt.Sprintf("INSERT INTO f (pid) VALUES (%s)", id())
	case 17:
		return fmt.Sprintf("DELETE FROM f WHERE pid = %s", id())
	case 0, 1:
		return fmt.Sprintf("INSERT OR REPLACE INTO p VALUES (%s, %s)", id(), v())
	case 2:
		return fmt.Sprintf("UPDATE p SET v = %s WHERE id = %s", v(), id())
	case 3:
		return fmt.Sprintf("UPDATE p SET id = id || 'x' WHERE id = %s", id())
	case 4:
		return fmt.Sprintf("DELETE FROM p WHERE id = %s", id())
	case 5:
		return fmt.Sprintf("INSERT INTO e (pid, n) VALUES (%s, %s)", id(), v())
	case 6:
		return fmt.Sprintf("INSERT INTO q VALUES (%d, %s, %s) ON CONFLICT DO UPDATE SET v = excluded.v", r.IntN(3), id(), v())
	case 7:
		return "DELETE FROM q"
	case 8:
		return "DELETE FROM p"
	case 9:
		return []string{"SAVEPOINT a", "ROLLBACK TO a", "RELEASE a"}[r.IntN(3)]
	case 10:
		return "CREATE TABLE IF NOT EXISTS kz AS SELECT id, v FROM p"
	case 11:
		return "DROP TABLE IF EXISTS kz"
	case 12:
		return []string{"ALTER TABLE q ADD COLUMN z INTEGER DEFAULT 5", "ALTER TABLE q DROP COLUMN z"}[r.IntN(2)]
	case 13:
		return fmt.Sprintf("UPDATE e SET n = %s", v())
	case 14:
		return "CREATE TEMP TABLE IF NOT EXISTS p (id, v)"
	default:
		return "DROP TABLE IF EXISTS temp.p"
	}
}

// sqlfOps returns random ops, depth levels of nesting at most.
func sqlfOps(r *rand.Rand, depth int) []string {
	ops := []string{}
	for range 1 + r.IntN(8) {
		switch k := r.IntN(22); {
		case k < 11:
			ops = append(ops, "h:"+sqlfHostStatement(r))
		case k < 13:
			if q := sqlfHostStatement(r); !strings.Contains(q, "SAVEPOINT") && !strings.Contains(q, "ROLLBACK") && !strings.Contains(q, "RELEASE") {
				ops = append(ops, "r:"+q) // savepoints on the raw connection are the world's own
			}
		case k < 14:
			// A table dropped through Exec, then one created on the raw
			// connection, which SQLite may give the dropped one's root
			// page.
			ops = append(ops, fmt.Sprintf("h:DROP TABLE %s", []string{"nk", "tk", "ck", "z", "st", "d", "tk2", "nk2"}[r.IntN(8)]),
				fmt.Sprintf("r:CREATE TABLE IF NOT EXISTS %s AS SELECT * FROM %s", []string{"z", "tk2", "nk2"}[r.IntN(3)], []string{"p", "w", "au", "c"}[r.IntN(4)]))
		case k < 17:
			ops = append(ops, "k:"+sqlfChildStatement(r))
		case k < 19:
			var sub []string
			for range 1 + r.IntN(4) {
				sub = append(sub, sqlfChildStatement(r))
			}
			b, _ := json.Marshal(sub)
			ops = append(ops, []string{"call:", "callfail:"}[r.IntN(2)]+string(b))
		case k < 21:
			if depth > 0 {
				b, _ := json.Marshal(sqlfOps(r, depth-1))
				ops = append(ops, []string{"tx:", "txfail:"}[r.IntN(2)]+string(b))
			}
		default:
			if r.IntN(3) == 0 {
				ops = append(ops, "fail")
			}
		}
	}
	return ops
}

// sqlfTable is one table of a full read: its key columns, and its rows.
type sqlfTable struct {
	key  []string
	rows []sqlfRow
}

// sqlfRow is a row of a full read: its key, by the key's columns (or the
// name its rowid is read by), and its stored columns.
type sqlfRow struct {
	key, vals map[string]any
}

// sqlfSnapshot is a full read of every table of every store, by world and
// table.
type sqlfSnapshot map[string]map[string]*sqlfTable

// sqlfRead reads every table of one store with query, which runs SQL on
// it and returns its columns and rows; schema names the store in that SQL.
func sqlfRead(query func(sql string) ([]string, [][]any, error), schema string) (map[string]*sqlfTable, error) {
	// Every table's columns in one read: a table, then its columns in order.
	_, cols, err := query(fmt.Sprintf(`SELECT l.name AS tbl, x.name AS col, x.pk AS pk, x.hidden AS hidden FROM pragma_table_list AS l, pragma_table_xinfo(l.name, l.schema) AS x WHERE l.schema = '%s' AND l.type = 'table' AND l.name NOT LIKE 'sqlite\_%%' ESCAPE '\' ORDER BY l.name, x.cid`, schema))
	if err != nil {
		return nil, err
	}
	out := map[string]*sqlfTable{}
	for len(cols) > 0 {
		name := cols[0][0].(string)
		n := 1
		for n < len(cols) && cols[n][0].(string) == name {
			n++
		}
		var sel, all []string
		pk := map[int64]string{}
		for _, c := range cols[:n] {
			c = c[1:]
			all = append(all, c[0].(string))
			if c[2].(int64) == 2 {
				continue // VIRTUAL: not stored
			}
			sel = append(sel, `"`+c[0].(string)+`"`)
			if p := c[1].(int64); p > 0 {
				pk[p] = c[0].(string)
			}
		}
		cols = cols[n:]
		tab := &sqlfTable{}
		for i := int64(1); i <= int64(len(pk)); i++ {
			tab.key = append(tab.key, pk[i])
		}
		if len(tab.key) == 0 {
			for _, n := range []string{"rowid", "_rowid_", "oid"} {
				if !slices.ContainsFunc(all, func(c string) bool { return strings.EqualFold(c, n) }) {
					tab.key = []string{n}
					sel = append(sel, n+" AS key__")
					break
				}
			}
		}
		names, rows, err := query(fmt.Sprintf(`SELECT %s FROM %s."%s"`, strings.Join(sel, ", "), schema, name))
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			r := sqlfRow{key: map[string]any{}, vals: map[string]any{}}
			for i, n := range names {
				if n == "key__" {
					r.key[tab.key[0]] = row[i]
					continue
				}
				r.vals[n] = row[i]
				if slices.Contains(tab.key, n) {
					r.key[n] = row[i]
				}
			}
			tab.rows = append(tab.rows, r)
		}
		out[name] = tab
	}
	return out, nil
}

// sqlfKey encodes a key, each value with its type and, for a real, its
// bits.
func sqlfKey(key map[string]any) string {
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(key)) {
		fmt.Fprintf(&b, "%s=%s|", n, sqlfValue(key[n]))
	}
	return b.String()
}

// sqlfValue prints a value with its type, a real by its bits.
func sqlfValue(v any) string {
	if f, ok := v.(float64); ok {
		return fmt.Sprintf("f%x(%v)", math.Float64bits(f), f)
	}
	if b, ok := v.([]byte); ok {
		return fmt.Sprintf("blob:%x", b)
	}
	return fmt.Sprintf("%T:%q", v, fmt.Sprint(v))
}

// sqlfSame reports whether two rows hold the same values on the columns
// both have.
func sqlfSame(a, b map[string]any) bool {
	for n, v := range a {
		if w, ok := b[n]; ok && sqlfValue(v) != sqlfValue(w) {
			return false
		}
	}
	return true
}

// sqlfSnapshotView reads the stores of worlds, by their paths, through the
// inspection view.
func sqlfSnapshotView(t *testing.T, inst *composition.Instance, worlds ...string) sqlfSnapshot {
	t.Helper()
	snap := sqlfSnapshot{}
	for _, world := range worlds {
		tabs, err := sqlfRead(func(sql string) ([]string, [][]any, error) {
			rows, err := inst.Inspect().Query(context.Background(), sql)
			if err != nil {
				return nil, nil, err
			}
			return rows.Columns, rows.Values, nil
		}, composition.SchemaName(world))
		if err != nil {
			t.Fatalf("view: %v", err)
		}
		snap[world] = tabs
	}
	return snap
}

// sqlfSnapshotStores reads every store through its own connection, in a
// Bulk block; its main schema, as a temporary table may shadow a table.
func sqlfSnapshotStores(t *testing.T, inst *composition.Instance) sqlfSnapshot {
	t.Helper()
	snap := sqlfSnapshot{}
	err := inst.Bulk(context.Background(), func(c *env.Ctx) error {
		for _, world := range []string{"main", "kv"} {
			db := c.DB
			if world != "main" {
				db = c.Worlds.Get(world).DB()
			}
			tabs, err := sqlfRead(func(sql string) ([]string, [][]any, error) {
				rows, err := db.Rows(sql)
				if err != nil {
					return nil, nil, err
				}
				// Rows are maps: read the columns in the order the SELECT
				// names them.
				sel, _, _ := strings.Cut(strings.TrimPrefix(sql, "SELECT "), " FROM ")
				var names []string
				for _, n := range strings.Split(sel, ", ") {
					if _, as, ok := strings.Cut(n, " AS "); ok {
						n = as
					}
					names = append(names, strings.Trim(n, `"`))
				}
				var vals [][]any
				for _, row := range rows {
					var vs []any
					for _, n := range names {
						vs = append(vs, row[n])
					}
					vals = append(vals, vs)
				}
				return names, vals, nil
			}, "main")
			if err != nil {
				return err
			}
			snap[world] = tabs
		}
		return nil
	})
	if err != nil {
		t.Fatalf("stores: %v", err)
	}
	return snap
}

// sqlfEqual compares two full reads exactly: the view's and the stores'.
func sqlfEqual(view, stores sqlfSnapshot) error {
	a, b := sqlfFlat(view, nil, nil, nil), sqlfFlat(stores, nil, nil, nil)
	var errs []error
	for k, ra := range a {
		rb, ok := b[k]
		if !ok || len(ra) != len(rb) || !sqlfSame(ra, rb) {
			errs = append(errs, fmt.Errorf("%q: the view reads %v, the store %v", k, ra, rb))
		}
	}
	for k, rb := range b {
		if _, ok := a[k]; !ok {
			errs = append(errs, fmt.Errorf("%q: the view reads no row, the store %v", k, rb))
		}
	}
	for world, tabs := range view {
		for name := range tabs {
			if stores[world][name] == nil {
				errs = append(errs, fmt.Errorf("%s.%s: a table only the view reads", world, name))
			}
		}
		for name := range stores[world] {
			if tabs[name] == nil {
				errs = append(errs, fmt.Errorf("%s.%s: a table only the store reads", world, name))
			}
		}
	}
	return errors.Join(errs...)
}

// sqlfLineage names each of the host's tables a call renamed by the
// first of its names: a record names a table as it was called when the
// record's frame ended, before or after the rename, and the reads before
// and after the call name it as it was called then.
type sqlfLineage map[string]string

// newSqlfLineage returns the lineage of the table renames in ddl.
func newSqlfLineage(ddl []sqlfDDL) sqlfLineage {
	l := sqlfLineage{}
	for _, d := range ddl {
		if d.col == "" {
			l[d.to] = l.of(d.table)
		}
	}
	return l
}

// of returns the first name of the table called name.
func (l sqlfLineage) of(name string) string {
	if first, ok := l[name]; ok {
		return first
	}
	return name
}

// unclear returns the lineages of renamed tables whose rows cannot be
// told apart by name: one a CREATE TABLE or DROP TABLE of the call named,
// or of which a read holds two tables.
func (l sqlfLineage) unclear(created map[string]bool, reads ...sqlfSnapshot) map[string]bool {
	out := map[string]bool{}
	for name, first := range l {
		if created[name] || created[first] {
			out[first] = true
		}
	}
	for _, s := range reads {
		seen := map[string]bool{}
		for name := range s["main"] {
			first := l.of(name)
			if seen[first] {
				out[first] = true
			}
			seen[first] = true
		}
	}
	return out
}

// sqlfFlat returns a snapshot's rows by world, table and key, with the
// host's column renames and drops in ddl applied in order, so that each
// row is found under the names its records give it, and its renamed
// tables by their lineage's name. Tables of the lineages skip names are
// left out.
func sqlfFlat(s sqlfSnapshot, ddl []sqlfDDL, lin sqlfLineage, skip map[string]bool) map[string]map[string]any {
	main := map[string]*sqlfTable{}
	for name, tab := range s["main"] {
		t := &sqlfTable{key: slices.Clone(tab.key)}
		for _, r := range tab.rows {
			t.rows = append(t.rows, sqlfRow{maps.Clone(r.key), maps.Clone(r.vals)})
		}
		main[lin.of(name)] = t
	}
	for _, d := range ddl {
		t := main[lin.of(d.table)]
		if t == nil || d.col == "" {
			continue
		}
		for _, r := range t.rows {
			for _, m := range []map[string]any{r.vals, r.key} {
				if v, ok := m[d.col]; ok {
					delete(m, d.col)
					if d.to != "" {
						m[d.to] = v
					}
				}
			}
		}
	}
	out := map[string]map[string]any{}
	for world, tabs := range s {
		if world == "main" {
			tabs = main
		}
		for name, t := range tabs {
			if world == "main" && skip[name] {
				continue
			}
			for _, r := range t.rows {
				out[world+"\x00"+name+"\x00"+sqlfKey(r.key)] = r.vals
			}
		}
	}
	return out
}

// sqlfRecordKey is a record's row as sqlfFlat names it.
func sqlfRecordKey(r env.ChangeRecord, lin sqlfLineage) string {
	table := r.Table
	if r.World == "main" {
		table = lin.of(table)
	}
	return r.World + "\x00" + table + "\x00" + sqlfKey(r.Key)
}

// TestChangeLog_SQLFeatures runs the differential test of the change log
// against the SQL features an eval author's world uses (see sqlfHost) on
// random calls.
func TestChangeLog_SQLFeatures(t *testing.T) {
	n := 20
	if testing.Short() {
		n = 5
	}
	for seed := range uint64(n) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { sqlfSeed(t, seed) })
		if t.Failed() {
			return
		}
	}
}

// sqlfSeed runs the test on one seed: a fixture frozen from random rows,
// two instances started from it that share a pool of two connections (so
// their connections are parked and rebound between calls), and a dozen
// calls of random ops on one or the other.
func sqlfSeed(t *testing.T, seed uint64) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 7))
	fixtures := t.TempDir()
	base, err := composition.Open(ctx, sqlfHost, composition.Options{Dir: t.TempDir(), Seed: int64(seed)})
	if err != nil {
		t.Fatal(err)
	}
	err = base.Bulk(ctx, func(c *env.Ctx) error {
		for range 12 {
			if q := sqlfHostStatement(r); strings.HasPrefix(q, "INSERT") || strings.HasPrefix(q, "REPLACE") {
				c.DB.Exec(q)
			}
			if q := sqlfChildStatement(r); strings.HasPrefix(q, "INSERT") && !strings.HasPrefix(q, "INSERT INTO f ") {
				c.Worlds.Get("kv").DB().Exec(q)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := base.Freeze(ctx, "f", "Random rows.", composition.FreezeOptions{FixturesDir: fixtures}); err != nil {
		t.Fatal(err)
	}
	base.Close()
	pool := sqlitestore.NewPool(2)
	var insts [2]*composition.Instance
	var before [2]sqlfSnapshot
	for k := range insts {
		insts[k], err = composition.Open(ctx, sqlfHost, composition.Options{Dir: t.TempDir(), Seed: int64(seed), Fixture: "f", FixturesDir: fixtures, Pool: pool})
		if err != nil {
			t.Fatal(err)
		}
		defer insts[k].Close()
		before[k] = sqlfSnapshotView(t, insts[k], "main", "kv")
	}
	var calls []string
	defer func() {
		if t.Failed() {
			t.Logf("calls:\n%s", strings.Join(calls, "\n"))
		}
	}()
	for range 12 {
		k := r.IntN(2)
		inst := insts[k]
		if r.IntN(6) == 0 {
			inst.Release() // temporary tables and triggers go with the connection
			calls = append(calls, fmt.Sprintf("%d: Release", k))
		}
		b, _ := json.Marshal(sqlfArgs{Ops: sqlfOps(r, 2)})
		calls = append(calls, fmt.Sprintf("%d: %s", k, b))
		prev := len(inst.ChangeLog())
		sqlfDone, sqlfCreated, sqlfRan, sqlfReturned, sqlfStmtErrs = nil, map[string]bool{}, nil, nil, nil
		_, err := inst.CallJSON(ctx, "run", b)
		if err != nil {
			calls = append(calls, "  -> "+err.Error())
			sqlfDone = nil // the host's frame rolled back
		}
		// A call fails only as its ops mean it to: the tool failing by
		// design, or a capture refusal its statements cause. A statement
		// fails only as SQLite or the store refuses it by its
		// construction.
		if err != nil && !(errors.Is(err, errSqlfFail) && errors.Is(sqlfReturned, errSqlfFail)) && !(sqlfReturned == nil && sqlfRefusal(err, sqlfRan)) {
			t.Fatalf("call %s: a failure its statements do not cause: %v (the tool returned %v)", b, err, sqlfReturned)
		}
		if len(sqlfStmtErrs) > 0 {
			t.Fatalf("call %s: failures their statements do not cause:\n%s", b, strings.Join(sqlfStmtErrs, "\n"))
		}
		after := sqlfSnapshotView(t, inst, "main", "kv")
		if err := sqlfEqual(after, sqlfSnapshotStores(t, inst)); err != nil {
			t.Fatalf("call %s: the view and the stores differ:\n%v", b, err)
		}
		log := inst.ChangeLog()[prev:]
		lin := newSqlfLineage(sqlfDone)
		skip := lin.unclear(sqlfCreated, before[k], after)
		key := func(r env.ChangeRecord) string {
			if r.World == "main" && skip[lin.of(r.Table)] {
				return ""
			}
			return sqlfRecordKey(r, lin)
		}
		// Rows are compared on the columns both images have: a column
		// added or dropped changes no row.
		same := func(a, b map[string]any) bool { return (a == nil) == (b == nil) && sqlfSame(a, b) }
		if err := chainLog(sqlfFlat(before[k], sqlfDone, lin, skip), sqlfFlat(after, nil, lin, skip), log, key, same); err != nil {
			t.Fatalf("call %s:\n%v\nrecords:\n%s", b, err, formatLog(log))
		}
		before[k] = after
	}
}
