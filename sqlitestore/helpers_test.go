package sqlitestore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seahaven/seahaven/sqlitestore"
)

// TestMain sets the process time zone to UTC+5 before any test runs, so a
// 'localtime' that leaked through to Go's time.Local would show
// (TestClock_Functions). It is set once, before any goroutine starts:
// time.Now reads time.Local, and a pool's sweeper outlives the test that
// started it, so a test that set and restored time.Local raced with it.
//
// After the tests it waits for the pools' sweepers to exit (each does once
// its pool's stores are closed and the connections parked in it have been
// idle for IdleAfter): under -race, a goroutine that runs while the process
// exits can crash it after PASS with a bare SIGSEGV, as the race runtime is
// torn down under it.
func TestMain(m *testing.M) {
	time.Local = time.FixedZone("UTC+5", 5*3600)
	code := m.Run()
	sqlitestore.WaitSweepers()
	os.Exit(code)
}

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
