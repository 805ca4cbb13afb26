package sqlitestore_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/seahaven/seahaven/sqlitestore"
)

func TestStore_Settings(t *testing.T) {
	s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`, sqlitestore.Options{})
	for _, tt := range []struct {
		pragma string // PRAGMA to read
		want   any    // its expected value
	}{
		{"journal_mode", "memory"},
		{"synchronous", int64(0)},
		{"foreign_keys", int64(1)},
		{"cache_size", int64(-sqlitestore.CacheSizeKiB)},
		{"trusted_schema", int64(0)},
	} {
		t.Run(tt.pragma, func(t *testing.T) {
			if got := MustOne(t, s, "PRAGMA "+tt.pragma); got != tt.want {
				t.Errorf("PRAGMA %s = %#v, want %#v", tt.pragma, got, tt.want)
			}
		})
	}

	t.Run("FTS5", func(t *testing.T) {
		MustExec(t, s, `CREATE VIRTUAL TABLE docs USING fts5(body)`)
		MustExec(t, s, `INSERT INTO docs(body) VALUES ('hello world'), ('goodbye')`)
		if got := MustOne(t, s, `SELECT body FROM docs WHERE docs MATCH 'hello'`); got != "hello world" {
			t.Errorf("MATCH = %v", got)
		}
	})

	t.Run("LimitLength", func(t *testing.T) {
		_, err := s.Query(context.Background(), `SELECT length(zeroblob(?))`, sqlitestore.MaxLength+1)
		if err == nil || !strings.Contains(err.Error(), "string or blob too big") {
			t.Fatalf("err = %v, want string or blob too big", err)
		}
		if got := MustOne(t, s, `SELECT length(zeroblob(?))`, sqlitestore.MaxLength); got != int64(sqlitestore.MaxLength) {
			t.Errorf("length = %v", got)
		}
	})

	t.Run("StatementCache", func(t *testing.T) {
		const q = `SELECT v FROM t WHERE id = ?`
		for range 3 {
			MustQuery(t, s, q, 1)
		}
		if n := countStmts(t, s, q); n != 1 {
			t.Fatalf("%d prepared statements for %q, want 1 reused", n, q)
		}
		if err := s.Release(); err != nil {
			t.Fatal(err)
		}
		if n := countStmts(t, s, q); n != 0 {
			t.Fatalf("%d prepared statements after Release, want the cache gone", n)
		}
	})
}

// countStmts counts the connection's prepared statements with text sql.
func countStmts(t *testing.T, s *sqlitestore.Store, sql string) int {
	t.Helper()
	c, err := s.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for st := range c.Stmts() {
		if st.SQL() == sql {
			n++
		}
	}
	return n
}

type cents int

func TestStore_ExecArgs(t *testing.T) {
	s := MustCreate(t, `CREATE TABLE v (id INTEGER PRIMARY KEY, x ANY) STRICT;`, sqlitestore.Options{})
	five := 5
	var nilPtr *int
	for _, tt := range []struct {
		name     string
		arg      any    // bound value
		wantType string // typeof(x)
		want     any    // value read back
	}{
		{"nil", nil, "null", nil},
		{"bool", true, "integer", int64(1)},
		{"int", -3, "integer", int64(-3)},
		{"int8", int8(-8), "integer", int64(-8)},
		{"uint16", uint16(16), "integer", int64(16)},
		{"uint64", uint64(1 << 40), "integer", int64(1 << 40)},
		{"float32", float32(1.5), "real", 1.5},
		{"float64", 2.25, "real", 2.25},
		{"string", "héllo", "text", "héllo"},
		{"bytes", []byte{0, 255}, "blob", []byte{0, 255}},
		{"emptyBytes", []byte{}, "blob", []byte{}},
		{"time", time.Date(2026, 6, 1, 11, 0, 0, 5e6, time.FixedZone("", 2*3600)), "text", "2026-06-01T09:00:00.005Z"},
		{"json", json.RawMessage(`{"a":1}`), "text", `{"a":1}`},
		{"named", cents(250), "integer", int64(250)},
		{"pointer", &five, "integer", int64(5)},
		{"nilPointer", nilPtr, "null", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := MustExec(t, s, `INSERT INTO v (x) VALUES (?)`, tt.arg)
			if res.RowsAffected != 1 {
				t.Errorf("RowsAffected = %d, want 1", res.RowsAffected)
			}
			rows := MustQuery(t, s, `SELECT typeof(x), x FROM v WHERE id = ?`, res.LastInsertID)
			if got := rows.Values[0][0]; got != tt.wantType {
				t.Errorf("typeof = %v, want %v", got, tt.wantType)
			}
			if got := rows.Values[0][1]; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("value = %#v, want %#v", got, tt.want)
			}
		})
	}

	for _, tt := range []struct {
		name string
		sql  string // statement
		args []any  // arguments
		want string // error substring
	}{
		{"UnsupportedType", `INSERT INTO v (x) VALUES (?)`, []any{struct{}{}}, "argument 1: unsupported type struct {}"},
		{"Overflow", `INSERT INTO v (x) VALUES (?)`, []any{uint64(1 << 63)}, "overflows"},
		{"TooFewArgs", `INSERT INTO v (id, x) VALUES (?, ?)`, []any{1}, "statement has 2 parameters, got 1 arguments"},
		{"TwoStatements", `SELECT 1; SELECT 2`, nil, `more than one statement in "SELECT 1; SELECT 2"; use ExecScript`},
		{"Empty", ` -- nothing `, nil, "no statement"},
		{"Syntax", `SELEC 1`, nil, `sqlitestore: near "SELEC": syntax error`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Exec(context.Background(), tt.sql, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestStore_ExecResult(t *testing.T) {
	s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`, sqlitestore.Options{})
	MustExec(t, s, `INSERT INTO t (v) VALUES ('a'), ('b'), ('c')`)
	if res := MustExec(t, s, `UPDATE t SET v = 'x' WHERE id > 1`); res.RowsAffected != 2 {
		t.Errorf("UPDATE RowsAffected = %d, want 2", res.RowsAffected)
	}
	if res := MustExec(t, s, `CREATE TABLE u (x)`); res.RowsAffected != 0 {
		t.Errorf("CREATE RowsAffected = %d, want 0", res.RowsAffected)
	}
	if res := MustExec(t, s, `INSERT INTO t (v) VALUES ('d') RETURNING id`); res.LastInsertID != 4 || res.RowsAffected != 1 {
		t.Errorf("INSERT RETURNING = %+v, want id 4, 1 row", res)
	}
	rows := MustQuery(t, s, `SELECT id, v FROM t WHERE id <= 2 ORDER BY id`)
	want := []map[string]any{{"id": int64(1), "v": "a"}, {"id": int64(2), "v": "x"}}
	if got := rows.Maps(); !reflect.DeepEqual(got, want) {
		t.Errorf("Maps = %v, want %v", got, want)
	}
	empty := MustQuery(t, s, `SELECT id FROM t WHERE id < 0`)
	if len(empty.Values) != 0 || !reflect.DeepEqual(empty.Columns, []string{"id"}) {
		t.Errorf("empty result = %+v", empty)
	}
}

func TestStore_Errors(t *testing.T) {
	s := MustCreate(t, `CREATE TABLE charges (id TEXT PRIMARY KEY, amount INTEGER NOT NULL) STRICT;`, sqlitestore.Options{})
	MustExec(t, s, `INSERT INTO charges VALUES ('c1', 5)`)
	for _, tt := range []struct {
		name     string
		sql      string // failing statement
		wantMsg  string // exact error text
		wantCode error  // driver code the error wraps
	}{
		{"Unique", `INSERT INTO charges VALUES ('c1', 6)`, "sqlitestore: UNIQUE constraint failed: charges.id", sqlite3.CONSTRAINT_PRIMARYKEY},
		{"NotNull", `INSERT INTO charges VALUES ('c2', NULL)`, "sqlitestore: NOT NULL constraint failed: charges.amount", sqlite3.CONSTRAINT_NOTNULL},
		{"Strict", `INSERT INTO charges VALUES ('c3', 'x')`, "sqlitestore: cannot store TEXT value in INTEGER column charges.amount", sqlite3.CONSTRAINT_DATATYPE},
		{"NoTable", `SELECT * FROM nope`, "sqlitestore: no such table: nope", sqlite3.ERROR},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Exec(context.Background(), tt.sql)
			if err == nil || err.Error() != tt.wantMsg {
				t.Fatalf("err = %v, want %q", err, tt.wantMsg)
			}
			if !errors.Is(err, tt.wantCode) {
				t.Errorf("errors.Is(err, %v) = false", tt.wantCode)
			}
			var driverErr *sqlite3.Error
			if !errors.As(err, &driverErr) {
				t.Errorf("error does not wrap *sqlite3.Error")
			}
			var e *sqlitestore.Error
			if !errors.As(err, &e) || e.Message == "" {
				t.Errorf("error is not a *sqlitestore.Error with a message")
			}
		})
	}
	if _, err := s.Exec(context.Background(), `INSERT INTO charges VALUES ('c1', 6)`); !sqlitestore.IsConstraint(err) {
		t.Errorf("IsConstraint(%v) = false", err)
	}
}

// A statement longer than MaxSQL fails with an error saying so, before
// SQLite hands the driver a name too long for it to read: a table, a
// column named by its expression or a pragma's argument of over a million
// bytes used to panic the driver, inside SQLite's own call when the
// authorizer read it, leaving the connection's memory corrupt. Long values
// pass as parameters, and a long script of short statements runs.
func TestStore_LongStatement(t *testing.T) {
	ctx := context.Background()
	s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`, sqlitestore.Options{})
	long := strings.Repeat("x", sqlitestore.MaxSQL)
	const want = "sqlitestore: statement too long: a connection runs statements of at most 1000000 bytes; pass long values as parameters"
	for name, sql := range map[string]string{
		"TableName":         `CREATE TABLE ` + long + ` (a)`,
		"ColumnFromLiteral": `SELECT '` + long + `'`,
		"Alias":             `SELECT 1 AS "` + long + `"`,
		"TableAsSelect":     `CREATE TABLE t2 AS SELECT '` + long + `'`,
		"PragmaArgument":    `PRAGMA table_info('` + long + `')`,
		"Literal":           `INSERT INTO t (v) VALUES ('` + long + `')`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := s.Query(ctx, sql)
			if err == nil || err.Error() != want || !errors.Is(err, sqlite3.TOOBIG) {
				t.Fatalf("err = %.300v, want %q wrapping TOOBIG", err, want)
			}
		})
	}
	if err := s.ExecScript(ctx, `CREATE TABLE `+long+` (a);`); err == nil || !strings.HasPrefix(err.Error(), want+" (in statement: CREATE TABLE xxx") {
		t.Errorf("ExecScript: %.300v", err)
	}
	MustExec(t, s, `INSERT INTO t (v) VALUES (?)`, strings.Repeat("y", 5*sqlitestore.MaxSQL))
	var script strings.Builder
	for script.Len() <= 3*sqlitestore.MaxSQL {
		script.WriteString(`INSERT INTO t (v) VALUES ('` + strings.Repeat("z", 1000) + `');` + "\n")
	}
	if err := s.ExecScript(ctx, script.String()); err != nil {
		t.Fatalf("a long script of short statements: %v", err)
	}
	if got := MustOne(t, s, `SELECT count(*) FROM t`); got != int64(1+strings.Count(script.String(), "INSERT")) {
		t.Errorf("rows = %v", got)
	}
}

// runaway never finishes on its own.
const runaway = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c`

func TestStore_Interrupt(t *testing.T) {
	s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY);`, sqlitestore.Options{})

	t.Run("Deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := s.Query(ctx, runaway)
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, sqlite3.INTERRUPT) {
			t.Fatalf("err = %v, want one wrapping DeadlineExceeded and INTERRUPT", err)
		}
		MustExec(t, s, `INSERT INTO t DEFAULT VALUES`) // still usable
	})

	t.Run("Canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			time.Sleep(10 * time.Millisecond)
			cancel()
		}()
		_, err := s.Exec(ctx, `INSERT INTO t SELECT NULL FROM (`+runaway+`)`)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want one wrapping Canceled", err)
		}
		if got := MustOne(t, s, `SELECT count(*) FROM t`); got != int64(1) {
			t.Errorf("count = %v, want 1 (the interrupted insert left nothing)", got)
		}
	})

	t.Run("AlreadyDone", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for name, f := range map[string]func() error{
			"Exec":       func() error { _, err := s.Exec(ctx, `SELECT 1`); return err },
			"Query":      func() error { _, err := s.Query(ctx, `SELECT 1`); return err },
			"ExecScript": func() error { return s.ExecScript(ctx, `SELECT 1`) },
			"Begin":      func() error { _, err := s.Begin(ctx); return err },
		} {
			if err := f(); !errors.Is(err, context.Canceled) {
				t.Errorf("%s: err = %v, want Canceled", name, err)
			}
		}
	})

	t.Run("InTransaction", func(t *testing.T) {
		f, err := s.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer f.Rollback()
		MustExec(t, s, `INSERT INTO t DEFAULT VALUES`)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if _, err := s.Query(ctx, runaway); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
		if err := f.Commit(); err != nil {
			t.Fatalf("Commit after an interrupted read: %v", err)
		}
		if got := MustOne(t, s, `SELECT count(*) FROM t`); got != int64(2) {
			t.Errorf("count = %v, want 2", got)
		}
	})
}

func TestStore_OutOfMemory(t *testing.T) {
	s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`, sqlitestore.Options{MaxMemory: 4 << 20, Seed: 1})
	MustExec(t, s, `INSERT INTO t (v) VALUES ('kept')`)
	// About 12 MiB of text: below MaxLength, above the memory cap.
	_, err := s.Query(context.Background(), `SELECT length(group_concat(hex(randomblob(500)))) FROM generate_series(1, 12000)`)
	if !errors.Is(err, sqlitestore.ErrOutOfMemory) {
		t.Fatalf("err = %v, want ErrOutOfMemory", err)
	}
	if !strings.HasPrefix(err.Error(), "sqlitestore: out of memory") {
		t.Errorf("message = %q", err)
	}
	if got := MustOne(t, s, `SELECT v FROM t`); got != "kept" {
		t.Errorf("after OOM: v = %v, want kept", got)
	}
	MustExec(t, s, `INSERT INTO t (v) VALUES ('more')`)
}

func TestStore_ExecScript(t *testing.T) {
	s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`, sqlitestore.Options{})
	err := s.ExecScript(context.Background(), `
		-- two rows
		INSERT INTO t (v) VALUES ('a');;
		/* then */ INSERT INTO t (v) VALUES ('b');
	`)
	if err != nil {
		t.Fatal(err)
	}
	if got := MustOne(t, s, `SELECT group_concat(v) FROM t`); got != "a,b" {
		t.Errorf("rows = %v", got)
	}
	err = s.ExecScript(context.Background(), "INSERT INTO t (v) VALUES ('c');\nINSERT INTO missing VALUES (1);\nINSERT INTO t (v) VALUES ('d');")
	var e *sqlitestore.Error
	if !errors.As(err, &e) || e.Statement != "INSERT INTO missing VALUES (1);" || e.Message != "no such table: missing" {
		t.Fatalf("err = %#v", err)
	}
	if got := MustOne(t, s, `SELECT group_concat(v) FROM t`); got != "a,b,c" {
		t.Errorf("rows = %v, want the statements before the failure applied", got)
	}
}

func TestStore_CreateOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	t.Run("CreateExists", func(t *testing.T) {
		path := filepath.Join(dir, "exists.sqlite")
		os.WriteFile(path, nil, 0o644)
		_, err := sqlitestore.Create(ctx, `CREATE TABLE t (x);`, sqlitestore.Options{Path: path})
		if !errors.Is(err, fs.ErrExist) {
			t.Fatalf("err = %v, want ErrExist", err)
		}
	})

	t.Run("CreateBadSchema", func(t *testing.T) {
		path := filepath.Join(dir, "bad.sqlite")
		_, err := sqlitestore.Create(ctx, "CREATE TABLE a (x);\nCREATE TABLE b (y REFERENCES);", sqlitestore.Options{Path: path})
		if err == nil || !strings.Contains(err.Error(), "CREATE TABLE b") {
			t.Fatalf("err = %v, want it to name the statement", err)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("file left behind: %v", err)
		}
	})

	t.Run("RelativePath", func(t *testing.T) {
		if _, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: "state.sqlite"}); err == nil || !strings.Contains(err.Error(), "absolute") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("OpenMissing", func(t *testing.T) {
		_, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: filepath.Join(dir, "missing.sqlite")})
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v, want ErrNotExist", err)
		}
	})

	t.Run("OpenNotADatabase", func(t *testing.T) {
		path := filepath.Join(dir, "garbage.sqlite")
		os.WriteFile(path, []byte(strings.Repeat("not a database ", 100)), 0o644)
		_, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: path})
		if err == nil || !strings.Contains(err.Error(), "file is not a database") || !strings.Contains(err.Error(), path) {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("OpenExisting", func(t *testing.T) {
		path := filepath.Join(dir, "odd name?#%.sqlite")
		s, err := sqlitestore.Create(ctx, `CREATE TABLE t (x);`, sqlitestore.Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		MustExec(t, s, `INSERT INTO t VALUES (42)`)
		s.Close()
		s, err = sqlitestore.Open(ctx, sqlitestore.Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if got := MustOne(t, s, `SELECT x FROM t`); got != int64(42) {
			t.Errorf("x = %v", got)
		}
		if s.Path() != path {
			t.Errorf("Path = %q", s.Path())
		}
	})

	t.Run("Closed", func(t *testing.T) {
		s := MustCreate(t, `CREATE TABLE t (x);`, sqlitestore.Options{})
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Exec(ctx, `SELECT 1`); !errors.Is(err, sqlitestore.ErrClosed) {
			t.Errorf("err = %v, want ErrClosed", err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
}

func TestStore_Release(t *testing.T) {
	s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`, sqlitestore.Options{})
	MustExec(t, s, `INSERT INTO t (v) VALUES ('a')`)
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if s.IsOpen() {
		t.Fatal("IsOpen after Release")
	}
	if got := MustOne(t, s, `SELECT v FROM t`); got != "a" {
		t.Errorf("v = %v after reopen", got)
	}
	if got := MustOne(t, s, `PRAGMA journal_mode`); got != "memory" {
		t.Errorf("journal_mode after reopen = %v", got)
	}

	t.Run("Pinned", func(t *testing.T) {
		s.Pin()
		defer s.Unpin()
		s.Release()
		if !s.IsOpen() {
			t.Error("Release closed a pinned store")
		}
	})

	t.Run("InTransaction", func(t *testing.T) {
		f, err := s.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer f.Rollback()
		s.Release()
		if !s.IsOpen() || !s.InTransaction() {
			t.Error("Release closed a store in a transaction")
		}
	})
}
