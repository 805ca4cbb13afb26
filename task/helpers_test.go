package task_test

import (
	"context"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/task"
)

type amountArgs struct {
	Amount int64 `json:"amount"`
}

type noteArgs struct {
	Body string `json:"body"`
}

// newLedger returns a fresh one-node world: entries and notes, a tool for
// each, and a startup hook accepting "owner".
func newLedger(name string) *env.World { return newLedgerAt(name, "1.0.0") }

// newLedgerAt is newLedger at a version.
func newLedgerAt(name, version string) *env.World {
	w := env.NewWorld(env.WorldSpec{Name: name, Version: version, Schema: `
CREATE TABLE entries (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL) STRICT;
CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT;`})
	env.Tool(w, "add", "Add an entry.", func(c *env.Ctx, in amountArgs) (int64, error) {
		res, err := c.DB.Exec("INSERT INTO entries (amount) VALUES (?)", in.Amount)
		return res.LastInsertID, err
	})
	env.Tool(w, "note", "Add a note.", func(c *env.Ctx, in noteArgs) (int64, error) {
		res, err := c.DB.Exec("INSERT INTO notes (body) VALUES (?)", in.Body)
		return res.LastInsertID, err
	})
	type startup struct {
		Owner string `json:"owner,omitempty"`
	}
	env.OnStartup(w, func(c *env.Ctx, k startup) error {
		c.State["owner"] = k.Owner
		return nil
	})
	return w
}

// mustOpen opens an instance for t and closes it when the test ends.
func mustOpen(tb testing.TB, w *env.World, t env.Task, opts composition.Options) *task.Episode {
	tb.Helper()
	if opts.Dir == "" {
		opts.Dir = tb.TempDir()
	}
	ep, err := task.Open(context.Background(), w, t, opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { ep.Close() })
	return ep
}

// mustCall makes a call that must succeed.
func mustCall(tb testing.TB, ep *task.Episode, tool, args string) any {
	tb.Helper()
	out, err := ep.CallJSON(context.Background(), tool, []byte(args))
	if err != nil {
		tb.Fatalf("%s(%s): %v", tool, args, err)
	}
	return out
}

// startRecording has ep record its calls to a file in a temporary
// directory (closeAndRead reads it back).
func startRecording(tb testing.TB, ep *task.Episode) {
	tb.Helper()
	rec, err := task.NewRecorder(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	if err := ep.Record(rec); err != nil {
		tb.Fatal(err)
	}
}

// closeAndRead closes ep and reads back the trajectory it recorded.
func closeAndRead(tb testing.TB, ep *task.Episode) *task.Trajectory {
	tb.Helper()
	path := ep.Recording().Path()
	if err := ep.Close(); err != nil {
		tb.Fatal(err)
	}
	tr, err := task.ReadTrajectoryFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return tr
}
