package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/seahaven/seahaven/sqlitestore"
)

// MustCreate creates a store from schema in a temporary directory and closes
// it when the test ends. opts.Path is filled in when empty.
func MustCreate(tb testing.TB, schema string, opts sqlitestore.Options) *sqlitestore.Store {
	tb.Helper()
	if opts.Path == "" {
		opts.Path = filepath.Join(tb.TempDir(), "state.sqlite")
	}
	s, err := sqlitestore.Create(context.Background(), schema, opts)
	if err != nil {
		tb.Fatalf("Create: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// MustExec runs one statement or fails the test.
func MustExec(tb testing.TB, s *sqlitestore.Store, sql string, args ...any) sqlitestore.Result {
	tb.Helper()
	res, err := s.Exec(context.Background(), sql, args...)
	if err != nil {
		tb.Fatalf("Exec(%q): %v", sql, err)
	}
	return res
}

// MustQuery runs a query or fails the test.
func MustQuery(tb testing.TB, s *sqlitestore.Store, sql string, args ...any) *sqlitestore.Rows {
	tb.Helper()
	rows, err := s.Query(context.Background(), sql, args...)
	if err != nil {
		tb.Fatalf("Query(%q): %v", sql, err)
	}
	return rows
}

// MustOne runs a query that returns one value or fails the test.
func MustOne(tb testing.TB, s *sqlitestore.Store, sql string, args ...any) any {
	tb.Helper()
	rows := MustQuery(tb, s, sql, args...)
	if len(rows.Values) != 1 || len(rows.Columns) != 1 {
		tb.Fatalf("Query(%q) = %v rows of %v columns, want one value", sql, len(rows.Values), len(rows.Columns))
	}
	return rows.Values[0][0]
}
