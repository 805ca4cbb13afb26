package openenv_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seahaven/seahaven/openenv"
)

func TestMCP_Lifecycle(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})

	// A standard client's initialize starts a session of its own, named by
	// the Mcp-Session-Id header; DELETE /mcp ends it.
	code, body, resp := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, nil)
	jsonEq(t, body, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26","capabilities":{"tools":{"listChanged":false}},"serverInfo":{"name":"fake","version":"1.2.3"}}}`)
	std := resp.Header.Get(openenv.MCPSessionHeader)
	if code != http.StatusOK || std == "" || fake.open.Load() != 1 {
		t.Fatalf("initialize: %d, session %q, %d instances open", code, std, fake.open.Load())
	}
	if code, body, _ := s.httpDo(t, "DELETE", "/mcp", "", map[string]string{openenv.MCPSessionHeader: std}); code != http.StatusNoContent || fake.open.Load() != 0 {
		t.Fatalf("DELETE /mcp: %d %s, %d instances open", code, body, fake.open.Load())
	}
	code, body, _ = s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	if code != http.StatusAccepted || body != "" {
		t.Errorf("notification: %d %q, want 202 and no body", code, body)
	}

	created := s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`)
	id := str(t, created, "result.session_id")
	jsonEq(t, created, `{"jsonrpc":"2.0","id":1,"result":{"session_id":"`+id+`"}}`)
	if n := fake.open.Load(); n != 1 {
		t.Errorf("%d instances open after create, want 1", n)
	}

	list := s.rpc(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"session_id":"`+id+`"}}`)
	if !strings.HasPrefix(list, `{"jsonrpc":"2.0","id":2,"result":{"tools":[`+
		`{"name":"echo","description":"Echo a message.","inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"],"additionalProperties":false}},`) {
		t.Errorf("tools/list: %s", list)
	}

	jsonEq(t, s.rpc(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":5,"b":3},"session_id":"`+id+`"}}`),
		`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"8","annotations":null,"meta":null}],"structured_content":{"result":8},"meta":null,"data":8,"is_error":false,"structuredContent":{"result":8},"isError":false}}`)
	jsonEq(t, s.rpc(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fail","session_id":"`+id+`"}}`),
		`{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"card declined","data":{"error_type":"execution_error"}}}`)

	// The MCP session is a real session: the HTTP routes can read it.
	_, state, _ := s.httpDo(t, "GET", "/state", "", map[string]string{openenv.SessionHeader: id})
	if n := fmt.Sprint(field(t, state, "step_count")); n != "2" {
		t.Errorf("step_count %s after two tools/call, want 2", n)
	}

	jsonEq(t, s.rpc(t, `{"jsonrpc":"2.0","id":5,"method":"openenv/session/close","params":{"session_id":"`+id+`"}}`),
		`{"jsonrpc":"2.0","id":5,"result":{"session_id":"`+id+`","closed":true}}`)
	if n := fake.open.Load(); n != 0 {
		t.Errorf("%d instances open after close, want 0", n)
	}
	jsonEq(t, s.rpc(t, `{"jsonrpc":"2.0","id":6,"method":"openenv/session/close","params":{"session_id":"`+id+`"}}`),
		`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"Unknown session_id: `+id+`","data":null}}`)
	jsonEq(t, s.rpc(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":1},"session_id":"`+id+`"}}`),
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Unknown session_id: `+id+`","data":null}}`)
}

// TestMCP_SessionCreateNamesItsSession checks that the reply to
// openenv/session/create on POST /mcp carries the session's id in
// X-Seahaven-Session, as the HTTP routes' replies do, so that a proxy
// learns which server holds it; the replies to the session's other
// requests, and a create refused at capacity, carry none.
func TestMCP_SessionCreateNamesItsSession(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{MaxSessions: 1})
	code, body, resp := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`, nil)
	id := str(t, body, "result.session_id")
	if got := resp.Header.Get(openenv.SessionHeader); code != http.StatusOK || got != id {
		t.Errorf("openenv/session/create: %d, %s %q, want 200 and %q", code, openenv.SessionHeader, got, id)
	}
	for _, req := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"openenv/session/create","params":{}}`, // at capacity
		`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"session_id":"` + id + `"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"openenv/session/close","params":{"session_id":"` + id + `"}}`,
	} {
		if _, body, resp := s.httpDo(t, "POST", "/mcp", req, nil); resp.Header.Get(openenv.SessionHeader) != "" {
			t.Errorf("%s: answered with %s %q: %s", req, openenv.SessionHeader, resp.Header.Get(openenv.SessionHeader), body)
		}
	}
}

func TestMCP_Requests(t *testing.T) {
	tests := []struct {
		name string
		body string // the request body
		want string // the whole response
	}{
		{"ParseError", `{"jsonrpc":`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":null}}`},
		{"EmptyBody", ``, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":null}}`},
		{"EmptyObject", `{}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: jsonrpc: Field required; method: Field required","data":null}}`},
		{"NotObject", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: Input should be an object","data":null}}`},
		{"WrongVersion", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid request: jsonrpc: Input should be '2.0'","data":null}}`},
		{"ExtraKey", `{"jsonrpc":"2.0","id":1,"method":"ping","extra":1}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid request: extra: Extra inputs are not permitted","data":null}}`},
		{"MethodNumber", `{"jsonrpc":"2.0","id":1,"method":7}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid request: method: Input should be a valid string","data":null}}`},
		{"ParamsList", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[]}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid request: params: Input should be a valid dictionary","data":null}}`},
		{"FloatID", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: id: Input should be a valid string or integer","data":null}}`},
		{"StringID", `{"jsonrpc":"2.0","id":"abc","method":"ping"}`, `{"jsonrpc":"2.0","id":"abc","result":{}}`},
		{"NullID", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"result":{}}`},
		{"NoIDNotNotification", `{"jsonrpc":"2.0","method":"ping"}`, `{"jsonrpc":"2.0","id":null,"result":{}}`},
		{"NotificationWithID", `{"jsonrpc":"2.0","id":9,"method":"notifications/cancelled"}`, `{"jsonrpc":"2.0","id":9,"result":{}}`},
		{"MethodNotFound", `{"jsonrpc":"2.0","id":1,"method":"resources/list"}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: resources/list","data":null}}`},
		{"NoReset", `{"jsonrpc":"2.0","id":1,"method":"reset"}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: reset","data":null}}`},
		{"NoInspect", `{"jsonrpc":"2.0","id":1,"method":"inspect","params":{"sql":"SELECT 1"}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: inspect","data":null}}`},
		{"InitializeUnknownVersion", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":false}},"serverInfo":{"name":"fake","version":"1.2.3"}}}`},
		{"InitializeNoParams", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params - initialize needs 'protocolVersion', a string such as 2025-11-25"}}`},
		{"InitializeVersionNumber", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5}}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params - initialize needs 'protocolVersion', a string such as 2025-11-25"}}`},
		{"CallMissingName", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Missing 'name' in params","data":null}}`},
		{"CallNameNumber", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":1}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params - 'name' must be a string","data":null}}`},
		{"CallArgumentsList", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":[]}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params - 'arguments' must be an object","data":null}}`},
		{"CallUnknownSession", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","session_id":"nope"}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unknown session_id: nope","data":null}}`},
		{"CallSessionNumber", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","session_id":5}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params - 'session_id' must be a string","data":null}}`},
		{"ListUnknownSession", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"session_id":"nope"}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unknown session_id: nope","data":null}}`},
		{"CloseMissingSession", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/close","params":{}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params - 'session_id' is required","data":null}}`},
		{"CloseUnknownSession", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/close","params":{"session_id":"nope"}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unknown session_id: nope","data":null}}`},
		{"ThrowawayCall", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"message\":\"x\"}","annotations":null,"meta":null}],"structured_content":{"message":"x"},"meta":null,"data":{"message":"x"},"is_error":false,"structuredContent":{"message":"x"},"isError":false}}`},
		{"ThrowawayToolError", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":true}}}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"add: a and b are required numbers","data":{"error_type":"invalid_args"}}}`},
		{"ThrowawayUnknownTool", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"unknown tool \"x\"","data":{"error_type":"tool_not_found"}}}`},
		{"ReservedName", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"reset"}}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"unknown tool \"reset\"","data":{"error_type":"tool_not_found"}}}`},
		{"Panic", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"boom"}}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"internal error: tool \"boom\" panicked: tool exploded","data":null}}`},
		{"Timeout", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"tool \"slow\" timed out after 20ms","data":{"error_type":"timeout"}}}`},
		{"ListWithoutSession", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, ""},
		{"Ping", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"BigID", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, `{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}`},
	}
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{StepTimeout: 20 * time.Millisecond})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, got, resp := s.httpDo(t, http.MethodPost, "/mcp", tt.body, nil)
			if code != http.StatusOK {
				t.Fatalf("POST /mcp %s: %d %s", tt.body, code, got)
			}
			if sid := resp.Header.Get(openenv.MCPSessionHeader); sid != "" {
				// initialize started a standard MCP session: end it.
				if code, body, _ := s.httpDo(t, http.MethodDelete, "/mcp", "", map[string]string{openenv.MCPSessionHeader: sid}); code != http.StatusNoContent {
					t.Fatalf("DELETE /mcp: %d %s", code, body)
				}
			}
			if tt.want == "" {
				if n := len(field(t, got, "result.tools").([]any)); n != 6 {
					t.Errorf("%d tools, want 6: %s", n, got)
				}
				return
			}
			if compact(t, got) != compact(t, tt.want) {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	if n := fake.open.Load(); n != 0 {
		t.Errorf("%d throwaway instances left open", n)
	}
	if n := len(s.Sessions()); n != 0 {
		t.Errorf("session-less calls left %d sessions", n)
	}
}

func TestMCP_Capacity(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{MaxSessions: 1})
	s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`)
	jsonEq(t, s.rpc(t, `{"jsonrpc":"2.0","id":2,"method":"openenv/session/create"}`),
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"Server at capacity: 1/1 sessions active. Cannot accept new connections.","data":{"active_sessions":1,"max_sessions":1}}}`)
	// Session-less calls are not counted, as upstream.
	if d := fmt.Sprint(field(t, s.rpc(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}`), "result.data")); d != "3" {
		t.Errorf("session-less call at capacity gave %s", d)
	}
	// A standard client's initialize is refused with 503, which a proxy
	// retries on another replica, and starts no session.
	code, body, resp := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, nil)
	if code != http.StatusServiceUnavailable || resp.Header.Get(openenv.MCPSessionHeader) != "" || resp.Header.Get("Retry-After") != "1" ||
		compact(t, body) != `{"jsonrpc":"2.0","id":4,"error":{"code":-32000,"message":"Server at capacity: 1/1 sessions active. Cannot accept new connections.","data":{"active_sessions":1,"max_sessions":1}}}` {
		t.Errorf("initialize at capacity: %d %s", code, body)
	}
}

func TestMCP_CreateFactoryError(t *testing.T) {
	fake := newFake(t)
	fake.defaultFixture = "gone"
	s := mustServe(t, fake, openenv.Config{})
	jsonEq(t, s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`),
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"unknown fixture \"gone\"","data":{"factory_name":"fake"}}}`)
	if n := len(s.Sessions()); n != 0 {
		t.Errorf("a failed create left %d sessions", n)
	}
	jsonEq(t, s.rpc(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add"}}`),
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"unknown fixture \"gone\"","data":{"factory_name":"fake"}}}`)
}

func TestMCP_CannotCloseWebSocketSession(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"state"}`)
	id := s.Sessions()[0].ID
	jsonEq(t, s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/close","params":{"session_id":"`+id+`"}}`),
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Cannot close active WebSocket-managed session via MCP method","data":null}}`)
	if typ := str(t, roundTrip(t, c, `{"type":"state"}`), "type"); typ != "state" {
		t.Errorf("socket session gone")
	}
}

func TestMCP_NotPOST(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	code, body, resp := s.httpDo(t, "GET", "/mcp", "", nil)
	if want := "Method Not Allowed: /mcp takes POST (JSON-RPC) and DELETE (end a session); it has no event stream"; code != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST, DELETE" || str(t, body, "detail") != want {
		t.Errorf("GET /mcp: %d %s (Allow %q), want 405 %q with Allow \"POST, DELETE\"", code, body, resp.Header.Get("Allow"), want)
	}
	// Allow names the methods /mcp takes, whatever the method refused.
	for _, m := range []string{"PUT", "PATCH", "OPTIONS", "HEAD"} {
		code, body, resp = s.httpDo(t, m, "/mcp", "", nil)
		if code != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST, DELETE" {
			t.Errorf("%s /mcp: %d %s (Allow %q)", m, code, body, resp.Header.Get("Allow"))
		}
	}
}

func TestMCP_BodyTooLarge(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{MaxMessageBytes: 64})
	got := s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"`+strings.Repeat("x", 64)+`"}}}`)
	jsonEq(t, got, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: Request body exceeds the limit of 64 bytes","data":null}}`)
	// On a standard client's session: 413, as on the other routes, naming
	// the request's id when the part of the body read names it before the
	// cut (the Go SDK's client keeps its session only then).
	s = mustServe(t, newFake(t), openenv.Config{MaxMessageBytes: 128})
	_, _, resp := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, nil)
	hdr := map[string]string{openenv.MCPSessionHeader: resp.Header.Get(openenv.MCPSessionHeader)}
	for _, tt := range []struct{ body, id string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"` + strings.Repeat("x", 128) + `"}}}`, `1`},
		{`{"jsonrpc":"2.0","id":"r-2","method":"tools/call","params":{"name":"echo","arguments":{"message":"` + strings.Repeat("x", 128) + `"}}}`, `"r-2"`},
		{`{"method":"tools/call","params":{"name":"echo","arguments":{"message":"` + strings.Repeat("x", 128) + `"}},"jsonrpc":"2.0","id":3}`, `null`},
		{`[{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"message":"` + strings.Repeat("x", 128) + `"}}}]`, `null`},
	} {
		code, body, _ := s.httpDo(t, "POST", "/mcp", tt.body, hdr)
		if code != http.StatusRequestEntityTooLarge || compact(t, body) != `{"jsonrpc":"2.0","id":`+tt.id+`,"error":{"code":-32600,"message":"Invalid request: Request body exceeds the limit of 128 bytes"}}` {
			t.Errorf("standard session, a body over the limit: %d %s, want 413 with id %s", code, body, tt.id)
		}
	}
}

// TestMCP_StandardSession: on a standard client's session the MCP
// specification's rules hold: a request has an id that is not null, a
// message without one is a notification (202, no body) that only
// notifications/… methods are, a JSON-RPC response is refused (the server
// sends no requests), a cursor it never issued is invalid, and a batch is
// answered in order.
func TestMCP_StandardSession(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	_, _, resp := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, nil)
	sid := resp.Header.Get(openenv.MCPSessionHeader)
	if sid == "" {
		t.Fatal("initialize started no session")
	}
	hdr := map[string]string{openenv.MCPSessionHeader: sid}
	tests := []struct {
		name string
		body string
		code int
		want string // the whole body
	}{
		{"PingWithoutID", `{"jsonrpc":"2.0","method":"ping"}`, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: ping needs an id: a message without one is a notification, and only notifications/… methods are sent as notifications"}}`},
		{"CallWithoutID", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"message":"ghost"}}}`, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: tools/call needs an id: a message without one is a notification, and only notifications/… methods are sent as notifications"}}`},
		{"NullID", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: the id must be a string or an integer; MCP does not allow null"}}`},
		// A notification the server cannot take is an HTTP error, as
		// Streamable HTTP has it, like any message it cannot tie to an id.
		{"BadNotification", `{"jsonrpc":"2.0","method":"notifications/initialized","params":5}`, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: params: Input should be a valid dictionary"}}`},
		{"NotificationWithoutVersion", `{"method":"notifications/initialized"}`, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: jsonrpc: Field required"}}`},
		{"NotJSON", `{"jsonrpc":"2.0","id":1,`, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: unexpected end of JSON input"}}`},
		{"TooDeep", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}}`, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: arrays and objects nested past the depth limit of 10000 (at byte 10052)"}}`},
		// A repeated key leaves the request's id readable: its error names it.
		{"DuplicateKey", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"a":2}}}`, http.StatusOK,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid request: params.arguments.a: Duplicate key \"a\": an object may name each key once"}}`},
		// The session's version was negotiated once.
		{"InitializeAgain", `{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"Invalid request: this session is initialized already, speaking 2025-03-26: an initialize sent without Mcp-Session-Id starts a new session"}}`},
		{"Notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, http.StatusAccepted, ``},
		{"Response", `{"jsonrpc":"2.0","id":1,"result":{}}`, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: a JSON-RPC response, but this server sends no requests for a client to answer"}}`},
		{"ErrorResponse", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"no"}}`, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: a JSON-RPC response, but this server sends no requests for a client to answer"}}`},
		{"UnknownCursor", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"zzz"}}`, http.StatusOK,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params - unknown cursor \"zzz\": tools/list returns every tool at once and issues no cursor"}}`},
		{"Batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","method":"ping"},{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}]`, http.StatusOK,
			`[{"jsonrpc":"2.0","id":1,"result":{}},` +
				`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: ping needs an id: a message without one is a notification, and only notifications/… methods are sent as notifications"}},` +
				`{"jsonrpc":"2.0","id":"b","result":{"content":[{"type":"text","text":"3"}],"structuredContent":{"result":3},"isError":false}}]`},
		{"BatchOfNotifications", `[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}]`, http.StatusAccepted, ``},
		{"EmptyBatch", `[]`, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: a batch is a non-empty array of JSON-RPC messages"}}`},
		{"BatchNotJSON", `[{"jsonrpc":"2.0"`, http.StatusBadRequest, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: unexpected end of JSON input"}}`},
		{"BatchOfNonObjects", `[1]`, http.StatusOK, `[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: Input should be an object"}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, got, _ := s.httpDo(t, http.MethodPost, "/mcp", tt.body, hdr)
			if code != tt.code {
				t.Fatalf("POST /mcp %s: %d %s, want %d", tt.body, code, got, tt.code)
			}
			if tt.want == "" {
				if got != "" {
					t.Errorf("body %q, want none", got)
				}
				return
			}
			if compact(t, got) != compact(t, tt.want) {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	// Only the batch's one call ran: the refused notifications did nothing.
	_, state, _ := s.httpDo(t, "GET", "/state", "", map[string]string{openenv.SessionHeader: sid})
	if n := fmt.Sprint(field(t, state, "step_count")); n != "1" {
		t.Errorf("step_count %s, want 1: %s", n, state)
	}

	// An initialize without an id is refused and starts no session.
	code, body, resp := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, nil)
	if code != http.StatusBadRequest || resp.Header.Get(openenv.MCPSessionHeader) != "" || len(s.Sessions()) != 1 {
		t.Errorf("initialize without an id: %d %s, session %q, %d sessions", code, body, resp.Header.Get(openenv.MCPSessionHeader), len(s.Sessions()))
	}

	// DELETE /mcp holds to the Origin rule of POST /mcp, and names the
	// header it needs.
	code, body, _ = s.httpDo(t, http.MethodDelete, "/mcp", "", map[string]string{openenv.MCPSessionHeader: sid, "Origin": "http://evil.example"})
	jsonEq(t, body, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Origin http://evil.example is not allowed: this server answers pages of its own origin and of its allowed origins only"}}`)
	if code != http.StatusForbidden || len(s.Sessions()) != 1 {
		t.Errorf("DELETE from another origin: %d, %d sessions left, want 403 and 1", code, len(s.Sessions()))
	}
	code, body, _ = s.httpDo(t, http.MethodDelete, "/mcp", "", nil)
	jsonEq(t, body, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"DELETE /mcp needs the Mcp-Session-Id header of the session to end"}}`)
	if code != http.StatusBadRequest {
		t.Errorf("DELETE without the header: %d, want 400", code)
	}
	if code, body, _ := s.httpDo(t, http.MethodDelete, "/mcp", "", hdr); code != http.StatusNoContent {
		t.Errorf("DELETE: %d %s", code, body)
	}
	// An ended session's DELETE is answered as its POST is: 404 and the
	// JSON-RPC error that says to initialize a new session.
	for _, method := range []string{http.MethodPost, http.MethodDelete} {
		code, body, _ = s.httpDo(t, method, "/mcp", `{"jsonrpc":"2.0","id":9,"method":"ping"}`, hdr)
		jsonEq(t, body, `{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Unknown Mcp-Session-Id: `+sid+` (it ended, or never existed): initialize a new session"}}`)
		if code != http.StatusNotFound {
			t.Errorf("%s /mcp of an ended session: %d, want 404", method, code)
		}
	}
}

// mcpReply is the reply to a POST /mcp made in the background.
type mcpReply struct {
	code int
	body string
	err  error
}

// standardSession initializes a standard MCP session (2025-11-25) on s and
// returns the header that names it and a function that POSTs a body on it
// in the background.
func standardSession(t *testing.T, s *testServer) (map[string]string, func(body string) <-chan mcpReply) {
	t.Helper()
	_, _, resp := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, nil)
	sid := resp.Header.Get(openenv.MCPSessionHeader)
	if sid == "" {
		t.Fatal("initialize started no session")
	}
	post := func(body string) <-chan mcpReply {
		ch := make(chan mcpReply, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.ts.URL+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(openenv.MCPSessionHeader, sid)
			resp, err := s.ts.Client().Do(req)
			if err != nil {
				ch <- mcpReply{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			ch <- mcpReply{resp.StatusCode, string(b), err}
		}()
		return ch
	}
	return map[string]string{openenv.MCPSessionHeader: sid}, post
}

// A standard client cancels a request in progress with
// notifications/cancelled, sent in a POST of its own while the request's
// POST waits for its reply (the TypeScript SDK does so when a call's
// AbortSignal fires or its timeout passes, and keeps the first POST open).
// The call stops, its POST is answered at once, and the session's next
// call runs instead of waiting for the cancelled one.
func TestMCP_StandardCancel(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{StepTimeout: time.Hour})
	hdr, post := standardSession(t, s)
	for _, id := range []string{`7`, `"call-8"`} {
		slow := post(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
		<-fake.slowStarted
		// Another id is no cancellation of this call.
		if code, body, _ := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99,"reason":"not this one"}}`, hdr); code != http.StatusAccepted {
			t.Fatalf("notifications/cancelled of another id: %d %s", code, body)
		}
		select {
		case r := <-slow:
			t.Fatalf("a cancellation of another id ended the call: %d %s %v", r.code, r.body, r.err)
		case <-time.After(50 * time.Millisecond):
		}
		code, body, _ := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`,"reason":"AbortError: the user gave up"}}`, hdr)
		if code != http.StatusAccepted {
			t.Fatalf("notifications/cancelled: %d %s", code, body)
		}
		r := <-slow
		if r.err != nil || r.code != http.StatusOK || fmt.Sprint(field(t, r.body, "id")) != strings.Trim(id, `"`) {
			t.Fatalf("the cancelled call's reply: %d %s %v", r.code, r.body, r.err)
		}
	}
	// The session is free for the next call.
	code, body, _ := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}`, hdr)
	jsonEq(t, body, `{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"3"}],"structuredContent":{"result":3},"isError":false}}`)
	if code != http.StatusOK {
		t.Errorf("the call after the cancelled ones: %d", code)
	}
	// A call its client gave up on is no panic of the server's.
	m := s.scrape(t)
	if c := m.value(t, "seahaven_tool_calls_total", "tool", "slow", "outcome", "cancelled"); c != 2 {
		t.Errorf("seahaven_tool_calls_total{tool=slow,outcome=cancelled} = %v, want 2", c)
	}
}

// A tools/list waits for the session's call in progress; a standard
// client that gives up on it with notifications/cancelled (as the
// TypeScript SDK does when its timeout passes, keeping the POST open) gets
// its POST answered at once, while the call goes on.
func TestMCP_StandardCancelList(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{StepTimeout: time.Hour})
	hdr, post := standardSession(t, s)
	cancel := func(id int) { cancelRequest(t, s, hdr, id, "") }
	slow := post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	<-fake.slowStarted
	list := post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	select {
	case r := <-list:
		t.Fatalf("tools/list answered during the call: %d %s", r.code, r.body)
	case <-time.After(50 * time.Millisecond):
	}
	cancel(2)
	select {
	case r := <-list:
		// The client ignores the reply, but its error says what happened.
		if r.code != http.StatusOK || fmt.Sprint(field(t, r.body, "id")) != "2" || !strings.Contains(r.body, "The client cancelled the request (notifications/cancelled)") {
			t.Fatalf("the cancelled tools/list: %d %s, want its reply saying it was cancelled", r.code, r.body)
		}
	case <-time.After(waitLimit / 4):
		t.Fatal("the cancelled tools/list is still waiting")
	}
	select {
	case r := <-slow:
		t.Fatalf("cancelling the tools/list ended the call: %d %s", r.code, r.body)
	case <-time.After(50 * time.Millisecond):
	}
	cancel(1)
	if r := <-slow; r.code != http.StatusOK {
		t.Errorf("the cancelled call: %d %s", r.code, r.body)
	}
}

// A standard client that gives up on its initialize before the reply
// (its timeout passed while the instance opened) never learns the
// session's id, so no request could use or end that session: the server
// ends it instead of keeping a slot until the idle timeout.
func TestMCP_InitializeAbandoned(t *testing.T) {
	fake := newFake(t)
	fake.openGate, fake.openStarted = make(chan struct{}), make(chan context.Context, 1)
	s := mustServe(t, fake, openenv.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.ts.URL+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	done := make(chan error, 1)
	go func() {
		resp, err := s.ts.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	opening := <-fake.openStarted
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the abandoned initialize got a reply")
	}
	<-opening.Done() // the server saw the client go; the open goes on
	close(fake.openGate)
	waitFor(t, "the abandoned session to end", func() bool { return len(s.Sessions()) == 0 && fake.open.Load() == 0 })
}

// A request that carries MCP-Protocol-Version, as a standard client's
// requests after initialize do, but no Mcp-Session-Id comes from a client
// that lost its session (the TypeScript SDK's after terminateSession, say):
// it is refused with 400, naming its id, instead of running as OpenEnv's
// dialect on an instance nobody sees again. An initialize with the header,
// and OpenEnv's dialect without it, are served as before.
func TestMCP_SessionRequired(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	version := map[string]string{"MCP-Protocol-Version": "2025-06-18"}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":7,"method":"initial\u0069ze!"}`,
		`[{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}]`,
	} {
		code, got, _ := s.httpDo(t, http.MethodPost, "/mcp", body, version)
		want := "7"
		if strings.HasPrefix(body, "[") {
			want = "<nil>" // a batch's id is no request's
		}
		if code != http.StatusBadRequest || fmt.Sprint(field(t, got, "error.code")) != "-32600" ||
			fmt.Sprint(field(t, got, "id")) != want || !strings.Contains(got, "no Mcp-Session-Id header") {
			t.Errorf("%s with MCP-Protocol-Version and no session: %d %s, want 400 naming id %s", body, code, got, want)
		}
	}
	// A body that is no message at all, an initialize cut short or naming
	// a key twice, is refused for that: told that a session header is
	// missing, its client would only send its initialize again.
	for _, tt := range []struct{ body, want string }{
		{`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: unexpected end of JSON input"}}`},
		{`{"jsonrpc":"2.0","id":7,"method":"initialize","method":"initialize","params":{"protocolVersion":"2025-06-18"}}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid request: method: Duplicate key \"method\": an object may name each key once"}}`},
	} {
		code, got, _ := s.httpDo(t, http.MethodPost, "/mcp", tt.body, version)
		if got != tt.want || code != map[bool]int{true: http.StatusBadRequest, false: http.StatusOK}[strings.Contains(tt.want, `"id":null`)] {
			t.Errorf("%s with MCP-Protocol-Version: %d %s, want %s", tt.body, code, got, tt.want)
		}
	}
	if len(s.Sessions()) != 0 {
		t.Errorf("refused requests left %d sessions", len(s.Sessions()))
	}
	code, _, resp := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":0,"method":"initial\u0069ze","params":{"protocolVersion":"2025-06-18"}}`, version)
	if code != http.StatusOK || resp.Header.Get(openenv.MCPSessionHeader) == "" {
		t.Errorf("initialize with MCP-Protocol-Version: %d, session %q", code, resp.Header.Get(openenv.MCPSessionHeader))
	}
	got := s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	if field(t, got, "result.tools") == nil {
		t.Errorf("OpenEnv's dialect without the header: %s", got)
	}
}

// TestMCP_UnsupportedVersion: a request whose MCP-Protocol-Version the
// server does not know is refused with 400 and a JSON-RPC error listing the
// versions served at its URL (at /mcp, those of initialize), in the MCP
// specification's shape (2026-07-28's UnsupportedProtocolVersion, whose
// data a client of that version retries with), that names the request's
// id, as MCP has an error response to a request whose id can be read do
// (it was null).
func TestMCP_UnsupportedVersion(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	for _, tt := range []struct {
		body string // the POST's body
		id   string // the id the refusal names
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `1`},
		{`{"jsonrpc":"2.0","method":"tools/list","id":"req-7"}`, `"req-7"`},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, `null`},
	} {
		code, got, _ := s.httpDo(t, http.MethodPost, "/mcp", tt.body, map[string]string{"MCP-Protocol-Version": "1999-01-01"})
		want := `{"jsonrpc":"2.0","id":` + tt.id + `,"error":{"code":-32022,"message":"Unsupported MCP-Protocol-Version 1999-01-01 (supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)",` +
			`"data":{"supported":["2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"1999-01-01"}}}`
		if code != http.StatusBadRequest || strings.TrimSpace(got) != want {
			t.Errorf("%s: got %d %s, want 400 %s", tt.body, code, got, want)
		}
	}
}

// MCP 2025-06-18 dropped JSON-RPC batches: on a session of that version or
// later (its MCP-Protocol-Version header, else the version its initialize
// negotiated) a batch is refused with 400 and runs none of its messages,
// while a 2025-03-26 session's batches are answered as before.
func TestMCP_BatchByVersion(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	const batch = `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}},{"jsonrpc":"2.0","id":2,"method":"ping"}]`
	const refused = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: a JSON-RPC batch, which MCP 2025-06-18 and later do not have (this session speaks %s): send each message in a POST of its own"}}`
	for _, tt := range []struct {
		negotiated, header string
		refusedAs          string // the version the refusal names; "" for a batch answered
	}{
		{"2025-06-18", "", "2025-06-18"},
		{"2025-11-25", "", "2025-11-25"},
		{"2025-11-25", "2025-06-18", "2025-06-18"},
		{"2025-03-26", "2025-11-25", "2025-11-25"},
		{"2025-03-26", "", ""},
		{"2024-11-05", "2024-11-05", ""},
	} {
		_, _, resp := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+tt.negotiated+`","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, nil)
		sid := resp.Header.Get(openenv.MCPSessionHeader)
		if sid == "" {
			t.Fatal("initialize started no session")
		}
		hdr := map[string]string{openenv.MCPSessionHeader: sid}
		if tt.header != "" {
			hdr["MCP-Protocol-Version"] = tt.header
		}
		code, body, _ := s.httpDo(t, http.MethodPost, "/mcp", batch, hdr)
		_, state, _ := s.httpDo(t, "GET", "/state", "", map[string]string{openenv.SessionHeader: sid})
		steps := fmt.Sprint(field(t, state, "step_count"))
		if tt.refusedAs != "" {
			if code != http.StatusBadRequest || compact(t, body) != compact(t, fmt.Sprintf(refused, tt.refusedAs)) || steps != "0" {
				t.Errorf("a batch on a %s session (header %q): %d %s, %s steps; want 400 refusing it, and no step", tt.negotiated, tt.header, code, body, steps)
			}
		} else if code != http.StatusOK || !strings.HasPrefix(body, "[") || steps != "1" {
			t.Errorf("a batch on a %s session (header %q): %d %s, %s steps; want its responses, and one step", tt.negotiated, tt.header, code, body, steps)
		}
		if code, _, _ := s.httpDo(t, http.MethodDelete, "/mcp", "", hdr); code != http.StatusNoContent {
			t.Errorf("DELETE: %d", code)
		}
	}
}

// TestMCP_CloseOnce: of requests that end one session at once, one ends it;
// the others get the unknown session's error (-32602, or 404 for DELETE),
// as a close after the session ended does.
func TestMCP_CloseOnce(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	for round := range 50 {
		create := s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`)
		id := str(t, create, "result.session_id")
		var wg sync.WaitGroup
		replies := make([]string, 8)
		for k := range replies {
			wg.Go(func() {
				replies[k] = s.rpc(t, `{"jsonrpc":"2.0","id":2,"method":"openenv/session/close","params":{"session_id":"`+id+`"}}`)
			})
		}
		wg.Wait()
		closed := 0
		for _, r := range replies {
			switch {
			case strings.Contains(r, `"closed":true`):
				closed++
			case !strings.Contains(r, `"code":-32602`) || !strings.Contains(r, "Unknown session_id"):
				t.Fatalf("round %d: a close that lost the race: %s", round, r)
			}
		}
		if closed != 1 {
			t.Fatalf("round %d: %d closes said closed, want 1: %v", round, closed, replies)
		}

		_, _, resp := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, nil)
		hdr := map[string]string{openenv.MCPSessionHeader: resp.Header.Get(openenv.MCPSessionHeader)}
		codes := make([]int, 4)
		for k := range codes {
			wg.Go(func() { codes[k], _, _ = s.httpDo(t, "DELETE", "/mcp", "", hdr) })
		}
		wg.Wait()
		slices.Sort(codes)
		if !slices.Equal(codes, []int{http.StatusNoContent, http.StatusNotFound, http.StatusNotFound, http.StatusNotFound}) {
			t.Fatalf("round %d: DELETE /mcp four times at once: %v, want one 204 and three 404", round, codes)
		}
	}
}

// openenv/session/create on a session (a /ws connection's, a standard
// client's) returns that session, so reset data in its params, which
// could not set that episode up, is refused saying where it goes, where
// it was dropped and the session's id returned as if the episode were
// the one asked for. Empty params, as OpenEnv's client sends, still
// return the session.
func TestMCP_SessionCreateOnSession(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	c := s.dial(t)
	reply := roundTrip(t, c, `{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{"fixture":"base"}}}`)
	if msg, _ := field(t, reply, "data.error.message").(string); msg != "openenv/session/create on a session returns that session, whose episode its params' reset data cannot set up: send it in a reset message" {
		t.Errorf("create with reset data on /ws: %s", reply)
	}
	reply = roundTrip(t, c, `{"type":"mcp","data":{"jsonrpc":"2.0","id":2,"method":"openenv/session/create","params":{}}}`)
	if sid, _ := field(t, reply, "data.result.session_id").(string); sid == "" {
		t.Errorf("create with {} on /ws: %s", reply)
	}

	h, post := standardSession(t, s)
	r := <-post(`{"jsonrpc":"2.0","id":3,"method":"openenv/session/create","params":{"seed":3}}`)
	jsonEq(t, r.body, `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"openenv/session/create on a session returns that session, whose episode its params' reset data cannot set up: initialize a new session with it in the /mcp URL's query"}}`)
	r = <-post(`{"jsonrpc":"2.0","id":4,"method":"openenv/session/create"}`)
	jsonEq(t, r.body, `{"jsonrpc":"2.0","id":4,"result":{"session_id":"`+h[openenv.MCPSessionHeader]+`"}}`)
}

// A standard client's request in progress when its session ends (a DELETE
// /mcp of it, its server shutting down) is answered with the spec's 404,
// saying why the session ended, as OpenEnv's dialect is told, where it
// said the session might never have existed.
func TestMCP_StandardSessionEndsDuringCall(t *testing.T) {
	for _, tt := range []struct {
		name string
		end  func(*testing.T, *testServer, map[string]string)
		why  string
	}{
		{"DELETE", func(t *testing.T, s *testServer, hdr map[string]string) {
			if code, body, _ := s.httpDo(t, http.MethodDelete, "/mcp", "", hdr); code != http.StatusNoContent {
				t.Errorf("DELETE: %d %s", code, body)
			}
		}, "ended by DELETE /mcp"},
		{"shutdown", func(t *testing.T, s *testServer, _ map[string]string) {
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			if err := s.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		}, "server shutting down"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake(t)
			s := mustServe(t, fake, openenv.Config{StepTimeout: time.Hour})
			hdr, post := standardSession(t, s)
			slow := post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
			<-fake.slowStarted
			tt.end(t, s, hdr)
			r := <-slow
			want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Mcp-Session-Id ` + hdr[openenv.MCPSessionHeader] + ` was closed while the request ran (` + tt.why + `): initialize a new session"}}`
			jsonEq(t, r.body, want)
			if r.code != http.StatusNotFound {
				t.Errorf("the call in progress when its session ended: %d, want 404", r.code)
			}
		})
	}
}

// A batch (MCP 2025-03-26) on a session that ends while it runs answers
// each request the end cut short or refused as a standard client's
// request is answered: naming its Mcp-Session-Id and saying why, where it
// answered in OpenEnv's words, of a session_id the client never sent.
func TestMCP_BatchSessionEnds(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{StepTimeout: time.Hour})
	_, _, resp := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, nil)
	sid := resp.Header.Get(openenv.MCPSessionHeader)
	hdr := map[string]string{openenv.MCPSessionHeader: sid}
	batch := s.httpDoLater(t, http.MethodPost, "/mcp", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{}}},`+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}},{"jsonrpc":"2.0","id":3,"method":"tools/list"},{"jsonrpc":"2.0","id":4,"method":"ping"},`+
		`{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":5,"method":"openenv/session/create"}]`, hdr)
	<-fake.slowStarted
	if code, body, _ := s.httpDo(t, http.MethodDelete, "/mcp", "", hdr); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	r := <-batch
	ended := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":-32602,"message":"Mcp-Session-Id %s was closed while the request ran (ended by DELETE /mcp): initialize a new session"}}`, id, sid)
	}
	// Every request after the end is answered as a request of its own
	// then would be, a ping too: none of them runs.
	jsonEq(t, r.body, `[`+ended(1)+`,`+ended(2)+`,`+ended(3)+`,`+ended(4)+`,`+ended(5)+`]`)
	if r.status != http.StatusOK {
		t.Errorf("the batch: %d, want 200", r.status)
	}
}

// A standard client's request it cancelled with notifications/cancelled
// gets no response, as the MCP specification has it: its POST, which
// accepts an event stream (as every client of the specification's
// Streamable HTTP does), is answered with one that carries no message.
// The TypeScript SDK keeps the cancelled request's POST open, and reported
// the response that came on it as one to an unknown request.
func TestMCP_StandardCancelNoResponse(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{StepTimeout: time.Hour})
	hdr, _ := standardSession(t, s)
	type reply struct {
		mcpReply
		contentType string
	}
	post := func(body string) <-chan reply {
		ch := make(chan reply, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.ts.URL+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set(openenv.MCPSessionHeader, hdr[openenv.MCPSessionHeader])
			resp, err := s.ts.Client().Do(req)
			if err != nil {
				ch <- reply{mcpReply: mcpReply{err: err}}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			ch <- reply{mcpReply{resp.StatusCode, string(b), err}, resp.Header.Get("Content-Type")}
		}()
		return ch
	}
	cancel := func(id int) { cancelRequest(t, s, hdr, id, "AbortError") }
	call := post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	<-fake.slowStarted
	list := post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	select {
	case r := <-list:
		t.Fatalf("tools/list answered during the call: %d %s", r.code, r.body)
	case <-time.After(50 * time.Millisecond):
	}
	cancel(2) // the listing waiting for the call
	cancel(1) // the call
	for name, ch := range map[string]<-chan reply{"tools/list": list, "tools/call": call} {
		r := <-ch
		if r.err != nil || r.code != http.StatusOK || r.contentType != "text/event-stream" || r.body != "" {
			t.Errorf("the cancelled %s: %d %q %q %v, want 200 and an event stream without a message", name, r.code, r.contentType, r.body, r.err)
		}
	}
	// The session is free for the next call, which is answered.
	r := <-post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}`)
	if r.code != http.StatusOK || r.contentType != "application/json" {
		t.Fatalf("the call after the cancelled ones: %d %q %s", r.code, r.contentType, r.body)
	}
	jsonEq(t, r.body, `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"3"}],"structuredContent":{"result":3},"isError":false}}`)
}

// cancelRequest sends a standard session's notifications/cancelled for the
// request id, with reason when it is not empty, and checks its 202.
func cancelRequest(t *testing.T, s *testServer, hdr map[string]string, id int, reason string) {
	t.Helper()
	params := fmt.Sprintf(`{"requestId":%d}`, id)
	if reason != "" {
		params = fmt.Sprintf(`{"requestId":%d,"reason":%q}`, id, reason)
	}
	msg := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":` + params + `}`
	if code, body, _ := s.httpDo(t, "POST", "/mcp", msg, hdr); code != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: %d %s", code, body)
	}
}
