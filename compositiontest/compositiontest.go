// Package compositiontest holds the helpers a world's tests use to open
// instances, call tools and read the stores: each fails the test with a
// clear message instead of returning an error, and closes what it opens
// when the test ends. World authors' tests and the project's own use them.
// Its functions are safe for concurrent use by parallel tests.
package compositiontest

import (
	"context"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
)

// Open opens an instance of w with opts and closes it when the test ends.
// An empty opts.Dir becomes a directory of the test's own
// (testing.TB.TempDir), so instances never share one.
func Open(tb testing.TB, w *env.World, opts composition.Options) *composition.Instance {
	tb.Helper()
	if opts.Dir == "" {
		opts.Dir = tb.TempDir()
	}
	inst, err := composition.Open(context.Background(), w, opts)
	if err != nil {
		tb.Fatalf("opening an instance of %s: %v", w.Name(), err)
	}
	tb.Cleanup(func() { inst.Close() })
	return inst
}

// Call calls the tool named tool with the JSON arguments args, as an agent
// would, and returns its result; the call must succeed.
func Call(tb testing.TB, inst *composition.Instance, tool, args string) any {
	tb.Helper()
	out, err := inst.CallJSON(context.Background(), tool, []byte(args))
	if err != nil {
		tb.Fatalf("%s(%s): %v", tool, args, err)
	}
	return out
}

// Rows runs a read-only query on the instance's inspection view, where
// every added world's store is attached under its path, and returns its
// rows as maps.
func Rows(tb testing.TB, inst *composition.Instance, sql string, args ...any) []env.Row {
	tb.Helper()
	rows, err := inst.Inspect().Rows(context.Background(), sql, args...)
	if err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
	return rows
}

// Fixture opens a genesis instance of w with opts, lets build make the
// state a fixture should hold, freezes it as id into a fixtures directory
// of the test's own and returns that directory: open instances of it with
// composition.Options{Fixture: id, FixturesDir: dir}.
func Fixture(tb testing.TB, w *env.World, opts composition.Options, id string, build func(inst *composition.Instance)) string {
	tb.Helper()
	dir := tb.TempDir()
	opts.Fixture, opts.FixturesDir = "", dir
	inst := Open(tb, w, opts)
	build(inst)
	if _, err := inst.Freeze(context.Background(), id, "", composition.FreezeOptions{FixturesDir: dir}); err != nil {
		tb.Fatalf("freezing fixture %s of %s: %v", id, w.Name(), err)
	}
	return dir
}

// FixturesDir returns the directory of w's own fixtures (see
// composition.FixturesDir), failing tb when there is none.
func FixturesDir(tb testing.TB, w *env.World) string {
	tb.Helper()
	dir, err := composition.FixturesDir(w)
	if err != nil || dir == "" {
		tb.Fatalf("the fixtures of %s: %q %v", w.Name(), dir, err)
	}
	return dir
}
