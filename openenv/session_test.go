package openenv_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/openenv"
)

func TestServer_IdleReaper(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{IdleTimeout: 30 * time.Millisecond})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	id := str(t, s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`), "result.session_id")
	if code, body, _ := s.httpDo(t, "POST", "/reset", "", nil); code != http.StatusOK {
		t.Fatalf("POST /reset: %d %s", code, body)
	}

	expectClose(t, c, websocket.StatusGoingAway, "session idle for more than 30ms")
	waitFor(t, "every idle session to go", func() bool { return len(s.Sessions()) == 0 })
	waitFor(t, "every instance to close", func() bool { return fake.open.Load() == 0 })
	jsonEq(t, s.rpc(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":1},"session_id":"`+id+`"}}`),
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Unknown session_id: `+id+`","data":null}}`)
	// The default HTTP session comes back on next use, fresh.
	_, body, _ := s.httpDo(t, "GET", "/state", "", nil)
	if ep := field(t, body, "episode_id"); ep != nil {
		t.Errorf("a new default session has episode %v", ep)
	}
}

func TestServer_IdleReaperSparesBusySessions(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{IdleTimeout: 10 * time.Millisecond, StepTimeout: 300 * time.Millisecond})
	c := s.dial(t)
	// The step outlasts the idle timeout many times over; the reaper must
	// wait for it, so its reply comes.
	reply := roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"slow"}}`)
	if et := str(t, reply, "data.observation.error.error_type"); et != "timeout" {
		t.Errorf("reply %s, want the step's timeout", reply)
	}
}

// TestServer_IdleReaperEndsAnUnendedMessage has a client send a message
// a little at a time and never end it, nor answer a ping: the bytes keep
// the keepalive from closing the session (a pong waits behind a message),
// and the idle reaper closes it once it has been idle for IdleTimeout.
func TestServer_IdleReaperEndsAnUnendedMessage(t *testing.T) {
	var idle, dead atomic.Int64
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{
		IdleTimeout: 300 * time.Millisecond, PingInterval: 20 * time.Millisecond, PongTimeout: 100 * time.Millisecond,
		Logger: slog.New(multiCount{"closing an idle session": &idle, "did not answer a ping": &dead}),
	})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	w, err := c.Writer(context.Background(), websocket.MessageText)
	if err != nil {
		t.Fatal(err)
	}
	trickled := make(chan struct{})
	go func() {
		defer close(trickled)
		chunk := []byte(strings.Repeat(" ", 8<<10)) // past the client's write buffer, so each is sent
		for range 1000 {                            // 10 s and 8 MiB at most
			if _, err := w.Write(chunk); err != nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	waitFor(t, "the session to go", func() bool { return len(s.Sessions()) == 0 })
	c.CloseNow()
	<-trickled
	if idle.Load() != 1 || dead.Load() != 0 {
		t.Errorf("%d idle closes and %d closes for a missed pong, want the idle reaper's one", idle.Load(), dead.Load())
	}
}

// multiCount counts the log records whose message contains each key.
type multiCount map[string]*atomic.Int64

func (h multiCount) Enabled(context.Context, slog.Level) bool { return true }
func (h multiCount) Handle(_ context.Context, r slog.Record) error {
	for substr, n := range h {
		if strings.Contains(r.Message, substr) {
			n.Add(1)
		}
	}
	return nil
}
func (h multiCount) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h multiCount) WithGroup(string) slog.Handler      { return h }

func TestServer_StateIsNotActivity(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{IdleTimeout: 30 * time.Millisecond})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	// Keep asking for state: the session is still reaped.
	for {
		send(t, c, `{"type":"state"}`)
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		_, _, err := c.Read(ctx)
		cancel()
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusGoingAway {
				t.Fatalf("read: %v, want a going-away close", err)
			}
			break
		}
	}
	waitFor(t, "the instance to close", func() bool { return fake.open.Load() == 0 })
}

func TestServer_Shutdown(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{StepTimeout: time.Hour})
	idle, busy := s.dial(t), s.dial(t)
	roundTrip(t, idle, `{"type":"reset"}`)
	roundTrip(t, busy, `{"type":"reset"}`)
	send(t, busy, `{"type":"step","data":{"type":"call_tool","tool_name":"slow"}}`)
	<-fake.slowStarted
	s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`)
	s.httpDo(t, "POST", "/reset", `{"seed":1}`, map[string]string{openenv.SessionHeader: "grader"})
	if n := len(s.Sessions()); n != 4 {
		t.Fatalf("%d sessions, want 4", n)
	}

	// The clients must read to see the close frames.
	closed := make(chan error, 2)
	for _, c := range []*websocket.Conn{idle, busy} {
		go func() {
			for {
				if _, _, err := c.Read(context.Background()); err != nil {
					closed <- err
					return
				}
			}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := fake.open.Load(); n != 0 {
		t.Errorf("%d instances open after Shutdown", n)
	}
	if n := len(s.Sessions()); n != 0 {
		t.Errorf("%d sessions after Shutdown", n)
	}
	for range 2 {
		err := <-closed
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusGoingAway || ce.Reason != "server shutting down" {
			t.Errorf("client read %v, want a going-away close for the shutdown", err)
		}
	}

	t.Run("RefusesNewSessions", func(t *testing.T) {
		c := s.dial(t)
		jsonEq(t, recv(t, c), `{"type":"error","data":{"message":"Server is shutting down. Cannot accept new sessions.","code":"SESSION_ERROR"}}`)
		expectClose(t, c, websocket.StatusGoingAway, "shutting down")
		reply := s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`)
		if code := fmt.Sprint(field(t, reply, "error.code")); code != "-32000" {
			t.Errorf("session/create after Shutdown: %s", reply)
		}
		if code, body, _ := s.httpDo(t, "POST", "/reset", "", nil); code != http.StatusServiceUnavailable {
			t.Errorf("POST /reset after Shutdown: %d %s", code, body)
		}
	})
	t.Run("Again", func(t *testing.T) {
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("second Shutdown: %v", err)
		}
	})
}

// TestServer_ShutdownSessionlessCall: a tools/call on POST /mcp without a
// session runs on an instance of its own; Shutdown cancels it and waits
// for that instance to close, as it does for every session's.
func TestServer_ShutdownSessionlessCall(t *testing.T) {
	fake := newFake(t)
	// The call's own timeout ends it, should Shutdown not.
	s := mustServe(t, fake, openenv.Config{StepTimeout: 5 * time.Second})
	reply := make(chan string, 1)
	go func() {
		_, body, _ := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`, nil)
		reply <- body
	}()
	<-fake.slowStarted
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := fake.open.Load(); n != 0 {
		t.Errorf("%d instances open after Shutdown, want the sessionless call's closed", n)
	}
	if body := <-reply; !strings.Contains(body, `Server is shutting down: the call of \"slow\" was cancelled`) {
		t.Errorf("the sessionless call cut short by Shutdown: %s", body)
	}
}

func TestServer_ShutdownDeadline(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// An already-ended context: Shutdown reports it but still ends the
	// sessions in the background (mustServe's cleanup checks they all close).
	if err := s.Shutdown(ctx); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("Shutdown with an ended context: %v", err)
	}
}

// TestServer_ShutdownCutsAStuckStep: a /ws step whose tool ignores its
// cancellation and outlives Shutdown's context ends its connection with a
// close frame that says so, 1001 and the shutdown timeout, where the
// connection stayed open until the tool returned: the process, exiting
// meanwhile, ended it with no close frame, as a network fault does.
func TestServer_ShutdownCutsAStuckStep(t *testing.T) {
	s := mustServeWorld(t, faultyWorld, app.Config{}, openenv.Config{StepTimeout: time.Hour})
	started, release := holdUntilReleased("outlives the shutdown")
	t.Cleanup(release) // before the server's cleanup, which waits for the step
	c := s.dial(t)
	send(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"stuck","arguments":{"body":"outlives the shutdown"}}}`)
	awaitSlow(t, started)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Shutdown's time is up, and the step runs on
	if err := s.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown: %v, want its context's error", err)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), waitLimit)
	defer rcancel()
	_, _, err := c.Read(rctx)
	const reason = "server shutting down: the call in progress outlived the shutdown timeout"
	if ce := (websocket.CloseError{}); !errors.As(err, &ce) || ce.Code != websocket.StatusGoingAway || ce.Reason != reason {
		t.Errorf("the client of the step: %v, want a close with 1001 and %q", err, reason)
	}
}

func TestServer_ConcurrentSessions(t *testing.T) {
	const n = 200
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	conns := make([]*websocket.Conn, n)
	for i := range conns {
		conns[i] = s.dial(t)
	}
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- session(c, i)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := fake.opened.Load(); got != n {
		t.Errorf("%d instances opened, want %d", got, n)
	}
}

// session runs one client's episode and checks that nothing of another
// client's leaks into it.
func session(c *websocket.Conn, i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	rt := func(msg string) (string, error) {
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			return "", err
		}
		_, b, err := c.Read(ctx)
		return string(b), err
	}
	ep := fmt.Sprintf("ep-%d", i)
	if _, err := rt(`{"type":"reset","data":{"seed":` + fmt.Sprint(i) + `,"episode_id":"` + ep + `"}}`); err != nil {
		return err
	}
	for j := range 3 {
		msg := fmt.Sprintf("%d/%d", i, j)
		reply, err := rt(`{"type":"step","data":{"type":"call_tool","tool_name":"echo","arguments":{"message":"` + msg + `"}}}`)
		if err != nil {
			return err
		}
		if !strings.Contains(reply, `"data":{"message":"`+msg+`"}`) {
			return fmt.Errorf("client %d: reply %s, want message %s", i, reply, msg)
		}
	}
	state, err := rt(`{"type":"state"}`)
	if err != nil {
		return err
	}
	for _, want := range []string{`"episode_id":"` + ep + `"`, `"step_count":3`, `"seed":` + fmt.Sprint(i) + `,`} {
		if !strings.Contains(state, want) {
			return fmt.Errorf("client %d: state %s lacks %s", i, state, want)
		}
	}
	rows, err := rt(`{"type":"inspect","data":{"sql":"SELECT message FROM echoes"}}`)
	if err != nil {
		return err
	}
	if want := fmt.Sprintf(`"rows":[["%d/0"],["%d/1"],["%d/2"]]`, i, i, i); !strings.Contains(rows, want) {
		return fmt.Errorf("client %d: inspect %s, want %s", i, rows, want)
	}
	return c.Write(ctx, websocket.MessageText, []byte(`{"type":"close"}`))
}

func TestServer_Sessions(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"episode_id":"watched"}}`)
	roundTrip(t, c, `{"type":"step","data":{"tool_name":"add","arguments":{"a":1,"b":1}}}`)
	roundTrip(t, c, `{"type":"step","data":{"type":"list_tools"}}`)
	mcpID := str(t, s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`), "result.session_id")

	list := s.Sessions()
	if len(list) != 2 {
		t.Fatalf("%d sessions, want 2", len(list))
	}
	ws, mcp := list[0], list[1]
	if ws.Transport != openenv.TransportWS || ws.EpisodeID != "watched" || ws.StepCount != 1 || ws.ID == "" {
		t.Errorf("ws session %+v", ws)
	}
	if mcp.Transport != openenv.TransportMCP || mcp.ID != mcpID || mcp.StepCount != 0 {
		t.Errorf("mcp session %+v", mcp)
	}
	if ws.LastActivity.Before(ws.Created) {
		t.Errorf("last activity %v before creation %v", ws.LastActivity, ws.Created)
	}

	code, body, _ := s.httpDo(t, "GET", "/sessions", "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /sessions: %d", code)
	}
	for _, si := range list {
		if strings.Contains(body, si.ID) {
			t.Errorf("GET /sessions leaks session id %s: %s", si.ID, body)
		}
		if !strings.Contains(body, `"ref":"`+si.Ref+`"`) {
			t.Errorf("GET /sessions lacks ref %s: %s", si.Ref, body)
		}
	}
	if !strings.Contains(body, `"transport":"ws"`) || !strings.Contains(body, `"episode_id":"watched"`) || !strings.Contains(body, `"step_count":1`) {
		t.Errorf("GET /sessions: %s", body)
	}
}

// TestServer_ClosedDuringRequest closes a session while a request on it
// runs: the request is answered as every later one is, 404 with the
// session's error saying it was closed, not with the failure of the work
// the close interrupted (a query's "context canceled", which may name the
// instance's files).
func TestServer_ClosedDuringRequest(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	h := map[string]string{openenv.SessionHeader: "closing"}
	if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{}`, h); status != http.StatusOK {
		t.Fatalf("reset: %d %s", status, body)
	}
	replied := s.httpDoLater(t, http.MethodPost, "/inspect", `{"sql":"SELECT sleep"}`, h)
	for deadline := time.Now().Add(waitLimit); fake.inspectLimit.Load() == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the inspect query never started")
		}
	}
	if _, body, _ := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/close","params":{"session_id":"closing"}}`, nil); !strings.Contains(body, `"closed":true`) {
		t.Fatalf("close: %s", body)
	}
	got := <-replied
	if got.status != http.StatusNotFound || strings.Contains(got.body, "canceled") ||
		!strings.Contains(got.body, "closed while the request ran (closed by openenv/session/close)") {
		t.Errorf("inspect on a session closed meanwhile: %d %s, want 404 saying the session was closed", got.status, got.body)
	}
}
