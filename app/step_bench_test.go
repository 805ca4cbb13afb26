package app

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/openenv"
)

// BenchmarkWS_Invoice measures a step calling the company world's invoice
// tool over /ws, through the whole server: the protocol, the backend and
// the engine, on acme. "one" is one session stepping back to back;
// "parallel" is a session per goroutine (GOMAXPROCS of them, or -cpu's),
// as `seahaven bench` runs its sessions, in one process.
func BenchmarkWS_Invoice(b *testing.B) {
	served, _ := serveCompany(b, openenv.Config{})
	url := "ws" + strings.TrimPrefix(served, "http") + "/ws"
	step := []byte(`{"type":"step","data":{"type":"call_tool","tool_name":"invoice","arguments":{"amount":500}}}`)
	session := func(b *testing.B) *websocket.Conn {
		c, _, err := websocket.Dial(context.Background(), url, nil)
		if err != nil {
			b.Fatal(err)
		}
		c.SetReadLimit(-1)
		b.Cleanup(func() { c.CloseNow() })
		wsRoundTrip(b, c, []byte(`{"type":"reset"}`))
		return c
	}
	b.Run("one", func(b *testing.B) {
		c := session(b)
		b.ReportAllocs()
		for b.Loop() {
			wsRoundTrip(b, c, step)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			c := session(b)
			for pb.Next() {
				wsRoundTrip(b, c, step)
			}
		})
	})
}

// serveCompany serves the company world, on acme by default, through the
// whole server configured by cfg until the test ends, and returns its URL
// and the server.
func serveCompany(tb testing.TB, cfg openenv.Config) (string, *openenv.Server) {
	tb.Helper()
	be := newTestBackend(tb, Config{DefaultFixture: company.AcmeID})
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv := openenv.NewServer(be, cfg)
	ts := httptest.NewServer(srv.Handler())
	tb.Cleanup(func() {
		ts.Close()
		srv.Shutdown(context.Background())
	})
	return ts.URL, srv
}

// wsRoundTrip sends msg on c and reads its reply, failing on an error
// reply.
func wsRoundTrip(b *testing.B, c *websocket.Conn, msg []byte) {
	ctx := context.Background()
	if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
		b.Fatal(err)
	}
	_, reply, err := c.Read(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if bytes.HasPrefix(reply, []byte(`{"type":"error"`)) || bytes.Contains(reply, []byte(`"isError":true`)) {
		b.Fatalf("reply to %s: %s", msg, reply)
	}
}
