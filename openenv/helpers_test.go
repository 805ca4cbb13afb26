package openenv_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/schemas/schematest"
)

// waitLimit bounds every wait in these tests; reaching it is a failure
// (a hang), never an expected outcome.
const waitLimit = 20 * time.Second

// testServer is a Server on a real HTTP listener.
type testServer struct {
	*openenv.Server
	ts   *httptest.Server
	fake *fakeBackend
}

// mustServe starts a Server for fake. At cleanup it shuts the server down
// and checks that every instance was closed.
func mustServe(tb testing.TB, fake *fakeBackend, cfg openenv.Config) *testServer {
	tb.Helper()
	return mustServeOver(tb, fake, fake, cfg)
}

// mustServeOver is mustServe for a Backend b wrapping fake.
func mustServeOver(tb testing.TB, b openenv.Backend, fake *fakeBackend, cfg openenv.Config) *testServer {
	tb.Helper()
	return mustServeHTTP(tb, b, fake, cfg, nil)
}

// mustServeHTTP is mustServeOver with setup, when not nil, applied to the
// HTTP server before it starts.
func mustServeHTTP(tb testing.TB, b openenv.Backend, fake *fakeBackend, cfg openenv.Config, setup func(*http.Server)) *testServer {
	tb.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	srv := openenv.NewServer(b, cfg)
	ts := httptest.NewUnstartedServer(srv.Handler())
	if setup != nil {
		setup(ts.Config)
	}
	ts.Start()
	tb.Cleanup(ts.Close)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			tb.Errorf("Shutdown: %v", err)
		}
		if n := fake.open.Load(); n != 0 {
			tb.Errorf("after Shutdown, %d instances are still open", n)
		}
	})
	return &testServer{Server: srv, ts: ts, fake: fake}
}

// wsURL is the server's /ws address.
func (s *testServer) wsURL() string { return "ws" + strings.TrimPrefix(s.ts.URL, "http") + "/ws" }

// dial opens a WebSocket to /ws, closed at cleanup.
func (s *testServer) dial(tb testing.TB) *websocket.Conn {
	tb.Helper()
	return s.dialWith(tb, nil)
}

// dialWith opens a WebSocket to /ws with opts, closed at cleanup.
func (s *testServer) dialWith(tb testing.TB, opts *websocket.DialOptions) *websocket.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c, _, err := websocket.Dial(ctx, s.wsURL(), opts)
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	c.SetReadLimit(64 << 20)
	tb.Cleanup(func() { c.CloseNow() })
	return c
}

// send writes one text frame.
func send(tb testing.TB, c *websocket.Conn, msg string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		tb.Fatalf("send %s: %v", msg, err)
	}
}

// recv reads one frame and checks it against the server_message schema.
func recv(tb testing.TB, c *websocket.Conn) string {
	tb.Helper()
	b := recvRaw(tb, c)
	if err := schematest.Validate("server_message", []byte(b)); err != nil {
		tb.Errorf("reply %s: %v", b, err)
	}
	return b
}

// recvRaw reads one text frame.
func recvRaw(tb testing.TB, c *websocket.Conn) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	typ, b, err := c.Read(ctx)
	if err != nil {
		tb.Fatalf("recv: %v", err)
	}
	if typ != websocket.MessageText {
		tb.Fatalf("recv: got a %v frame, want text", typ)
	}
	return string(b)
}

// roundTrip sends msg and returns the reply.
func roundTrip(tb testing.TB, c *websocket.Conn, msg string) string {
	tb.Helper()
	send(tb, c, msg)
	return recv(tb, c)
}

// expectClose reads until the server closes and checks the close code and
// that the reason contains reason.
func expectClose(tb testing.TB, c *websocket.Conn, code websocket.StatusCode, reason string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err == nil {
		tb.Fatalf("read a frame %s, want a close %d", b, code)
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) {
		tb.Fatalf("read error %v, want a close %d", err, code)
	}
	if ce.Code != code || !strings.Contains(ce.Reason, reason) {
		tb.Fatalf("close %d %q, want %d containing %q", ce.Code, ce.Reason, code, reason)
	}
}

// canon re-encodes JSON with sorted keys, for comparison.
func canon(tb testing.TB, s string) string {
	tb.Helper()
	var v any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		tb.Fatalf("not JSON: %v\n%s", err, s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// jsonEq fails unless got and want are the same JSON value.
func jsonEq(tb testing.TB, got, want string) {
	tb.Helper()
	if g, w := canon(tb, got), canon(tb, want); g != w {
		tb.Errorf("got  %s\nwant %s", g, w)
	}
}

// field decodes s and returns the value at the dotted path ("data.code").
func field(tb testing.TB, s, path string) any {
	tb.Helper()
	var v any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		tb.Fatalf("not JSON: %v\n%s", err, s)
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			tb.Fatalf("%s: no key %q in %s", path, k, s)
		}
		if v, ok = m[k]; !ok {
			tb.Fatalf("%s: no key %q in %s", path, k, s)
		}
	}
	return v
}

// str returns the string at path.
func str(tb testing.TB, s, path string) string {
	tb.Helper()
	v, ok := field(tb, s, path).(string)
	if !ok {
		tb.Fatalf("%s is not a string in %s", path, s)
	}
	return v
}

// waitFor polls cond until it holds; it fails the test after waitLimit.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// httpDo makes one request and returns the status, body and response.
func (s *testServer) httpDo(tb testing.TB, method, path, body string, header map[string]string) (int, string, *http.Response) {
	tb.Helper()
	return do(tb, s.ts, method, path, body, header)
}

// do makes one request to ts and returns the status, body and response.
// A "Host" entry of header sets the request's host.
func do(tb testing.TB, ts *httptest.Server, method, path, body string, header map[string]string) (int, string, *http.Response) {
	tb.Helper()
	h := http.Header{}
	for k, v := range header {
		h.Set(k, v)
	}
	return doHeader(tb, ts, method, path, body, h)
}

// httpReply is the status and body of a request sent in the background.
type httpReply struct {
	status int
	body   string
}

// httpDoLater sends a request as httpDo does, in the background; its
// reply comes on the channel it returns.
func (s *testServer) httpDoLater(tb testing.TB, method, path, body string, header map[string]string) <-chan httpReply {
	replied := make(chan httpReply, 1)
	go func() {
		status, b, _ := s.httpDo(tb, method, path, body, header)
		replied <- httpReply{status, b}
	}()
	return replied
}

// httpDoHeader is httpDo with header's values as they are, a header sent
// more than once included.
func (s *testServer) httpDoHeader(tb testing.TB, method, path, body string, header http.Header) (int, string, *http.Response) {
	tb.Helper()
	return doHeader(tb, s.ts, method, path, body, header)
}

// doHeader is do with header's values as they are. A body is sent as JSON
// unless header names another Content-Type.
func doHeader(tb testing.TB, ts *httptest.Server, method, path, body string, header http.Header) (int, string, *http.Response) {
	tb.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.URL+path, r)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	if host := req.Header.Get("Host"); host != "" {
		req.Host = host
		req.Header.Del("Host")
	}
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, string(b), resp
}

// rpc posts a JSON-RPC body to /mcp and returns the reply, which must be 200.
func (s *testServer) rpc(tb testing.TB, body string) string {
	tb.Helper()
	status, b, _ := s.httpDo(tb, http.MethodPost, "/mcp", body, nil)
	if status != http.StatusOK {
		tb.Fatalf("POST /mcp %s: status %d, body %s", body, status, b)
	}
	return b
}

// compact removes insignificant whitespace from JSON.
func compact(tb testing.TB, s string) string {
	tb.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		tb.Fatalf("compact: %v\n%s", err, s)
	}
	return b.String()
}

// modernMeta is the params._meta member every MCP 2026-07-28 request
// carries.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
