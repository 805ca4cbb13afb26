package sqlitestore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

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

func TestPool_ReleaseDue(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		idle     time.Duration                                   // the pool's IdleAfter
		at       time.Duration                                   // when the sweep runs, from now
		prepare  func(t *testing.T, s *sqlitestore.Store) func() // leaves the store in a state; returns its undo
		released bool                                            // whether the sweep releases the store
	}{
		{name: "Idle", idle: time.Minute, at: time.Hour, released: true},
		{name: "UsedRecently", idle: time.Hour, at: time.Minute, released: false},
		{name: "Pinned", idle: time.Minute, at: time.Hour, released: false,
			prepare: func(t *testing.T, s *sqlitestore.Store) func() { s.Pin(); return s.Unpin }},
		{name: "InTransaction", idle: time.Minute, at: time.Hour, released: false,
			prepare: func(t *testing.T, s *sqlitestore.Store) func() {
				f, err := s.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return func() { f.Rollback() }
			}},
		{name: "IdleReleaseOff", idle: -1, at: time.Hour, released: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := &sqlitestore.Pool{MaxOpen: 10, IdleAfter: tt.idle}
			s := MustCreate(t, `CREATE TABLE t (x);`, sqlitestore.Options{Pool: pool})
			MustExec(t, s, `INSERT INTO t VALUES (1)`)
			undo := func() {}
			if tt.prepare != nil {
				undo = tt.prepare(t, s)
			}
			pool.ReleaseDue(time.Now().Add(tt.at))
			if got := !s.IsOpen(); got != tt.released {
				t.Errorf("released = %v, want %v", got, tt.released)
			}
			if want := map[bool]int{true: 0, false: 1}[tt.released]; pool.Open() != want {
				t.Errorf("Open() = %d, want %d", pool.Open(), want)
			}
			undo()
			if got := MustOne(t, s, `SELECT count(*) FROM t`); got != int64(1) {
				t.Errorf("rows after the sweep = %v, want 1", got)
			}
		})
	}
}

// waitFor polls cond until it holds, failing the test if it never does.
// The deadline only stops a broken test; nothing is asserted about time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPool_Sweeper(t *testing.T) {
	ctx := context.Background()
	pool := &sqlitestore.Pool{MaxOpen: 10, IdleAfter: 20 * time.Millisecond}
	dir := t.TempDir()
	var stores []*sqlitestore.Store
	for i := range 3 {
		s := MustCreate(t, `CREATE TABLE t (x);`, sqlitestore.Options{Path: filepath.Join(dir, fmt.Sprintf("s%d.sqlite", i)), Pool: pool})
		if i == 0 {
			s.Pin() // pinned before its next operation, so it stays open from then on
		}
		MustExec(t, s, `INSERT INTO t VALUES (?)`, i)
		stores = append(stores, s)
	}
	pinned := stores[0]
	waitFor(t, "the unpinned stores to be released", func() bool { return pool.Open() == 1 })
	if !pinned.IsOpen() {
		t.Fatal("the sweeper released a pinned store")
	}
	if !pool.Sweeping() {
		t.Fatal("no sweeper while a connection is open")
	}
	pinned.Unpin()
	waitFor(t, "every store to be released", func() bool { return pool.Open() == 0 })
	waitFor(t, "the sweeper to exit", func() bool { return !pool.Sweeping() })

	// The next operation reopens a store and starts a sweeper again.
	pinned.Pin()
	for i, s := range stores {
		if got := MustOne(t, s, `SELECT x FROM t`); got != int64(i) {
			t.Errorf("store %d after reopen: x = %v", i, got)
		}
	}
	if !pool.Sweeping() {
		t.Fatal("no sweeper after reopening")
	}
	pinned.Unpin()
	f, err := stores[1].Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the stores outside the transaction to be released", func() bool { return pool.Open() == 1 })
	if !stores[1].InTransaction() {
		t.Fatal("the sweeper released a store in a transaction")
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, s := range stores {
		s.Close()
	}
	if pool.Open() != 0 {
		t.Errorf("Open() = %d after closing every store", pool.Open())
	}
	waitFor(t, "the sweeper to exit after Close", func() bool { return !pool.Sweeping() })
}

// A pool's sweeper exits as soon as the pool holds no connection, open or
// parked, not at its next sweep, IdleAfter later: a pool whose stores are
// closed leaves no goroutine running.
func TestPool_SweeperStopsWhenEmpty(t *testing.T) {
	pool := &sqlitestore.Pool{MaxOpen: 10, IdleAfter: time.Hour}
	s := MustCreate(t, `CREATE TABLE t (x);`, sqlitestore.Options{Pool: pool})
	MustExec(t, s, `INSERT INTO t VALUES (1)`)
	if !pool.Sweeping() {
		t.Fatal("no sweeper while a connection is open")
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if pool.Sweeping() {
		t.Fatal("the sweeper still runs after the pool's last connection closed")
	}
	t.Run("Parked", func(t *testing.T) {
		skipWithoutParking(t)
		shared := openShared(t, pool, t.TempDir(), 0, frozen(t, parkSchema, 0), 1)
		MustExec(t, shared, `INSERT INTO t (v) VALUES ('x')`)
		if err := shared.Release(); err != nil {
			t.Fatal(err)
		}
		if pool.Parked() != 1 || !pool.Sweeping() {
			t.Fatalf("Parked() = %d, sweeping %v; want 1 and a sweeper", pool.Parked(), pool.Sweeping())
		}
		pool.CloseParked()
		if pool.Sweeping() {
			t.Fatal("the sweeper still runs after the pool's parked connections closed")
		}
	})
}

func TestPool_SetLimits(t *testing.T) {
	pool := &sqlitestore.Pool{MaxOpen: 10, IdleAfter: -1}
	dir := t.TempDir()
	for i := range 4 {
		s := MustCreate(t, `CREATE TABLE t (x);`, sqlitestore.Options{Path: filepath.Join(dir, fmt.Sprintf("s%d.sqlite", i)), Pool: pool})
		MustExec(t, s, `INSERT INTO t VALUES (1)`)
	}
	if pool.Open() != 4 || pool.Sweeping() {
		t.Fatalf("Open() = %d, sweeping %v; want 4 and no sweeper with idle release off", pool.Open(), pool.Sweeping())
	}
	pool.SetLimits(2, -1)
	if pool.Open() != 2 {
		t.Errorf("Open() = %d after SetLimits(2), want 2", pool.Open())
	}
}
