package openenv_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/openenv"
)

// BenchmarkWS_CallTool measures one call_tool step round trip on /ws.
func BenchmarkWS_CallTool(b *testing.B) {
	s := mustServe(b, newFake(b), openenv.Config{})
	c := s.dial(b)
	ctx := context.Background()
	msg := []byte(`{"type":"step","data":{"type":"call_tool","tool_name":"add","arguments":{"a":5,"b":3}}}`)
	for b.Loop() {
		if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
			b.Fatal(err)
		}
		if _, _, err := c.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWS_State measures one state round trip on /ws.
func BenchmarkWS_State(b *testing.B) {
	s := mustServe(b, newFake(b), openenv.Config{})
	c := s.dial(b)
	roundTrip(b, c, `{"type":"reset"}`)
	ctx := context.Background()
	for b.Loop() {
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"state"}`)); err != nil {
			b.Fatal(err)
		}
		if _, _, err := c.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMCP_CallTool measures one tools/call on an /mcp session.
func BenchmarkMCP_CallTool(b *testing.B) {
	s := mustServe(b, newFake(b), openenv.Config{})
	id := str(b, s.rpc(b, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`), "result.session_id")
	body := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":5,"b":3},"session_id":"` + id + `"}}`)
	client := s.ts.Client()
	for b.Loop() {
		resp, err := client.Post(s.ts.URL+"/mcp", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatal(resp.Status)
		}
	}
}
