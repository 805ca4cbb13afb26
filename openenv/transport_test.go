package openenv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/openenv"
)

// hasDuplicateKey reports whether an object anywhere in valid JSON b names a
// key twice, as encoding/json decodes keys. It is the reference the
// server's own scanner is checked against.
func hasDuplicateKey(b []byte) bool {
	d := json.NewDecoder(strings.NewReader(string(b)))
	type level struct {
		keys   map[string]bool // nil for an array
		expect bool            // the next string token is a key
	}
	var stack []level
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		if n := len(stack); n > 0 && stack[n-1].keys != nil && stack[n-1].expect {
			if k, ok := tok.(string); ok {
				if stack[n-1].keys[k] {
					return true
				}
				stack[n-1].keys[k] = true
				stack[n-1].expect = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, level{keys: map[string]bool{}, expect: true})
			continue
		case json.Delim('['):
			stack = append(stack, level{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: the enclosing object expects a key next.
		if n := len(stack); n > 0 && stack[n-1].keys != nil {
			stack[n-1].expect = true
		}
	}
}

func TestWS_DuplicateKeys(t *testing.T) {
	tests := []struct {
		name string
		msg  string // the frame sent
		loc  string // the location the refusal names, as JSON
	}{
		{"Envelope", `{"type":"state","type":"reset"}`, `["type"]`},
		{"EscapedEnvelope", `{"type":"state","\u0074ype":"state"}`, `["type"]`},
		{"Data", `{"type":"reset","data":{"seed":1,"seed":2}}`, `["data","seed"]`},
		{"Action", `{"type":"step","data":{"tool_name":"echo","tool_name":"add","arguments":{"a":1,"b":2}}}`, `["data","tool_name"]`},
		{"Arguments", `{"type":"step","data":{"tool_name":"echo","arguments":{"message":"a","message":"b"}}}`, `["data","arguments","message"]`},
		{"Startup", `{"type":"reset","data":{"startup":{"greeting":1,"greeting":2}}}`, `["data","startup","greeting"]`},
		{"InArray", `{"type":"inspect","data":{"sql":"SELECT 1","params":[1,{"a":1,"a":2}]}}`, `["data","params",1,"a"]`},
		{"MCP", `{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"}}`, `["data","method"]`},
		{"WideObject", `{"type":"reset","data":{"startup":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"e":18}}}`, `["data","startup","e"]`},
	}
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply := roundTrip(t, c, tt.msg)
			if code := str(t, reply, "data.code"); code != "VALIDATION_ERROR" {
				t.Fatalf("reply %s, want a VALIDATION_ERROR", reply)
			}
			errs := field(t, reply, "data.errors").([]any)
			if len(errs) != 1 {
				t.Fatalf("reply %s: want one error", reply)
			}
			loc, _ := json.Marshal(errs[0].(map[string]any)["loc"])
			key := strings.Trim(tt.loc[strings.LastIndex(tt.loc, ",")+1:], `[]"`)
			if string(loc) != tt.loc || errs[0].(map[string]any)["type"] != "duplicate_key" ||
				!strings.Contains(str(t, reply, "data.message"), `Duplicate key "`+key+`"`) {
				t.Errorf("reply %s: want a duplicate_key error at %s naming %q", reply, tt.loc, key)
			}
		})
	}
	// The refusals changed nothing: no step ran, and the session goes on.
	if got := field(t, roundTrip(t, c, `{"type":"state"}`), "data.step_count"); got != json.Number("0") {
		t.Errorf("step_count %v after refused messages, want 0", got)
	}
}

func TestHTTP_DuplicateKeys(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	tests := []struct {
		path, body string
		loc        string // the location the refusal names, as JSON
	}{
		{"/reset", `{"seed":1,"seed":2}`, `["body","seed"]`},
		{"/step", `{"action":{"tool_name":"echo","arguments":{"message":"a"}},"action":{"tool_name":"fail"}}`, `["body","action"]`},
		{"/step", `{"action":{"tool_name":"echo","arguments":{"message":"a","message":"b"}}}`, `["body","action","arguments","message"]`},
		{"/inspect", `{"sql":"SELECT 1","sql":"SELECT 2"}`, `["body","sql"]`},
	}
	for _, tt := range tests {
		code, body, _ := s.httpDo(t, http.MethodPost, tt.path, tt.body, nil)
		if code != http.StatusUnprocessableEntity {
			t.Errorf("POST %s %s: status %d, want 422; body %s", tt.path, tt.body, code, body)
			continue
		}
		var detail struct {
			Detail []struct {
				Type string `json:"type"`
				Loc  []any  `json:"loc"`
				Msg  string `json:"msg"`
			} `json:"detail"`
		}
		if err := json.Unmarshal([]byte(body), &detail); err != nil || len(detail.Detail) != 1 {
			t.Errorf("POST %s: body %s: want one failure", tt.path, body)
			continue
		}
		loc, _ := json.Marshal(detail.Detail[0].Loc)
		if d := detail.Detail[0]; d.Type != "duplicate_key" || string(loc) != tt.loc || !strings.Contains(d.Msg, "Duplicate key") {
			t.Errorf("POST %s %s: %s, want a duplicate_key failure at %s", tt.path, tt.body, body, tt.loc)
		}
	}
}

func TestMCP_DuplicateKeys(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	for body, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"}`:                                         `Invalid request: method: Duplicate key \"method\"`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"a":2,"b":1}}}`: `Invalid request: params.arguments.a: Duplicate key \"a\"`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","method":"notifications/x"}`:                      `Invalid request: method: Duplicate key \"method\"`,
	} {
		reply := s.rpc(t, body)
		if !strings.Contains(reply, `"code":-32600`) || !strings.Contains(reply, want) {
			t.Errorf("POST /mcp %s: %s, want -32600 with %q", body, reply, want)
		}
	}
}

func TestWS_InvalidUTF8(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	send(t, c, "{\"type\":\"step\",\"data\":{\"tool_name\":\"echo\",\"arguments\":{\"message\":\"a\xffb\"}}}")
	jsonEq(t, recv(t, c), `{"type":"error","data":{"message":"Invalid UTF-8 in a text frame: a message must be UTF-8 encoded JSON","code":"INVALID_JSON"}}`)
	expectClose(t, c, websocket.StatusInvalidFramePayloadData, "Invalid UTF-8")
	waitFor(t, "the instance to close", func() bool { return fake.open.Load() == 0 })
	waitFor(t, "the slot to free", func() bool { return len(s.Sessions()) == 0 })
}

// FuzzDuplicateKey checks the server's duplicate-key scanner against
// hasDuplicateKey on valid JSON: both find a repeated key or neither does,
// and the location found ends with a key its object repeats.
func FuzzDuplicateKey(f *testing.F) {
	for _, seed := range []string{
		`{}`, `[]`, `1`, `"a"`, `{"a":1,"a":2}`, `{"a":{"b":1},"c":{"b":2}}`, `{"a":[{"b":1,"b":2}]}`,
		`{"\u0061":1,"a":2}`, "{\"\xff\":1,\"\xfe\":2}", `{"a\"b":1,"a\u0022b":2}`, ` { "a" : [ 1 , { } ] , "b" : "}" } `,
		`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"a":18}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		loc, found := openenv.DuplicateKey(in)
		if want := hasDuplicateKey(in); found != want {
			t.Fatalf("DuplicateKey(%q) = %v, %v; encoding/json finds a duplicate: %v", in, loc, found, want)
		}
		if found {
			if _, isKey := loc[len(loc)-1].(string); !isKey {
				t.Fatalf("DuplicateKey(%q) = %v: want a location ending with a key", in, loc)
			}
		}
	})
}

// TestServer_DebugRuntimeGC asks for many forced collections in a row: the
// server forces at most one per DebugGCInterval and answers the rest with
// the statistics sampled after the last one.
func TestServer_DebugRuntimeGC(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	forced := func() uint64 {
		sample := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	const n = 20
	before, start := forced(), time.Now()
	var bodies []string
	for range n {
		code, body, _ := s.httpDo(t, http.MethodGet, "/debug/runtime?gc=1", "", nil)
		if code != http.StatusOK {
			t.Fatalf("GET /debug/runtime?gc=1: status %d, body %s", code, body)
		}
		bodies = append(bodies, body)
	}
	elapsed, got := time.Since(start), forced()-before
	if allowed := 1 + uint64(elapsed/openenv.DebugGCInterval); got == 0 || got > allowed {
		t.Errorf("%d requests in %v forced %d collections, want between 1 and %d", n, elapsed, got, allowed)
	}
	if elapsed < openenv.DebugGCInterval && bodies[n-1] != bodies[0] {
		t.Errorf("within the interval the last request got %s, want the first one's %s", bodies[n-1], bodies[0])
	}
}

// countHandler is a slog.Handler counting the records whose message
// contains substr.
type countHandler struct {
	substr string
	n      *atomic.Int64
}

func (h countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.substr) {
		h.n.Add(1)
	}
	return nil
}
func (h countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countHandler) WithGroup(string) slog.Handler      { return h }

// TestWS_SlowMessageKept has the server read a client's message slowly
// (LargeMessageRate), across many ping intervals and for longer than
// PongTimeout: the client's pong waits behind the message, and the
// session must survive, since the message's bytes keep coming.
func TestWS_SlowMessageKept(t *testing.T) {
	var late atomic.Int64
	s := mustServe(t, newFake(t), openenv.Config{
		PingInterval: 20 * time.Millisecond, PongTimeout: 600 * time.Millisecond,
		LargeMessageRate: 256 << 10, // a 64 KiB chunk every 250 ms: 1.5 s for the message
		Logger:           slog.New(countHandler{substr: "pong late", n: &late}),
	})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	text := strings.Repeat("x", 512<<10)
	reply := roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"echo","arguments":{"message":"`+text+`"}}}`)
	if !strings.Contains(reply, text) {
		t.Fatalf("reply %.200s, want the echo", reply)
	}
	if late.Load() == 0 {
		t.Error("no pong was late: the message was read faster than PongTimeout")
	}
}

// TestWS_SlowReaderKept has a client read a reply of several MiB slowly,
// a little at a time, across many ping intervals and for longer than
// PongTimeout: the session must survive, since the peer keeps reading and
// the write's own WriteTimeout has not passed.
func TestWS_SlowReaderKept(t *testing.T) {
	var deferred atomic.Int64
	fake := newFake(t)
	const pongTimeout = 2 * time.Second
	s := mustServeHTTP(t, fake, fake, openenv.Config{
		PingInterval: 2 * time.Millisecond, PongTimeout: pongTimeout, WriteTimeout: waitLimit,
		MaxReplyBytes: 64 << 20, // the reply (the blob three times over) is sent, not refused
		Logger:        slog.New(countHandler{substr: "ping deferred", n: &deferred}),
	}, func(hs *http.Server) {
		// A small send buffer, with the client's small receive buffer,
		// makes the server's write block after little data, whatever the
		// system's defaults (its send buffer may grow to megabytes).
		hs.ConnContext = func(ctx context.Context, conn net.Conn) context.Context {
			if err := conn.(*net.TCPConn).SetWriteBuffer(64 << 10); err != nil {
				t.Error(err)
			}
			return ctx
		}
	})
	dialer := &net.Dialer{}
	transport := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dialer.DialContext(ctx, network, addr)
		if err == nil {
			err = conn.(*net.TCPConn).SetReadBuffer(64 << 10)
		}
		return conn, err
	}}
	c := s.dialWith(t, &websocket.DialOptions{HTTPClient: &http.Client{Transport: transport}})
	roundTrip(t, c, `{"type":"reset"}`)
	// The client reads the reply 1 KiB at a time, pausing after each read
	// until the server has deferred another ping, for 1.5 PongTimeout: the
	// write spans many ping intervals and more than PongTimeout. A ping is
	// deferred at most once per PingInterval, so the slow reads take at
	// most 1 KiB per PingInterval, 1.5 MiB in all, and a reply of 12 MiB
	// (a 4 MiB blob) outlasts them; one much larger only makes the server
	// build and encode it for longer (seconds, under the race detector).
	// It reads the rest at once, and as soon as a pause sees no ping
	// deferred for a quarter of PongTimeout (the write is over and the
	// rest is buffered).
	const size = 4 << 20
	type result struct {
		n    int
		slow time.Duration // how long the client read slowly
		err  error
	}
	done := make(chan result, 1)
	go func() {
		_, r, err := c.Reader(context.Background())
		if err != nil {
			done <- result{err: err}
			return
		}
		buf := make([]byte, 1024)
		total := 0
		start := time.Now()
		slow, slowFor := true, time.Duration(0)
		for {
			seen := deferred.Load()
			n, err := r.Read(buf)
			total += n
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				done <- result{total, slowFor, err}
				return
			}
			if !slow {
				continue
			}
			pause := time.Now()
			for deferred.Load() == seen && len(s.Sessions()) == 1 && time.Since(pause) < pongTimeout/4 {
				time.Sleep(time.Millisecond)
			}
			if slowFor = time.Since(start); deferred.Load() == seen || slowFor > pongTimeout*3/2 {
				slow, buf = false, make([]byte, 64<<10)
			}
		}
	}()
	// The reader waits for the reply before the step is sent, so it answers
	// pings however long the step takes to build its reply.
	send(t, c, fmt.Sprintf(`{"type":"step","data":{"type":"call_tool","tool_name":"blob","arguments":{"n":%d}}}`, size))
	var res result
	select {
	case res = <-done:
	case <-time.After(waitLimit):
		t.Fatal("gave up waiting for the slow reader")
	}
	if res.err != nil || res.n < size {
		t.Fatalf("read %d bytes of the reply, %v; want the %d-byte blob (dropped: %v)", res.n, res.err, size, len(s.Sessions()) == 0)
	}
	if deferred.Load() == 0 {
		t.Error("no ping was deferred behind the slow write")
	}
	if res.slow <= pongTimeout {
		t.Errorf("the write ended after %v of slow reads, within PongTimeout: the reply did not outlast them", res.slow)
	}
	t.Logf("read slowly for %v, %d pings deferred", res.slow, deferred.Load())
	if reply := roundTrip(t, c, `{"type":"state"}`); !strings.HasPrefix(reply, `{"type":"state"`) {
		t.Fatalf("reply %.200s, want a state", reply)
	}
}

// TestWS_ReadAheadBytes pipelines messages behind steps that do not end
// on two connections: each session reads ahead only what fits its
// MaxPendingBytes and the server's MaxPendingTotal, then stops reading, and
// ending the sessions leaves no byte held. Behind a step that times out,
// messages that each fill the budget are all answered in order.
func TestWS_ReadAheadBytes(t *testing.T) {
	// echo returns a step message of exactly size bytes.
	echo := func(size int) string {
		const frame = `{"type":"step","data":{"tool_name":"echo","arguments":{"message":""}}}`
		return strings.Replace(frame, `""`, `"`+strings.Repeat("x", size-len(frame))+`"`, 1)
	}
	// stall opens a session whose step blocks, then pipelines msgs.
	stall := func(s *testServer, msgs ...string) *websocket.Conn {
		c := s.dial(t)
		roundTrip(t, c, `{"type":"reset"}`)
		send(t, c, `{"type":"step","data":{"tool_name":"slow"}}`)
		<-s.fake.slowStarted
		for _, m := range msgs {
			send(t, c, m)
		}
		return c
	}
	// held waits until /metrics shows want bytes read ahead and waiting
	// readers waiting for room.
	held := func(s *testServer, want int64, waiting int) {
		t.Helper()
		deadline := time.Now().Add(waitLimit)
		for {
			m := s.scrape(t)
			used, w := int64(m.value(t, "seahaven_ws_read_ahead_bytes")), int(m.value(t, "seahaven_ws_readers_waiting"))
			if used == want && w == waiting {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d bytes read ahead and %d readers waiting, want %d and %d", used, w, want, waiting)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	t.Run("Bounded", func(t *testing.T) {
		s := mustServe(t, newFake(t), openenv.Config{StepTimeout: time.Hour, MaxPending: 16, MaxPendingBytes: 1000, MaxPendingTotal: 1500})
		// The first connection queues one 600-byte message; the next does
		// not fit its 1000 bytes.
		a := stall(s, echo(600), echo(600), echo(600), echo(600))
		held(s, 600, 1)
		// The second one's 1000-byte message fits its own cap but not the
		// server's 1500.
		b := stall(s, echo(1000), echo(1000))
		held(s, 600, 2)
		// A reader waiting for room does not read, so it cannot see its
		// peer go; shutting down ends the sessions.
		a.CloseNow()
		b.CloseNow()
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		held(s, 0, 0)
	})
	t.Run("Drains", func(t *testing.T) {
		const n = 50
		s := mustServe(t, newFake(t), openenv.Config{StepTimeout: 50 * time.Millisecond, MaxPendingBytes: 1000, MaxPendingTotal: 1000})
		var msgs []string
		for range n {
			msgs = append(msgs, echo(600))
		}
		c := stall(s, msgs...)
		if reply := recvRaw(t, c); !strings.Contains(reply, `"error_type":"timeout"`) {
			t.Fatalf("first reply %.200s, want the slow call's timeout", reply)
		}
		for i := range n {
			if reply := recvRaw(t, c); !strings.Contains(reply, `"message":"xxx`) {
				t.Fatalf("reply %d: %.200s, want the echo", i, reply)
			}
		}
		held(s, 0, 0)
	})
}

// BenchmarkDuplicateKey measures the duplicate-key scan every message,
// body and request gets, on a typical step message.
func BenchmarkDuplicateKey(b *testing.B) {
	msg := []byte(`{"type":"step","data":{"type":"call_tool","tool_name":"invoice","arguments":{"amount":500,"customer":"cus_1","memo":"March"}}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if _, dup := openenv.DuplicateKey(msg); dup {
			b.Fatal("no key is repeated")
		}
	}
}
