package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ncruces/go-sqlite3"
	"github.com/seahaven/seahaven/sqlitestore"
)

const benchSchema = `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL);`

// BenchmarkStoreInsertTxn is one write tool call on an instance's store: a
// capture around a frame holding one INSERT.
func BenchmarkStoreInsertTxn(b *testing.B) {
	sqlitestore.NoVerifyEvents(b)
	ctx := context.Background()
	s := MustCreate(b, benchSchema, sqlitestore.Options{Path: filepath.Join(b.TempDir(), "state.sqlite"), ExclusiveLock: true})
	s.Pin()
	defer s.Unpin()
	for b.Loop() {
		c := s.StartCapture()
		f, err := s.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Exec(ctx, `INSERT INTO t (v) VALUES (?)`, "value"); err != nil {
			b.Fatal(err)
		}
		if err := f.Commit(); err != nil {
			b.Fatal(err)
		}
		changes, err := c.Finish(ctx)
		if err != nil || len(changes) != 1 {
			b.Fatal(changes, err)
		}
	}
}

// BenchmarkStoreInsertTxnNoCapture is BenchmarkStoreInsertTxn without the
// capture, to separate its cost.
func BenchmarkStoreInsertTxnNoCapture(b *testing.B) {
	ctx := context.Background()
	s := MustCreate(b, benchSchema, sqlitestore.Options{Path: filepath.Join(b.TempDir(), "state.sqlite"), ExclusiveLock: true})
	for b.Loop() {
		f, err := s.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Exec(ctx, `INSERT INTO t (v) VALUES (?)`, "value"); err != nil {
			b.Fatal(err)
		}
		if err := f.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawInsertTxn is the same transaction on a raw connection with the
// same settings and prepared BEGIN/INSERT/COMMIT statements: the floor.
func BenchmarkRawInsertTxn(b *testing.B) {
	c, err := sqlite3.Open(filepath.Join(b.TempDir(), "raw.sqlite"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if err := c.Exec(`PRAGMA journal_mode=MEMORY; PRAGMA locking_mode=EXCLUSIVE; PRAGMA synchronous=OFF; PRAGMA foreign_keys=ON; PRAGMA cache_size=-256;` + benchSchema); err != nil {
		b.Fatal(err)
	}
	prep := func(sql string) *sqlite3.Stmt {
		st, _, err := c.Prepare(sql)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st
	}
	begin, insert, commit := prep(`BEGIN IMMEDIATE`), prep(`INSERT INTO t (v) VALUES (?)`), prep(`COMMIT`)
	for b.Loop() {
		if err := begin.Exec(); err != nil {
			b.Fatal(err)
		}
		if err := insert.BindText(1, "value"); err != nil {
			b.Fatal(err)
		}
		if err := insert.Exec(); err != nil {
			b.Fatal(err)
		}
		if err := commit.Exec(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen opens an existing small store, runs one query and closes it.
func BenchmarkOpen(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "state.sqlite")
	s := MustCreate(b, benchSchema, sqlitestore.Options{Path: path})
	MustExec(b, s, `INSERT INTO t (v) SELECT 'v' || value FROM generate_series(1, 100)`)
	s.Close()
	for b.Loop() {
		s, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: path})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Query(ctx, `SELECT v FROM t WHERE id = ?`, 50); err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkReopen is the cost of a released store's next operation.
func BenchmarkReopen(b *testing.B) {
	ctx := context.Background()
	s := MustCreate(b, benchSchema, sqlitestore.Options{Path: filepath.Join(b.TempDir(), "state.sqlite"), ExclusiveLock: true})
	for b.Loop() {
		if err := s.Release(); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Query(ctx, `SELECT v FROM t WHERE id = ?`, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDateNow is one clock-override call through the helper pool.
func BenchmarkDateNow(b *testing.B) {
	ctx := context.Background()
	s := MustCreate(b, benchSchema, sqlitestore.Options{Path: filepath.Join(b.TempDir(), "state.sqlite")})
	for b.Loop() {
		if _, err := s.Query(ctx, `SELECT datetime('now')`); err != nil {
			b.Fatal(err)
		}
	}
}
