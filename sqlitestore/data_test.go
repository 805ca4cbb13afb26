package sqlitestore_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/seahaven/seahaven/sqlitestore"
)

// fileBytes makes a store file with one row and returns its content.
func fileBytes(t *testing.T) []byte {
	t.Helper()
	s := MustCreate(t, `CREATE TABLE t (x INTEGER);`, sqlitestore.Options{})
	MustExec(t, s, `INSERT INTO t VALUES (42)`)
	s.Close()
	b, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOpen_Data(t *testing.T) {
	ctx := context.Background()
	data := fileBytes(t)
	exists := func(path string) bool {
		_, err := os.Stat(path)
		return err == nil
	}
	open := func(t *testing.T, path string) *sqlitestore.Store {
		t.Helper()
		s, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: path, Lazy: true, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}

	t.Run("WrittenOnFirstUse", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s.sqlite")
		s := open(t, path)
		if exists(path) || s.IsOpen() {
			t.Fatal("Open wrote the file or opened a connection")
		}
		if got := MustOne(t, s, `SELECT x FROM t`); got != int64(42) {
			t.Errorf("x = %v, want 42", got)
		}
		if !exists(path) {
			t.Fatal("no file after the first use")
		}
		MustExec(t, s, `INSERT INTO t VALUES (43)`)
		if err := s.Release(); err != nil {
			t.Fatal(err)
		}
		if got := MustOne(t, s, `SELECT count(*) FROM t`); got != int64(2) {
			t.Errorf("rows after a reopen = %v: the file was written again", got)
		}
	})
	t.Run("Materialize", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s.sqlite")
		s := open(t, path)
		for range 2 {
			if err := s.Materialize(); err != nil {
				t.Fatal(err)
			}
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != string(data) {
			t.Fatalf("materialized file: %d bytes, %v; want the %d bytes of Data", len(b), err, len(data))
		}
		if s.IsOpen() {
			t.Error("Materialize opened a connection")
		}
	})
	t.Run("NeverUsed", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s.sqlite")
		s := open(t, path)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if exists(path) {
			t.Error("a store never used left a file")
		}
		if err := s.Materialize(); !errors.Is(err, sqlitestore.ErrClosed) {
			t.Errorf("Materialize after Close: %v, want ErrClosed", err)
		}
	})
	t.Run("ErrExist", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s.sqlite")
		if err := os.WriteFile(path, []byte("someone else's"), 0o600); err != nil {
			t.Fatal(err)
		}
		s := open(t, path)
		if _, err := s.Query(ctx, `SELECT 1`); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("first use over an existing file: err = %v, want fs.ErrExist", err)
		}
	})
}
