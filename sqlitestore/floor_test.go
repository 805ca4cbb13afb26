package sqlitestore_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/sqlitestore"
)

func TestRawFloor(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		dir := t.TempDir()
		f, err := sqlitestore.RawFloor(dir)
		if err != nil {
			t.Fatal(err)
		}
		if f.Open <= 0 || f.InsertTxn <= 0 || f.KeyedInsertTxn <= 0 {
			t.Errorf("RawFloor = %+v; want positive durations", f)
		}
		left, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 0 {
			t.Errorf("RawFloor left %d entries in its directory", len(left))
		}
	})
	t.Run("ErrMissingDir", func(t *testing.T) {
		_, err := sqlitestore.RawFloor(filepath.Join(t.TempDir(), "missing"))
		if err == nil || !strings.HasPrefix(err.Error(), "sqlitestore: raw floor: ") || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("err = %v, want a raw floor error wrapping fs.ErrNotExist", err)
		}
	})
}

func TestRawKeyedGrowth(t *testing.T) {
	dir := t.TempDir()
	d, made, err := sqlitestore.RawKeyedGrowth(dir, 1500)
	if err != nil {
		t.Fatal(err)
	}
	if d <= 0 || made != 1500 {
		t.Errorf("RawKeyedGrowth = %v, %d; want a positive duration, 1500", d, made)
	}
	if _, made, err := sqlitestore.RawKeyedGrowth(dir, 3); err != nil || made != sqlitestore.MinGrownRows {
		t.Errorf("RawKeyedGrowth(3) made %d, %v; want %d", made, err, sqlitestore.MinGrownRows)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("RawKeyedGrowth left %d entries in its directory", len(left))
	}
	_, _, err = sqlitestore.RawKeyedGrowth(filepath.Join(dir, "missing"), 10)
	if err == nil || !strings.HasPrefix(err.Error(), "sqlitestore: raw floor: ") || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want a raw floor error wrapping fs.ErrNotExist", err)
	}
}

func TestOpenConnections(t *testing.T) {
	base := sqlitestore.OpenConnections()
	s := MustCreate(t, `CREATE TABLE t (x);`, sqlitestore.Options{})
	if got := sqlitestore.OpenConnections(); got != base+1 {
		t.Errorf("with one open store: OpenConnections() = %d, want %d", got, base+1)
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if got := sqlitestore.OpenConnections(); got != base {
		t.Errorf("after Release: OpenConnections() = %d, want %d", got, base)
	}
	MustExec(t, s, `INSERT INTO t VALUES (1)`)
	if got := sqlitestore.OpenConnections(); got != base+1 {
		t.Errorf("after reopening: OpenConnections() = %d, want %d", got, base+1)
	}
	s.Close()
	if got := sqlitestore.OpenConnections(); got != base {
		t.Errorf("after Close: OpenConnections() = %d, want %d", got, base)
	}
}
