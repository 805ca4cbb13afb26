package sqlitestore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/seahaven/seahaven/internal/testfs"
	"github.com/seahaven/seahaven/sqlitestore"
)

// fillDisk inserts 16 KiB blobs into table.column in one transaction until
// the store's 512 KiB file system is full, rolls back, and checks that the
// error says the disk is (or may be) full.
func fillDisk(t *testing.T, s *sqlitestore.Store, table, column string) {
	t.Helper()
	ctx := context.Background()
	f, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; err == nil; i++ {
		if i == 1000 {
			t.Fatal("1000 rows of 16 KiB fit in a 512 KiB file system")
		}
		_, err = s.Exec(ctx, "INSERT INTO "+table+" ("+column+") VALUES (randomblob(16384))")
	}
	f.Rollback()
	var se *sqlitestore.Error
	if !errors.As(err, &se) || !(strings.Contains(err.Error(), "database or disk is full") ||
		strings.HasSuffix(err.Error(), "writing to the file failed (the disk may be full)")) {
		t.Fatalf("filling the disk: %v, want an error saying the disk is (or may be) full", err)
	}
}

// TestStore_DiskFull runs a store out of disk space. The driver reports a
// failed write as a bare "disk I/O error"; the store's error says the disk
// is full (and wraps syscall.ENOSPC) when the file system is still out of
// space, and that the disk may be full when the rollback gave the space
// back. Either way nothing of the failed transaction remains and the store
// goes on working.
func TestStore_DiskFull(t *testing.T) {
	ctx := context.Background()
	t.Run("Transaction", func(t *testing.T) {
		dir := testfs.MountTmpfs(t, "512k")
		s := MustCreate(t, `CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB NOT NULL) STRICT;`,
			sqlitestore.Options{Path: filepath.Join(dir, "state.sqlite")})
		MustExec(t, s, `INSERT INTO blobs (data) VALUES (x'00')`)
		fillDisk(t, s, "blobs", "data")
		rows, err := s.Query(ctx, `SELECT count(*), sum(length(data)) FROM blobs`)
		if err != nil {
			t.Fatal(err)
		}
		if want := [][]any{{int64(1), int64(1)}}; !reflect.DeepEqual(rows.Values, want) {
			t.Errorf("rows after the rollback: %v, want %v", rows.Values, want)
		}
		MustExec(t, s, `INSERT INTO blobs (data) VALUES (x'01')`)
		if rows, err := s.Query(ctx, `PRAGMA integrity_check`); err != nil || !reflect.DeepEqual(rows.Values, [][]any{{"ok"}}) {
			t.Errorf("integrity_check: %v %v", rows, err)
		}
	})
	t.Run("VacuumInto", func(t *testing.T) {
		s := MustCreate(t, `CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB NOT NULL) STRICT;`,
			sqlitestore.Options{Path: filepath.Join(t.TempDir(), "state.sqlite")})
		for range 16 {
			MustExec(t, s, `INSERT INTO blobs (data) VALUES (randomblob(16384))`)
		}
		dst := filepath.Join(testfs.MountTmpfs(t, "64k"), "copy.sqlite")
		err := s.VacuumInto(ctx, dst)
		if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "database or disk is full") || !strings.Contains(err.Error(), dst) {
			t.Fatalf("VacuumInto a full file system: %v, want an error naming the file, saying the disk is full and wrapping ENOSPC", err)
		}
		if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the partial copy is left: %v", err)
		}
		if err := s.VacuumInto(ctx, filepath.Join(t.TempDir(), "copy.sqlite")); err != nil {
			t.Errorf("VacuumInto with room: %v", err)
		}
	})
}

// TestError_Storage checks which errors say the store's files failed: a
// full disk and a file gone wrap ErrStorage (a full disk also
// syscall.ENOSPC, when the file system still is), a failed statement does
// not.
func TestError_Storage(t *testing.T) {
	ctx := context.Background()
	t.Run("DiskFull", func(t *testing.T) {
		dir := testfs.MountTmpfs(t, "512k")
		s := MustCreate(t, `CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB NOT NULL) STRICT;`,
			sqlitestore.Options{Path: filepath.Join(dir, "state.sqlite")})
		_, err := s.Exec(ctx, "INSERT INTO blobs (data) VALUES (randomblob(1048576))")
		if !errors.Is(err, sqlitestore.ErrStorage) {
			t.Fatalf("writing more than the disk holds: %v, want an error wrapping ErrStorage", err)
		}
	})
	t.Run("FileGone", func(t *testing.T) {
		dir := t.TempDir()
		s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY) STRICT;`, sqlitestore.Options{Path: filepath.Join(dir, "state.sqlite")})
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		s.Release()
		_, err := s.Exec(ctx, "INSERT INTO t DEFAULT VALUES")
		if !errors.Is(err, sqlitestore.ErrStorage) || !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a store whose file is gone: %v, want an error wrapping ErrStorage and fs.ErrNotExist", err)
		}
	})
	t.Run("StatementIsNot", func(t *testing.T) {
		s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY) STRICT;`, sqlitestore.Options{})
		MustExec(t, s, "INSERT INTO t (id) VALUES (1)")
		for _, sql := range []string{"INSERT INTO t (id) VALUES (1)", "SELECT * FROM nowhere", "SELEKT 1"} {
			if _, err := s.Exec(ctx, sql); err == nil || errors.Is(err, sqlitestore.ErrStorage) || errors.Is(err, syscall.ENOSPC) {
				t.Errorf("%s: %v, want an error that is not a storage failure", sql, err)
			}
		}
	})
}
