package sqlitestore_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/sqlitestore"
)

const shopSchema = `
CREATE TABLE products (id TEXT PRIMARY KEY, name TEXT NOT NULL, price INTEGER NOT NULL) STRICT;
CREATE TABLE orders (
	id INTEGER PRIMARY KEY,
	product TEXT NOT NULL REFERENCES products (id),
	at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
	token BLOB NOT NULL DEFAULT (randomblob(8))
);
CREATE INDEX orders_product ON orders (product);
CREATE VIRTUAL TABLE notes USING fts5(body);
CREATE VIEW totals AS SELECT product, count(*) AS n FROM orders GROUP BY product;
`

func TestSchemaHash(t *testing.T) {
	ctx := context.Background()
	want, err := sqlitestore.SchemaHash(ctx, shopSchema)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 64 {
		t.Fatalf("hash %q is not hex SHA-256", want)
	}
	s := MustCreate(t, shopSchema, sqlitestore.Options{})
	got, err := s.SchemaHash(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("store hash %s != schema hash %s", got, want)
	}

	t.Run("OrderOfStatements", func(t *testing.T) {
		// Objects are sorted, so independent statements may come in any order.
		reordered := `CREATE TABLE b (y); CREATE TABLE a (x);`
		h1, err1 := sqlitestore.SchemaHash(ctx, reordered)
		h2, err2 := sqlitestore.SchemaHash(ctx, `CREATE TABLE a (x); CREATE TABLE b (y);`)
		if err1 != nil || err2 != nil || h1 != h2 {
			t.Errorf("hashes %s %s (%v %v)", h1, h2, err1, err2)
		}
	})

	t.Run("ChangesAfterAlter", func(t *testing.T) {
		MustExec(t, s, `ALTER TABLE products ADD COLUMN stock INTEGER`)
		after, err := s.SchemaHash(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if after == want {
			t.Error("hash unchanged after ALTER TABLE")
		}
	})

	t.Run("DataDoesNotCount", func(t *testing.T) {
		s := MustCreate(t, shopSchema, sqlitestore.Options{})
		MustExec(t, s, `INSERT INTO products VALUES ('p1', 'Pen', 100)`)
		if got, _ := s.SchemaHash(ctx); got != want {
			t.Error("hash changed with data")
		}
	})

	t.Run("ErrorNamesStatement", func(t *testing.T) {
		_, err := sqlitestore.SchemaHash(ctx, "CREATE TABLE a (x);\nCREATE INDEX i ON missing (x);")
		var e *sqlitestore.Error
		if !errors.As(err, &e) || e.Message != "no such table: main.missing" || e.Statement != "CREATE INDEX i ON missing (x);" {
			t.Fatalf("err = %#v", err)
		}
		if !strings.Contains(err.Error(), "CREATE INDEX i ON missing") {
			t.Errorf("message %q does not name the statement", err)
		}
		if _, err := sqlitestore.SchemaHash(ctx, "CREATE TABLE a (x);\nCREAT TABLE b (y);"); err == nil || !strings.Contains(err.Error(), `near "CREAT": syntax error (in statement: CREAT TABLE b (y);)`) {
			t.Errorf("syntax error: %v", err)
		}
	})
}

func TestStore_VacuumInto(t *testing.T) {
	ctx := context.Background()
	s := MustCreate(t, shopSchema, sqlitestore.Options{Seed: 3})
	MustExec(t, s, `INSERT INTO products VALUES ('p1', 'Pen', 100), ('p2', 'Ink', 250)`)
	MustExec(t, s, `INSERT INTO orders (product) VALUES ('p1'), ('p2'), ('p1')`)
	MustExec(t, s, `INSERT INTO notes (body) VALUES ('fragile')`)
	MustExec(t, s, `DELETE FROM orders WHERE id = 2`)

	dst := filepath.Join(t.TempDir(), "frozen.sqlite")
	if err := s.VacuumInto(ctx, dst); err != nil {
		t.Fatal(err)
	}
	header := make([]byte, 20)
	if f, err := os.Open(dst); err != nil {
		t.Fatal(err)
	} else {
		f.Read(header)
		f.Close()
	}
	if string(header[:16]) != "SQLite format 3\x00" || header[18] != 1 || header[19] != 1 {
		t.Errorf("frozen file header %q: want a rollback-journal (not WAL) database", header)
	}
	if _, err := os.Stat(dst + "-wal"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("frozen file has a -wal: %v", err)
	}
	copy, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: dst})
	if err != nil {
		t.Fatal(err)
	}
	defer copy.Close()
	h1, _ := s.SchemaHash(ctx)
	h2, _ := copy.SchemaHash(ctx)
	if h1 != h2 {
		t.Errorf("schema hash %s != %s", h2, h1)
	}
	for _, q := range []string{
		`SELECT * FROM products ORDER BY id`,
		`SELECT * FROM orders ORDER BY id`,
		`SELECT * FROM totals ORDER BY product`,
		`SELECT body FROM notes WHERE notes MATCH 'fragile'`,
	} {
		a, b := MustQuery(t, s, q), MustQuery(t, copy, q)
		if !reflect.DeepEqual(a, b) || len(a.Values) == 0 {
			t.Errorf("%s: copy %v, original %v", q, b.Values, a.Values)
		}
	}

	t.Run("DestinationExists", func(t *testing.T) {
		if err := s.VacuumInto(ctx, dst); !errors.Is(err, fs.ErrExist) {
			t.Errorf("err = %v, want ErrExist", err)
		}
	})

	t.Run("InTransaction", func(t *testing.T) {
		f, err := s.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Rollback()
		other := filepath.Join(t.TempDir(), "x.sqlite")
		if err := s.VacuumInto(ctx, other); err == nil || !strings.Contains(err.Error(), "cannot VACUUM from within a transaction") {
			t.Errorf("err = %v", err)
		}
		if _, err := os.Stat(other); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("failed VacuumInto left %s", other)
		}
	})
}
