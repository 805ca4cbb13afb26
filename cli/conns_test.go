package cli

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestServeCommand_MaxConns fills --max-conns with connections that send
// nothing, as a flood of unauthenticated clients would: the next
// connection is answered 503, while a WebSocket session opened before,
// which does not count, goes on answering its calls.
func TestServeCommand_MaxConns(t *testing.T) {
	const max = 3
	stderr, err := serveBriefly(t, []string{"--max-conns", "3", "--token", "secret"}, func(base string) {
		addr := strings.TrimPrefix(base, "http://")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		ws, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer secret"}}})
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		call := func(msg string) string {
			if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			_, b, err := ws.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		if reply := call(`{"type":"reset"}`); !strings.Contains(reply, `"observation"`) {
			t.Fatalf("reset: %s", reply)
		}
		dial := func() net.Conn {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		for range max {
			c := dial()
			defer c.Close()
		}
		// The silent connections are counted once accepted; a request on
		// the next one is answered (503) only when all of them have been.
		// (A probe would still be answered: see openenv.ConnLimit.)
		var code int
		var body []byte
		for deadline := time.Now().Add(20 * time.Second); code != http.StatusServiceUnavailable; {
			if time.Now().After(deadline) {
				t.Fatalf("GET /metadata past --max-conns: %d %s, want 503", code, body)
			}
			c := dial()
			io.WriteString(c, "GET /metadata HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer secret\r\nConnection: close\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			code = resp.StatusCode
			body, _ = io.ReadAll(resp.Body)
			c.Close()
		}
		if !strings.Contains(string(body), "Too many connections") {
			t.Errorf("503 body %s, want the reason", body)
		}
		if reply := call(`{"type":"step","data":{"tool_name":"list_staff","arguments":{}}}`); !strings.Contains(reply, `"observation"`) {
			t.Errorf("a call of the open session past --max-conns: %.300s", reply)
		}
	})
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr)
	}
}

// TestServeCommand_AgentConns has agents hold silent connections to the
// agent listener, more than --max-conns: the trainer's requests on the main
// listener are still answered, as the agents take at most a quarter of the
// places. Before, the two listeners shared the cap and the agents' silent
// connections had the trainer's requests answered 503.
func TestServeCommand_AgentConns(t *testing.T) {
	const max = 4
	addr, agent := serveWithAgent(t, "--token", "secret", "--max-conns", strconv.Itoa(max))
	for range 2 * max {
		c, err := net.Dial("tcp", agent)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	// The connections are accepted one after another: the trainer's is
	// dialed once the last of them has been (it is answered 503 or served).
	last, err := net.Dial("tcp", agent)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(last, "GET /metadata HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer secret\r\nConnection: close\r\n\r\n")
	last.SetReadDeadline(time.Now().Add(20 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(last), nil); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("an agent's connection past its share: %v %v, want 503", resp, err)
	}
	last.Close()
	for range max - 1 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET /metadata HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer secret\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the trainer's GET /metadata with agents holding silent connections: %d %s, want 200", resp.StatusCode, body)
		}
	}
}
