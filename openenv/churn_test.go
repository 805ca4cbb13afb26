package openenv_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/chat"
	"github.com/seahaven/seahaven/openenv"
)

// churnWorld has three stores: the faulty world's notes (with its slow
// tool, so a disconnect can land while a call runs) and a chat.
var churnWorld = func() *env.World {
	w := env.NewWorld(env.WorldSpec{
		Name: "churn", Version: "1.0.0", Description: "Sessions come and go.",
		Schema: `CREATE TABLE visits (id INTEGER PRIMARY KEY) STRICT;`,
	})
	w.AddWorld(faultyWorld, env.Name("faulty"))
	w.AddWorld(chat.World, env.Name("chat"), env.ToolPrefix("chat_"))
	return w
}()

// soak reports whether the long runs are asked for: SEAHAVEN_SOAK=1, or CI.
func soak() bool { return os.Getenv("SEAHAVEN_SOAK") == "1" || os.Getenv("CI") != "" }

// openFiles counts this process's open file descriptors.
func openFiles(tb testing.TB) int {
	tb.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Skipf("counting open files needs /proc: %v", err)
	}
	return len(ents)
}

// churnScenario is one way a client uses and drops a session.
type churnScenario struct {
	name string
	run  func(ctx context.Context, cc *churnClient) error
}

// churnClient is one client's view of the server under churn.
type churnClient struct {
	s    *worldServer
	http *http.Client
	rng  *rand.Rand
}

// dial opens a socket; the caller drops it.
func (cc *churnClient) dial(ctx context.Context) (*websocket.Conn, error) {
	c, _, err := websocket.Dial(ctx, cc.s.wsURL(), &websocket.DialOptions{HTTPClient: cc.http})
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	c.SetReadLimit(1 << 20)
	return c, nil
}

// exchange sends msg and reads its reply.
func exchange(ctx context.Context, c *websocket.Conn, msg string) (string, error) {
	if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		return "", err
	}
	_, b, err := c.Read(ctx)
	return string(b), err
}

// jitter sleeps up to max.
func (cc *churnClient) jitter(max time.Duration) {
	time.Sleep(time.Duration(cc.rng.Int64N(int64(max) + 1)))
}

// slowCall is a call that runs until the client is gone.
const slowCall = `{"type":"step","data":{"type":"call_tool","tool_name":"slow","arguments":{"body":"churn","ms":60000}}}`

var churnScenarios = []churnScenario{
	{"DisconnectMidStep", func(ctx context.Context, cc *churnClient) error {
		c, err := cc.dial(ctx)
		if err != nil {
			return err
		}
		defer c.CloseNow()
		if reply, err := exchange(ctx, c, `{"type":"reset"}`); err != nil || !strings.Contains(reply, `"observation"`) {
			return fmt.Errorf("reset: %v %.200s", err, reply)
		}
		if err := c.Write(ctx, websocket.MessageText, []byte(slowCall)); err != nil {
			return err
		}
		cc.jitter(20 * time.Millisecond)
		return c.CloseNow() // the TCP connection drops while the call runs
	}},
	{"CloseFrameMidStep", func(ctx context.Context, cc *churnClient) error {
		c, err := cc.dial(ctx)
		if err != nil {
			return err
		}
		defer c.CloseNow()
		if err := c.Write(ctx, websocket.MessageText, []byte(slowCall)); err != nil { // after the implicit reset
			return err
		}
		cc.jitter(20 * time.Millisecond)
		c.Close(websocket.StatusNormalClosure, "bye") // the server may answer or drop; either is fine
		return nil
	}},
	{"DisconnectMidReset", func(ctx context.Context, cc *churnClient) error {
		c, err := cc.dial(ctx)
		if err != nil {
			return err
		}
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"reset","data":{"seed":3}}`)); err != nil {
			c.CloseNow()
			return err
		}
		cc.jitter(2 * time.Millisecond)
		return c.CloseNow()
	}},
	{"PanicThenDisconnect", func(ctx context.Context, cc *churnClient) error {
		c, err := cc.dial(ctx)
		if err != nil {
			return err
		}
		defer c.CloseNow()
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"step","data":{"tool_name":"boom","arguments":{"body":"b"}}}`)); err != nil {
			return err
		}
		cc.jitter(5 * time.Millisecond)
		return c.CloseNow()
	}},
	{"Complete", func(ctx context.Context, cc *churnClient) error {
		c, err := cc.dial(ctx)
		if err != nil {
			return err
		}
		defer c.CloseNow()
		for _, msg := range []string{
			`{"type":"reset","data":{"episode_id":"churn"}}`,
			`{"type":"step","data":{"tool_name":"note","arguments":{"body":"n"}}}`,
			`{"type":"step","data":{"tool_name":"chat_send_message","arguments":{"channel":"general","text":"hello"}}}`,
			`{"type":"inspect","data":{"sql":"SELECT count(*) FROM faulty.notes"}}`,
		} {
			reply, err := exchange(ctx, c, msg)
			if err != nil {
				return err
			}
			if strings.Contains(reply, `"type":"error"`) || strings.Contains(reply, `"error_type"`) {
				return fmt.Errorf("%s: %.300s", msg, reply)
			}
		}
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"close"}`)); err != nil {
			return err
		}
		if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
			return fmt.Errorf("after close: %v, want a normal close", err)
		}
		return nil
	}},
	{"NeverSpeaks", func(ctx context.Context, cc *churnClient) error {
		c, err := cc.dial(ctx)
		if err != nil {
			return err
		}
		cc.jitter(2 * time.Millisecond)
		return c.CloseNow()
	}},
	{"MCPCallAbandoned", func(ctx context.Context, cc *churnClient) error {
		// A tools/call without a session runs on a throwaway instance; the
		// client gives up while it runs.
		rctx, cancel := context.WithTimeout(ctx, time.Duration(1+cc.rng.IntN(20))*time.Millisecond)
		defer cancel()
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"body":"m","ms":60000}}}`
		req, err := http.NewRequestWithContext(rctx, http.MethodPost, cc.s.ts.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			return err
		}
		resp, err := cc.http.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return nil
	}},
	{"MCPSession", func(ctx context.Context, cc *churnClient) error {
		post := func(body string) (string, error) {
			resp, err := cc.http.Post(cc.s.ts.URL+"/mcp", "application/json", strings.NewReader(body))
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			var b bytes.Buffer
			_, err = b.ReadFrom(resp.Body)
			return b.String(), err
		}
		reply, err := post(`{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`)
		if err != nil {
			return err
		}
		_, rest, ok := strings.Cut(reply, `"session_id":"`)
		id, _, _ := strings.Cut(rest, `"`)
		if !ok || id == "" {
			return fmt.Errorf("session/create: %.300s", reply)
		}
		if _, err := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"note","arguments":{"body":"x"},"session_id":"` + id + `"}}`); err != nil {
			return err
		}
		_, err = post(`{"jsonrpc":"2.0","id":3,"method":"openenv/session/close","params":{"session_id":"` + id + `"}}`)
		return err
	}},
}

// TestChurn opens and drops sessions, most of them with a call in flight
// when the client disconnects, from a bounded number of concurrent clients
// over a real server of a three-store world, with the race detector in
// `make test`. Afterwards goroutines, open files, SQLite connections, live
// sessions and instance directories must all be back to their baseline.
//
// The full run is 2,000 sessions spread over 60 s; it runs when
// SEAHAVEN_SOAK=1 or CI is set. Otherwise (a local `make test`) the run is
// 10 s with the same rate, 334 sessions, to keep the suite fast.
func TestChurn(t *testing.T) {
	duration, sessions := 10*time.Second, 334
	if soak() {
		duration, sessions = 60*time.Second, 2000
	}
	const clients = 16
	// StepTimeout ends a call whose client has vanished without a trace
	// (its socket drop unnoticed); reads and pings notice sooner. Pings go
	// out often, but a live client under the race detector on a loaded
	// machine may take seconds to answer one or to read a reply: the
	// bounds that close its session as dead leave it that time, or a
	// scenario that completes would fail on the machine's load alone.
	s := mustServeWorld(t, churnWorld, app.Config{}, openenv.Config{
		StepTimeout: 5 * time.Second, PingInterval: 500 * time.Millisecond, PongTimeout: 8 * time.Second,
		WriteTimeout: 8 * time.Second,
	})
	transport := &http.Transport{}
	hc := &http.Client{Transport: transport}

	// Warm up once (the pool's sweeper, the HTTP client, the world's seal)
	// so the baseline holds what a quiet server keeps.
	warm := &churnClient{s: s, http: hc, rng: rand.New(rand.NewPCG(0, 0))}
	for _, sc := range churnScenarios {
		if sc.name == "Complete" || sc.name == "MCPSession" {
			if err := sc.run(context.Background(), warm); err != nil {
				t.Fatalf("warm-up %s: %v", sc.name, err)
			}
		}
	}
	base := settleBaseline(t, s, transport)

	var (
		next   atomic.Int64
		counts = make([]atomic.Int64, len(churnScenarios))
		wg     sync.WaitGroup
		start  = time.Now()
		every  = duration / time.Duration(sessions)
	)
	for k := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cc := &churnClient{s: s, http: hc, rng: rand.New(rand.NewPCG(uint64(k), 7))}
			for {
				i := next.Add(1) - 1
				if i >= int64(sessions) {
					return
				}
				if wait := time.Until(start.Add(time.Duration(i) * every)); wait > 0 {
					time.Sleep(wait)
				}
				n := cc.rng.IntN(len(churnScenarios))
				sc := churnScenarios[n]
				ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
				err := sc.run(ctx, cc)
				cancel()
				if err != nil {
					t.Errorf("session %d (%s): %v", i, sc.name, err)
				}
				counts[n].Add(1)
			}
		}()
	}
	wg.Wait()
	var summary []string
	for n, sc := range churnScenarios {
		summary = append(summary, fmt.Sprintf("%s %d", sc.name, counts[n].Load()))
	}
	t.Logf("%d sessions in %s: %s", sessions, time.Since(start).Round(time.Millisecond), strings.Join(summary, ", "))

	after := settleBaseline(t, s, transport)
	const goroutineSlack, fileSlack = 4, 2
	if after.goroutines > base.goroutines+goroutineSlack {
		t.Errorf("%d goroutines after the churn, baseline %d", after.goroutines, base.goroutines)
	}
	if after.files > base.files+fileSlack {
		t.Errorf("%d open files after the churn, baseline %d", after.files, base.files)
	}
	if after.conns != base.conns {
		t.Errorf("%d SQLite connections open after the churn, baseline %d", after.conns, base.conns)
	}
}

// baseline is what a quiet server holds.
type baseline struct {
	goroutines, files, conns int
}

// settleBaseline waits until no session is live and no instance directory
// is left, lets goroutines and files wind down (each has a deadline to
// reach a steady value), and returns what remains.
func settleBaseline(tb testing.TB, s *worldServer, transport *http.Transport) baseline {
	tb.Helper()
	s.settle(tb)
	transport.CloseIdleConnections()
	for deadline := time.Now().Add(waitLimit); s.Callers() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("%d goroutines kept for tool calls did not exit once idle", s.Callers())
		}
	}
	var b baseline
	// A count is steady once it has not changed for a while: goroutines of
	// closed connections and timers take a moment to return.
	steady := func(what string, read func() int) int {
		deadline := time.Now().Add(waitLimit)
		last, since := read(), time.Now()
		for time.Since(since) < 300*time.Millisecond {
			if time.Now().After(deadline) {
				tb.Fatalf("%s did not settle: still changing after %s", what, waitLimit)
			}
			time.Sleep(20 * time.Millisecond)
			runtime.GC()
			if n := read(); n != last {
				last, since = n, time.Now()
			}
		}
		return last
	}
	b.goroutines = steady("goroutines", runtime.NumGoroutine)
	b.files = steady("open files", func() int { return openFiles(tb) })
	b.conns = steady("SQLite connections", composition.DefaultPool.Open)
	return b
}
