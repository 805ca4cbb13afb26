package sqlitestore_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seahaven/seahaven/sqlitestore"
)

// inspectorFixture creates a root store and a payments store and an inspector
// over both.
func inspectorFixture(t *testing.T) (root, pay *sqlitestore.Store, in *sqlitestore.Inspector) {
	t.Helper()
	dir := t.TempDir()
	root = MustCreate(t, `CREATE TABLE staff (id TEXT PRIMARY KEY) STRICT;`, sqlitestore.Options{Path: filepath.Join(dir, "state.sqlite")})
	pay = MustCreate(t, `CREATE TABLE charges (id TEXT PRIMARY KEY, staff TEXT, amount INTEGER NOT NULL) STRICT;`,
		sqlitestore.Options{Path: filepath.Join(dir, "state.payments.sqlite")})
	MustExec(t, root, `INSERT INTO staff VALUES ('u1'), ('u2')`)
	MustExec(t, pay, `INSERT INTO charges VALUES ('c1', 'u1', 500)`)
	clock := newTestClock()
	in, err := sqlitestore.OpenInspector(context.Background(), root.Path(),
		[]sqlitestore.Attachment{{Schema: "payments", Path: pay.Path()}}, sqlitestore.InspectorOptions{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return root, pay, in
}

// firstValue runs sql on in with a minute to answer and returns its first
// row's first value, or its error, as text.
func firstValue(in *sqlitestore.Inspector, sql string, args ...any) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := in.Query(ctx, sql, args...)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprint(rows.Values[0][0])
}

func TestInspector_Query(t *testing.T) {
	ctx := context.Background()
	root, pay, in := inspectorFixture(t)

	t.Run("CrossStoreJoin", func(t *testing.T) {
		rows, err := in.Query(ctx, `SELECT s.id, c.amount FROM staff AS s JOIN payments.charges AS c ON c.staff = s.id`)
		if err != nil {
			t.Fatal(err)
		}
		if want := [][]any{{"u1", int64(500)}}; !reflect.DeepEqual(rows.Values, want) {
			t.Errorf("rows = %v, want %v", rows.Values, want)
		}
	})

	t.Run("SeesLaterCommits", func(t *testing.T) {
		MustExec(t, pay, `INSERT INTO charges VALUES ('c2', 'u2', 700)`)
		f, err := root.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		MustExec(t, root, `INSERT INTO staff VALUES ('u3')`)
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		rows, err := in.Query(ctx, `SELECT (SELECT sum(amount) FROM payments.charges), (SELECT count(*) FROM main.staff)`)
		if err != nil {
			t.Fatal(err)
		}
		if want := []any{int64(1200), int64(3)}; !reflect.DeepEqual(rows.Values[0], want) {
			t.Errorf("rows = %v, want %v", rows.Values[0], want)
		}
	})

	t.Run("WriterReopenedAfterInspector", func(t *testing.T) {
		// The writer's connection is closed (its -wal and -shm files gone)
		// when the inspector opens, and reopens to write afterwards.
		dir := t.TempDir()
		w := MustCreate(t, `CREATE TABLE t (x INTEGER);`, sqlitestore.Options{Path: filepath.Join(dir, "w.sqlite")})
		MustExec(t, w, `INSERT INTO t VALUES (1)`)
		if err := w.Release(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(w.Path() + "-wal"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("-wal after release: %v", err)
		}
		root := MustCreate(t, `CREATE TABLE r (x);`, sqlitestore.Options{Path: filepath.Join(dir, "r.sqlite")})
		root.Release()
		in, err := sqlitestore.OpenInspector(ctx, root.Path(), []sqlitestore.Attachment{{Schema: "w", Path: w.Path()}}, sqlitestore.InspectorOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		for i := 2; i <= 4; i++ {
			MustExec(t, w, `INSERT INTO t VALUES (?)`, i)
			rows, err := in.Query(ctx, `SELECT sum(x) FROM w.t`)
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(i * (i + 1) / 2); rows.Values[0][0] != want {
				t.Fatalf("sum after insert %d = %v, want %d", i, rows.Values[0][0], want)
			}
			if i == 3 {
				w.Release() // closing while the inspector reads must not lose commits
			}
		}
	})

	t.Run("Clock", func(t *testing.T) {
		rows, err := in.Query(ctx, `SELECT datetime('now'), CURRENT_DATE`)
		if err != nil {
			t.Fatal(err)
		}
		if want := []any{"2001-02-03 04:05:06", "2001-02-03"}; !reflect.DeepEqual(rows.Values[0], want) {
			t.Errorf("clock = %v, want %v", rows.Values[0], want)
		}
	})

	t.Run("Allowed", func(t *testing.T) {
		for _, q := range []string{
			`PRAGMA user_version`,
			`PRAGMA payments.table_info(charges)`,
			`SELECT * FROM pragma_table_list`,
		} {
			if _, err := in.Query(ctx, q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})

	t.Run("Denied", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "other.sqlite")
		for _, q := range []string{
			`INSERT INTO staff VALUES ('x')`,
			`UPDATE payments.charges SET amount = 0`,
			`DELETE FROM staff`,
			`REPLACE INTO payments.charges VALUES ('c9', 'u1', 1)`,
			`CREATE TEMP TABLE staff AS SELECT 1 AS id`, // would shadow main.staff
			`CREATE TEMP TABLE scratch (x)`,
			`CREATE TEMP VIEW staff AS SELECT 1 AS id`,
			`CREATE TEMP TRIGGER tr AFTER INSERT ON staff BEGIN SELECT 1; END`,
			fmt.Sprintf(`ATTACH '%s' AS other`, other),
			`DETACH payments`,
			`PRAGMA user_version = 3`,
			`PRAGMA query_only = 0`,
			`PRAGMA optimize`,
			fmt.Sprintf(`VACUUM INTO '%s'`, other),
			`VACUUM`,
			`CREATE TABLE x (a)`,
			`DROP TABLE staff`,
			`ALTER TABLE staff ADD COLUMN b`,
			`CREATE INDEX i ON staff (id)`,
		} {
			_, err := in.Query(ctx, q)
			if !errors.Is(err, sqlitestore.ErrReadOnly) || !strings.Contains(err.Error(), "authoriz") {
				t.Errorf("%s: err = %v, want a read-only authorization error", q, err)
			}
		}
		rows, err := in.Query(ctx, `SELECT count(*) FROM staff`)
		if err != nil || rows.Values[0][0] != int64(3) {
			t.Errorf("after denied writes: %v, %v", rows, err)
		}
	})

	t.Run("Interrupt", func(t *testing.T) {
		qctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		if _, err := in.Query(qctx, runaway); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
		if _, err := in.Query(ctx, `SELECT 1`); err != nil {
			t.Fatalf("after interrupt: %v", err)
		}
	})

	t.Run("Closed", func(t *testing.T) {
		_, _, in := inspectorFixture(t)
		in.Close()
		if _, err := in.Query(ctx, `SELECT 1`); !errors.Is(err, sqlitestore.ErrClosed) {
			t.Errorf("err = %v, want ErrClosed", err)
		}
	})
}

func TestOpenInspector_Errors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	root := MustCreate(t, `CREATE TABLE t (x);`, sqlitestore.Options{Path: filepath.Join(dir, "root.sqlite")})
	limit := sqlitestore.AttachLimit()
	if limit != 10 {
		t.Errorf("AttachLimit() = %d, want 10 for this build", limit)
	}
	many := make([]sqlitestore.Attachment, limit+1)
	for i := range many {
		many[i] = sqlitestore.Attachment{Schema: fmt.Sprintf("n%d", i), Path: root.Path()}
	}
	for _, tt := range []struct {
		name   string
		root   string                   // root path
		attach []sqlitestore.Attachment // attachments
		want   string                   // error substring
	}{
		{"TooMany", root.Path(), many, fmt.Sprintf("cannot attach %d stores: this SQLite build attaches at most %d databases per connection", limit+1, limit)},
		{"Reserved", root.Path(), []sqlitestore.Attachment{{Schema: "Main", Path: root.Path()}}, `"Main" is reserved`},
		{"Duplicate", root.Path(), []sqlitestore.Attachment{{Schema: "a", Path: root.Path()}, {Schema: "A", Path: root.Path()}}, `"A" is used twice`},
		{"NoName", root.Path(), []sqlitestore.Attachment{{Path: root.Path()}}, "has no schema name"},
		{"RelativeAttachment", root.Path(), []sqlitestore.Attachment{{Schema: "a", Path: "a.sqlite"}}, "absolute path"},
		{"MissingAttachment", root.Path(), []sqlitestore.Attachment{{Schema: "a", Path: filepath.Join(dir, "missing.sqlite")}}, "missing.sqlite: no such file or directory"},
		{"MissingRoot", filepath.Join(dir, "missing.sqlite"), nil, "missing.sqlite: no such file or directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sqlitestore.OpenInspector(ctx, tt.root, tt.attach, sqlitestore.InspectorOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}

	t.Run("AtLimit", func(t *testing.T) {
		in, err := sqlitestore.OpenInspector(ctx, root.Path(), many[:limit], sqlitestore.InspectorOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		if _, err := in.Query(ctx, fmt.Sprintf(`SELECT count(*) FROM n%d.t`, limit-1)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("TwoStatements", func(t *testing.T) {
		// An inspect client cannot call ExecScript: the error names the
		// problem without pointing there.
		in, err := sqlitestore.OpenInspector(ctx, root.Path(), nil, sqlitestore.InspectorOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		_, err = in.Query(ctx, `SELECT 1; SELECT 2`)
		if want := `sqlitestore: more than one statement in "SELECT 1; SELECT 2"`; err == nil || err.Error() != want {
			t.Errorf("err = %v, want %q", err, want)
		}
	})

	t.Run("QuotedSchemaName", func(t *testing.T) {
		in, err := sqlitestore.OpenInspector(ctx, root.Path(), []sqlitestore.Attachment{{Schema: `we"ird`, Path: root.Path()}}, sqlitestore.InspectorOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		if _, err := in.Query(ctx, `SELECT count(*) FROM "we""ird".t`); err != nil {
			t.Fatal(err)
		}
	})
}

// TestInspector_HidesFilePaths reads the list of databases every way
// SQLite offers: the schema names are there, the paths of the store files
// (server paths) are not.
func TestInspector_HidesFilePaths(t *testing.T) {
	root, pay, in := inspectorFixture(t)
	dir := filepath.Dir(root.Path())
	for _, q := range []string{
		"PRAGMA database_list",
		"PRAGMA main.database_list",
		"SELECT * FROM pragma_database_list",
		"SELECT file || '' AS f, length(file) AS n FROM pragma_database_list",
		"SELECT group_concat(file) FROM pragma_database_list()",
		"SELECT name, file FROM pragma_database_list ORDER BY seq",
	} {
		rows, err := in.Query(context.Background(), q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if got := fmt.Sprint(rows.Values); strings.Contains(got, dir) || strings.Contains(got, pay.Path()) {
			t.Errorf("%s = %v, names the store files", q, got)
		}
	}
	rows, err := in.Query(context.Background(), "SELECT name FROM pragma_database_list ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]any{{"main"}, {"payments"}}; !reflect.DeepEqual(rows.Values, want) {
		t.Errorf("names %v, want %v", rows.Values, want)
	}
}

// TestInspector_LongStatements sends statements past MaxInspectSQL whose
// text would reach the driver as a name longer than it reads: a result
// column named by its expression, an alias, a pragma's argument and a
// collation the authorizer or SQLite hand over. Each used to panic, the
// authorizer's inside SQLite's own calls, leaving the connection's memory
// corrupt; each is now refused, and the connection answers after it.
func TestInspector_LongStatements(t *testing.T) {
	ctx := context.Background()
	_, _, in := inspectorFixture(t)
	long := strings.Repeat("x", sqlitestore.MaxInspectSQL+1) // one byte past what the driver reads of a name
	want := fmt.Sprintf("sqlitestore: statement too long: the inspection connection runs statements of at most %d bytes", sqlitestore.MaxInspectSQL)
	for _, q := range []string{
		`SELECT length('` + long + `')`,
		`SELECT 1 AS "` + long + `"`,
		`PRAGMA table_info('` + long + `')`,
		`SELECT * FROM pragma_table_info('` + long + `')`,
		`SELECT 'a' COLLATE "` + long + `"`,
		`WITH "` + long + `" AS (SELECT 1) SELECT * FROM staff`,
		`SELECT 1 ` + long,
	} {
		for range 3 { // a corrupt connection fails on a later round
			_, err := in.Query(ctx, q)
			if err == nil || err.Error() != want {
				t.Fatalf("%.40s…: err = %.200v, want %q", q, err, want)
			}
			rows, err := in.Query(ctx, `SELECT count(*) FROM staff`)
			if err != nil || rows.Values[0][0] != int64(2) {
				t.Fatalf("after %.40s…: %v, %v", q, rows, err)
			}
		}
	}
	// A statement of MaxInspectSQL bytes runs, whatever pads it.
	lit := strings.Repeat("y", sqlitestore.MaxInspectSQL-len(`SELECT length('')`))
	rows, err := in.Query(ctx, "/* "+long+" */ SELECT length('"+lit+"');  ")
	if err != nil {
		t.Fatal(err)
	}
	if n := rows.Values[0][0]; n != int64(len(lit)) {
		t.Errorf("length = %v, want %d", n, len(lit))
	}
}

// TestInspector_RTree: R*Tree and Geopoly tables read through the
// inspection connection (each prepares writes to its shadow tables as a
// query first reads it, which the connection's authorizer allows), their
// shadow tables are listed as such, and nothing writes to either: the
// shadow tables' files are read-only, and a virtual table's write is
// refused as any other.
func TestInspector_RTree(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	root := MustCreate(t, `CREATE VIRTUAL TABLE boxes USING rtree(id, minx, maxx);
CREATE VIRTUAL TABLE shapes USING geopoly(label);
CREATE TABLE t (id INTEGER PRIMARY KEY);`, sqlitestore.Options{Path: filepath.Join(dir, "root.sqlite")})
	MustExec(t, root, `INSERT INTO boxes VALUES (1, 0, 10), (2, 5, 7)`)
	MustExec(t, root, `INSERT INTO shapes (_shape, label) VALUES ('[[0,0],[2,0],[0,2],[0,0]]', 'a')`)
	pay := MustCreate(t, `CREATE VIRTUAL TABLE spans USING rtree_i32(id, lo, hi);`, sqlitestore.Options{Path: filepath.Join(dir, "pay.sqlite")})
	MustExec(t, pay, `INSERT INTO spans VALUES (1, 3, 4)`)
	in, err := sqlitestore.OpenInspector(ctx, root.Path(), []sqlitestore.Attachment{{Schema: "payments", Path: pay.Path()}}, sqlitestore.InspectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	for q, want := range map[string]string{
		`SELECT group_concat(id) FROM boxes WHERE minx <= 6 AND maxx >= 6`:                       "1,2",
		`SELECT label FROM shapes WHERE geopoly_contains_point(_shape, 0.5, 0.5)`:                "a",
		`SELECT hi FROM payments.spans WHERE id = 1`:                                             "4",
		`SELECT group_concat(type) FROM pragma_table_list WHERE name LIKE 'boxes\_%' ESCAPE '\'`: "shadow,shadow,shadow",
	} {
		if got := firstValue(in, q); got != want {
			t.Errorf("%s = %s, want %s", q, got, want)
		}
	}
	for _, q := range []string{
		`INSERT INTO boxes VALUES (3, 1, 2)`,
		`DELETE FROM boxes_node`,
		`UPDATE payments.spans_rowid SET nodeno = 9`,
	} {
		if _, err := in.Query(ctx, q); !errors.Is(err, sqlitestore.ErrReadOnly) {
			t.Errorf("%s: err = %v, want a read-only error", q, err)
		}
	}
	if got := firstValue(in, `SELECT count(*) FROM boxes`); got != "2" {
		t.Errorf("%s rows in boxes after the refused writes, want 2", got)
	}
}
