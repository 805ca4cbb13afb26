package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/seahaven/seahaven/sqlitestore"
)

// Stores of one ShareKey share one copy of the capture metadata until one
// changes its schema; a store that does, and a store with other untracked
// tables, capture by their own, and every capture stays exact.
func TestSharedMeta(t *testing.T) {
	ctx := context.Background()
	data := frozen(t, parkSchema, 1)
	pool, dir := sqlitestore.NewPool(64), t.TempDir()
	open := func(name string, untracked ...string) *sqlitestore.Store {
		s, err := sqlitestore.Open(ctx, sqlitestore.Options{
			Path: filepath.Join(dir, name), Pool: pool, Lazy: true, Data: data, ShareKey: "k", Untracked: untracked,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	// capture inserts a row in a capture and returns the change's after
	// image and the metadata the connection used.
	capture := func(s *sqlitestore.Store, sql string) (map[string]any, uintptr) {
		t.Helper()
		c := s.StartCapture()
		MustExec(t, s, sql)
		meta := s.MetaTables()
		ch, err := c.Finish(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ch) != 1 {
			t.Fatalf("%d changes, want 1: %v", len(ch), ch)
		}
		return ch[0].After, meta
	}
	a, b, other := open("a.sqlite"), open("b.sqlite"), open("c.sqlite", "t")
	_, metaA := capture(a, `INSERT INTO t (v) VALUES ('a')`)
	_, metaB := capture(b, `INSERT INTO t (v) VALUES ('b')`)
	if metaA == 0 || metaA != metaB {
		t.Errorf("stores of one ShareKey use metadata %#x and %#x, want one shared copy", metaA, metaB)
	}
	c := other.StartCapture()
	MustExec(t, other, `INSERT INTO t (v) VALUES ('c')`)
	if ch, err := c.Finish(ctx); err != nil || len(ch) != 0 {
		t.Errorf("a store with t untracked captured %v, %v; want nothing", ch, err)
	}
	if m := other.MetaTables(); m == metaA {
		t.Error("a store with other untracked tables uses the shared metadata")
	}

	MustExec(t, b, `ALTER TABLE t ADD COLUMN w TEXT DEFAULT 'x'`)
	after, metaB := capture(b, `INSERT INTO t (v) VALUES ('b2')`)
	if metaB == metaA || after["w"] != "x" {
		t.Errorf("after ALTER TABLE: metadata %#x (shared %#x), after image %v; want its own with column w", metaB, metaA, after)
	}
	after, metaA = capture(a, `INSERT INTO t (v) VALUES ('a2')`)
	if _, ok := after["w"]; ok || len(after) != 2 {
		t.Errorf("the unchanged store captured %v; want columns id and v", after)
	}
	if _, m := capture(open("d.sqlite"), `INSERT INTO t (v) VALUES ('d')`); m != metaA {
		t.Errorf("a new store uses metadata %#x, want the shared %#x", m, metaA)
	}
}
