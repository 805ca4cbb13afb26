package openenv_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/openenv"
)

// limitServer is a Server served through a ConnLimit on a loopback port.
type limitServer struct {
	srv   *openenv.Server
	limit *openenv.ConnLimit
	addr  string
}

// mustServeLimited serves fake's Server through limit.
func mustServeLimited(tb testing.TB, fake *fakeBackend, cfg openenv.Config, limit *openenv.ConnLimit) *limitServer {
	tb.Helper()
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv := openenv.NewServer(fake, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	hs := limit.Server(srv.Handler())
	go hs.Serve(limit.Listener(ln))
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		srv.Shutdown(ctx)
		hs.Close()
	})
	return &limitServer{srv: srv, limit: limit, addr: ln.Addr().String()}
}

// rawConn opens a TCP connection to the server, closed at cleanup.
func (s *limitServer) rawConn(tb testing.TB) net.Conn {
	tb.Helper()
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// get sends GET path on c and reads the response.
func get(tb testing.TB, c net.Conn, r *bufio.Reader, path string) (int, string) {
	tb.Helper()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		tb.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(waitLimit))
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		tb.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// closedByServer waits until the server closes c.
func closedByServer(tb testing.TB, c net.Conn, r *bufio.Reader) {
	tb.Helper()
	c.SetReadDeadline(time.Now().Add(waitLimit))
	if _, err := io.Copy(io.Discard, r); err != nil {
		tb.Fatalf("the server did not close the connection: %v", err)
	}
}

// TestConnLimit_Max fills the connection cap with connections that send
// nothing: the next one is answered 503, an idle keep-alive connection
// gives way to a new one, and a WebSocket session, which does not count,
// goes on answering throughout.
func TestConnLimit_Max(t *testing.T) {
	const max = 3
	s := mustServeLimited(t, newFake(t), openenv.Config{}, &openenv.ConnLimit{Max: max, ReadHeaderTimeout: time.Hour})
	ctx := context.Background()
	ws, _, err := websocket.Dial(ctx, "ws://"+s.addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	roundTrip(t, ws, `{"type":"reset"}`)
	waitFor(t, "the upgraded connection to leave the count", func() bool { return s.limit.Open() == 0 })

	var silent []net.Conn
	for range max {
		silent = append(silent, s.rawConn(t))
	}
	waitFor(t, "the silent connections to be counted", func() bool { return s.limit.Open() == max })
	extra := s.rawConn(t)
	extraR := bufio.NewReader(extra)
	code, body := get(t, extra, extraR, "/metadata")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "Too many connections") || !strings.Contains(body, `"code":"CAPACITY_REACHED"`) || s.limit.Refused() != 1 {
		t.Fatalf("a connection past the cap got %d %s (refused %d), want 503 naming the limit", code, body, s.limit.Refused())
	}
	closedByServer(t, extra, extraR)
	// The probes are answered past the cap, so clients holding every place
	// do not fail a busy replica's liveness; each probe's connection closes.
	for _, path := range []string{"/health", "/ready", "/accepting"} {
		probe := s.rawConn(t)
		probeR := bufio.NewReader(probe)
		if code, body := get(t, probe, probeR, path); code != http.StatusOK {
			t.Fatalf("GET %s past the cap: %d %s", path, code, body)
		}
		closedByServer(t, probe, probeR)
	}
	// The few places kept for probes are bounded too: silent connections
	// past the cap fill them, then a connection is answered 503 at once.
	// (A probe's place is given back once the server has seen its
	// connection close, which may come after the client saw it.)
	waitFor(t, "the probes to give their places back", func() bool { return s.limit.Probes() == 0 })
	s.limit.SetProbeQuiet(time.Hour)
	var quiet []net.Conn
	for range 8 {
		quiet = append(quiet, s.rawConn(t))
	}
	waitFor(t, "the silent connections to take the probes' places", func() bool { return s.limit.Probes() == 8 })
	late := s.rawConn(t)
	if code, body := get(t, late, bufio.NewReader(late), "/health"); code != http.StatusServiceUnavailable || s.limit.Refused() != 2 {
		t.Fatalf("a probe past the cap and the probes' places: %d %s (refused %d), want 503", code, body, s.limit.Refused())
	}
	// But connections that do not send a whole request cannot hold them:
	// once they have been quiet long enough, a probe takes the place of
	// the oldest, which the server closes.
	s.limit.SetProbeQuiet(time.Millisecond)
	time.Sleep(2 * time.Millisecond)
	late = s.rawConn(t)
	if code, body := get(t, late, bufio.NewReader(late), "/health"); code != http.StatusOK || s.limit.Refused() != 2 {
		t.Fatalf("a probe past the cap with silent connections in the probes' places: %d %s (refused %d), want 200", code, body, s.limit.Refused())
	}
	closedByServer(t, quiet[0], bufio.NewReader(quiet[0]))
	mustSucceed(t, roundTrip(t, ws, `{"type":"step","data":{"tool_name":"echo","arguments":{"message":"still here"}}}`))
	// A silent connection in a probe's place is cut within seconds, not
	// after ReadHeaderTimeout (an hour here).
	waitFor(t, "the probes' places to empty", func() bool { return s.limit.Probes() == 0 })
	s.limit.SetProbeQuiet(0)

	// A freed place goes to the next connection, which stays open idle.
	silent[0].Close()
	waitFor(t, "the closed connection to leave the count", func() bool { return s.limit.Open() == max-1 })
	keep := s.rawConn(t)
	keepR := bufio.NewReader(keep)
	if code, body := get(t, keep, keepR, "/health"); code != http.StatusOK {
		t.Fatalf("GET /health with a free place: %d %s", code, body)
	}
	// At the cap again, a new connection takes the idle one's place. The
	// client can read the response before the server marks the connection
	// idle, so the test waits for that first.
	waitFor(t, "the kept connection to be idle", func() bool { return s.limit.IdleConns() == 1 })
	s.rawConn(t)
	closedByServer(t, keep, keepR)
	waitFor(t, "the new connection to be counted", func() bool { return s.limit.Open() == max })
	if n := s.limit.Refused(); n < 2 {
		t.Errorf("refused %d connections, want at least the two past the cap", n)
	}
	mustSucceed(t, roundTrip(t, ws, `{"type":"step","data":{"tool_name":"echo","arguments":{"message":"still here"}}}`))
}

// TestConnLimit_EvictsLongestIdle: at the cap, the keep-alive connection
// idle the longest gives way, the one least likely to be sending its next
// request as it is closed; the other stays open and answers.
func TestConnLimit_EvictsLongestIdle(t *testing.T) {
	const max = 8
	s := mustServeLimited(t, newFake(t), openenv.Config{}, &openenv.ConnLimit{Max: max, ReadHeaderTimeout: time.Hour})
	conns := make([]net.Conn, max)
	readers := make([]*bufio.Reader, max)
	for i := range conns {
		conns[i] = s.rawConn(t)
		readers[i] = bufio.NewReader(conns[i])
		if code, body := get(t, conns[i], readers[i], "/health"); code != http.StatusOK {
			t.Fatalf("GET /health: %d %s", code, body)
		}
		waitFor(t, "the connection to be idle", func() bool { return s.limit.IdleConns() == i+1 })
		time.Sleep(time.Millisecond) // the next goes idle strictly later
	}
	s.rawConn(t)
	closedByServer(t, conns[0], readers[0])
	for i := 1; i < max; i++ {
		if code, body := get(t, conns[i], readers[i], "/health"); code != http.StatusOK {
			t.Errorf("connection %d, idle a shorter time: %d %s, want it kept", i, code, body)
		}
	}
}

// mustServeSmallLimit serves the fake with a message limit of 256 bytes,
// and a read timeout the test would not outwait, and starts a standard MCP
// session on it, whose id it returns.
func mustServeSmallLimit(t *testing.T) (*limitServer, string) {
	t.Helper()
	limit := &openenv.ConnLimit{Max: -1, ReadTimeout: 10 * waitLimit}
	s := mustServeLimited(t, newFake(t), openenv.Config{MaxMessageBytes: 256}, limit)
	resp, err := http.Post("http://"+s.addr+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sid := resp.Header.Get(openenv.MCPSessionHeader)
	if sid == "" {
		t.Fatal("initialize started no session")
	}
	return s, sid
}

// refusedRaw writes, on a connection of its own, a POST of path with JSON
// content, the session header when session is not "", and then rest (the
// last headers, the blank line and what is sent of the body), and checks
// the reply is status with the body want and the server closes the
// connection.
func (s *limitServer) refusedRaw(t *testing.T, path, session, rest string, status int, want string) {
	t.Helper()
	c := s.rawConn(t)
	hdr := ""
	if session != "" {
		hdr = openenv.MCPSessionHeader + ": " + session + "\r\n"
	}
	io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+hdr+rest)
	c.SetReadDeadline(time.Now().Add(waitLimit))
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("no reply before the client's deadline: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status || strings.TrimSpace(string(b)) != want {
		t.Fatalf("got  %d %s\nwant %d %s", resp.StatusCode, b, status, want)
	}
	closedByServer(t, c, r)
}

// TestConnLimit_AnnouncedTooLarge sends bodies whose Content-Length is
// over MaxMessageBytes, and then only a few bytes: each is refused with 413
// at once, not with 408 at the read timeout, and its connection closed. A
// standard MCP client's reply names the request's id when the bytes sent
// name it; OpenEnv's dialect answers 200.
func TestConnLimit_AnnouncedTooLarge(t *testing.T) {
	s, sid := mustServeSmallLimit(t)
	for _, tt := range []struct {
		name, path, header, body string
		status                   int
		want                     string
	}{
		{"Reset", "/reset", "", `{}`, http.StatusRequestEntityTooLarge,
			`{"detail":"Request body exceeds the limit of 256 bytes","code":"SESSION_ERROR"}`},
		{"Step", "/step", "", `{"action":`, http.StatusRequestEntityTooLarge,
			`{"detail":"Request body exceeds the limit of 256 bytes","code":"SESSION_ERROR"}`},
		{"MCPOpenEnv", "/mcp", "", `{"jsonrpc":"2.0","id":7,`, http.StatusOK,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: Request body exceeds the limit of 256 bytes","data":null}}`},
		{"MCPStandardID", "/mcp", sid, `{"jsonrpc":"2.0","id":7,"method":"tools/list"`, http.StatusRequestEntityTooLarge,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid request: Request body exceeds the limit of 256 bytes"}}`},
		{"MCPStandardStringID", "/mcp", sid, `{"jsonrpc":"2.0","id":"r-8"`, http.StatusRequestEntityTooLarge,
			`{"jsonrpc":"2.0","id":"r-8","error":{"code":-32600,"message":"Invalid request: Request body exceeds the limit of 256 bytes"}}`},
		{"MCPStandardNoID", "/mcp", sid, `{}`, http.StatusRequestEntityTooLarge,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: Request body exceeds the limit of 256 bytes"}}`},
		{"MCPStandardIDAfterCut", "/mcp", sid, `{"method":"tools/list","params":{"cursor":"` + strings.Repeat("x", 300) + `"},"id":9}`, http.StatusRequestEntityTooLarge,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: Request body exceeds the limit of 256 bytes"}}`},
		{"MCPStandardNotSent", "/mcp", sid, `{"jsonrpc":"2.0",`, http.StatusRequestEntityTooLarge,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: Request body exceeds the limit of 256 bytes"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s.refusedRaw(t, tt.path, tt.header, "Content-Length: 99999999999\r\n\r\n"+tt.body, tt.status, tt.want)
		})
	}
}

// TestConnLimit_ExpectContinueTooLarge sends, on every route with a body,
// the headers of a request whose Content-Length is over MaxMessageBytes
// and that expects 100-continue, and no body: each is refused with the
// route's 413 (OpenEnv's MCP dialect: 200) and its connection closed,
// without the server asking for the body. /mcp on a standard session read
// the body's start for the request's id, so net/http sent 100 Continue and
// the client wrote its body into a connection the server was about to
// close, where it could lose the 413 to a reset.
func TestConnLimit_ExpectContinueTooLarge(t *testing.T) {
	s, sid := mustServeSmallLimit(t)
	const detail = `{"detail":"Request body exceeds the limit of 256 bytes","code":"SESSION_ERROR"}`
	for _, tt := range []struct {
		name, path, header string
		status             int
		want               string
	}{
		{"Reset", "/reset", "", http.StatusRequestEntityTooLarge, detail},
		{"Step", "/step", "", http.StatusRequestEntityTooLarge, detail},
		{"Inspect", "/inspect", "", http.StatusRequestEntityTooLarge, detail},
		{"Grade", "/grade", "", http.StatusRequestEntityTooLarge, detail},
		{"Checkpoint", "/checkpoint", "", http.StatusRequestEntityTooLarge, detail},
		{"MCPOpenEnv", "/mcp", "", http.StatusOK,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: Request body exceeds the limit of 256 bytes","data":null}}`},
		{"MCPStandard", "/mcp", sid, http.StatusRequestEntityTooLarge,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: Request body exceeds the limit of 256 bytes"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s.refusedRaw(t, tt.path, tt.header, "Expect: 100-continue\r\nContent-Length: 17825883\r\n\r\n", tt.status, tt.want)
		})
	}
}

// TestConnLimit_AnnouncedTooLargeSent sends a body whose Content-Length
// is over MaxMessageBytes without waiting to be asked, more of it than the
// server reads with the headers: it is refused with 413 unread, and the
// connection is ended with a FIN, after which a client still writing its
// body has time to read the reply, not with the reset of a socket closed
// on unread bytes, which a client writing its body gets as a failed write
// and loses the 413 to. The server's routes read a copy of the request
// with its body limited, so net/http, which closes a connection gently
// only when it sees its own request's body left unread, saw none and
// closed it at once.
func TestConnLimit_AnnouncedTooLargeSent(t *testing.T) {
	limit := &openenv.ConnLimit{Max: -1, ReadTimeout: 10 * waitLimit}
	s := mustServeLimited(t, newFake(t), openenv.Config{MaxMessageBytes: 256}, limit)
	sent := strings.Repeat(" ", 64<<10) // past the server's buffered reader
	for _, path := range []string{"/step", "/mcp"} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			c := s.rawConn(t)
			io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 17825883\r\n\r\n"+sent)
			c.SetReadDeadline(time.Now().Add(waitLimit))
			r := bufio.NewReader(c)
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				t.Fatalf("no reply before the client's deadline: %v", err)
			}
			io.ReadAll(resp.Body)
			if want := map[string]int{"/step": http.StatusRequestEntityTooLarge, "/mcp": http.StatusOK}[path]; resp.StatusCode != want {
				t.Fatalf("status %d, want %d", resp.StatusCode, want)
			}
			if _, err := io.Copy(io.Discard, r); err != nil {
				t.Fatalf("after the reply: %v, want the connection ended with a FIN", err)
			}
		})
	}
}

// TestConnLimit_Timeouts checks that a body sent too slowly and an idle
// keep-alive connection are closed, and that a step running longer than
// ReadTimeout is not cut short by it.
func TestConnLimit_Timeouts(t *testing.T) {
	limit := &openenv.ConnLimit{Max: -1, ReadTimeout: 50 * time.Millisecond, KeepAliveTimeout: 50 * time.Millisecond}
	s := mustServeLimited(t, newFake(t), openenv.Config{StepTimeout: 300 * time.Millisecond}, limit)
	t.Run("SlowBody", func(t *testing.T) {
		c := s.rawConn(t)
		io.WriteString(c, "POST /reset HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"seed\":")
		r := bufio.NewReader(c)
		// The client's fault, said as such: 408, not a server error.
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The message names no socket address.
		b, _ := io.ReadAll(resp.Body)
		if want := `{"detail":"Reading the request body failed: it was not sent within the server's read timeout","code":"SESSION_ERROR"}`; resp.StatusCode != http.StatusRequestTimeout || strings.TrimSpace(string(b)) != want {
			t.Errorf("a body sent too slowly: %d %s, want 408 %s", resp.StatusCode, b, want)
		}
		closedByServer(t, c, r)
	})
	t.Run("SlowHeaders", func(t *testing.T) {
		// ReadTimeout bounds the headers too, when it is shorter than
		// ReadHeaderTimeout (here its default, 10s).
		c := s.rawConn(t)
		start := time.Now()
		io.WriteString(c, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
		closedByServer(t, c, bufio.NewReader(c))
		if took := time.Since(start); took >= openenv.DefaultReadHeaderTimeout/2 {
			t.Errorf("headers sent too slowly were cut off after %v, want about ReadTimeout (%v)", took, limit.ReadTimeout)
		}
	})
	// A body the server cannot read whole is a 400 naming why.
	for _, tc := range []struct{ name, request, want string }{
		{"ShortBody", "Content-Length: 100\r\n\r\n{\"seed\":", "the client sent less than it announced"},
		{"BadChunks", "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", "its chunked encoding does not parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := s.rawConn(t)
			io.WriteString(c, "POST /reset HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+tc.request)
			c.(*net.TCPConn).CloseWrite()
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			if want := `{"detail":"Reading the request body failed: ` + tc.want + `","code":"SESSION_ERROR"}`; resp.StatusCode != http.StatusBadRequest || strings.TrimSpace(string(b)) != want {
				t.Errorf("%d %s, want 400 %s", resp.StatusCode, b, want)
			}
		})
	}
	t.Run("IdleKeepAlive", func(t *testing.T) {
		c := s.rawConn(t)
		r := bufio.NewReader(c)
		if code, _ := get(t, c, r, "/health"); code != http.StatusOK {
			t.Fatalf("GET /health: %d", code)
		}
		closedByServer(t, c, r)
	})
	t.Run("LongStep", func(t *testing.T) {
		client := &http.Client{Timeout: waitLimit}
		post := func(path, body string) string {
			resp, err := client.Post("http://"+s.addr+path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatalf("POST %s: %v", path, err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return string(b)
		}
		post("/reset", `{}`)
		// The step runs until StepTimeout, six times ReadTimeout: it must
		// end by its own timeout, not be cancelled.
		reply := post("/step", `{"action":{"tool_name":"slow"}}`)
		if !strings.Contains(reply, `"error_type":"timeout"`) {
			t.Fatalf("a step longer than ReadTimeout: %s, want its own timeout", reply)
		}
	})
}

// tempAcceptError is an accept failure net/http retries, as it does one
// out of file descriptors.
type tempAcceptError struct{}

func (tempAcceptError) Error() string   { return "accept: too many open files" }
func (tempAcceptError) Timeout() bool   { return false }
func (tempAcceptError) Temporary() bool { return true }

// failingListener fails its first Accept with tempAcceptError and every
// later one for good.
type failingListener struct {
	net.Listener
	calls int
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.calls++
	if l.calls == 1 {
		return nil, tempAcceptError{}
	}
	return nil, net.ErrClosed
}

// TestConnLimit_ErrorLog: the server's own error log, a failed accept
// here, goes to the ConnLimit's Logger as one JSON object, where net/http
// wrote it through the log package as a line of plain text.
func TestConnLimit_ErrorLog(t *testing.T) {
	var buf strings.Builder
	limit := &openenv.ConnLimit{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hs := limit.Server(http.NotFoundHandler())
	if err := hs.Serve(limit.Listener(&failingListener{Listener: ln})); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Serve: %v", err)
	}
	var line struct{ Level, Msg string }
	if err := json.Unmarshal([]byte(buf.String()), &line); err != nil || line.Level != "WARN" || !strings.HasPrefix(line.Msg, "http: Accept error: accept: too many open files") {
		t.Errorf("log %q (%v), want one JSON object at WARN saying the accept failed", buf.String(), err)
	}

}

// TestConnLimit_ListenerShare serves the agent listener within a share of
// the cap, as seahaven serve does: agents holding silent connections past
// their share are refused, naming it, while the trainer's listener still
// takes connections, and an agent's idle keep-alive connection gives way
// to its next one. Without the share, the agents' silent connections held
// every place and the trainer's requests were answered 503.
func TestConnLimit_ListenerShare(t *testing.T) {
	const max, share = 4, 1
	limit := &openenv.ConnLimit{Max: max, ReadHeaderTimeout: time.Hour}
	s := mustServeLimited(t, newFake(t), openenv.Config{}, limit)
	aln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := limit.Server(s.srv.AgentHandler())
	go hs.Serve(limit.ListenerShare(aln, share))
	t.Cleanup(func() { hs.Close() })
	agent := &limitServer{srv: s.srv, limit: limit, addr: aln.Addr().String()}

	first := agent.rawConn(t)
	firstR := bufio.NewReader(first)
	if code, body := get(t, first, firstR, "/health"); code != http.StatusOK {
		t.Fatalf("the agent's first connection: %d %s", code, body)
	}
	waitFor(t, "the agent's connection to be idle", func() bool { return limit.IdleConns() == 1 })
	// Its next connection takes the idle one's place, and holds the share
	// without sending anything.
	agent.rawConn(t)
	closedByServer(t, first, firstR)
	waitFor(t, "the agent's new connection to be counted", func() bool { return limit.Open() == share })
	// Past it, a connection is refused at once, even one asking for a
	// probe: the places kept for probes are the other listeners'.
	for i, path := range []string{"/metadata", "/health"} {
		extra := agent.rawConn(t)
		code, body := get(t, extra, bufio.NewReader(extra), path)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "this listener holds its share of 1 of the server's 4") || limit.Refused() != int64(i+1) {
			t.Fatalf("GET %s on an agent's connection past its share: %d %s (refused %d), want 503 naming the share", path, code, body, limit.Refused())
		}
	}
	if n := limit.Probes(); n != 0 {
		t.Fatalf("the agents' connections took %d of the probes' places", n)
	}
	// The trainer's listener has the rest of the places.
	for range max - share {
		c := s.rawConn(t)
		io.WriteString(c, "GET /metadata HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(waitLimit))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the trainer's connection with the agents' share held: %d %s, want 200", resp.StatusCode, b)
		}
	}
	waitFor(t, "every place to be taken", func() bool { return limit.Open() == max })
}
