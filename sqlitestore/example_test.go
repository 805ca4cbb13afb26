package sqlitestore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/seahaven/seahaven/sqlitestore"
)

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sqlitestore")
	defer os.RemoveAll(dir)

	now := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	s, err := sqlitestore.Create(ctx,
		`CREATE TABLE charges (id TEXT PRIMARY KEY, amount INTEGER NOT NULL, at TEXT DEFAULT CURRENT_TIMESTAMP) STRICT;`,
		sqlitestore.Options{Path: filepath.Join(dir, "state.payments.sqlite"), Seed: 7, Clock: func() time.Time { return now }})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	// One tool call: a capture around a transaction.
	c := s.StartCapture()
	f, err := s.Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Rollback()
	if _, err := s.Exec(ctx, `INSERT INTO charges (id, amount) VALUES (?, ?)`, "c1", 500); err != nil {
		log.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		log.Fatal(err)
	}
	changes, err := c.Finish(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, ch := range changes {
		fmt.Println(ch.Op, ch.Table, ch.Key, ch.After)
	}

	_, err = s.Exec(ctx, `INSERT INTO charges (id, amount) VALUES ('c1', 1)`)
	fmt.Println(err)
	// Output:
	// insert charges map[id:c1] map[amount:500 at:2026-06-01 09:00:00 id:c1]
	// sqlitestore: UNIQUE constraint failed: charges.id
}

func ExampleOpenInspector() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sqlitestore")
	defer os.RemoveAll(dir)

	root, err := sqlitestore.Create(ctx, `CREATE TABLE staff (id TEXT PRIMARY KEY);`,
		sqlitestore.Options{Path: filepath.Join(dir, "state.sqlite")})
	if err != nil {
		log.Fatal(err)
	}
	defer root.Close()
	pay, err := sqlitestore.Create(ctx, `CREATE TABLE charges (id TEXT PRIMARY KEY, staff TEXT, amount INTEGER);`,
		sqlitestore.Options{Path: filepath.Join(dir, "state.payments.sqlite")})
	if err != nil {
		log.Fatal(err)
	}
	defer pay.Close()
	root.Exec(ctx, `INSERT INTO staff VALUES ('u1')`)
	pay.Exec(ctx, `INSERT INTO charges VALUES ('c1', 'u1', 500)`)

	in, err := sqlitestore.OpenInspector(ctx, root.Path(),
		[]sqlitestore.Attachment{{Schema: "payments", Path: pay.Path()}}, sqlitestore.InspectorOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer in.Close()
	rows, err := in.Query(ctx, `SELECT s.id, c.amount FROM staff AS s JOIN payments.charges AS c ON c.staff = s.id`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rows.Maps())
	_, err = in.Query(ctx, `DELETE FROM payments.charges`)
	fmt.Println(err)
	// Output:
	// [map[amount:500 id:u1]]
	// sqlitestore: not authorized (the inspection connection is read-only)
}

func ExampleInspector_QueryLimit() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sqlitestore")
	defer os.RemoveAll(dir)
	root, err := sqlitestore.Create(ctx, `CREATE TABLE notes (body TEXT);`,
		sqlitestore.Options{Path: filepath.Join(dir, "state.sqlite")})
	if err != nil {
		log.Fatal(err)
	}
	defer root.Close()
	in, err := sqlitestore.OpenInspector(ctx, root.Path(), nil, sqlitestore.InspectorOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer in.Close()

	// A thousand rows of 16 MB: reading stops before the first, unread.
	rows, err := in.QueryLimit(ctx, sqlitestore.ReadLimit{MaxRows: 1000, MaxBytes: 8 << 20},
		`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 1000) SELECT zeroblob(16000000) FROM c`)
	fmt.Println(len(rows.Values), rows.Truncated, err)
	rows, err = in.QueryLimit(ctx, sqlitestore.ReadLimit{MaxRows: 2},
		`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 5) SELECT x FROM c`)
	fmt.Println(rows.Values, rows.Truncated, err)
	_, err = in.Query(ctx, `BEGIN`)
	fmt.Println(err)
	// Output:
	// 0 bytes <nil>
	// [[1] [2]] rows <nil>
	// sqlitestore: BEGIN is not allowed on the inspection connection: each query reads in a transaction of its own, which ends with the query, so that no lock is held between queries
}

func ExampleSchemaHash() {
	ctx := context.Background()
	h, err := sqlitestore.SchemaHash(ctx, `CREATE TABLE charges (id TEXT PRIMARY KEY, amount INTEGER NOT NULL) STRICT;`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(h))
	_, err = sqlitestore.SchemaHash(ctx, `CREATE TABLE a (x); CREATE INDEX i ON b (x);`)
	fmt.Println(err)
	// Output:
	// 64
	// sqlitestore: no such table: main.b (in statement: CREATE INDEX i ON b (x);)
}

func ExampleNewPool() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sqlitestore")
	defer os.RemoveAll(dir)

	pool := sqlitestore.NewPool(2)
	var stores []*sqlitestore.Store
	for i := range 4 {
		s, err := sqlitestore.Create(ctx, `CREATE TABLE t (x);`, sqlitestore.Options{
			Path: filepath.Join(dir, fmt.Sprintf("state.n%d.sqlite", i)),
			Pool: pool,
		})
		if err != nil {
			log.Fatal(err)
		}
		defer s.Close()
		stores = append(stores, s)
	}
	fmt.Println("open:", pool.Open())
	// The least recently used store was released; it reopens transparently.
	if _, err := stores[0].Exec(ctx, `INSERT INTO t VALUES (1)`); err != nil {
		log.Fatal(err)
	}
	fmt.Println("open:", pool.Open(), "first store open:", stores[0].IsOpen())
	// Output:
	// open: 2
	// open: 2 first store open: true
}

func ExampleAttachLimit() {
	fmt.Println(sqlitestore.AttachLimit())
	// Output: 10
}

func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sqlitestore")
	defer os.RemoveAll(dir)

	s, err := sqlitestore.Create(ctx, `CREATE TABLE staff (id TEXT PRIMARY KEY);`,
		sqlitestore.Options{Path: filepath.Join(dir, "state.sqlite")})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	s.Exec(ctx, `INSERT INTO staff VALUES ('u1')`)

	// Freeze: a compact, fsynced copy of the live store.
	frozen := filepath.Join(dir, "fixture.sqlite")
	if err := s.VacuumInto(ctx, frozen); err != nil {
		log.Fatal(err)
	}
	// Reopen the frozen file (an instance would open a private copy of it).
	f, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: frozen})
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	rows, _ := f.Query(ctx, `SELECT id FROM staff`)
	h1, _ := s.SchemaHash(ctx)
	h2, _ := f.SchemaHash(ctx)
	fmt.Println(rows.Values, h1 == h2)
	// Output: [[u1]] true
}

func ExampleCompareKeys() {
	keys := [][]any{{"b"}, {int64(2)}, {nil}, {[]byte{1}}, {1.5}}
	slices.SortFunc(keys, sqlitestore.CompareKeys)
	fmt.Println(keys)
	// Output: [[<nil>] [1.5] [2] [b] [[1]]]
}

// KeyProblems names the tables whose primary key cannot key change records
// exactly, and says how to fix each.
func ExampleKeyProblems() {
	problems, err := sqlitestore.KeyProblems(context.Background(), `
CREATE TABLE codes (code TEXT PRIMARY KEY, label TEXT);
CREATE TABLE users (email TEXT PRIMARY KEY COLLATE NOCASE) STRICT;
CREATE TABLE charges (id TEXT PRIMARY KEY, amount INTEGER NOT NULL) STRICT;`, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range problems {
		fmt.Printf("%s.%s\n", p.Table, p.Column)
	}
	// Output:
	// codes.code
	// users.email
}
