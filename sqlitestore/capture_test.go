package sqlitestore_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3"
	"github.com/seahaven/seahaven/sqlitestore"
)

// formatChanges renders changes one per line for comparison:
// "op table key before=… after=…", maps printed with sorted keys.
func formatChanges(changes []sqlitestore.Change) string {
	var b strings.Builder
	for _, c := range changes {
		fmt.Fprintf(&b, "%s %s %v", c.Op, c.Table, c.Key)
		if c.Before != nil {
			fmt.Fprintf(&b, " before=%v", c.Before)
		}
		if c.After != nil {
			fmt.Fprintf(&b, " after=%v", c.After)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// finishWant finishes c and checks what it returns: the error wantErr when
// it is not "", else the changes want (as formatChanges writes them).
func finishWant(t *testing.T, c *sqlitestore.Capture, want, wantErr string) {
	t.Helper()
	changes, err := c.Finish(context.Background())
	wantSteps(t, formatChanges(changes), err, want, wantErr)
}

// capture runs act inside a capture and returns the formatted changes.
func capture(t *testing.T, s *sqlitestore.Store, act func(t *testing.T, s *sqlitestore.Store)) string {
	t.Helper()
	c := s.StartCapture()
	act(t, s)
	changes, err := c.Finish(context.Background())
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	return formatChanges(changes)
}

// captureRows is capture through FinishRows: it checks each compact change's
// shape and formats the changes it converts to.
func captureRows(t *testing.T, s *sqlitestore.Store, act func(t *testing.T, s *sqlitestore.Store)) string {
	t.Helper()
	c := s.StartCapture()
	act(t, s)
	rows, err := c.FinishRows(context.Background())
	if err != nil {
		t.Fatalf("FinishRows: %v", err)
	}
	changes := make([]sqlitestore.Change, len(rows))
	for i, r := range rows {
		if len(r.KeyNames) != len(r.KeyValues) ||
			r.Before != nil && len(r.Before) != len(r.Names) ||
			r.After != nil && len(r.After) != len(r.Names) {
			t.Errorf("row change %d out of shape: %+v", i, r)
		}
		changes[i] = r.Change()
	}
	return formatChanges(changes)
}

// execAll returns an action running each statement in order.
func execAll(stmts ...string) func(*testing.T, *sqlitestore.Store) {
	return func(t *testing.T, s *sqlitestore.Store) {
		t.Helper()
		for _, q := range stmts {
			MustExec(t, s, q)
		}
	}
}

func lines(ls ...string) string {
	if len(ls) == 0 {
		return ""
	}
	return strings.Join(ls, "\n") + "\n"
}

func TestCapture_Cases(t *testing.T) {
	for _, tt := range []struct {
		name      string
		schema    string   // genesis schema
		setup     string   // script run before the capture
		untracked []string // Options.Untracked
		act       func(*testing.T, *sqlitestore.Store)
		want      string // formatted changes
	}{
		{
			name:   "InsertUpdateDelete",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`,
			setup:  `INSERT INTO t VALUES (1, 'a'), (2, 'b');`,
			act:    execAll(`INSERT INTO t VALUES (3, 'c')`, `UPDATE t SET v = 'A' WHERE id = 1`, `DELETE FROM t WHERE id = 2`),
			want: lines(
				"update t map[id:1] before=map[id:1 v:a] after=map[id:1 v:A]",
				"delete t map[id:2] before=map[id:2 v:b]",
				"insert t map[id:3] after=map[id:3 v:c]",
			),
		},
		{
			name:   "Strict",
			schema: `CREATE TABLE s (id TEXT PRIMARY KEY, n INTEGER NOT NULL, x ANY) STRICT;`,
			setup:  `INSERT INTO s VALUES ('a', 1, 1.5);`,
			act:    execAll(`UPDATE s SET n = 2, x = 'text' WHERE id = 'a'`, `INSERT INTO s VALUES ('b', 3, x'01')`),
			want: lines(
				"update s map[id:a] before=map[id:a n:1 x:1.5] after=map[id:a n:2 x:text]",
				"insert s map[id:b] after=map[id:b n:3 x:[1]]",
			),
		},
		{
			name:   "WithoutRowidKeyChange",
			schema: `CREATE TABLE child (pid INTEGER, k TEXT, v INTEGER, PRIMARY KEY (pid, k)) WITHOUT ROWID;`,
			setup:  `INSERT INTO child VALUES (1, 'x', 10), (1, 'y', 20);`,
			act:    execAll(`UPDATE child SET k = 'x2', v = 11 WHERE pid = 1 AND k = 'x'`, `UPDATE child SET v = 21 WHERE k = 'y'`),
			want: lines(
				"delete child map[k:x pid:1] before=map[k:x pid:1 v:10]",
				"insert child map[k:x2 pid:1] after=map[k:x2 pid:1 v:11]",
				"update child map[k:y pid:1] before=map[k:y pid:1 v:20] after=map[k:y pid:1 v:21]",
			),
		},
		{
			name:   "ReplaceTextKeyIsUpdate",
			schema: `CREATE TABLE t (id TEXT PRIMARY KEY NOT NULL, v INTEGER);`,
			setup:  `INSERT INTO t VALUES ('a', 1);`,
			act:    execAll(`REPLACE INTO t VALUES ('a', 2)`),
			want:   lines("update t map[id:a] before=map[id:a v:1] after=map[id:a v:2]"),
		},
		{
			name:   "ReplaceDeletesUniqueConflict",
			schema: `CREATE TABLE u (id INTEGER PRIMARY KEY, email TEXT UNIQUE, name TEXT);`,
			setup:  `INSERT INTO u VALUES (1, 'a@x', 'A');`,
			act:    execAll(`REPLACE INTO u VALUES (2, 'a@x', 'B')`),
			want: lines(
				"delete u map[id:1] before=map[email:a@x id:1 name:A]",
				"insert u map[id:2] after=map[email:a@x id:2 name:B]",
			),
		},
		{
			name: "ForeignKeyCascade",
			schema: `CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT);
				CREATE TABLE child (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES parent (id) ON DELETE CASCADE);`,
			setup: `INSERT INTO parent VALUES (1, 'p'), (2, 'q'); INSERT INTO child VALUES (10, 1), (11, 1), (12, 2);`,
			act:   execAll(`DELETE FROM parent WHERE id = 1`),
			want: lines(
				"delete child map[id:10] before=map[id:10 pid:1]",
				"delete child map[id:11] before=map[id:11 pid:1]",
				"delete parent map[id:1] before=map[id:1 name:p]",
			),
		},
		{
			name: "TriggerWrites",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);
				CREATE TABLE audit (id INTEGER PRIMARY KEY, msg TEXT);
				CREATE TRIGGER t_audit AFTER INSERT ON t BEGIN INSERT INTO audit (msg) VALUES ('new ' || NEW.id); END;`,
			act: execAll(`INSERT INTO t VALUES (7, 'x')`),
			want: lines(
				"insert audit map[id:1] after=map[id:1 msg:new 7]",
				"insert t map[id:7] after=map[id:7 v:x]",
			),
		},
		{
			name:   "UpsertDoUpdate",
			schema: `CREATE TABLE c (id TEXT PRIMARY KEY NOT NULL, n INTEGER);`,
			setup:  `INSERT INTO c VALUES ('a', 1);`,
			act:    execAll(`INSERT INTO c VALUES ('a', 1), ('b', 1) ON CONFLICT (id) DO UPDATE SET n = n + 1`),
			want: lines(
				"update c map[id:a] before=map[id:a n:1] after=map[id:a n:2]",
				"insert c map[id:b] after=map[id:b n:1]",
			),
		},
		{
			name:   "RollbackToSavepoint",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`,
			setup:  `INSERT INTO t VALUES (1, 'a');`,
			act: func(t *testing.T, s *sqlitestore.Store) {
				ctx := context.Background()
				outer, err := s.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				MustExec(t, s, `INSERT INTO t VALUES (2, 'kept')`)
				inner, err := s.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				MustExec(t, s, `INSERT INTO t VALUES (9, 'undone')`)
				MustExec(t, s, `UPDATE t SET v = 'undone' WHERE id = 1`)
				if err := inner.Rollback(); err != nil {
					t.Fatal(err)
				}
				if err := outer.Commit(); err != nil {
					t.Fatal(err)
				}
			},
			want: lines("insert t map[id:2] after=map[id:2 v:kept]"),
		},
		{
			name:   "FullRollback",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`,
			setup:  `INSERT INTO t VALUES (1, 'a'), (2, 'b');`,
			act: func(t *testing.T, s *sqlitestore.Store) {
				f, err := s.Begin(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				MustExec(t, s, `DELETE FROM t`)
				MustExec(t, s, `INSERT INTO t VALUES (3, 'c')`)
				if err := f.Rollback(); err != nil {
					t.Fatal(err)
				}
			},
			want: "",
		},
		{
			name:   "UpdatedTwiceIsOneUpdate",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`,
			setup:  `INSERT INTO t VALUES (1, 'a');`,
			act:    execAll(`UPDATE t SET v = 'b'`, `UPDATE t SET v = 'c'`),
			want:   lines("update t map[id:1] before=map[id:1 v:a] after=map[id:1 v:c]"),
		},
		{
			name:   "UpdatedBackIsNothing",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`,
			setup:  `INSERT INTO t VALUES (1, 'a');`,
			act:    execAll(`UPDATE t SET v = 'b'`, `UPDATE t SET v = 'a'`),
			want:   "",
		},
		{
			name:   "InsertedThenDeleted",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`,
			act:    execAll(`INSERT INTO t VALUES (1, 'a')`, `DELETE FROM t WHERE id = 1`),
			want:   "",
		},
		{
			name:      "Untracked",
			schema:    `CREATE TABLE t (id INTEGER PRIMARY KEY); CREATE TABLE Log (id INTEGER PRIMARY KEY, msg TEXT);`,
			untracked: []string{"log"},
			act:       execAll(`INSERT INTO Log (msg) VALUES ('x')`, `INSERT INTO t VALUES (1)`),
			want:      lines("insert t map[id:1] after=map[id:1]"),
		},
		{
			// SQLite folds the case of ASCII letters only: "É" is another
			// table than "é", and the Kelvin sign's "Kv" another than
			// "kv", and so is "ſqlite_x" (a long s) a table of the
			// world's, not SQLite's.
			name:      "UntrackedFoldsASCIIOnly",
			schema:    `CREATE TABLE "é" (id INTEGER PRIMARY KEY); CREATE TABLE "É" (id INTEGER PRIMARY KEY); CREATE TABLE kv (id INTEGER PRIMARY KEY); CREATE TABLE "Kv" (id INTEGER PRIMARY KEY); CREATE TABLE "ſqlite_x" (id INTEGER PRIMARY KEY);`,
			untracked: []string{"é", "KV"},
			act:       execAll(`INSERT INTO "é" VALUES (1)`, `INSERT INTO "É" VALUES (2)`, `INSERT INTO kv VALUES (3)`, `INSERT INTO "Kv" VALUES (4)`, `INSERT INTO "ſqlite_x" VALUES (5)`),
			want:      lines("insert É map[id:2] after=map[id:2]", "insert ſqlite_x map[id:5] after=map[id:5]", "insert Kv map[id:4] after=map[id:4]"),
		},
		{
			name: "RTreeShadowTables",
			schema: `CREATE VIRTUAL TABLE boxes USING rtree(id, minx, maxx); CREATE VIRTUAL TABLE shapes USING geopoly(label);
CREATE TABLE t (id INTEGER PRIMARY KEY);`,
			act: execAll(`INSERT INTO boxes VALUES (1, 0, 10)`, `INSERT INTO shapes (_shape, label) VALUES ('[[0,0],[1,0],[0,1],[0,0]]', 'a')`,
				`INSERT INTO t VALUES (1)`, `UPDATE boxes SET maxx = 20 WHERE id = 1`),
			want: lines("insert t map[id:1] after=map[id:1]"),
		},
		{
			name:   "FTS5ShadowTables",
			schema: `CREATE VIRTUAL TABLE docs USING fts5(body); CREATE TABLE t (id INTEGER PRIMARY KEY);`,
			act:    execAll(`INSERT INTO docs (body) VALUES ('hello world')`, `INSERT INTO t VALUES (1)`),
			want:   lines("insert t map[id:1] after=map[id:1]"),
		},
		{
			name:   "TempTable",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY);`,
			act:    execAll(`CREATE TEMP TABLE scratch (x)`, `INSERT INTO scratch VALUES (1)`, `INSERT INTO t VALUES (1)`),
			want:   lines("insert t map[id:1] after=map[id:1]"),
		},
		{
			name:   "NoPrimaryKeyKeysByRowid",
			schema: `CREATE TABLE n (a TEXT, b INTEGER);`,
			setup:  `INSERT INTO n VALUES ('x', 1);`,
			act:    execAll(`UPDATE n SET b = 2`, `INSERT INTO n VALUES ('y', 3)`),
			want: lines(
				"update n map[rowid:1] before=map[a:x b:1] after=map[a:x b:2]",
				"insert n map[rowid:2] after=map[a:y b:3]",
			),
		},
		{
			// A VIRTUAL generated column named rowid takes the name: the
			// key is read through _rowid_, and named so (WHERE rowid = 1
			// reads the column, 101).
			name:   "NoPrimaryKeyVirtualColumnNamedRowid",
			schema: `CREATE TABLE n (a INTEGER, rowid INTEGER GENERATED ALWAYS AS (a + 100) VIRTUAL);`,
			setup:  `INSERT INTO n (a) VALUES (1); INSERT INTO n (a) VALUES (2);`,
			act:    execAll(`UPDATE n SET a = 7 WHERE a = 1`),
			want:   lines("update n map[_rowid_:1] before=map[a:1] after=map[a:7]"),
		},
		{
			// A column named rowid (any case): the key is the row's id,
			// named _rowid_, not the column; with _rowid_ taken too, oid.
			name:   "NoPrimaryKeyColumnNamedRowid",
			schema: `CREATE TABLE n (ROWID TEXT, v INTEGER); CREATE TABLE m (rowid TEXT, _rowid_ TEXT);`,
			act:    execAll(`INSERT INTO n VALUES ('x', 1)`, `INSERT INTO m VALUES ('a', 'b')`),
			want: lines(
				"insert m map[oid:1] after=map[_rowid_:b rowid:a]",
				"insert n map[_rowid_:1] after=map[ROWID:x v:1]",
			),
		},
		{
			name:   "NoPrimaryKeyVirtualTextColumnNamedRowid",
			schema: `CREATE TABLE n (a INTEGER, rowid TEXT GENERATED ALWAYS AS ('x') VIRTUAL);`,
			setup:  `INSERT INTO n (a) VALUES (1); INSERT INTO n (a) VALUES (2);`,
			act:    execAll(`DROP TABLE n`),
			want: lines(
				"delete n map[_rowid_:1] before=map[a:1]",
				"delete n map[_rowid_:2] before=map[a:2]",
			),
		},
		{
			name:   "BlobsStayBytes",
			schema: `CREATE TABLE b (id BLOB PRIMARY KEY, data BLOB) STRICT, WITHOUT ROWID;`,
			setup:  `INSERT INTO b VALUES (x'01', x'00ff');`,
			act:    execAll(`UPDATE b SET data = x'ff00' WHERE id = x'01'`),
			want:   lines("update b map[id:[1]] before=map[data:[0 255] id:[1]] after=map[data:[255 0] id:[1]]"),
		},
		{
			name: "GeneratedColumns",
			schema: `CREATE TABLE g (id INTEGER PRIMARY KEY, a INTEGER,
				v INTEGER GENERATED ALWAYS AS (a * 2) VIRTUAL,
				s INTEGER GENERATED ALWAYS AS (a * 3) STORED);`,
			setup: `INSERT INTO g (id, a) VALUES (1, 1);`,
			act:   execAll(`UPDATE g SET a = 5`),
			want:  lines("update g map[id:1] before=map[a:1 id:1 s:3] after=map[a:5 id:1 s:15]"),
		},
		{
			name:   "TableCreatedDuringCapture",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY);`,
			act:    execAll(`CREATE TABLE fresh (k TEXT PRIMARY KEY NOT NULL, v INTEGER)`, `INSERT INTO fresh VALUES ('a', 1)`, `INSERT INTO t VALUES (1)`),
			want: lines(
				"insert fresh map[k:a] after=map[k:a v:1]",
				"insert t map[id:1] after=map[id:1]",
			),
		},
		{
			name: "DropTableErasesItsRows",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE w (k TEXT PRIMARY KEY NOT NULL, v INTEGER) WITHOUT ROWID;
				CREATE TABLE n (x TEXT); CREATE TABLE kept (id INTEGER PRIMARY KEY);`,
			setup:     `INSERT INTO t VALUES (1, 'a'), (2, 'b'); INSERT INTO w VALUES ('k', 1); INSERT INTO n VALUES ('x'); INSERT INTO kept VALUES (1);`,
			untracked: []string{"kept"},
			// The names as written, in another case; t's row 2 touched first.
			act: execAll(`UPDATE t SET v = 'B' WHERE id = 2`, `DROP TABLE T`, `DROP TABLE w`, `DROP TABLE IF EXISTS "N"`, `DROP TABLE kept`, `DROP TABLE IF EXISTS none`),
			want: lines(
				"delete n map[rowid:1] before=map[x:x]",
				"delete t map[id:1] before=map[id:1 v:a]",
				"delete t map[id:2] before=map[id:2 v:b]",
				"delete w map[k:k] before=map[k:k v:1]",
			),
		},
		{
			name:   "DropTableRolledBack",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`,
			setup:  `INSERT INTO t VALUES (1, 'a');`,
			act: func(t *testing.T, s *sqlitestore.Store) {
				f, err := s.Begin(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				execAll(`SAVEPOINT s`, `DROP TABLE t`, `ROLLBACK TO s`, `RELEASE s`)(t, s)
				if err := f.Commit(); err != nil {
					t.Fatal(err)
				}
			},
			want: "",
		},
		{
			// With foreign keys on, a DROP TABLE deletes the rows of a
			// parent table one by one, and fails when a child still
			// refers to one: the table stays, with its rows and columns.
			name: "DropTableRefusedByAForeignKey",
			schema: `CREATE TABLE p (id INTEGER PRIMARY KEY, v TEXT);
				CREATE TABLE c (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p (id));`,
			setup: `INSERT INTO p VALUES (1, 'a'), (2, 'b'); INSERT INTO c VALUES (1, 1);`,
			act: func(t *testing.T, s *sqlitestore.Store) {
				ctx := context.Background()
				MustExec(t, s, `UPDATE p SET v = 'B' WHERE id = 2`)
				if _, err := s.Exec(ctx, `DROP TABLE p`); err == nil || !strings.Contains(err.Error(), "FOREIGN KEY constraint failed") {
					t.Fatalf("DROP TABLE p: %v, want a FOREIGN KEY constraint failure", err)
				}
				if err := s.ExecScript(ctx, `UPDATE p SET v = 'A' WHERE id = 1; DROP TABLE p;`); err == nil || !strings.Contains(err.Error(), "FOREIGN KEY constraint failed") {
					t.Fatalf("DROP TABLE p in a script: %v, want a FOREIGN KEY constraint failure", err)
				}
			},
			want: lines(
				"update p map[id:1] before=map[id:1 v:a] after=map[id:1 v:A]",
				"update p map[id:2] before=map[id:2 v:b] after=map[id:2 v:B]",
			),
		},
		{
			name:   "DropAndCreateInAScript",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`,
			setup:  `INSERT INTO t VALUES (1, 'a'), (2, 'b');`,
			act: func(t *testing.T, s *sqlitestore.Store) {
				if err := s.ExecScript(context.Background(), `DROP TABLE t; CREATE TABLE t AS SELECT 1 AS id, 'c' AS v;`); err != nil {
					t.Fatal(err)
				}
			},
			// The new t has no primary key: its row is keyed by rowid, and
			// is not the old t's row 1 (equal keys keep their touch order).
			want: lines(
				"delete t map[id:1] before=map[id:1 v:a]",
				"insert t map[rowid:1] after=map[id:1 v:c]",
				"delete t map[id:2] before=map[id:2 v:b]",
			),
		},
		{
			name:   "CreateTableAsSelect",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`,
			setup:  `INSERT INTO t VALUES (1, 'a'), (2, 'b');`,
			act: execAll(`CREATE TABLE c AS SELECT id, v FROM t`, `CREATE TABLE IF NOT EXISTS C AS SELECT id, v FROM t`,
				`CREATE TABLE e (id INTEGER PRIMARY KEY)`, `CREATE TEMP TABLE tt AS SELECT * FROM t`),
			want: lines(
				"insert c map[rowid:1] after=map[id:1 v:a]",
				"insert c map[rowid:2] after=map[id:2 v:b]",
			),
		},
		{
			name:   "ColumnAddedDuringCapture",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`,
			setup:  `INSERT INTO t VALUES (1, 'a');`,
			act:    execAll(`ALTER TABLE t ADD COLUMN w TEXT`, `UPDATE t SET w = 'new'`),
			want:   lines("update t map[id:1] before=map[id:1 v:a w:<nil>] after=map[id:1 v:a w:new]"),
		},
		{
			// What RowChange.Before and docs/eval.md say: NULL for a row
			// first touched before the column was added, its default after.
			name:   "ColumnAddedWithADefault",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`,
			setup:  `INSERT INTO t VALUES (1, 'a'), (2, 'b');`,
			act:    execAll(`UPDATE t SET v = 'A' WHERE id = 1`, `ALTER TABLE t ADD COLUMN w TEXT DEFAULT 'd'`, `UPDATE t SET v = 'B' WHERE id = 2`),
			want: lines(
				"update t map[id:1] before=map[id:1 v:a w:<nil>] after=map[id:1 v:A w:d]",
				"update t map[id:2] before=map[id:2 v:b w:d] after=map[id:2 v:B w:d]",
			),
		},
		{
			// The hook gives the default of a REAL column added after the
			// row was written as written (an integer); SQLite reads it
			// as a real, and the row did not change.
			name:   "RealColumnAddedWithAnIntegralDefault",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE s (id INTEGER PRIMARY KEY, v TEXT) STRICT;`,
			setup: `INSERT INTO t VALUES (1, 'a'), (2, 'b'); INSERT INTO s VALUES (1, 'a');
				ALTER TABLE t ADD COLUMN r REAL DEFAULT 3; ALTER TABLE t ADD COLUMN z DOUBLE DEFAULT -0.0; ALTER TABLE s ADD COLUMN r REAL DEFAULT 4;`,
			act: execAll(`UPDATE t SET v = v`, `UPDATE s SET v = v`, `UPDATE t SET v = 'B' WHERE id = 2`),
			want: lines(
				"update t map[id:2] before=map[id:2 r:3 v:b z:0] after=map[id:2 r:3 v:B z:0]",
			),
		},
		{
			name:   "ColumnDroppedDuringCapture",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, w TEXT);`,
			setup:  `INSERT INTO t VALUES (1, 'a', 'x'), (2, 'b', 'y');`,
			act:    execAll(`ALTER TABLE t DROP COLUMN w`, `UPDATE t SET v = 'A' WHERE id = 1`),
			want:   lines("update t map[id:1] before=map[id:1 v:a] after=map[id:1 v:A]"),
		},
		{
			name:   "RolledBackAlter",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`,
			setup:  `INSERT INTO t VALUES (1, 'a');`,
			act: func(t *testing.T, s *sqlitestore.Store) {
				f, err := s.Begin(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				MustExec(t, s, `ALTER TABLE t ADD COLUMN w TEXT`)
				MustExec(t, s, `UPDATE t SET w = 'gone'`)
				if err := f.Rollback(); err != nil {
					t.Fatal(err)
				}
				MustExec(t, s, `UPDATE t SET v = 'b'`)
			},
			want: lines("update t map[id:1] before=map[id:1 v:a] after=map[id:1 v:b]"),
		},
		{
			name:   "ScriptWithDDL",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY);`,
			act: func(t *testing.T, s *sqlitestore.Store) {
				if err := s.ExecScript(context.Background(), `CREATE TABLE z (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO z VALUES (1, 'a'); UPDATE z SET v = 'b';`); err != nil {
					t.Fatal(err)
				}
			},
			want: lines("insert z map[id:1] after=map[id:1 v:b]"),
		},
		{
			name:   "RawConnection",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`,
			setup:  `INSERT INTO t VALUES (1, 'a');`,
			act: func(t *testing.T, s *sqlitestore.Store) {
				c, err := s.Conn(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Exec(`UPDATE t SET v = 'b'; CREATE TABLE r (id INTEGER PRIMARY KEY); INSERT INTO r VALUES (5); UPDATE t SET v = 'c';`); err != nil {
					t.Fatal(err)
				}
			},
			want: lines(
				"insert r map[id:5] after=map[id:5]",
				"update t map[id:1] before=map[id:1 v:a] after=map[id:1 v:c]",
			),
		},
		{
			name:   "FailedStatementUndoesItsRows",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE);`,
			setup:  `INSERT INTO t VALUES (1, 'a');`,
			act: func(t *testing.T, s *sqlitestore.Store) {
				// The first two rows go in, the third conflicts: SQLite undoes
				// the statement's rows with no preupdate event.
				if _, err := s.Exec(context.Background(), `INSERT INTO t (v) VALUES ('x'), ('y'), ('a')`); err == nil {
					t.Fatal("the conflicting insert succeeded")
				}
				MustExec(t, s, `UPDATE t SET v = 'b' WHERE id = 1`)
			},
			want: lines("update t map[id:1] before=map[id:1 v:a] after=map[id:1 v:b]"),
		},
		{
			name:   "FailedUpdateUndoesItsRows",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER CHECK (n < 3));`,
			setup:  `INSERT INTO t VALUES (1, 1), (2, 2);`,
			act: func(t *testing.T, s *sqlitestore.Store) {
				if _, err := s.Exec(context.Background(), `UPDATE t SET n = n + 1`); err == nil {
					t.Fatal("the update passed its CHECK")
				}
			},
			want: "",
		},
		{
			name:   "RollbackToInSQL",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`,
			act: func(t *testing.T, s *sqlitestore.Store) {
				f, err := s.Begin(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				execAll(`SAVEPOINT a`, `INSERT INTO t VALUES (1, 'gone')`, `rollback TO a`, `RELEASE a`,
					`INSERT INTO t VALUES (2, 'kept')`)(t, s)
				if err := f.Commit(); err != nil {
					t.Fatal(err)
				}
			},
			want: lines("insert t map[id:2] after=map[id:2 v:kept]"),
		},
		{
			name:   "RaiseIgnoreInTrigger",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); CREATE TRIGGER no_x BEFORE INSERT ON t WHEN NEW.v = 'x' BEGIN SELECT RAISE(IGNORE); END;`,
			act:    execAll(`INSERT INTO t VALUES (1, 'x')`, `INSERT INTO t VALUES (2, 'y')`),
			want:   lines("insert t map[id:2] after=map[id:2 v:y]"),
		},
		{
			name:   "AfterTriggerRewritesNewRow",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); CREATE TRIGGER up AFTER INSERT ON t BEGIN UPDATE t SET v = upper(NEW.v) WHERE id = NEW.id; END;`,
			act:    execAll(`INSERT INTO t VALUES (1, 'low')`),
			want:   lines("insert t map[id:1] after=map[id:1 v:LOW]"),
		},
		{
			name:   "AffinitiesAndDefaults",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, r REAL, n NUMERIC, i INTEGER, s TEXT, d TEXT DEFAULT 'dflt', g INTEGER GENERATED ALWAYS AS (i * 2) STORED);`,
			act:    execAll(`INSERT INTO t (id, r, n, i, s) VALUES (1, 5, '7', '8', 9)`, `INSERT INTO t (r, n) VALUES (2.5, 1e3)`),
			want: lines(
				"insert t map[id:1] after=map[d:dflt g:16 i:8 id:1 n:7 r:5 s:9]",
				"insert t map[id:2] after=map[d:dflt g:<nil> i:<nil> id:2 n:1000 r:2.5 s:<nil>]",
			),
		},
		{
			name:   "NegativeZero",
			schema: `CREATE TABLE t (id TEXT PRIMARY KEY, x ANY) STRICT;`,
			setup:  `INSERT INTO t VALUES ('n', -0.0), ('p', 0.0), ('same', -0.0);`,
			act:    execAll(`UPDATE t SET x = 0.0 WHERE id = 'n'`, `UPDATE t SET x = -0.0 WHERE id = 'p'`, `UPDATE t SET x = 1 WHERE id = 'same'`, `UPDATE t SET x = -0.0 WHERE id = 'same'`),
			want: lines(
				"update t map[id:n] before=map[id:n x:-0] after=map[id:n x:0]",
				"update t map[id:p] before=map[id:p x:0] after=map[id:p x:-0]",
			),
		},
		{
			name:   "UpdateChangesIntegerKey",
			schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`,
			setup:  `INSERT INTO t VALUES (1, 'a');`,
			act:    execAll(`UPDATE t SET id = 5`, `UPDATE t SET v = 'b' WHERE id = 5`),
			want: lines(
				"delete t map[id:1] before=map[id:1 v:a]",
				"insert t map[id:5] after=map[id:5 v:b]",
			),
		},
		{
			// SQLite finds the integer -2^63 and the real -2^63.0 one key,
			// and a column of INTEGER or NUMERIC affinity keeps the real
			// as a real: the REPLACE deletes the row keyed by the integer.
			// The failed INSERT makes Finish read the rows back, by keys
			// that find the row of the other.
			name: "MinInt64AsReal",
			schema: `CREATE TABLE w (k INTEGER NOT NULL PRIMARY KEY, v TEXT) WITHOUT ROWID;
CREATE TABLE n (k NUMERIC NOT NULL PRIMARY KEY, v TEXT);`,
			setup: `INSERT INTO w VALUES (-9223372036854775808, 'a'); INSERT INTO n VALUES (-9223372036854775808.0, 'a');`,
			act: func(t *testing.T, s *sqlitestore.Store) {
				MustExec(t, s, `INSERT OR REPLACE INTO w VALUES (-9223372036854775808.0, 'b')`)
				MustExec(t, s, `INSERT OR REPLACE INTO n VALUES (-9223372036854775808, 'b')`)
				if _, err := s.Exec(context.Background(), `INSERT INTO w VALUES (NULL, 'c')`); err == nil {
					t.Fatal("a NULL key was inserted")
				}
			},
			want: lines(
				"delete n map[k:-9.223372036854776e+18] before=map[k:-9.223372036854776e+18 v:a]",
				"insert n map[k:-9223372036854775808] after=map[k:-9223372036854775808 v:b]",
				"delete w map[k:-9223372036854775808] before=map[k:-9223372036854775808 v:a]",
				"insert w map[k:-9.223372036854776e+18] after=map[k:-9.223372036854776e+18 v:b]",
			),
		},
		{
			// The key's index compares it BINARY (an exact key) though the
			// column's own collation is NOCASE: rows are read back by key
			// (after the raw connection's writes, and by FinishRows) as
			// the index compares it, not the column, which found 'A' for
			// 'a' and reported a's insert missing, then its update a
			// delete.
			name:   "KeyCollationOtherThanColumns",
			schema: `CREATE TABLE i5 (k TEXT COLLATE NOCASE, v INTEGER, PRIMARY KEY (k COLLATE BINARY)) STRICT;`,
			setup:  `INSERT INTO i5 VALUES ('A', 1);`,
			act: func(t *testing.T, s *sqlitestore.Store) {
				MustExec(t, s, `INSERT INTO i5 VALUES ('a', 2) ON CONFLICT DO UPDATE SET v = excluded.v`)
				conn, err := s.Conn(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if err := conn.Exec(`INSERT INTO i5 VALUES ('b', 4); UPDATE i5 SET v = 3 WHERE k = 'a' COLLATE BINARY`); err != nil {
					t.Fatal(err)
				}
			},
			want: lines(
				"insert i5 map[k:a] after=map[k:a v:3]",
				"insert i5 map[k:b] after=map[k:b v:4]",
			),
		},
		{
			name:   "SortedByTableThenKey",
			schema: `CREATE TABLE b (k NUMERIC PRIMARY KEY NOT NULL); CREATE TABLE a (id INTEGER PRIMARY KEY);`,
			act:    execAll(`INSERT INTO b VALUES ('x'), (x'00'), (2.5), (10)`, `INSERT INTO a VALUES (3), (1)`),
			want: lines(
				"insert a map[id:1] after=map[id:1]",
				"insert a map[id:3] after=map[id:3]",
				"insert b map[k:2.5] after=map[k:2.5]",
				"insert b map[k:10] after=map[k:10]",
				"insert b map[k:x] after=map[k:x]",
				"insert b map[k:[0]] after=map[k:[0]]",
			),
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, run := range []struct {
				name    string
				capture func(*testing.T, *sqlitestore.Store, func(*testing.T, *sqlitestore.Store)) string
			}{{"Finish", capture}, {"FinishRows", captureRows}} {
				s := MustCreate(t, tt.schema, sqlitestore.Options{Untracked: tt.untracked})
				if tt.setup != "" {
					if err := s.ExecScript(context.Background(), tt.setup); err != nil {
						t.Fatal(err)
					}
				}
				if got := run.capture(t, s, tt.act); got != tt.want {
					t.Errorf("%s: changes:\n%s\nwant:\n%s", run.name, got, tt.want)
				}
			}
		})
	}
}

func TestCapture_Nested(t *testing.T) {
	s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`, sqlitestore.Options{})
	MustExec(t, s, `INSERT INTO t VALUES (1, 'a')`)
	outer := s.StartCapture()
	MustExec(t, s, `INSERT INTO t VALUES (2, 'outer')`)
	inner := s.StartCapture()
	MustExec(t, s, `UPDATE t SET v = 'inner' WHERE id = 1`)
	innerChanges, err := inner.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	MustExec(t, s, `UPDATE t SET v = 'outer again' WHERE id = 1`)
	outerChanges, err := outer.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := formatChanges(innerChanges), lines("update t map[id:1] before=map[id:1 v:a] after=map[id:1 v:inner]"); got != want {
		t.Errorf("inner:\n%s\nwant:\n%s", got, want)
	}
	want := lines(
		"update t map[id:1] before=map[id:1 v:inner] after=map[id:1 v:outer again]",
		"insert t map[id:2] after=map[id:2 v:outer]",
	)
	if got := formatChanges(outerChanges); got != want {
		t.Errorf("outer:\n%s\nwant:\n%s", got, want)
	}
}

func TestCapture_AcrossRelease(t *testing.T) {
	s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`, sqlitestore.Options{})
	MustExec(t, s, `INSERT INTO t VALUES (1, 'a')`)
	got := capture(t, s, func(t *testing.T, s *sqlitestore.Store) {
		MustExec(t, s, `UPDATE t SET v = 'b'`)
		if err := s.Release(); err != nil {
			t.Fatal(err)
		}
		MustExec(t, s, `INSERT INTO t VALUES (2, 'c')`)
	})
	want := lines(
		"update t map[id:1] before=map[id:1 v:a] after=map[id:1 v:b]",
		"insert t map[id:2] after=map[id:2 v:c]",
	)
	if got != want {
		t.Errorf("changes:\n%s\nwant:\n%s", got, want)
	}
}

// TestCapture_SchemaChangeAcrossRelease changes the schema between
// captures with releases in between: the metadata a reopened connection
// reuses must follow every change.
func TestCapture_SchemaChangeAcrossRelease(t *testing.T) {
	s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`, sqlitestore.Options{})
	release := func(t *testing.T) {
		t.Helper()
		if err := s.Release(); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name string
		act  func(*testing.T, *sqlitestore.Store)
		want string
	}{
		{"Insert", execAll(`INSERT INTO t VALUES (1, 'a')`), lines("insert t map[id:1] after=map[id:1 v:a]")},
		{"SameSchema", execAll(`UPDATE t SET v = 'b'`), lines("update t map[id:1] before=map[id:1 v:a] after=map[id:1 v:b]")},
		{"AddColumnOutsideCapture", nil, ""},
		{"NewColumn", execAll(`UPDATE t SET w = 7`), lines("update t map[id:1] before=map[id:1 v:b w:<nil>] after=map[id:1 v:b w:7]")},
		{"NewTable", execAll(`CREATE TABLE u (k TEXT PRIMARY KEY, n INTEGER) WITHOUT ROWID`, `INSERT INTO u VALUES ('x', 1)`), lines("insert u map[k:x] after=map[k:x n:1]")},
		{"NewTableAfterRelease", execAll(`UPDATE u SET n = 2`), lines("update u map[k:x] before=map[k:x n:1] after=map[k:x n:2]")},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.act == nil {
				MustExec(t, s, `ALTER TABLE t ADD COLUMN w INTEGER`)
				release(t)
				return
			}
			if got := capture(t, s, st.act); got != st.want {
				t.Errorf("changes:\n%s\nwant:\n%s", got, st.want)
			}
			release(t)
		})
	}
}

func TestCapture_Finish(t *testing.T) {
	ctx := context.Background()
	s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY);`, sqlitestore.Options{})

	t.Run("Twice", func(t *testing.T) {
		c := s.StartCapture()
		if _, err := c.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Finish(ctx); !errors.Is(err, sqlitestore.ErrCaptureDone) {
			t.Errorf("err = %v, want ErrCaptureDone", err)
		}
	})

	t.Run("OutOfOrder", func(t *testing.T) {
		outer := s.StartCapture()
		inner := s.StartCapture()
		if _, err := outer.Finish(ctx); !errors.Is(err, sqlitestore.ErrCaptureOrder) {
			t.Errorf("err = %v, want ErrCaptureOrder", err)
		}
		MustExec(t, s, `INSERT INTO t VALUES (1)`)
		changes, err := inner.Finish(ctx)
		if err != nil || len(changes) != 1 {
			t.Errorf("inner after outer ended: %v, %v", changes, err)
		}
	})

	t.Run("NoCaptureNoHook", func(t *testing.T) {
		MustExec(t, s, `INSERT INTO t VALUES (2)`) // no capture running: nothing recorded anywhere
		c := s.StartCapture()
		changes, err := c.Finish(ctx)
		if err != nil || len(changes) != 0 {
			t.Errorf("changes = %v, %v", changes, err)
		}
	})

	t.Run("ClosedStore", func(t *testing.T) {
		s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY);`, sqlitestore.Options{})
		c := s.StartCapture()
		s.Close()
		if _, err := c.Finish(ctx); !errors.Is(err, sqlitestore.ErrClosed) {
			t.Errorf("err = %v, want ErrClosed", err)
		}
	})
}

func TestCapture_FinishRows(t *testing.T) {
	ctx := context.Background()
	s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);
		CREATE TABLE r (a TEXT, b INTEGER);`, sqlitestore.Options{})
	MustExec(t, s, `INSERT INTO t VALUES (1, 'a'), (2, 'b')`)
	MustExec(t, s, `INSERT INTO r VALUES ('x', 1)`)

	c := s.StartCapture()
	MustExec(t, s, `ALTER TABLE t ADD COLUMN w INTEGER`)
	MustExec(t, s, `UPDATE t SET w = 7 WHERE id = 1`)
	MustExec(t, s, `UPDATE t SET v = 'B' WHERE id = 2`)
	MustExec(t, s, `UPDATE t SET v = 'b' WHERE id = 2`) // back as it was: dropped
	MustExec(t, s, `UPDATE r SET b = 2`)
	rows, err := c.FinishRows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%s %s %v=%v %v before=%v after=%v", r.Op, r.Table, r.KeyNames, r.KeyValues, r.Names, r.Before, r.After))
	}
	want := []string{
		"update r [rowid]=[1] [a b] before=[x 1] after=[x 2]",
		"update t [id]=[1] [id v w] before=[1 a <nil>] after=[1 a 7]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	t.Run("ChangeMapsAreFresh", func(t *testing.T) {
		a := rows[1].Change()
		a.Key["id"], a.Before["v"], a.After["w"] = 99, "changed", 0
		b := rows[1].Change()
		if got, want := formatChanges([]sqlitestore.Change{b}), lines("update t map[id:1] before=map[id:1 v:a w:<nil>] after=map[id:1 v:a w:7]"); got != want {
			t.Errorf("after mutating an earlier Change:\n%s\nwant:\n%s", got, want)
		}
	})

	t.Run("Twice", func(t *testing.T) {
		if _, err := c.FinishRows(ctx); !errors.Is(err, sqlitestore.ErrCaptureDone) {
			t.Errorf("err = %v, want ErrCaptureDone", err)
		}
	})

	t.Run("Empty", func(t *testing.T) {
		rows, err := s.StartCapture().FinishRows(ctx)
		if err != nil || rows != nil {
			t.Errorf("rows = %#v, %v; want nil, nil", rows, err)
		}
	})
}

func TestCompareKeys(t *testing.T) {
	for _, tt := range []struct {
		a, b []any // keys compared
		want int   // sign of CompareKeys(a, b)
	}{
		{[]any{nil}, []any{int64(0)}, -1},                    // NULL before numbers
		{[]any{int64(-1)}, []any{int64(2)}, -1},              // integers by value
		{[]any{int64(2)}, []any{2.5}, -1},                    // integer before a larger real
		{[]any{3.0}, []any{int64(3)}, 0},                     // equal values of two types
		{[]any{int64(1 << 62)}, []any{4.7e18}, -1},           // large integer vs real, exactly
		{[]any{9.3e18}, []any{int64(1<<63 - 1)}, 1},          // real beyond int64
		{[]any{int64(1e9)}, []any{"1"}, -1},                  // numbers before text
		{[]any{"b"}, []any{"ab"}, 1},                         // text by bytes
		{[]any{"zzz"}, []any{[]byte{0}}, -1},                 // text before blobs
		{[]any{[]byte{1}}, []any{[]byte{1, 0}}, -1},          // blobs by bytes
		{[]any{int64(1), "a"}, []any{int64(1)}, 1},           // longer after its prefix
		{[]any{int64(1), "b"}, []any{int64(1), "a"}, 1},      // second column decides
		{[]any{7}, []any{int64(7)}, 0},                       // other int kinds by value
		{[]any{uint64(1 << 63)}, []any{int64(1<<63 - 1)}, 1}, // uint beyond int64
	} {
		got := sqlitestore.CompareKeys(tt.a, tt.b)
		if sign(got) != tt.want {
			t.Errorf("CompareKeys(%v, %v) = %d, want sign %d", tt.a, tt.b, got, tt.want)
		}
		if back := sqlitestore.CompareKeys(tt.b, tt.a); sign(back) != -tt.want {
			t.Errorf("CompareKeys(%v, %v) = %d, want sign %d", tt.b, tt.a, back, -tt.want)
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// TestCapture_AfterCommit covers the rows read just before an outermost
// COMMIT: Finish uses them only when nothing changed since.
func TestCapture_AfterCommit(t *testing.T) {
	ctx := context.Background()
	const schema = `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`
	// call runs one write in a committed frame.
	call := func(t *testing.T, s *sqlitestore.Store, sql string) {
		t.Helper()
		f, err := s.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		MustExec(t, s, sql)
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name  string
		after func(*testing.T, *sqlitestore.Store) // runs between Commit and Finish
		want  string
	}{
		{
			name:  "NothingElse",
			after: func(*testing.T, *sqlitestore.Store) {},
			want:  lines("update t map[id:1] before=map[id:1 v:a] after=map[id:1 v:b]"),
		},
		{
			name:  "LaterWrite",
			after: func(t *testing.T, s *sqlitestore.Store) { MustExec(t, s, `UPDATE t SET v = 'c'`) },
			want:  lines("update t map[id:1] before=map[id:1 v:a] after=map[id:1 v:c]"),
		},
		{
			name:  "LaterFrame",
			after: func(t *testing.T, s *sqlitestore.Store) { call(t, s, `DELETE FROM t`) },
			want:  lines("delete t map[id:1] before=map[id:1 v:a]"),
		},
		{
			name:  "DropTable",
			after: func(t *testing.T, s *sqlitestore.Store) { MustExec(t, s, `DROP TABLE t`) },
			want:  lines("delete t map[id:1] before=map[id:1 v:a]"),
		},
		{
			name: "AddColumn",
			after: func(t *testing.T, s *sqlitestore.Store) {
				MustExec(t, s, `ALTER TABLE t ADD COLUMN w TEXT DEFAULT 'd'`)
			},
			want: lines("update t map[id:1] before=map[id:1 v:a w:<nil>] after=map[id:1 v:b w:d]"),
		},
		{
			name: "DropTableThenRelease",
			after: func(t *testing.T, s *sqlitestore.Store) {
				MustExec(t, s, `DROP TABLE t`)
				s.Release()
			},
			want: lines("delete t map[id:1] before=map[id:1 v:a]"),
		},
		{
			name: "NestedCaptureChangesRow",
			after: func(t *testing.T, s *sqlitestore.Store) {
				inner := s.StartCapture()
				call(t, s, `UPDATE t SET v = 'inner'`)
				if _, err := inner.Finish(ctx); err != nil {
					t.Fatal(err)
				}
			},
			want: lines("update t map[id:1] before=map[id:1 v:a] after=map[id:1 v:inner]"),
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := MustCreate(t, schema, sqlitestore.Options{})
			MustExec(t, s, `INSERT INTO t VALUES (1, 'a')`)
			c := s.StartCapture()
			call(t, s, `UPDATE t SET v = 'b'`)
			tt.after(t, s)
			changes, err := c.Finish(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := formatChanges(changes); got != tt.want {
				t.Errorf("changes:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}

	t.Run("NoReadAfterCommit", func(t *testing.T) {
		// The rows were read inside the transaction: Finish runs no SQL, so
		// even a done context does not stop it.
		s := MustCreate(t, schema, sqlitestore.Options{})
		c := s.StartCapture()
		call(t, s, `INSERT INTO t VALUES (1, 'a')`)
		done, cancel := context.WithCancel(ctx)
		cancel()
		changes, err := c.Finish(done)
		if err != nil || formatChanges(changes) != lines("insert t map[id:1] after=map[id:1 v:a]") {
			t.Errorf("Finish = %v, %v", changes, err)
		}
	})

	t.Run("FailedCommit", func(t *testing.T) {
		s := MustCreate(t, `CREATE TABLE p (id INTEGER PRIMARY KEY);
			CREATE TABLE c (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED);`, sqlitestore.Options{})
		c := s.StartCapture()
		f, err := s.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		MustExec(t, s, `INSERT INTO c VALUES (1, 99)`)
		if err := f.Commit(); err == nil {
			t.Fatal("Commit succeeded despite a dangling foreign key")
		}
		if err := f.Rollback(); err != nil {
			t.Fatal(err)
		}
		changes, err := c.Finish(ctx)
		if err != nil || len(changes) != 0 {
			t.Errorf("Finish = %v, %v; want nothing", changes, err)
		}
	})

	t.Run("ManyRowsOneReadTransaction", func(t *testing.T) {
		s := MustCreate(t, schema, sqlitestore.Options{})
		c := s.StartCapture()
		MustExec(t, s, `INSERT INTO t (v) SELECT 'v' || value FROM generate_series(1, 50)`)
		changes, err := c.Finish(ctx)
		if err != nil || len(changes) != 50 {
			t.Fatalf("Finish = %d changes, %v", len(changes), err)
		}
		if s.InTransaction() {
			t.Error("Finish left its read transaction open")
		}
	})
}

// TestCapture_DeleteAllPreparedWithoutCapture runs a DELETE without WHERE
// whose statement was prepared (and cached) while no capture ran, as a bulk
// block or a startup hook prepares it, or another store of a parked
// connection's key: SQLite's truncate optimisation, which fires no preupdate
// hook, must not have been compiled into it.
func TestCapture_DeleteAllPreparedWithoutCapture(t *testing.T) {
	want := lines(
		"delete t map[id:1] before=map[id:1 v:a]",
		"delete t map[id:2] before=map[id:2 v:b]",
	)
	t.Run("SameStore", func(t *testing.T) {
		s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`, sqlitestore.Options{})
		MustExec(t, s, `DELETE FROM t`) // prepared and cached with no capture running
		MustExec(t, s, `INSERT INTO t VALUES (1, 'a'), (2, 'b')`)
		if got := capture(t, s, execAll(`DELETE FROM t`)); got != want {
			t.Errorf("changes:\n%s\nwant:\n%s", got, want)
		}
	})
	t.Run("WithoutRowid", func(t *testing.T) {
		s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT) WITHOUT ROWID;`, sqlitestore.Options{})
		MustExec(t, s, `DELETE FROM t`)
		MustExec(t, s, `INSERT INTO t VALUES (1, 'a'), (2, 'b')`)
		if got := capture(t, s, execAll(`DELETE FROM t`)); got != want {
			t.Errorf("changes:\n%s\nwant:\n%s", got, want)
		}
	})
	t.Run("ParkedConnection", func(t *testing.T) {
		data, pool, dir := parkRig(t, 0)
		a := openShared(t, pool, dir, 0, data, 1)
		MustExec(t, a, `DELETE FROM t`)
		if err := a.Release(); err != nil || pool.Parked() != 1 {
			t.Fatalf("Release = %v, %d parked; want the connection parked", err, pool.Parked())
		}
		b := openShared(t, pool, dir, 1, data, 1)
		MustExec(t, b, `INSERT INTO t VALUES (1, 'a'), (2, 'b')`) // rebinds a's connection
		if got := capture(t, b, execAll(`DELETE FROM t`)); got != want {
			t.Errorf("changes:\n%s\nwant:\n%s", got, want)
		}
	})
	t.Run("DropsStillWork", func(t *testing.T) {
		// The authorizer that turns the optimisation off must not turn
		// DROP statements (which authorize deletes) into no-ops.
		s := MustCreate(t, `CREATE TABLE p (id INTEGER PRIMARY KEY);
			CREATE TABLE t (id INTEGER PRIMARY KEY, p INTEGER REFERENCES p (id), gone TEXT);
			CREATE INDEX ti ON t (p);
			CREATE VIEW tv AS SELECT id FROM t;
			CREATE TRIGGER tt AFTER INSERT ON t BEGIN SELECT 1; END;
			CREATE VIRTUAL TABLE f USING fts5 (body);
			INSERT INTO p VALUES (1); INSERT INTO t VALUES (1, 1, 'x');`, sqlitestore.Options{})
		for _, q := range []string{`ALTER TABLE t DROP COLUMN gone`, `DROP TRIGGER tt`, `DROP VIEW tv`, `DROP INDEX ti`, `DROP TABLE f`, `DROP TABLE t`, `DROP TABLE p`} {
			MustExec(t, s, q)
		}
		if rows := MustQuery(t, s, `SELECT name FROM sqlite_schema`); len(rows.Values) != 0 {
			t.Errorf("schema after dropping everything: %v, want none", rows.Values)
		}
	})
}

// TestCapture_Rename renames a table while a capture runs. A capture that
// touched rows of the table under its old name fails with an error naming
// both names, whether an ALTER TABLE renamed it or a rollback undid a
// rename; one that touched its rows only under the new name reports them
// under it.
func TestCapture_Rename(t *testing.T) {
	ctx := context.Background()
	const schema = `CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT); INSERT INTO t VALUES (1, 'a', 'b');`
	renamed := func(t *testing.T, err error, from, to string) {
		t.Helper()
		want := "sqlitestore: change capture cannot report the rows of table " + from + ": it was renamed to " + to + " while the capture ran"
		if err == nil || err.Error() != want {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	// A rename of a table whose rows the capture holds is refused as it
	// is prepared (see TestCapture_RenameRefused); one prepared on the raw
	// connection before runs, and fails the capture.
	t.Run("TouchedThenRenamed", func(t *testing.T) {
		s := MustCreate(t, schema, sqlitestore.Options{})
		conn, err := s.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		st, _, err := conn.Prepare(`ALTER TABLE t RENAME TO u`)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		c := s.StartCapture()
		MustExec(t, s, `INSERT INTO t VALUES (2, 'x', 'y')`)
		MustExec(t, s, `UPDATE t SET b = 'B' WHERE id = 1`)
		if err := st.Exec(); err != nil {
			t.Fatal(err)
		}
		changes, err := c.Finish(ctx)
		renamed(t, err, "t", "u")
		if changes != nil {
			t.Errorf("changes = %v, want none", changes)
		}
	})
	t.Run("RenamedThenTouched", func(t *testing.T) {
		s := MustCreate(t, schema, sqlitestore.Options{})
		got := capture(t, s, execAll(`ALTER TABLE t RENAME TO u`, `INSERT INTO u VALUES (2, 'x', 'y')`, `UPDATE u SET b = 'B' WHERE id = 1`))
		want := lines(
			"update u map[id:1] before=map[a:a b:b id:1] after=map[a:a b:B id:1]",
			"insert u map[id:2] after=map[a:x b:y id:2]",
		)
		if got != want {
			t.Errorf("changes:\n%s\nwant:\n%s", got, want)
		}
	})
	t.Run("RenameRolledBack", func(t *testing.T) {
		// The rows touched under the name u are t's again once the
		// rollback undoes the rename.
		s := MustCreate(t, schema, sqlitestore.Options{})
		c := s.StartCapture()
		outer, err := s.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		inner, err := s.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		MustExec(t, s, `ALTER TABLE t RENAME TO u`)
		MustExec(t, s, `UPDATE u SET b = 'B' WHERE id = 1`)
		if err := inner.Rollback(); err != nil {
			t.Fatal(err)
		}
		if err := outer.Commit(); err != nil {
			t.Fatal(err)
		}
		_, err = c.Finish(ctx)
		renamed(t, err, "u", "t")
	})
	t.Run("RenamedAfterTheCapturesItFollows", func(t *testing.T) {
		// A capture following one that reported rows of t fails as if it
		// held them itself when a rename prepared on the raw connection
		// before it began runs, where nothing is reloaded before it
		// finishes; one following captures that reported other tables
		// does not. (A rename prepared while it runs is refused.)
		for _, tt := range []struct {
			name     string
			reported []string
			err      bool
		}{
			{"Followed", []string{"x", "t"}, true},
			{"OtherTable", []string{"x"}, false},
		} {
			t.Run(tt.name, func(t *testing.T) {
				s := MustCreate(t, schema+`CREATE TABLE x (id INTEGER PRIMARY KEY);`, sqlitestore.Options{})
				if got, want := capture(t, s, execAll(`UPDATE t SET b = 'B' WHERE id = 1`)), lines("update t map[id:1] before=map[a:a b:b id:1] after=map[a:a b:B id:1]"); got != want {
					t.Fatalf("changes:\n%s\nwant:\n%s", got, want)
				}
				conn, err := s.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				st, _, err := conn.Prepare(`ALTER TABLE t RENAME TO u`)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				c := s.StartCaptureAfter(tt.reported)
				if err := st.Exec(); err != nil {
					t.Fatal(err)
				}
				changes, err := c.Finish(ctx)
				want := "<nil>"
				if tt.err {
					want = "sqlitestore: change capture cannot report the rows of table t: it was renamed to u while the capture ran, after the captures it follows reported rows of it"
				}
				if fmt.Sprint(err) != want || changes != nil {
					t.Errorf("Finish = %v, %v; want no changes and error %s", changes, err, want)
				}
			})
		}
	})
	// A column renamed after its rows were touched: matched by name, its
	// values would read as NULL before (a value column) or every touched
	// row as deleted (a key column).
	columnRenamed := func(t *testing.T, err error, table, from, to string) {
		t.Helper()
		want := "sqlitestore: change capture cannot report the rows of table " + table + ": its column " + from + " was renamed to " + to + " while the capture ran"
		if err == nil || err.Error() != want {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	t.Run("TouchedThenColumnRenamed", func(t *testing.T) {
		// Prepared on the raw connection before the capture touched the
		// rows (prepared after, it is refused).
		for _, tt := range []struct{ touch, rename, from, to string }{
			{`UPDATE t SET b = 'B' WHERE id = 1`, `ALTER TABLE t RENAME COLUMN a TO c`, "a", "c"},
			{`DELETE FROM t WHERE id = 1`, `ALTER TABLE t RENAME COLUMN a TO A`, "a", "A"},
			{`UPDATE t SET b = 'B' WHERE id = 1`, `ALTER TABLE t RENAME COLUMN id TO k`, "id", "k"},
		} {
			s := MustCreate(t, schema, sqlitestore.Options{})
			conn, err := s.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			st, _, err := conn.Prepare(tt.rename)
			if err != nil {
				t.Fatal(err)
			}
			c := s.StartCapture()
			MustExec(t, s, tt.touch)
			err = st.Exec()
			st.Close()
			if err != nil {
				t.Fatal(err)
			}
			changes, err := c.Finish(ctx)
			columnRenamed(t, err, "t", tt.from, tt.to)
			if changes != nil {
				t.Errorf("changes = %v, want none", changes)
			}
		}
	})
	t.Run("ColumnRenamedThenTouched", func(t *testing.T) {
		s := MustCreate(t, schema, sqlitestore.Options{})
		got := capture(t, s, execAll(`ALTER TABLE t RENAME COLUMN a TO c`, `UPDATE t SET b = 'B' WHERE id = 1`))
		if want := lines("update t map[id:1] before=map[b:b c:a id:1] after=map[b:B c:a id:1]"); got != want {
			t.Errorf("changes:\n%s\nwant:\n%s", got, want)
		}
	})
	t.Run("ColumnRenameRolledBack", func(t *testing.T) {
		s := MustCreate(t, schema, sqlitestore.Options{})
		c := s.StartCapture()
		f, err := s.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		execAll(`SAVEPOINT s`, `ALTER TABLE t RENAME COLUMN a TO c`, `UPDATE t SET b = 'B' WHERE id = 1`, `ROLLBACK TO s`)(t, s)
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		_, err = c.Finish(ctx)
		columnRenamed(t, err, "t", "c", "a")
	})
	t.Run("ColumnsAddedAndDroppedRolledBack", func(t *testing.T) {
		// A rollback undoing an ADD and a DROP COLUMN at once renames
		// nothing the capture's rows hold.
		s := MustCreate(t, schema, sqlitestore.Options{})
		got := capture(t, s, func(t *testing.T, s *sqlitestore.Store) {
			f, err := s.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			execAll(`UPDATE t SET b = 'B' WHERE id = 1`, `SAVEPOINT s`, `ALTER TABLE t ADD COLUMN c TEXT`, `ALTER TABLE t DROP COLUMN a`, `ROLLBACK TO s`)(t, s)
			if err := f.Commit(); err != nil {
				t.Fatal(err)
			}
		})
		if want := lines("update t map[id:1] before=map[a:a b:b id:1] after=map[a:a b:B id:1]"); got != want {
			t.Errorf("changes:\n%s\nwant:\n%s", got, want)
		}
	})
	t.Run("DroppedTableBroughtBackAfterAnAddColumn", func(t *testing.T) {
		// The rollback brings t back over the root page of c, created
		// since and gone with it; an ADD COLUMN renames nothing, so t is
		// not c renamed.
		s := MustCreate(t, schema+`CREATE TABLE u (id INTEGER PRIMARY KEY);`, sqlitestore.Options{})
		got := capture(t, s, func(t *testing.T, s *sqlitestore.Store) {
			f, err := s.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			execAll(`SAVEPOINT s`, `DROP TABLE t`, `ALTER TABLE u ADD COLUMN x TEXT`, `CREATE TABLE c AS SELECT 1 AS k`,
				`ROLLBACK TO s`, `UPDATE t SET b = 'B' WHERE id = 1`)(t, s)
			if err := f.Commit(); err != nil {
				t.Fatal(err)
			}
		})
		if want := lines("update t map[id:1] before=map[a:a b:b id:1] after=map[a:a b:B id:1]"); got != want {
			t.Errorf("changes:\n%s\nwant:\n%s", got, want)
		}
	})
}

// TestCapture_RenameRefused renames a table, or a column of one, whose
// rows a running capture holds, or, for a table, that the captures it
// follows reported rows of. The rename is refused as it is prepared,
// through Exec, ExecScript and on the raw connection (with SQLite's "not
// authorized"), so it changes nothing: outside a frame it would commit as
// it ran, and no change would describe it. The capture then reports its
// rows as usual. Other renames run.
func TestCapture_RenameRefused(t *testing.T) {
	ctx := context.Background()
	const (
		schema        = `CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT); INSERT INTO t VALUES (1, 'a', 'b'); CREATE TABLE x (id INTEGER PRIMARY KEY);`
		tableRefused  = "sqlitestore: renaming table t refused: change capture holds rows of it, and its changes would name a table that is gone"
		afterRefused  = "sqlitestore: renaming table t refused: change capture follows captures that reported rows of it, and its changes would name it otherwise"
		columnRefused = "sqlitestore: renaming a column of table t refused: change capture holds rows of it, and its changes would name a column that is gone"
		rawRefused    = "sqlite3: authorization denied: not authorized"
		updated       = "update t map[id:1] before=map[a:a b:b id:1] after=map[a:a b:B id:1]"
		updatedAgain  = "update t map[id:1] before=map[a:a b:b id:1] after=map[a:a b:C id:1]"
	)
	for _, tt := range []struct {
		name   string
		after  []string // the capture follows captures that reported these (StartCaptureAfter), after one that wrote t
		touch  string   // run through Exec in the capture first
		inner  bool     // the rename runs in a capture nested in it
		via    string   // how the statements below run: "exec", "script" or "raw"
		setup  []string // run before the rename
		rename string
		err    string   // the rename's error; "" when it runs
		then   []string // run after it
		tables string   // the main schema's tables after
		want   string   // the capture's changes
	}{
		{name: "Exec", touch: `UPDATE t SET b = 'B' WHERE id = 1`, via: "exec", rename: `ALTER TABLE t RENAME TO u`, err: tableRefused,
			tables: "t x", want: lines(updated)},
		{name: "ExecOtherCase", touch: `UPDATE t SET b = 'B' WHERE id = 1`, via: "exec", rename: `ALTER TABLE "T" RENAME TO u`, err: tableRefused,
			tables: "t x", want: lines(updated)},
		{name: "Script", touch: `UPDATE t SET b = 'B' WHERE id = 1`, via: "script", rename: `ALTER TABLE t RENAME TO u; UPDATE u SET b = 'C'`, err: tableRefused,
			tables: "t x", want: lines(updated)},
		{name: "Raw", touch: `UPDATE t SET b = 'B' WHERE id = 1`, via: "raw", rename: `ALTER TABLE t RENAME TO u`, err: rawRefused,
			then: []string{`UPDATE t SET b = 'C' WHERE id = 1`}, tables: "t x", want: lines(updatedAgain)},
		{name: "Inner", touch: `UPDATE t SET b = 'B' WHERE id = 1`, inner: true, via: "exec", rename: `ALTER TABLE t RENAME TO u`, err: tableRefused,
			tables: "t x", want: lines(updated)},
		{name: "Followed", after: []string{"t"}, via: "exec", rename: `ALTER TABLE t RENAME TO u`, err: afterRefused,
			tables: "t x"},
		{name: "FollowedRaw", after: []string{"t"}, via: "raw", rename: `ALTER TABLE t RENAME TO u`, err: rawRefused,
			tables: "t x"},
		{name: "Column", touch: `UPDATE t SET b = 'B' WHERE id = 1`, via: "exec", rename: `ALTER TABLE t RENAME COLUMN a TO c`, err: columnRefused,
			tables: "t x", want: lines(updated)},
		{name: "ColumnRaw", touch: `UPDATE t SET b = 'B' WHERE id = 1`, via: "raw", rename: `ALTER TABLE t RENAME COLUMN a TO c`, err: rawRefused,
			then: []string{`UPDATE t SET b = 'C' WHERE id = 1`}, tables: "t x", want: lines(updatedAgain)},
		{
			// The store cannot tell which column a RENAME COLUMN renames:
			// one the rows' images lack is refused too.
			name: "ColumnAddedSince", touch: `UPDATE t SET b = 'B' WHERE id = 1`, via: "exec", setup: []string{`ALTER TABLE t ADD COLUMN z TEXT`},
			rename: `ALTER TABLE t RENAME COLUMN z TO w`, err: columnRefused,
			tables: "t x", want: lines("update t map[id:1] before=map[a:a b:b id:1 z:<nil>] after=map[a:a b:B id:1 z:<nil>]"),
		},
		// Allowed: rows of another table, a column of a table only
		// followed, a table renamed before its rows are touched.
		{name: "OtherTable", touch: `INSERT INTO x VALUES (1)`, via: "exec", rename: `ALTER TABLE t RENAME TO u`,
			tables: "u x", want: lines("insert x map[id:1] after=map[id:1]")},
		{name: "OtherTableRaw", touch: `INSERT INTO x VALUES (1)`, via: "raw", rename: `ALTER TABLE t RENAME TO u`,
			tables: "u x", want: lines("insert x map[id:1] after=map[id:1]")},
		{name: "FollowedColumn", after: []string{"t"}, via: "exec", rename: `ALTER TABLE t RENAME COLUMN a TO c`,
			tables: "t x"},
		{name: "RenamedThenTouched", via: "script", rename: `ALTER TABLE t RENAME TO u; UPDATE u SET b = 'B' WHERE id = 1`,
			tables: "u x", want: lines("update u map[id:1] before=map[a:a b:b id:1] after=map[a:a b:B id:1]")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := MustCreate(t, schema, sqlitestore.Options{})
			if tt.after != nil {
				capture(t, s, execAll(`UPDATE t SET a = 'A' WHERE id = 1`, `UPDATE t SET a = 'a' WHERE id = 1`))
			}
			c := s.StartCaptureAfter(tt.after)
			if tt.touch != "" {
				MustExec(t, s, tt.touch)
			}
			var inner *sqlitestore.Capture
			if tt.inner {
				inner = s.StartCapture()
			}
			run := func(q string) error {
				switch tt.via {
				case "script":
					return s.ExecScript(ctx, q)
				case "raw":
					conn, err := s.Conn(ctx)
					if err != nil {
						return err
					}
					return conn.Exec(q)
				}
				_, err := s.Exec(ctx, q)
				return err
			}
			for _, q := range tt.setup {
				if err := run(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			if err := run(tt.rename); fmt.Sprint(err) != cmp.Or(tt.err, "<nil>") {
				t.Errorf("%s: %v, want %s", tt.rename, err, cmp.Or(tt.err, "<nil>"))
			}
			for _, q := range tt.then {
				if err := run(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			if inner != nil {
				finishWant(t, inner, "", "")
			}
			finishWant(t, c, tt.want, "")
			rows := MustQuery(t, s, `SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`)
			var names []string
			for _, r := range rows.Values {
				names = append(names, r[0].(string))
			}
			if got := strings.Join(names, " "); got != tt.tables {
				t.Errorf("tables %q, want %q", got, tt.tables)
			}
		})
	}
	t.Run("Cached", func(t *testing.T) {
		// Prepared and cached before the capture ran (a view broken
		// then failed it), the rename is prepared again, and refused
		// with the same error.
		s := MustCreate(t, schema+`CREATE VIEW v AS SELECT * FROM nosuch;`, sqlitestore.Options{})
		if _, err := s.Exec(ctx, `ALTER TABLE t RENAME TO u`); err == nil {
			t.Fatal("the rename ran, want it failed by view v")
		}
		MustExec(t, s, `DROP VIEW v`)
		c := s.StartCapture()
		MustExec(t, s, `UPDATE t SET b = 'B' WHERE id = 1`)
		if _, err := s.Exec(ctx, `ALTER TABLE t RENAME TO u`); fmt.Sprint(err) != tableRefused {
			t.Errorf("rename: %v, want %s", err, tableRefused)
		}
		finishWant(t, c, lines(updated), "")
	})
}

// TestCapture_FollowBeforeMetadata starts a capture that follows captures
// which reported rows of t (StartCaptureAfter) while the store's table
// metadata does not describe the schema: no statement ran yet, or only
// statements while no capture ran, or the connection was released since.
// The rule holds all the same: a rename of t is refused as it is
// prepared, and one prepared on the raw connection before the capture
// began, which runs, fails it.
func TestCapture_FollowBeforeMetadata(t *testing.T) {
	ctx := context.Background()
	const (
		schema  = `CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT); INSERT INTO t VALUES (1, 'a'); CREATE TABLE x (id INTEGER PRIMARY KEY);`
		refused = "sqlitestore: renaming table t refused: change capture follows captures that reported rows of it, and its changes would name it otherwise"
		renamed = "sqlitestore: change capture cannot report the rows of table t: it was renamed to u while the capture ran, after the captures it follows reported rows of it"
	)
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, s *sqlitestore.Store)
	}{
		{"NothingRun", func(*testing.T, *sqlitestore.Store) {}},
		{"RunUncaptured", func(t *testing.T, s *sqlitestore.Store) { MustExec(t, s, `INSERT INTO x VALUES (1)`) }},
		{"Released", func(t *testing.T, s *sqlitestore.Store) {
			capture(t, s, execAll(`UPDATE t SET a = 'b' WHERE id = 1`))
			if err := s.Release(); err != nil {
				t.Fatal(err)
			}
		}},
		{"ReleasedUncaptured", func(t *testing.T, s *sqlitestore.Store) {
			MustExec(t, s, `INSERT INTO x VALUES (1)`)
			if err := s.Release(); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := MustCreate(t, schema, sqlitestore.Options{})
			tt.setup(t, s)
			c := s.StartCaptureAfter([]string{"x", "t"})
			if _, err := s.Exec(ctx, `ALTER TABLE t RENAME TO u`); fmt.Sprint(err) != refused {
				t.Errorf("rename: %v, want %s", err, refused)
			}
			finishWant(t, c, "", "")
		})
	}
	t.Run("PreparedBefore", func(t *testing.T) {
		for _, tt := range []struct {
			name     string
			reported []string
			err      string
		}{
			{"Followed", []string{"x", "t"}, renamed},
			{"OtherTable", []string{"x"}, ""},
		} {
			t.Run(tt.name, func(t *testing.T) {
				s := MustCreate(t, schema, sqlitestore.Options{})
				s.Pin()
				defer s.Unpin()
				conn, err := s.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				st, _, err := conn.Prepare(`ALTER TABLE t RENAME TO u`)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				c := s.StartCaptureAfter(tt.reported)
				if err := st.Exec(); err != nil {
					t.Fatal(err)
				}
				finishWant(t, c, "", tt.err)
			})
		}
	})
}

// TestCapture_RenameCreated creates a table with CREATE TABLE ... AS
// SELECT while a capture runs, then renames it, each through Exec,
// ExecScript or the raw connection. The capture reports the rows such a
// statement created as inserted: through Exec and ExecScript it reads
// them as the statement runs, and so holds them; for one on the raw
// connection it reads them by the table's name when it finishes, which a
// rename would leave naming no table. Either way the rename is refused as
// it is prepared, and the capture reports the row under the name it was
// created under. A table an inner capture created, which reported its
// rows, may be renamed once that capture finished.
func TestCapture_RenameCreated(t *testing.T) {
	ctx := context.Background()
	const (
		schema     = `CREATE TABLE t (id INTEGER PRIMARY KEY);`
		create     = `CREATE TABLE z AS SELECT 1 AS q`
		rename     = `ALTER TABLE z RENAME TO y`
		held       = "sqlitestore: renaming table z refused: change capture holds rows of it, and its changes would name a table that is gone"
		rawCreated = "sqlitestore: renaming table z refused: change capture reads the rows of it, which the raw connection created while it ran, by this name when it finishes"
		rawRefused = "sqlite3: authorization denied: not authorized"
		inserted   = "insert z map[rowid:1] after=map[q:1]"
	)
	run := func(s *sqlitestore.Store, via, q string) error {
		switch via {
		case "script":
			return s.ExecScript(ctx, q)
		case "raw":
			conn, err := s.Conn(ctx)
			if err != nil {
				return err
			}
			return conn.Exec(q)
		}
		_, err := s.Exec(ctx, q)
		return err
	}
	tables := func(t *testing.T, s *sqlitestore.Store, want string) {
		t.Helper()
		var names []string
		for _, r := range MustQuery(t, s, `SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`).Values {
			names = append(names, r[0].(string))
		}
		if got := strings.Join(names, " "); got != want {
			t.Errorf("tables %q, want %q", got, want)
		}
	}
	for _, created := range []string{"exec", "script", "raw"} {
		for _, renamed := range []string{"exec", "script", "raw"} {
			t.Run(created+"/"+renamed, func(t *testing.T) {
				s := MustCreate(t, schema, sqlitestore.Options{})
				s.Pin()
				defer s.Unpin()
				c := s.StartCapture()
				if err := run(s, created, create); err != nil {
					t.Fatal(err)
				}
				want := held
				switch {
				case renamed == "raw":
					want = rawRefused
				case created == "raw":
					want = rawCreated
				}
				if err := run(s, renamed, rename); fmt.Sprint(err) != want {
					t.Errorf("%s: %v, want %s", rename, err, want)
				}
				finishWant(t, c, lines(inserted), "")
				tables(t, s, "t z")
			})
		}
	}
	t.Run("Nested", func(t *testing.T) {
		s := MustCreate(t, schema, sqlitestore.Options{})
		s.Pin()
		defer s.Unpin()
		outer := s.StartCapture()
		inner := s.StartCapture()
		if err := run(s, "raw", create); err != nil {
			t.Fatal(err)
		}
		finishWant(t, inner, lines(inserted), "")
		// The inner capture reported the rows: the outer one holds none.
		MustExec(t, s, `ALTER TABLE z RENAME TO y`)
		// Created while both run, the table's rows are the inner
		// capture's, and the outer one reads them as it finishes too,
		// should the inner one not: a capture nested in the inner one
		// renames it.
		inner = s.StartCapture()
		if err := run(s, "raw", `CREATE TABLE w AS SELECT 2 AS q`); err != nil {
			t.Fatal(err)
		}
		innermost := s.StartCapture()
		refused := strings.Replace(rawCreated, " z ", " w ", 1)
		if _, err := s.Exec(ctx, `ALTER TABLE w RENAME TO v`); fmt.Sprint(err) != refused {
			t.Errorf("rename of w: %v, want %s", err, refused)
		}
		finishWant(t, innermost, "", "")
		finishWant(t, inner, lines("insert w map[rowid:1] after=map[q:2]"), "")
		finishWant(t, outer, "", "")
		tables(t, s, "t w y")
	})
}

// TestCapture_RawSchemaChanges changes rows and the schema through the raw
// connection, where the metadata goes stale with the first schema change
// and is reloaded only when the capture finishes. A change to a table
// whose columns nothing changed yet is keyed by the metadata still
// holding; one whose table's columns may have changed after it, before
// the reload, fails the capture instead of being keyed by the new columns.
func TestCapture_RawSchemaChanges(t *testing.T) {
	ctx := context.Background()
	const schema = `CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT); INSERT INTO t VALUES (1, 'a', 'b');`
	const lost = "sqlitestore: change capture cannot key a change to t: the table's columns may have changed after it, before they were reloaded"
	for _, tt := range []struct {
		name    string
		raw     []string
		want    string // formatted changes
		wantErr string
	}{
		{
			name: "OtherTableCreated",
			raw:  []string{`CREATE TABLE z (q)`, `UPDATE t SET b = 'B' WHERE id = 1`, `ALTER TABLE t DROP COLUMN a`},
			want: lines("update t map[id:1] before=map[b:b id:1] after=map[b:B id:1]"),
		},
		{
			name:    "AlteredTwice",
			raw:     []string{`ALTER TABLE t ADD COLUMN c TEXT`, `UPDATE t SET b = 'B' WHERE id = 1`, `ALTER TABLE t DROP COLUMN a`},
			wantErr: lost,
		},
		{
			name:    "AlterRolledBack",
			raw:     []string{`CREATE TABLE z (q)`, `SAVEPOINT s`, `ALTER TABLE t DROP COLUMN a`, `UPDATE t SET b = 'B' WHERE id = 1`, `ROLLBACK TO s`},
			wantErr: lost,
		},
		{
			// Its rows go with no preupdate event, and no one reads them:
			// row 1 would be in no change.
			name:    "TableDropped",
			raw:     []string{`DROP TABLE t`},
			wantErr: "sqlitestore: change capture cannot report the rows of table t: a DROP TABLE on the raw connection erased them unseen; drop tables through Exec or ExecScript",
		},
		{
			name: "CreatedAndDropped",
			raw:  []string{`CREATE TABLE z (q)`, `DROP TABLE z`, `UPDATE t SET b = 'B' WHERE id = 1`},
			want: lines("update t map[id:1] before=map[a:a b:b id:1] after=map[a:a b:B id:1]"),
		},
		{
			// Its rows go in with no preupdate event: the store reads
			// them when the capture finishes.
			name: "CreatedAsSelect",
			raw:  []string{`CREATE TABLE z AS SELECT id, a FROM t`, `CREATE TABLE IF NOT EXISTS Z AS SELECT 9`},
			want: lines("insert z map[rowid:1] after=map[a:a id:1]"),
		},
		{
			name: "CreatedAsSelectAndChanged",
			raw:  []string{`CREATE TABLE z (k TEXT PRIMARY KEY NOT NULL, v)`, `INSERT INTO z VALUES ('x', 1), ('y', 2)`, `CREATE TABLE w AS SELECT * FROM z`, `DELETE FROM z WHERE k = 'x'`, `UPDATE w SET v = 3`},
			want: lines(
				"insert w map[rowid:1] after=map[k:x v:3]",
				"insert w map[rowid:2] after=map[k:y v:3]",
				"insert z map[k:y] after=map[k:y v:2]",
			),
		},
		{
			// A table renamed is the same table: its rows are not new.
			name: "RenamedThenChanged",
			raw:  []string{`CREATE TABLE z AS SELECT 1 AS q`, `ALTER TABLE t RENAME TO u`, `UPDATE u SET b = 'B' WHERE id = 1`},
			want: lines(
				"update u map[id:1] before=map[a:a b:b id:1] after=map[a:a b:B id:1]",
				"insert z map[rowid:1] after=map[q:1]",
			),
		},
		{
			// t exists: neither statement makes a table, nor a row.
			name: "CreateOfAnExistingTable",
			raw:  []string{`CREATE TABLE IF NOT EXISTS T AS SELECT 1`, `UPDATE t SET b = 'B' WHERE id = 1`},
			want: lines("update t map[id:1] before=map[a:a b:b id:1] after=map[a:a b:B id:1]"),
		},
		{
			name: "AlteredOnce",
			raw:  []string{`ALTER TABLE t ADD COLUMN c TEXT`, `UPDATE t SET c = 'C' WHERE id = 1`, `INSERT INTO t VALUES (2, 'x', 'y', 'z')`},
			want: lines(
				"update t map[id:1] before=map[a:a b:b c:<nil> id:1] after=map[a:a b:b c:C id:1]",
				"insert t map[id:2] after=map[a:x b:y c:z id:2]",
			),
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := MustCreate(t, schema, sqlitestore.Options{})
			c := s.StartCapture()
			raw, err := s.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range tt.raw {
				if err := raw.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			finishWant(t, c, tt.want, tt.wantErr)
		})
	}
}

// TestCapture_RawCreateNested creates tables with CREATE TABLE ... AS
// SELECT on the raw connection, one in an inner capture and one after it,
// and drops a table through Exec to create it again on the raw
// connection: each table's rows are in the capture that created them,
// once, and a capture started while the raw connection is exposed knows
// the tables there were when it began.
func TestCapture_RawCreateNested(t *testing.T) {
	ctx := context.Background()
	s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT); INSERT INTO t VALUES (1, 'a');`, sqlitestore.Options{})
	s.Pin()
	defer s.Unpin()
	outer := s.StartCapture()
	raw, err := s.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inner := s.StartCapture()
	if err := raw.Exec(`CREATE TABLE x AS SELECT id FROM t`); err != nil {
		t.Fatal(err)
	}
	changes, err := inner.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := formatChanges(changes), lines("insert x map[rowid:1] after=map[id:1]"); got != want {
		t.Errorf("inner capture:\n%s\nwant:\n%s", got, want)
	}
	if _, err := s.Exec(ctx, `DROP TABLE t`); err != nil {
		t.Fatal(err)
	}
	if err := raw.Exec(`CREATE TABLE t AS SELECT 2 AS id, 'b' AS a; CREATE TABLE y AS SELECT 'y' AS v`); err != nil {
		t.Fatal(err)
	}
	late := s.StartCapture() // the raw connection is exposed: it knows t, x and y
	if err := raw.Exec(`INSERT INTO y VALUES ('z')`); err != nil {
		t.Fatal(err)
	}
	changes, err = late.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := formatChanges(changes), lines("insert y map[rowid:2] after=map[v:z]"); got != want {
		t.Errorf("capture started after the tables were created:\n%s\nwant:\n%s", got, want)
	}
	changes, err = outer.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// t was one table with the key id and is now another, keyed by rowid.
	want := lines(
		"delete t map[id:1] before=map[a:a id:1]",
		"insert t map[rowid:1] after=map[a:b id:2]",
		"insert y map[rowid:1] after=map[v:y]",
		"insert y map[rowid:2] after=map[v:z]",
	)
	if got := formatChanges(changes); got != want {
		t.Errorf("outer capture:\n%s\nwant:\n%s", got, want)
	}
}

// TestCapture_OwnStatementsReprepared has the store run its cached CREATE
// TABLE again after the schema changed under it, while its raw connection
// is exposed: SQLite prepares it again as it steps, and it is the
// store's, not a CREATE TABLE of the raw connection's. A nested capture
// drops the table first, and rolls the drop back: a table the raw
// connection created after such a drop would fail the outer capture.
func TestCapture_OwnStatementsReprepared(t *testing.T) {
	ctx := context.Background()
	s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY); INSERT INTO t VALUES (1);`, sqlitestore.Options{})
	s.Pin()
	defer s.Unpin()
	const create = `CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY)`
	if _, err := s.Exec(ctx, create); err != nil { // cached
		t.Fatal(err)
	}
	if _, err := s.Conn(ctx); err != nil {
		t.Fatal(err)
	}
	outer := s.StartCapture()
	inner := s.StartCapture()
	f, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Exec(ctx, `DROP TABLE t`); err != nil {
		t.Fatal(err)
	}
	if err := f.Rollback(); err != nil {
		t.Fatal(err)
	}
	if changes, err := inner.Finish(ctx); err != nil || len(changes) != 0 {
		t.Fatalf("inner capture: %v, %v; want no change", changes, err)
	}
	for _, q := range []string{create, `INSERT INTO t VALUES (2)`} {
		if _, err := s.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	changes, err := outer.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := formatChanges(changes), lines("insert t map[id:2] after=map[id:2]"); got != want {
		t.Errorf("changes:\n%s\nwant:\n%s", got, want)
	}
}

// TestCapture_DDLPreparedAgainstAnotherSchema runs a DROP TABLE IF EXISTS
// and a CREATE TABLE IF NOT EXISTS ... AS SELECT first while they do
// nothing (x does not exist, c does), then in a capture after the schema
// changed: the store caches statements, and what they do now is what
// counts.
func TestCapture_DDLPreparedAgainstAnotherSchema(t *testing.T) {
	s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a'); CREATE TABLE c (id INTEGER PRIMARY KEY);`, sqlitestore.Options{})
	const drop, create = `DROP TABLE IF EXISTS x`, `CREATE TABLE IF NOT EXISTS c AS SELECT id, v FROM t`
	MustExec(t, s, drop)
	MustExec(t, s, create)
	MustExec(t, s, `CREATE TABLE x (k TEXT PRIMARY KEY NOT NULL, n INTEGER) WITHOUT ROWID`)
	MustExec(t, s, `INSERT INTO x VALUES ('a', 1), ('b', 2)`)
	MustExec(t, s, `DROP TABLE c`)
	got := capture(t, s, execAll(drop, create))
	want := lines(
		"insert c map[rowid:1] after=map[id:1 v:a]",
		"delete x map[k:a] before=map[k:a n:1]",
		"delete x map[k:b] before=map[k:b n:2]",
	)
	if got != want {
		t.Errorf("changes:\n%s\nwant:\n%s", got, want)
	}
}

// TestCapture_DropThenRawCreate drops a table, or has a ROLLBACK TO undo
// one's creation, through Exec, then creates another on the raw
// connection, which SQLite gives the gone table's root page: the new table
// is new, not the gone one renamed, in one capture and in the capture
// around the one that dropped it.
func TestCapture_DropThenRawCreate(t *testing.T) {
	ctx := context.Background()
	const schema = `CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE b (id INTEGER PRIMARY KEY, v TEXT);`
	for _, tt := range []struct {
		name   string
		setup  string   // run before the capture
		exec   []string // through Exec, in an inner capture when nested
		nested bool
		want   string
	}{
		{
			name:  "Dropped",
			setup: `INSERT INTO b VALUES (1, 'b')`,
			exec:  []string{`DROP TABLE b`},
			want: lines(
				"delete b map[id:1] before=map[id:1 v:b]",
				"insert c map[rowid:1] after=map[x:7]",
			),
		},
		{
			name:   "DroppedEmptyNested",
			exec:   []string{`DROP TABLE b`},
			nested: true,
			want:   lines("insert c map[rowid:1] after=map[x:7]"),
		},
		{
			name: "CreationRolledBack",
			exec: []string{`SAVEPOINT s`, `CREATE TABLE y (id INTEGER PRIMARY KEY, v TEXT)`, `INSERT INTO y VALUES (1, 'y')`, `ROLLBACK TO s`},
			want: lines("insert c map[rowid:1] after=map[x:7]"),
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := MustCreate(t, schema, sqlitestore.Options{})
			if tt.setup != "" {
				MustExec(t, s, tt.setup)
			}
			s.Pin()
			defer s.Unpin()
			c := s.StartCapture()
			f, err := s.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := s.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			inner := c
			if tt.nested {
				inner = s.StartCapture()
			}
			for _, q := range tt.exec {
				MustExec(t, s, q)
			}
			if tt.nested {
				if changes, err := inner.Finish(ctx); err != nil || len(changes) > 0 {
					t.Fatalf("inner capture: %v, %v; want no change", changes, err)
				}
			}
			if err := raw.Exec(`CREATE TABLE c AS SELECT 7 AS x`); err != nil {
				t.Fatal(err)
			}
			changes, err := c.Finish(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := formatChanges(changes); got != tt.want {
				t.Errorf("changes:\n%s\nwant:\n%s", got, tt.want)
			}
			if err := f.Commit(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCapture_DroppedPageReusedThenReload rebuilds a table as a migration
// does, in one capture through Exec: drop it, create another from a
// staging table (SQLite gives it the dropped table's root page) and drop
// the staging table. Every later reload of the metadata took the new
// table for the dropped one renamed, and the capture failed saying so;
// the reload after the creation had already seen the page change hands.
func TestCapture_DroppedPageReusedThenReload(t *testing.T) {
	ctx := context.Background()
	s := MustCreate(t, `CREATE TABLE old (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE staging (v TEXT);`, sqlitestore.Options{})
	MustExec(t, s, `INSERT INTO old VALUES (1, 'a')`)
	MustExec(t, s, `INSERT INTO staging VALUES ('b')`)
	s.Pin()
	defer s.Unpin()
	c := s.StartCapture()
	f, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP TABLE old`, `CREATE TABLE fresh AS SELECT v FROM staging`, `DROP TABLE staging`} {
		MustExec(t, s, q)
	}
	changes, err := c.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := lines(
		"insert fresh map[rowid:1] after=map[v:b]",
		"delete old map[id:1] before=map[id:1 v:a]",
		"delete staging map[rowid:1] before=map[v:b]",
	)
	if got := formatChanges(changes); got != want {
		t.Errorf("changes:\n%s\nwant:\n%s", got, want)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestCapture_RollbackThenRawCreate has a ROLLBACK TO undo the creation
// of a table whose rows the capture holds, then, on the raw connection,
// creates another, which SQLite gives the undone table's root page; or has
// a ROLLBACK TO bring back a dropped table on the root page of one
// created since. No ALTER TABLE ran in the transaction, so no table was
// renamed: the new table is new, the undone one gone. A table renamed (or
// one of its columns), on either connection, or by a rollback undoing a
// rename, still fails the capture.
func TestCapture_RollbackThenRawCreate(t *testing.T) {
	const schema = `CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT); INSERT INTO t VALUES (1, 'a', 'b');`
	const (
		created          = "insert c map[rowid:1] after=map[x:7]"
		updated          = "update t map[id:1] before=map[a:a b:b id:1] after=map[a:a b:B id:1]"
		renamed          = "sqlitestore: change capture cannot report the rows of table t: it was renamed to u while the capture ran"
		renamedBack      = "sqlitestore: change capture cannot report the rows of table u: it was renamed to t while the capture ran"
		columnRenamed    = "sqlitestore: change capture cannot report the rows of table t: its column a was renamed to c while the capture ran"
		updatedAgain     = "update t map[id:1] before=map[a:a b:b id:1] after=map[a:a b:C id:1]"
		renamedTwice     = "sqlitestore: change capture cannot report the rows of table t: its column c was renamed to a while the capture ran"
		renamedBackAdded = "sqlitestore: change capture cannot report the rows of table t: its column c was renamed to b while the capture ran"
		renamedAdded     = "sqlitestore: change capture cannot report the rows of table t: its column b was renamed to c while the capture ran"
		swapped          = "sqlitestore: change capture cannot report the rows of table t: its column b was renamed to a while the capture ran"
		renamedOrDropped = "sqlitestore: change capture cannot report the rows of table t: its column c was renamed or dropped while the capture ran, as were others of the table, so where it went cannot be told"
		rawDropped       = "sqlitestore: change capture cannot report the rows of table y: a DROP TABLE on the raw connection erased them unseen; drop tables through Exec or ExecScript"
	)
	// Steps as captureSteps runs them; a frame still open when the
	// capture finishes is rolled back after it.
	runStepCases(t, schema, []stepCase{
		{
			name:  "ExecCreated",
			steps: []string{"conn", "begin", `SAVEPOINT s`, `CREATE TABLE y (id INTEGER PRIMARY KEY, v TEXT)`, `INSERT INTO y VALUES (1, 'y')`, `raw: ROLLBACK TO s`, `raw: CREATE TABLE c AS SELECT 7 AS x`},
			want:  lines(created),
		},
		{
			name:  "ExecCreatedRawSavepoint",
			steps: []string{"conn", "begin", `raw: SAVEPOINT s`, `CREATE TABLE y (id INTEGER PRIMARY KEY, v TEXT)`, `INSERT INTO y VALUES (1, 'y')`, `UPDATE t SET b = 'B' WHERE id = 1`, `raw: ROLLBACK TO s`, `raw: CREATE TABLE c AS SELECT 7 AS x`},
			want:  lines(created),
		},
		{
			name:  "RawCreatedExecWritten",
			steps: []string{"conn", "begin", `raw: SAVEPOINT s`, `raw: CREATE TABLE y (id INTEGER PRIMARY KEY, v TEXT)`, `INSERT INTO y VALUES (1, 'y')`, `raw: ROLLBACK TO s`, `raw: CREATE TABLE c AS SELECT 7 AS x`},
			want:  lines(created),
		},
		{
			name:  "RawCreatedRawWritten",
			steps: []string{"conn", "begin", `raw: SAVEPOINT s`, `raw: CREATE TABLE y (id INTEGER PRIMARY KEY, v TEXT)`, `raw: INSERT INTO y VALUES (1, 'y')`, `raw: ROLLBACK TO s`, `raw: CREATE TABLE c AS SELECT 7 AS x`},
			want:  lines(created),
		},
		{
			// The capture knows y, which existed when the raw connection
			// was taken, but holds none of its rows: c is not y renamed,
			// and its rows are new.
			name:  "ExecCreatedUntouched",
			steps: []string{"begin", `SAVEPOINT s`, `CREATE TABLE y (id INTEGER PRIMARY KEY, v TEXT)`, "conn", `raw: ROLLBACK TO s`, `raw: CREATE TABLE c AS SELECT 7 AS x`},
			want:  lines(created),
		},
		{
			// A column added or dropped earlier in the transaction
			// renames nothing.
			name:  "ColumnAddedBefore",
			steps: []string{"conn", "begin", `ALTER TABLE t ADD COLUMN z TEXT`, `SAVEPOINT s`, `CREATE TABLE y (id INTEGER PRIMARY KEY, v TEXT)`, `INSERT INTO y VALUES (1, 'y')`, `raw: ROLLBACK TO s`, `raw: CREATE TABLE c AS SELECT 7 AS x`},
			want:  lines(created),
		},
		{
			name:  "RawColumnAddedBefore",
			steps: []string{"conn", "begin", `raw: ALTER TABLE t ADD COLUMN z TEXT`, `SAVEPOINT s`, `CREATE TABLE y (id INTEGER PRIMARY KEY, v TEXT)`, `INSERT INTO y VALUES (1, 'y')`, `raw: ROLLBACK TO s`, `raw: CREATE TABLE c AS SELECT 7 AS x`},
			want:  lines(created),
		},
		{
			// The same name, other columns: no column was renamed.
			name:  "CreatedAgainOtherColumns",
			steps: []string{"conn", "begin", `SAVEPOINT s`, `CREATE TABLE y (id INTEGER PRIMARY KEY, v TEXT)`, `INSERT INTO y VALUES (1, 'y')`, `raw: ROLLBACK TO s`, `raw: CREATE TABLE y (id INTEGER PRIMARY KEY, w TEXT)`, `raw: INSERT INTO y VALUES (2, 'w')`},
			want:  lines("insert y map[id:2] after=map[id:2 w:w]"),
		},
		{
			// t comes back on the root page y took after t was dropped.
			name:  "DroppedBroughtBack",
			steps: []string{"begin", `SAVEPOINT s`, `DROP TABLE t`, `CREATE TABLE y (id INTEGER PRIMARY KEY, v TEXT)`, `INSERT INTO y VALUES (1, 'y')`, `ROLLBACK TO s`, `UPDATE t SET b = 'B' WHERE id = 1`},
			want:  lines(updated),
		},
		{
			name:  "DroppedBroughtBackRawCreate",
			steps: []string{"conn", "begin", `SAVEPOINT s`, `DROP TABLE t`, `CREATE TABLE y (id INTEGER PRIMARY KEY, v TEXT)`, `INSERT INTO y VALUES (1, 'y')`, `raw: ROLLBACK TO s`, `raw: CREATE TABLE c AS SELECT 7 AS x`},
			want:  lines(created),
		},
		{
			// y was created after the metadata was loaded: the raw DROP
			// erases no row the metadata knows of.
			name:  "RawDroppedRawCreated",
			steps: []string{"conn", "begin", `UPDATE t SET b = 'B' WHERE id = 1`, `raw: CREATE TABLE y AS SELECT 1 AS v`, `raw: DROP TABLE y`, `raw: CREATE TABLE c AS SELECT 7 AS x`},
			want:  lines(created, updated),
		},
		{
			name:    "ExecCreatedRawDroppedRawCreated",
			steps:   []string{"conn", "begin", `CREATE TABLE y (id INTEGER PRIMARY KEY, v TEXT)`, `INSERT INTO y VALUES (1, 'y')`, `raw: DROP TABLE y`, `raw: CREATE TABLE c AS SELECT 7 AS x`},
			wantErr: rawDropped,
		},
		{
			// A rename prepared after the row was touched is refused (see
			// TestCapture_RenameRefused); one prepared on the raw
			// connection before runs unseen, and nothing after it tells
			// the store the schema changed but its version.
			name:    "RawRenamed",
			steps:   []string{"conn", `prepare: ALTER TABLE t RENAME TO u`, "begin", `UPDATE t SET b = 'B' WHERE id = 1`, "step"},
			wantErr: renamed,
		},
		{
			// A column dropped and another added rename nothing: the
			// store read the dropped column's values before the drop.
			name:  "DropAddRolledBack",
			steps: []string{"conn", "begin", `SAVEPOINT s`, `ALTER TABLE t DROP COLUMN a`, `ALTER TABLE t ADD COLUMN z TEXT`, `UPDATE t SET b = 'B' WHERE id = 1`, `ROLLBACK TO s`, `UPDATE t SET b = 'C' WHERE id = 1`},
			want:  lines(updatedAgain),
		},
		{
			// The rollback undoes a column added as well as the rename.
			name:    "RenameColumnAddedRolledBack",
			steps:   []string{"begin", `SAVEPOINT s`, `ALTER TABLE t RENAME COLUMN b TO c`, `ALTER TABLE t ADD COLUMN z TEXT`, `UPDATE t SET a = 'A' WHERE id = 1`, `ROLLBACK TO s`},
			wantErr: renamedBackAdded,
		},
		{
			name:    "ColumnAddedRenameRolledBack",
			steps:   []string{"begin", `SAVEPOINT s`, `ALTER TABLE t ADD COLUMN z TEXT`, `ALTER TABLE t RENAME COLUMN b TO c`, `UPDATE t SET a = 'A' WHERE id = 1`, "rollback"},
			wantErr: renamedBackAdded,
		},
		{
			name:    "RawRenameColumnAddedRolledBack",
			steps:   []string{"conn", "begin", `SAVEPOINT s`, `raw: ALTER TABLE t RENAME COLUMN b TO c`, `raw: ALTER TABLE t ADD COLUMN z TEXT`, `UPDATE t SET a = 'A' WHERE id = 1`, `ROLLBACK TO s`},
			wantErr: renamedBackAdded,
		},
		{
			// Prepared before the row was touched, the rename runs (one
			// prepared after is refused: see TestCapture_RenameRefused).
			name:    "RawRenamedColumnAdded",
			steps:   []string{"conn", `prepare: ALTER TABLE t RENAME COLUMN b TO c`, "begin", `UPDATE t SET a = 'A' WHERE id = 1`, "step", `raw: ALTER TABLE t ADD COLUMN z TEXT`, "commit"},
			wantErr: renamedAdded,
		},
		{
			// Which column took c's name is not known.
			name:    "RenameColumnDroppedRolledBack",
			steps:   []string{"begin", `SAVEPOINT s`, `ALTER TABLE t RENAME COLUMN b TO c`, `ALTER TABLE t DROP COLUMN a`, `UPDATE t SET c = 'C' WHERE id = 1`, `ROLLBACK TO s`},
			wantErr: renamedOrDropped,
		},
		{
			// The rollback swaps a and b back.
			name:    "RawColumnsSwapped",
			steps:   []string{"conn", "begin", `raw: SAVEPOINT s`, `raw: ALTER TABLE t RENAME COLUMN a TO x`, `raw: ALTER TABLE t RENAME COLUMN b TO a`, `raw: ALTER TABLE t RENAME COLUMN x TO b`, `UPDATE t SET a = 'B' WHERE id = 1`, `raw: ROLLBACK TO s`},
			wantErr: swapped,
		},
		{
			// A rename earlier in the transaction, loaded before the
			// drop, takes no part in it.
			name:  "RenamedThenDropped",
			steps: []string{"begin", `ALTER TABLE t RENAME COLUMN b TO c`, `UPDATE t SET c = 'C' WHERE id = 1`, `ALTER TABLE t DROP COLUMN a`, "commit"},
			want:  lines("update t map[id:1] before=map[c:b id:1] after=map[c:C id:1]"),
		},
		{
			// The rollback has c take a's name back as a takes b's.
			name:    "RawColumnRenamedTwice",
			steps:   []string{"conn", "begin", `raw: SAVEPOINT s`, `raw: ALTER TABLE t RENAME COLUMN a TO c`, `raw: ALTER TABLE t RENAME COLUMN b TO a`, `UPDATE t SET a = 'B' WHERE id = 1`, `raw: ROLLBACK TO s`},
			wantErr: renamedTwice,
		},
		{
			name:    "RenamedAfterColumnAdded",
			steps:   []string{"conn", "begin", `raw: ALTER TABLE t ADD COLUMN z TEXT`, `prepare: ALTER TABLE t RENAME TO u`, `UPDATE t SET b = 'B' WHERE id = 1`, "step"},
			wantErr: renamed,
		},
		{
			name:    "RawColumnRenamed",
			steps:   []string{"conn", `prepare: ALTER TABLE t RENAME COLUMN a TO c`, "begin", `UPDATE t SET b = 'B' WHERE id = 1`, "step"},
			wantErr: columnRenamed,
		},
		{
			// A column dropped or added by a statement prepared before is
			// no rename: the row is logged in the columns it ends with.
			name:  "RawColumnDroppedPreparedBefore",
			steps: []string{"conn", `prepare: ALTER TABLE t DROP COLUMN a`, "begin", `UPDATE t SET b = 'B' WHERE id = 1`, "step", "commit"},
			want:  lines("update t map[id:1] before=map[b:b id:1] after=map[b:B id:1]"),
		},
		{
			name:  "RawColumnAddedPreparedBefore",
			steps: []string{"conn", `prepare: ALTER TABLE t ADD COLUMN z TEXT DEFAULT 'z'`, `UPDATE t SET b = 'B' WHERE id = 1`, "step"},
			want:  lines("update t map[id:1] before=map[a:a b:b id:1 z:<nil>] after=map[a:a b:B id:1 z:z]"),
		},
		{
			// Prepared before the frame began, the rename runs in it.
			name:    "RawRenamePreparedBefore",
			steps:   []string{"conn", `prepare: ALTER TABLE t RENAME TO u`, "begin", `UPDATE t SET b = 'B' WHERE id = 1`, "step", `raw: CREATE TABLE c AS SELECT 7 AS x`},
			wantErr: renamed,
		},
		{
			name:    "ExecRenameRawRolledBack",
			steps:   []string{"conn", "begin", `SAVEPOINT s`, `ALTER TABLE t RENAME TO u`, `UPDATE u SET b = 'B' WHERE id = 1`, `raw: ROLLBACK TO s`, `raw: CREATE TABLE c AS SELECT 7 AS x`},
			wantErr: renamedBack,
		},
		{
			name:    "RawRenameRawRolledBack",
			steps:   []string{"conn", "begin", `raw: SAVEPOINT s`, `raw: ALTER TABLE t RENAME TO u`, `UPDATE u SET b = 'B' WHERE id = 1`, `raw: ROLLBACK TO s`},
			wantErr: renamedBack,
		},
		{
			// The rename ran in a transaction the raw connection began.
			name:    "ExecRenameInRawTransaction",
			steps:   []string{"conn", `raw: SAVEPOINT r`, `ALTER TABLE t RENAME TO u`, `UPDATE u SET b = 'B' WHERE id = 1`, `raw: ROLLBACK TO r`},
			wantErr: renamedBack,
		},
		{
			// The rename ran in that transaction before a frame began in
			// it, and was loaded before the frame touched the row.
			name:    "ExecRenameBeforeFrame",
			steps:   []string{"conn", `raw: SAVEPOINT r`, `ALTER TABLE t RENAME TO u`, "begin", `UPDATE u SET b = 'B' WHERE id = 1`, "commit", `raw: ROLLBACK TO r`},
			wantErr: renamedBack,
		},
	})
}

// captureSteps runs steps on s inside a capture and returns what the
// captures reported: the changes of each nested capture prefixed "inner ",
// then the capture's own (as formatChanges writes them), or its error.
// Frames still open when the capture finishes are rolled back after it.
//
// "conn" takes the raw connection, "begin" begins a frame, "commit" and
// "rollback" end the innermost one, "inner" starts a nested capture and
// "end inner" finishes it, "raw: q" runs q on the raw connection,
// "prepare: q" prepares q there and "step" runs it, "script: q" runs q
// through ExecScript; any other step is a statement run through Exec.
func captureSteps(t *testing.T, s *sqlitestore.Store, steps []string) (string, error) {
	t.Helper()
	ctx := context.Background()
	s.Pin()
	defer s.Unpin()
	c := s.StartCapture()
	var raw *sqlite3.Conn
	var prepared *sqlite3.Stmt
	var frames []*sqlitestore.Frame
	defer func() {
		for _, f := range slices.Backward(frames) {
			f.Rollback()
		}
	}()
	var inner *sqlitestore.Capture
	var out strings.Builder
	for _, q := range steps {
		var err error
		switch {
		case q == "conn":
			raw, err = s.Conn(ctx)
		case q == "step":
			err = prepared.Exec()
			prepared.Close()
		case strings.HasPrefix(q, "prepare: "):
			prepared, _, err = raw.Prepare(strings.TrimPrefix(q, "prepare: "))
		case q == "begin":
			var f *sqlitestore.Frame
			if f, err = s.Begin(ctx); err == nil {
				frames = append(frames, f)
			}
		case q == "commit", q == "rollback":
			f := frames[len(frames)-1]
			frames = frames[:len(frames)-1]
			if q == "commit" {
				err = f.Commit()
			} else {
				err = f.Rollback()
			}
		case q == "inner":
			inner = s.StartCapture()
		case q == "end inner":
			var changes []sqlitestore.Change
			if changes, err = inner.Finish(ctx); err == nil {
				for _, l := range strings.SplitAfter(formatChanges(changes), "\n") {
					if l != "" {
						out.WriteString("inner " + l)
					}
				}
			}
		case strings.HasPrefix(q, "raw: "):
			err = raw.Exec(strings.TrimPrefix(q, "raw: "))
		case strings.HasPrefix(q, "script: "):
			err = s.ExecScript(ctx, strings.TrimPrefix(q, "script: "))
		default:
			_, err = s.Exec(ctx, q)
		}
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	changes, err := c.Finish(ctx)
	if err != nil {
		return "", err
	}
	out.WriteString(formatChanges(changes))
	return out.String(), nil
}

// stepCase is a capture of steps, as captureSteps runs them, and what it
// should report: the formatted changes want, or the error wantErr.
type stepCase struct {
	name    string
	steps   []string
	want    string
	wantErr string
}

// runStepCases runs each case in a subtest, on a store created with
// schema.
func runStepCases(t *testing.T, schema string, cases []stepCase) {
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := captureSteps(t, MustCreate(t, schema, sqlitestore.Options{}), tt.steps)
			wantSteps(t, got, err, tt.want, tt.wantErr)
		})
	}
}

// wantSteps fails t unless a capture reported got, want, or the error
// wantErr when that is set.
func wantSteps(t *testing.T, got string, err error, want, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || err.Error() != wantErr {
			t.Fatalf("err = %v (changes %q), want %q", err, got, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("changes:\n%s\nwant:\n%s", got, want)
	}
}

// TestCapture_DropColumn drops columns while a capture runs. A DROP COLUMN
// that stays is logged as no change of its own: a row the capture touched
// is described in the table's columns when it finishes, the dropped one
// left out, and a row it did not touch is not logged. One a rollback
// undoes leaves the rows as they were, though SQLite erased the column's
// values with no preupdate event: a row first touched after the drop is
// logged with the value the rollback brought back, or, when the drop ran
// on the raw connection, which the store cannot read before, fails the
// capture.
func TestCapture_DropColumn(t *testing.T) {
	const schema = `CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT); INSERT INTO t VALUES (1, 'a', 'b'), (2, 'a2', 'b2');`
	const (
		updated     = "update t map[id:1] before=map[b:b id:1] after=map[b:B id:1]"
		updatedWide = "update t map[id:1] before=map[a:a b:b id:1] after=map[a:a b:B id:1]"
		rawDropped  = "sqlitestore: change capture cannot report the rows of table t: a DROP COLUMN on the raw connection erased its column a unseen, and a rollback brought it back; drop columns through Exec or ExecScript"
		// With a column added, the table's columns are as many as before.
		rawDroppedAdded = "sqlitestore: change capture cannot report the rows of table t: a DROP COLUMN on the raw connection erased a column of it unseen before the capture first touched them, and a rollback may have brought it back; drop columns through Exec or ExecScript"
	)
	runStepCases(t, schema, []stepCase{
		{name: "TouchedAfter", steps: []string{`ALTER TABLE t DROP COLUMN a`, `UPDATE t SET b = 'B' WHERE id = 1`}, want: lines(updated)},
		{name: "TouchedBefore", steps: []string{`UPDATE t SET b = 'B' WHERE id = 1`, `ALTER TABLE t DROP COLUMN a`}, want: lines(updated)},
		{
			name:  "TouchedBeforeAndAfter",
			steps: []string{`UPDATE t SET b = 'X' WHERE id = 1`, `ALTER TABLE t DROP COLUMN a`, `UPDATE t SET b = 'B' WHERE id = 1`},
			want:  lines(updated),
		},
		{name: "InAFrame", steps: []string{"begin", `ALTER TABLE t DROP COLUMN a`, `UPDATE t SET b = 'B' WHERE id = 1`, "commit"}, want: lines(updated)},
		{
			name:  "SavepointReleased",
			steps: []string{"begin", `SAVEPOINT s`, `ALTER TABLE t DROP COLUMN a`, `UPDATE t SET b = 'B' WHERE id = 1`, `RELEASE s`, "commit"},
			want:  lines(updated),
		},
		{
			// The rollback undoes the update only.
			name:  "RolledBackToAfter",
			steps: []string{"begin", `ALTER TABLE t DROP COLUMN a`, `SAVEPOINT s`, `UPDATE t SET b = 'X' WHERE id = 1`, `ROLLBACK TO s`, `UPDATE t SET b = 'B' WHERE id = 1`, "commit"},
			want:  lines(updated),
		},
		{name: "Script", steps: []string{`script: ALTER TABLE t DROP COLUMN a; UPDATE t SET b = 'B' WHERE id = 1`}, want: lines(updated)},
		{name: "Raw", steps: []string{"conn", "begin", `raw: ALTER TABLE t DROP COLUMN a`, `UPDATE t SET b = 'B' WHERE id = 1`, "commit"}, want: lines(updated)},
		{name: "Deleted", steps: []string{`ALTER TABLE t DROP COLUMN a`, `DELETE FROM t WHERE id = 1`}, want: lines("delete t map[id:1] before=map[b:b id:1]")},
		{name: "Inserted", steps: []string{`ALTER TABLE t DROP COLUMN a`, `INSERT INTO t VALUES (3, 'c')`}, want: lines("insert t map[id:3] after=map[b:c id:3]")},
		{
			name:  "KeyChanged",
			steps: []string{`ALTER TABLE t DROP COLUMN a`, `UPDATE t SET id = 5 WHERE id = 1`},
			want:  lines("delete t map[id:1] before=map[b:b id:1]", "insert t map[id:5] after=map[b:b id:5]"),
		},
		{
			// A gone table's rows are described in its columns when each
			// was first touched.
			name:  "TableDropped",
			steps: []string{`UPDATE t SET b = 'B' WHERE id = 1`, `ALTER TABLE t DROP COLUMN a`, `DROP TABLE t`},
			want:  lines("delete t map[id:1] before=map[a:a b:b id:1]", "delete t map[id:2] before=map[b:b2 id:2]"),
		},
		{
			name:  "AddedAgain",
			steps: []string{`ALTER TABLE t DROP COLUMN a`, `ALTER TABLE t ADD COLUMN a TEXT DEFAULT 'd'`, `UPDATE t SET b = 'B' WHERE id = 1`},
			want:  lines("update t map[id:1] before=map[a:d b:b id:1] after=map[a:d b:B id:1]"),
		},
		{
			name:  "OtherRenamed",
			steps: []string{`ALTER TABLE t DROP COLUMN a`, `ALTER TABLE t RENAME COLUMN b TO c`, `UPDATE t SET c = 'B' WHERE id = 1`},
			want:  lines("update t map[id:1] before=map[c:b id:1] after=map[c:B id:1]"),
		},
		{
			name:  "Nested",
			steps: []string{"begin", `ALTER TABLE t DROP COLUMN a`, "inner", `UPDATE t SET b = 'X' WHERE id = 1`, "end inner", `UPDATE t SET b = 'B' WHERE id = 2`, "commit"},
			want: lines(
				"inner update t map[id:1] before=map[b:b id:1] after=map[b:X id:1]",
				"update t map[id:2] before=map[b:b2 id:2] after=map[b:B id:2]",
			),
		},
		{
			name:  "DroppedInNested",
			steps: []string{"inner", `UPDATE t SET b = 'B' WHERE id = 1`, `ALTER TABLE t DROP COLUMN a`, "end inner", `UPDATE t SET b = 'B' WHERE id = 2`},
			want: lines(
				"inner "+updated,
				"update t map[id:2] before=map[b:b2 id:2] after=map[b:B id:2]",
			),
		},

		// Drops a rollback undoes.
		{name: "RolledBackToSavepoint", steps: []string{"begin", `SAVEPOINT s`, `ALTER TABLE t DROP COLUMN a`, `UPDATE t SET b = 'B' WHERE id = 1`, `ROLLBACK TO s`, "commit"}},
		{
			name:  "RolledBackThenTouched",
			steps: []string{"begin", `SAVEPOINT s`, `ALTER TABLE t DROP COLUMN a`, `UPDATE t SET b = 'X' WHERE id = 1`, `ROLLBACK TO s`, `UPDATE t SET b = 'B' WHERE id = 1`, "commit"},
			want:  lines(updatedWide),
		},
		{name: "FrameRolledBack", steps: []string{"begin", `ALTER TABLE t DROP COLUMN a`, `UPDATE t SET b = 'B' WHERE id = 1`, "rollback"}},
		{name: "NestedFrameRolledBack", steps: []string{"begin", "begin", `ALTER TABLE t DROP COLUMN a`, `UPDATE t SET b = 'B' WHERE id = 1`, "rollback", "commit"}},
		{
			name:  "ReleasedThenFrameRolledBack",
			steps: []string{"begin", `SAVEPOINT s`, `ALTER TABLE t DROP COLUMN a`, `RELEASE s`, `UPDATE t SET b = 'B' WHERE id = 1`, "rollback"},
		},
		{name: "ScriptRolledBack", steps: []string{"begin", `script: SAVEPOINT s; ALTER TABLE t DROP COLUMN a; UPDATE t SET b = 'B' WHERE id = 1; ROLLBACK TO s`, "commit"}},
		{name: "DeletedRolledBack", steps: []string{"begin", `SAVEPOINT s`, `ALTER TABLE t DROP COLUMN a`, `DELETE FROM t WHERE id = 1`, `ROLLBACK TO s`, "commit"}},
		{
			// The table has as many columns after the drop and the add:
			// no column was renamed.
			name:  "OtherAddedRolledBack",
			steps: []string{"begin", `SAVEPOINT s`, `ALTER TABLE t DROP COLUMN a`, `ALTER TABLE t ADD COLUMN z TEXT`, `UPDATE t SET b = 'B' WHERE id = 1`, `ROLLBACK TO s`, "commit"},
		},
		{
			name:  "OtherAddedFrameRolledBack",
			steps: []string{"begin", `ALTER TABLE t DROP COLUMN a`, `ALTER TABLE t ADD COLUMN z TEXT`, `UPDATE t SET b = 'B' WHERE id = 1`, "rollback"},
		},
		{name: "KeyChangedRolledBack", steps: []string{"begin", `SAVEPOINT s`, `ALTER TABLE t DROP COLUMN a`, `UPDATE t SET id = 5 WHERE id = 1`, `ROLLBACK TO s`, "commit"}},
		{name: "TableDroppedRolledBack", steps: []string{"begin", `SAVEPOINT s`, `ALTER TABLE t DROP COLUMN a`, `DROP TABLE t`, `ROLLBACK TO s`, "commit"}},
		{
			name:  "TwoDroppedRolledBack",
			steps: []string{"begin", `SAVEPOINT s`, `ALTER TABLE t DROP COLUMN a`, `ALTER TABLE t DROP COLUMN b`, `DELETE FROM t WHERE id = 1`, `ROLLBACK TO s`, "commit"},
		},
		{
			// The rollback to s undoes the update only; the frame's, the
			// drop.
			name:  "RolledBackInTwoSteps",
			steps: []string{"begin", `ALTER TABLE t DROP COLUMN a`, `SAVEPOINT s`, `UPDATE t SET b = 'X' WHERE id = 1`, `ROLLBACK TO s`, `UPDATE t SET b = 'B' WHERE id = 2`, "rollback"},
		},
		{
			// The rows the inner capture touched after the drop are the
			// outer one's first to touch; the rollback undoes both.
			name:  "NestedRolledBack",
			steps: []string{"begin", `SAVEPOINT s`, `ALTER TABLE t DROP COLUMN a`, "inner", `UPDATE t SET b = 'B' WHERE id = 1`, "end inner", `UPDATE t SET b = 'C' WHERE id = 1`, `ROLLBACK TO s`, "commit"},
			want: lines(
				"inner "+updated,
				"update t map[id:1] before=map[a:a b:B id:1] after=map[a:a b:b id:1]",
			),
		},
		{
			// The row the inner capture inserted after the drop had no
			// value in the column: no rollback brings one back to it.
			name:  "NestedInsertedRolledBack",
			steps: []string{"begin", `SAVEPOINT s`, `ALTER TABLE t DROP COLUMN a`, "inner", `INSERT INTO t VALUES (3, 'c')`, "end inner", `UPDATE t SET b = 'C' WHERE id = 3`, `ROLLBACK TO s`, "commit"},
			want: lines(
				"inner insert t map[id:3] after=map[b:c id:3]",
				"delete t map[id:3] before=map[a:<nil> b:c id:3]",
			),
		},
		{
			name:  "DroppedInNestedRolledBack",
			steps: []string{"begin", `SAVEPOINT s`, "inner", `ALTER TABLE t DROP COLUMN a`, "end inner", `UPDATE t SET b = 'B' WHERE id = 1`, `ROLLBACK TO s`, "commit"},
		},
		{
			name:    "RawRolledBackToSavepoint",
			steps:   []string{"conn", "begin", `SAVEPOINT s`, `raw: ALTER TABLE t DROP COLUMN a`, `UPDATE t SET b = 'B' WHERE id = 1`, `ROLLBACK TO s`, "commit"},
			wantErr: rawDropped,
		},
		{
			name:    "RawFrameRolledBack",
			steps:   []string{"conn", "begin", `raw: ALTER TABLE t DROP COLUMN a`, `UPDATE t SET b = 'B' WHERE id = 1`, "rollback"},
			wantErr: rawDropped,
		},
		{
			name:    "RawOtherAddedRolledBack",
			steps:   []string{"conn", "begin", `SAVEPOINT s`, `raw: ALTER TABLE t DROP COLUMN a`, `raw: ALTER TABLE t ADD COLUMN z TEXT`, `UPDATE t SET b = 'B' WHERE id = 1`, `ROLLBACK TO s`, "commit"},
			wantErr: rawDroppedAdded,
		},
		{
			// Touched before the raw drop, the row's image has the column.
			name:  "RawTouchedBeforeRolledBack",
			steps: []string{"conn", "begin", `UPDATE t SET b = 'B' WHERE id = 1`, `raw: ALTER TABLE t DROP COLUMN a`, `UPDATE t SET b = 'C' WHERE id = 1`, "rollback"},
		},
	})
}

// TestCapture_DropColumnAddedAgain drops a column and adds one of the same
// name while a capture runs, then touches a row. A rollback that undoes
// the drop brings the dropped column back with the values the store read
// before the drop, though, with the column last, the table's columns are
// the same again; one that undoes only what came after the drop leaves the
// added column, whose value the row held when first touched. On the raw
// connection the store reads nothing before the drop, so a rollback after
// the first touch fails the capture.
func TestCapture_DropColumnAddedAgain(t *testing.T) {
	const (
		updated    = "update t map[id:1] before=map[a:a b:b id:1] after=map[a:a b:B id:1]"
		addedKept  = "update t map[id:1] before=map[a:d b:b id:1] after=map[a:d b:B id:1]"
		rawDropped = "sqlitestore: change capture cannot report the rows of table t: a DROP COLUMN on the raw connection erased a column of it unseen before the capture first touched them, and a rollback may have brought it back; drop columns through Exec or ExecScript"
		rawUnsure  = "sqlitestore: change capture cannot report the rows of table t: its column a was dropped and added again, and the raw connection changed the schema after a rollback, so which of the two the row holds cannot be told"
	)
	cases := []stepCase{
		{name: "RolledBackToSavepoint", steps: []string{"begin", `SAVEPOINT s`, `ALTER TABLE t DROP COLUMN a`, `ALTER TABLE t ADD COLUMN a TEXT`, `UPDATE t SET b = 'B' WHERE id = 1`, `ROLLBACK TO s`, "commit"}},
		{name: "FrameRolledBack", steps: []string{"begin", `ALTER TABLE t DROP COLUMN a`, `ALTER TABLE t ADD COLUMN a TEXT DEFAULT 'd'`, `UPDATE t SET b = 'B' WHERE id = 1`, "rollback"}},
		{name: "ScriptRolledBack", steps: []string{"begin", `script: SAVEPOINT s; ALTER TABLE t DROP COLUMN a; ALTER TABLE t ADD COLUMN a TEXT; UPDATE t SET b = 'B' WHERE id = 1; ROLLBACK TO s`, "commit"}},
		{
			name:  "RolledBackThenTouched",
			steps: []string{"begin", `SAVEPOINT s`, `ALTER TABLE t DROP COLUMN a`, `ALTER TABLE t ADD COLUMN a TEXT`, `UPDATE t SET b = 'X' WHERE id = 1`, `ROLLBACK TO s`, `UPDATE t SET b = 'B' WHERE id = 1`, "commit"},
			want:  lines(updated),
		},
		{
			name:  "RawRolledBackToSavepoint",
			steps: []string{"conn", "begin", `SAVEPOINT s`, `ALTER TABLE t DROP COLUMN a`, `ALTER TABLE t ADD COLUMN a TEXT`, `UPDATE t SET b = 'B' WHERE id = 1`, `raw: ROLLBACK TO s`, "commit"},
		},
		{
			// Twice: the rollback undoes both drops.
			name: "TwiceRolledBack",
			steps: []string{"begin", `SAVEPOINT s`, `ALTER TABLE t DROP COLUMN a`, `ALTER TABLE t ADD COLUMN a TEXT`, `ALTER TABLE t DROP COLUMN a`,
				`ALTER TABLE t ADD COLUMN a TEXT DEFAULT 'd'`, `UPDATE t SET b = 'B' WHERE id = 1`, `ROLLBACK TO s`, "commit"},
		},
		{
			// The rollback undoes the update only: the column is the one
			// added.
			name:  "RolledBackToAfter",
			steps: []string{"begin", `ALTER TABLE t DROP COLUMN a`, `ALTER TABLE t ADD COLUMN a TEXT DEFAULT 'd'`, `SAVEPOINT s`, `UPDATE t SET b = 'X' WHERE id = 1`, `ROLLBACK TO s`, `UPDATE t SET b = 'B' WHERE id = 1`, "commit"},
			want:  lines(addedKept),
		},
		{
			// A drop undone before the row was first touched is not the
			// one the column came back from.
			name: "UndoneBeforeTouch",
			steps: []string{"begin", `SAVEPOINT s`, `ALTER TABLE t DROP COLUMN a`, `ROLLBACK TO s`, `ALTER TABLE t DROP COLUMN a`,
				`ALTER TABLE t ADD COLUMN a TEXT DEFAULT 'd'`, `UPDATE t SET b = 'B' WHERE id = 1`, "commit"},
			want: lines(addedKept),
		},
		{
			name:    "Raw",
			steps:   []string{"conn", "begin", `SAVEPOINT s`, `raw: ALTER TABLE t DROP COLUMN a`, `raw: ALTER TABLE t ADD COLUMN a TEXT`, `UPDATE t SET b = 'B' WHERE id = 1`, `ROLLBACK TO s`, "commit"},
			wantErr: rawDropped,
		},
		{
			name:    "RawFrameRolledBack",
			steps:   []string{"conn", "begin", `raw: ALTER TABLE t DROP COLUMN a`, `ALTER TABLE t ADD COLUMN a TEXT`, `UPDATE t SET b = 'B' WHERE id = 1`, "rollback"},
			wantErr: rawDropped,
		},
		{
			// Not rolled back: the column is the one added.
			name:  "RawKept",
			steps: []string{"conn", "begin", `raw: ALTER TABLE t DROP COLUMN a`, `raw: ALTER TABLE t ADD COLUMN a TEXT DEFAULT 'd'`, `UPDATE t SET b = 'B' WHERE id = 1`, "commit"},
			want:  lines(addedKept),
		},
		{
			// The raw connection changed the schema after its rollback,
			// before the store could see where the rollback went.
			name: "RawChangedAfterRollback",
			steps: []string{"conn", "begin", `SAVEPOINT s`, `ALTER TABLE t DROP COLUMN a`, `ALTER TABLE t ADD COLUMN a TEXT`, `UPDATE t SET b = 'B' WHERE id = 1`,
				`raw: ROLLBACK TO s`, `raw: ALTER TABLE t ADD COLUMN q TEXT`, "commit"},
			wantErr: rawUnsure,
		},
	}
	// With a last, the table's columns after the drop and the add are
	// those it had before.
	for _, schema := range []string{
		`CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT); INSERT INTO t VALUES (1, 'a', 'b');`,
		`CREATE TABLE t (id INTEGER PRIMARY KEY, b TEXT, a TEXT); INSERT INTO t VALUES (1, 'b', 'a');`,
	} {
		t.Run(schema[:strings.IndexByte(schema, ';')], func(t *testing.T) { runStepCases(t, schema, cases) })
	}
}

// TestCapture_RawColumnChangeCommitted changes a table's columns on the raw
// connection, a DROP COLUMN or a RENAME COLUMN and a DROP COLUMN, and
// commits that before a capture starts, or in an earlier capture, as a
// world's startup or an earlier call may; then the capture touches rows of
// the table and rolls back. A rollback undoes only what ran in the
// transaction it ends, so the capture logs the rows exactly, as it does
// when the columns changed through Exec. A statement prepared on the raw
// connection before and run later counts where it runs: a DROP COLUMN run
// in a frame that rolls back still fails the capture for a row first
// touched after it, and a RENAME COLUMN run after a row was touched fails
// it naming the rename.
func TestCapture_RawColumnChangeCommitted(t *testing.T) {
	const schema = `CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT, c TEXT, d TEXT); INSERT INTO t VALUES (1, 'a', 'b', 'c', 'd');
		CREATE TABLE u (id INTEGER PRIMARY KEY);`
	for _, h := range []struct {
		name    string
		changes []string
		b       string // b's name after the changes
	}{
		{"Drop", []string{`ALTER TABLE t DROP COLUMN a`}, "b"},
		{"RenameDrop", []string{`ALTER TABLE t RENAME COLUMN b TO x`, `ALTER TABLE t DROP COLUMN a`}, "x"},
	} {
		img := func(c string, d bool) string {
			m := map[string]any{"id": int64(1), h.b: "b", "c": c}
			if d {
				m["d"] = "d"
			}
			return fmt.Sprint(m)
		}
		updated := fmt.Sprintf("update t map[id:1] before=%s after=%s", img("c", true), img("C", true))
		cases := []stepCase{
			{
				name:  "SavepointRolledBack",
				steps: []string{"begin", `UPDATE t SET c = 'C' WHERE id = 1`, `SAVEPOINT s`, `ALTER TABLE t ADD COLUMN z TEXT`, `ROLLBACK TO s`, "commit"},
				want:  lines(updated),
			},
			{
				name:  "TouchedInSavepoint",
				steps: []string{"begin", `SAVEPOINT s`, `ALTER TABLE t ADD COLUMN z TEXT`, `UPDATE t SET c = 'X' WHERE id = 1`, `ROLLBACK TO s`, `UPDATE t SET c = 'C' WHERE id = 1`, "commit"},
				want:  lines(updated),
			},
			{
				name:  "FrameRolledBack",
				steps: []string{"begin", `UPDATE t SET c = 'X' WHERE id = 1`, "rollback", "begin", `UPDATE t SET c = 'C' WHERE id = 1`, "commit"},
				want:  lines(updated),
			},
			{
				name:  "ColumnDropped",
				steps: []string{"begin", `UPDATE t SET c = 'C' WHERE id = 1`, `ALTER TABLE t DROP COLUMN d`, "commit"},
				want:  lines(fmt.Sprintf("update t map[id:1] before=%s after=%s", img("c", false), img("C", false))),
			},
		}
		for _, where := range []string{"Exec", "BeforeCapture", "EarlierCapture"} {
			t.Run(h.name+"/"+where, func(t *testing.T) {
				for _, tt := range cases {
					t.Run(tt.name, func(t *testing.T) {
						s := MustCreate(t, schema, sqlitestore.Options{})
						// The store's own statements, kept prepared, are
						// not the raw connection's.
						MustExec(t, s, `ALTER TABLE u ADD COLUMN e TEXT`)
						switch where {
						case "Exec":
							execAll(h.changes...)(t, s)
						case "BeforeCapture":
							raw, err := s.Conn(context.Background())
							if err != nil {
								t.Fatal(err)
							}
							for _, q := range h.changes {
								if err := raw.Exec(q); err != nil {
									t.Fatal(err)
								}
							}
						case "EarlierCapture":
							steps := []string{"conn"}
							for _, q := range h.changes {
								steps = append(steps, "raw: "+q)
							}
							got, err := captureSteps(t, s, steps)
							wantSteps(t, got, err, "", "")
						}
						got, err := captureSteps(t, s, tt.steps)
						wantSteps(t, got, err, tt.want, tt.wantErr)
					})
				}
			})
		}
	}
	runStepCases(t, schema, []stepCase{
		{
			// Prepared before the row was touched and its table's
			// metadata loaded, the rename ran after them: the reload
			// the CREATE calls for compares the columns.
			name:    "PreparedRenameRunAfterTouch",
			steps:   []string{"conn", `prepare: ALTER TABLE t RENAME COLUMN a TO x`, `UPDATE t SET b = 'B' WHERE id = 1`, "step", `UPDATE t SET b = 'C' WHERE id = 1`, `raw: CREATE TABLE c (x)`},
			wantErr: "sqlitestore: change capture cannot report the rows of table t: its column a was renamed to x while the capture ran",
		},
		{
			name:    "PreparedBeforeFrame",
			steps:   []string{"conn", `prepare: ALTER TABLE t DROP COLUMN a`, "begin", "step", `ALTER TABLE t ADD COLUMN a TEXT`, `UPDATE t SET b = 'B' WHERE id = 1`, "rollback"},
			wantErr: "sqlitestore: change capture cannot report the rows of table t: a DROP COLUMN on the raw connection erased a column of it unseen before the capture first touched them, and a rollback may have brought it back; drop columns through Exec or ExecScript",
		},
	})
}
