package sqlitestore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/seahaven/seahaven/sqlitestore"
)

func TestPool_ManyStores(t *testing.T) {
	const (
		stores  = 50
		maxOpen = 5
		inserts = 20
	)
	ctx := context.Background()
	dir := t.TempDir()
	pool := sqlitestore.NewPool(maxOpen)
	all := make([]*sqlitestore.Store, stores)
	for i := range all {
		all[i] = MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);`, sqlitestore.Options{
			Path: filepath.Join(dir, fmt.Sprintf("s%02d.sqlite", i)),
			Seed: uint64(i),
			Pool: pool,
		})
	}
	if n := pool.Open(); n > maxOpen {
		t.Fatalf("Open() = %d after creating, want <= %d", n, maxOpen)
	}

	// Two stores stay pinned throughout: the pool must leave them open.
	pinned := all[:2]
	for _, s := range pinned {
		s.Pin()
	}
	var wg sync.WaitGroup
	errs := make(chan error, stores)
	for i, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range inserts {
				var err error
				if j%5 == 0 { // some inserts inside a frame, with a capture, as a tool call does
					err = call(ctx, s, i, j)
				} else {
					_, err = s.Exec(ctx, `INSERT INTO t (v) VALUES (?)`, fmt.Sprintf("%d-%d", i, j))
				}
				if err != nil {
					errs <- fmt.Errorf("store %d insert %d: %w", i, j, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	if n := pool.Open(); n > maxOpen+len(pinned) {
		t.Errorf("Open() = %d, want <= %d + %d pinned", n, maxOpen, len(pinned))
	}
	for _, s := range pinned {
		if !s.IsOpen() {
			t.Errorf("pinned store %s was released", s.Path())
		}
	}
	for i, s := range all {
		rows := MustQuery(t, s, `SELECT v FROM t ORDER BY id`)
		if len(rows.Values) != inserts {
			t.Fatalf("store %d has %d rows, want %d", i, len(rows.Values), inserts)
		}
		for j, r := range rows.Values {
			if want := fmt.Sprintf("%d-%d", i, j); r[0] != want {
				t.Fatalf("store %d row %d = %v, want %s", i, j, r[0], want)
			}
		}
	}
	for _, s := range pinned {
		s.Unpin()
	}
	if n := pool.Open(); n > maxOpen {
		t.Errorf("Open() = %d after unpinning, want <= %d", n, maxOpen)
	}
	for _, s := range all {
		s.Close()
	}
	if n := pool.Open(); n != 0 {
		t.Errorf("Open() = %d after closing every store, want 0", n)
	}
}

// call inserts one row the way a tool call does: pinned, in a frame, captured.
func call(ctx context.Context, s *sqlitestore.Store, i, j int) error {
	s.Pin()
	defer s.Unpin()
	c := s.StartCapture()
	f, err := s.Begin(ctx)
	if err != nil {
		return err
	}
	defer f.Rollback()
	if _, err := s.Exec(ctx, `INSERT INTO t (v) VALUES (?)`, fmt.Sprintf("%d-%d", i, j)); err != nil {
		return err
	}
	if err := f.Commit(); err != nil {
		return err
	}
	changes, err := c.Finish(ctx)
	if err != nil {
		return err
	}
	if len(changes) != 1 || changes[0].Op != sqlitestore.OpInsert {
		return fmt.Errorf("changes = %v, want one insert", changes)
	}
	return nil
}

func TestPool_NeverReleasesATransaction(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	pool := sqlitestore.NewPool(1)
	a := MustCreate(t, `CREATE TABLE t (x);`, sqlitestore.Options{Path: filepath.Join(dir, "a.sqlite"), Pool: pool})
	b := MustCreate(t, `CREATE TABLE t (x);`, sqlitestore.Options{Path: filepath.Join(dir, "b.sqlite"), Pool: pool})
	f, err := a.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	MustExec(t, a, `INSERT INTO t VALUES (1)`)
	MustExec(t, b, `INSERT INTO t VALUES (2)`) // opens b: over the cap, but a is in a transaction
	if !a.InTransaction() {
		t.Fatal("the pool released a store in a transaction")
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	MustExec(t, b, `INSERT INTO t VALUES (3)`) // now a is idle and least recently used
	if a.IsOpen() || !b.IsOpen() || pool.Open() != 1 {
		t.Errorf("a open %v, b open %v, Open() = %d; want only b", a.IsOpen(), b.IsOpen(), pool.Open())
	}
	if got := MustOne(t, a, `SELECT x FROM t`); got != int64(1) {
		t.Errorf("a after reopen: %v", got)
	}
}
