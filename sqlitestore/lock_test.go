package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"

	"github.com/seahaven/seahaven/sqlitestore"
)

// lockState reads the lock the store's connection holds on its file.
func lockState(t *testing.T, s *sqlitestore.Store) vfs.LockLevel {
	t.Helper()
	c, err := s.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.FileControl("main", sqlite3.FCNTL_LOCKSTATE)
	if err != nil {
		t.Fatal(err)
	}
	return v.(vfs.LockLevel)
}

func TestStore_ExclusiveLock(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	root := MustCreate(t, `CREATE TABLE r (x);`, sqlitestore.Options{Path: filepath.Join(dir, "r.sqlite")})
	s := MustCreate(t, `CREATE TABLE t (x INTEGER);`, sqlitestore.Options{Path: filepath.Join(dir, "s.sqlite"), ExclusiveLock: true})
	MustExec(t, s, `INSERT INTO t VALUES (1)`)
	if got := lockState(t, s); got != vfs.LOCK_EXCLUSIVE {
		t.Fatalf("lock after a write = %v, want the exclusive lock held", got)
	}
	if got := MustOne(t, s, `PRAGMA locking_mode`); got != "exclusive" {
		t.Errorf("locking_mode = %v", got)
	}

	if err := s.Yield(); err != nil { // the inspector reads the file as it opens
		t.Fatal(err)
	}
	in, err := sqlitestore.OpenInspector(ctx, root.Path(), []sqlitestore.Attachment{{Schema: "s", Path: s.Path()}}, sqlitestore.InspectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	for i := 2; i <= 3; i++ {
		MustExec(t, s, `INSERT INTO t VALUES (?)`, i)
		if err := s.Yield(); err != nil {
			t.Fatal(err)
		}
		if got := lockState(t, s); got != vfs.LOCK_NONE {
			t.Fatalf("lock after Yield = %v, want none", got)
		}
		rows, err := in.Query(ctx, `SELECT sum(x) FROM s.t`)
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(i * (i + 1) / 2); rows.Values[0][0] != want {
			t.Fatalf("the inspector reads sum %v after insert %d, want %d", rows.Values[0][0], i, want)
		}
	}
	if got := MustOne(t, s, `PRAGMA locking_mode`); got != "exclusive" {
		t.Errorf("locking_mode after Yield = %v", got)
	}

	t.Run("InTransaction", func(t *testing.T) {
		f, err := s.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Rollback()
		MustExec(t, s, `INSERT INTO t VALUES (100)`)
		if err := s.Yield(); err != nil {
			t.Fatal(err)
		}
		if !s.InTransaction() || lockState(t, s) == vfs.LOCK_NONE {
			t.Error("Yield dropped the lock of a store in a transaction")
		}
	})

	t.Run("NotExclusive", func(t *testing.T) {
		MustExec(t, root, `INSERT INTO r VALUES (1)`)
		if err := root.Yield(); err != nil {
			t.Fatal(err)
		}
		if got := MustOne(t, root, `PRAGMA locking_mode`); got != "normal" {
			t.Errorf("locking_mode of a store without ExclusiveLock after Yield = %v", got)
		}
	})
}
