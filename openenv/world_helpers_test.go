package openenv_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/openenv"
)

// worldServer is a Server over a real app.Backend (the composition engine
// and SQLite stores) on a real HTTP listener.
type worldServer struct {
	*testServer
	backend *app.Backend
}

// mustServeWorld serves w with its instances in a private instance root. At
// cleanup it shuts the server down and checks that every session ended and
// every instance directory was removed.
func mustServeWorld(tb testing.TB, w *env.World, bcfg app.Config, cfg openenv.Config) *worldServer {
	tb.Helper()
	if bcfg.InstanceRoot == "" {
		bcfg.InstanceRoot = tb.TempDir()
	}
	if bcfg.Checkpoints == "" {
		bcfg.Checkpoints = tb.TempDir() // not the shared default under the temp dir
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	backend, err := app.New(w, bcfg)
	if err != nil {
		tb.Fatalf("app.New(%s): %v", w.Name(), err)
	}
	srv := openenv.NewServer(backend, cfg)
	ts := httptest.NewServer(srv.Handler())
	s := &worldServer{testServer: &testServer{Server: srv, ts: ts}, backend: backend}
	tb.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			tb.Errorf("Shutdown: %v", err)
		}
		if n := len(srv.Sessions()); n != 0 {
			tb.Errorf("after Shutdown, %d sessions are live", n)
		}
		if names := s.instanceDirs(tb); len(names) != 0 {
			tb.Errorf("after Shutdown, instance directories are left: %v", names)
		}
		if err := backend.Close(); err != nil {
			tb.Errorf("backend Close: %v", err)
		}
	})
	return s
}

// mustServeCompany serves the examples' company world, whose resets start
// from the acme fixture by default.
func mustServeCompany(tb testing.TB, cfg openenv.Config) *worldServer {
	tb.Helper()
	return mustServeWorld(tb, company.World, app.Config{DefaultFixture: company.AcmeID}, cfg)
}

// instanceDirs lists the instance directories the backend holds now.
func (s *worldServer) instanceDirs(tb testing.TB) []string {
	tb.Helper()
	ents, err := os.ReadDir(s.backend.InstanceDir())
	if err != nil {
		tb.Fatalf("reading the instance directory: %v", err)
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names
}

// settle waits until no session is live and no instance directory is left:
// whatever a client did, the server cleaned up after it.
func (s *worldServer) settle(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		sessions, dirs := len(s.Sessions()), s.instanceDirs(tb)
		if sessions == 0 && len(dirs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("server did not settle: %d sessions live, instance directories %v", sessions, dirs)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// inspectValue runs one inspect query on the socket's session and returns
// the single value it must yield, as JSON text.
func inspectValue(tb testing.TB, c *websocket.Conn, sql string) string {
	tb.Helper()
	reply := roundTrip(tb, c, fmt.Sprintf(`{"type":"inspect","data":{"sql":%q}}`, sql))
	if typ := str(tb, reply, "type"); typ != "inspect" {
		tb.Fatalf("inspect %s: reply %s", sql, reply)
	}
	rows, ok := field(tb, reply, "data.rows").([]any)
	if !ok || len(rows) != 1 {
		tb.Fatalf("inspect %s: want one row, got %s", sql, reply)
	}
	row, ok := rows[0].([]any)
	if !ok || len(row) != 1 {
		tb.Fatalf("inspect %s: want one column, got %s", sql, reply)
	}
	return fmt.Sprint(row[0])
}

// checkIntegrity runs PRAGMA integrity_check over every store of the
// socket's instance through the inspection connection.
func checkIntegrity(tb testing.TB, c *websocket.Conn) {
	tb.Helper()
	if got := inspectValue(tb, c, "PRAGMA integrity_check"); got != "ok" {
		tb.Fatalf("integrity_check: %s", got)
	}
}

// callTool makes one call_tool step and returns the reply.
func callTool(tb testing.TB, c *websocket.Conn, tool, args string) string {
	tb.Helper()
	return roundTrip(tb, c, fmt.Sprintf(`{"type":"step","data":{"type":"call_tool","tool_name":%q,"arguments":%s}}`, tool, args))
}

// toolFailure returns the error_type and message of a call_tool observation,
// or "" and "" when the call succeeded.
func toolFailure(tb testing.TB, reply string) (kind, message string) {
	tb.Helper()
	if typ := str(tb, reply, "type"); typ != "observation" {
		tb.Fatalf("reply %.300s, want an observation", reply)
	}
	e := field(tb, reply, "data.observation.error")
	if e == nil {
		return "", ""
	}
	m, ok := e.(map[string]any)
	if !ok {
		tb.Fatalf("error is not an object in %.300s", reply)
	}
	kind, _ = m["error_type"].(string)
	message, _ = m["message"].(string)
	return kind, message
}

// mustSucceed fails unless reply is a successful call_tool observation.
func mustSucceed(tb testing.TB, reply string) {
	tb.Helper()
	if kind, msg := toolFailure(tb, reply); kind != "" {
		tb.Fatalf("call failed: %s: %.300s", kind, msg)
	}
}

// slowWaiting maps the body of a slow call a test waits for to the channel
// the call closes once it waits (see slowStarts).
var slowWaiting sync.Map

// slowStarts returns a channel closed once a slow call writing body has
// written its note and waits: a test acting on a call in progress (closing
// its session, cancelling it) waits for it, where a fixed pause would act
// too early on a loaded machine.
func slowStarts(body string) <-chan struct{} {
	ch := make(chan struct{})
	slowWaiting.Store(body, ch)
	return ch
}

// heldRelease maps the body of a held call to the channel that releases it
// (see holdUntilReleased).
var heldRelease sync.Map

// holdUntilReleased makes a held call writing body wait, once its note is
// written, until release is called; started is closed once it waits (as
// slowStarts').
func holdUntilReleased(body string) (started <-chan struct{}, release func()) {
	ch := make(chan struct{})
	heldRelease.Store(body, ch)
	return slowStarts(body), sync.OnceFunc(func() { close(ch) })
}

// holdStart is the start of the held and stuck tools: it writes in's note,
// then tells slowStarts' waiter it started, and returns the channel that
// releases the call (nil when the test holds none).
func holdStart(c *env.Ctx, in noteArgs) (noteResult, chan struct{}, error) {
	out, err := writeNote(c, in.Body)
	if err != nil {
		return out, nil, err
	}
	release, _ := heldRelease.Load(in.Body)
	if waiting, ok := slowWaiting.LoadAndDelete(in.Body); ok {
		close(waiting.(chan struct{}))
	}
	ch, _ := release.(chan struct{})
	return out, ch, nil
}

// awaitSlow waits until started, from slowStarts, is closed; it fails the
// test after waitLimit.
func awaitSlow(tb testing.TB, started <-chan struct{}) {
	tb.Helper()
	select {
	case <-started:
	case <-time.After(waitLimit):
		tb.Fatal("the slow call did not start")
	}
}

// The faulty world's tools fail on purpose: each writes a note first, so a
// test can tell whether the failed call's writes were rolled back.
var faultyWorld = env.NewWorld(env.WorldSpec{
	Name:        "faulty",
	Version:     "1.0.0",
	Description: "Tools that panic, spin and stall, for fault and churn tests.",
	Schema:      `CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT;`,
})

// noteArgs are the arguments of every faulty tool.
type noteArgs struct {
	Body string `json:"body" doc:"The note to write first."`
	// MS is how long slow waits.
	MS int `json:"ms,omitempty" doc:"For slow: milliseconds to wait (default 0)." min:"0" max:"60000"`
}

// noteResult is what a faulty tool returns when it does return.
type noteResult struct {
	ID int64 `json:"id"`
}

// writeNote inserts a note and returns its id.
func writeNote(c *env.Ctx, body string) (noteResult, error) {
	res, err := c.DB.Exec("INSERT INTO notes (body) VALUES (?)", body)
	return noteResult{ID: res.LastInsertID}, err
}

var (
	_ = env.Tool(faultyWorld, "note", "Write a note.", func(c *env.Ctx, in noteArgs) (noteResult, error) {
		return writeNote(c, in.Body)
	})
	_ = env.Tool(faultyWorld, "boom", "Write a note, then panic.", func(c *env.Ctx, in noteArgs) (noteResult, error) {
		if _, err := writeNote(c, in.Body); err != nil {
			return noteResult{}, err
		}
		panic("boom: the tool exploded after writing " + strings.ToUpper(in.Body))
	})
	_ = env.Tool(faultyWorld, "nan", "Write a note, then return a score JSON cannot hold.", func(c *env.Ctx, in noteArgs) (map[string]float64, error) {
		if _, err := writeNote(c, in.Body); err != nil {
			return nil, err
		}
		return map[string]float64{"score": math.NaN()}, nil
	})
	_ = env.Tool(faultyWorld, "spin", "Write a note, then run a query that only an interrupt ends.", func(c *env.Ctx, in noteArgs) (noteResult, error) {
		if _, err := writeNote(c, in.Body); err != nil {
			return noteResult{}, err
		}
		_, err := c.DB.Rows("WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT max(x) FROM n")
		return noteResult{}, err
	})
	_ = env.Tool(faultyWorld, "stall", "Write a note, then sleep ms milliseconds whatever happens to the call.", func(c *env.Ctx, in noteArgs) (noteResult, error) {
		out, err := writeNote(c, in.Body)
		time.Sleep(time.Duration(in.MS) * time.Millisecond)
		return out, err
	})
	_ = env.Tool(faultyWorld, "held", "Write a note, then wait until the test releases it (holdUntilReleased) or the call is cancelled.", func(c *env.Ctx, in noteArgs) (noteResult, error) {
		out, release, err := holdStart(c, in)
		if err != nil {
			return out, err
		}
		if release == nil {
			return out, nil
		}
		select {
		case <-release:
			return out, nil
		case <-c.Context().Done():
			return noteResult{}, fmt.Errorf("held: %w", c.Context().Err())
		}
	})
	_ = env.Tool(faultyWorld, "stuck", "Write a note, then wait until the test releases it (holdUntilReleased), whatever happens to the call.", func(c *env.Ctx, in noteArgs) (noteResult, error) {
		out, release, err := holdStart(c, in)
		if err != nil {
			return out, err
		}
		if release != nil {
			<-release
		}
		return out, nil
	})
	_ = env.Tool(faultyWorld, "slow", "Write a note, then wait ms milliseconds or until the call is cancelled.", func(c *env.Ctx, in noteArgs) (noteResult, error) {
		out, err := writeNote(c, in.Body)
		if err != nil {
			return out, err
		}
		if waiting, ok := slowWaiting.LoadAndDelete(in.Body); ok {
			close(waiting.(chan struct{}))
		}
		t := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return out, nil
		case <-c.Context().Done():
			return noteResult{}, fmt.Errorf("slow: %w", c.Context().Err())
		}
	})
)
