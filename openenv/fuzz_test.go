package openenv_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/schemas/schematest"
)

// fuzzLimit is MaxMessageBytes of the fuzzed servers.
const fuzzLimit = 1 << 16

// fuzzConfig keeps fuzzed calls short.
var fuzzConfig = openenv.Config{
	MaxSessions: 1 << 16, StepTimeout: 5 * time.Millisecond, InspectTimeout: 5 * time.Millisecond,
	MaxMessageBytes: fuzzLimit,
}

// isCloseMessage reports whether frame is a valid close message.
func isCloseMessage(frame []byte) bool {
	var m map[string]json.RawMessage
	if !json.Valid(frame) || !utf8.Valid(frame) || hasDuplicateKey(frame) || json.Unmarshal(frame, &m) != nil || len(m) != 1 {
		return false
	}
	var typ string
	return bytes.HasPrefix(bytes.TrimSpace(m["type"]), []byte(`"`)) && json.Unmarshal(m["type"], &typ) == nil && typ == "close"
}

// FuzzWSMessage sends one arbitrary frame on a fresh /ws connection, then a
// state message. The server must answer the frame with exactly one valid
// reply and go on to answer the state message, except for a close message
// (no reply, a normal close), a binary frame (an error, then a close 1003)
// and a text frame that is not UTF-8 (an error, then a close 1007).
func FuzzWSMessage(f *testing.F) {
	for _, seed := range []string{
		`{"type":"reset","data":{"seed":7,"episode_id":"ep-1"}}`,
		`{"type":"step","data":{"type":"call_tool","tool_name":"echo","arguments":{"message":"hi"}}}`,
		`{"type":"step","data":{"type":"list_tools"}}`,
		`{"type":"step","data":{"tool_name":"slow"}}`,
		`{"type":"step","data":{"tool_name":"boom"}}`,
		`{"type":"state"}`, `{"type":"close"}`, `{"type":"close","data":{}}`,
		`{"type":"inspect","data":{"sql":"SELECT ? AS value","params":[1.5]}}`,
		`{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}}`,
		`{"type":"mcp","data":{"jsonrpc":"2.0","method":"notifications/initialized"}}`,
		`{"type":`, `[]`, `"x"`, `{"type":"reset","data":{"startup":{"greeting":1e999}}}`,
		"{\"type\":\"dan\xffce\"}",
	} {
		f.Add([]byte(seed), false)
	}
	f.Add([]byte(`{"type":"state"}`), true)
	s := mustServe(f, newFake(f), fuzzConfig)

	f.Fuzz(func(t *testing.T, frame []byte, binary bool) {
		if len(frame) > fuzzLimit {
			t.Skip("over the message limit, covered by TestWS_MessageTooBig")
		}
		c := s.dial(t)
		typ := websocket.MessageText
		if binary {
			typ = websocket.MessageBinary
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := c.Write(ctx, typ, frame); err != nil {
			t.Fatal(err)
		}
		if binary {
			reply := recv(t, c)
			if !strings.Contains(reply, `"code":"SESSION_ERROR"`) {
				t.Fatalf("binary frame: reply %s", reply)
			}
			expectClose(t, c, websocket.StatusUnsupportedData, "")
			return
		}
		if !utf8.Valid(frame) {
			if reply := recv(t, c); !strings.Contains(reply, `"code":"INVALID_JSON"`) {
				t.Fatalf("frame that is not UTF-8: reply %s", reply)
			}
			expectClose(t, c, websocket.StatusInvalidFramePayloadData, "")
			return
		}
		if isCloseMessage(frame) {
			_, b, err := c.Read(ctx)
			if err == nil {
				t.Fatalf("close message got a reply %s", b)
			}
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("close message: %v, want a normal close", err)
			}
			return
		}
		send(t, c, `{"type":"state"}`)
		first := recvRaw(t, c)
		if !utf8.ValidString(first) {
			t.Errorf("reply is not UTF-8: %q", first)
		}
		if err := schematest.Validate("server_message", []byte(first)); err != nil {
			t.Errorf("reply to %q: %v", frame, err)
		}
		if second := recv(t, c); !strings.HasPrefix(second, `{"type":"state"`) {
			t.Errorf("reply to the following state message: %s", second)
		}
	})
}

// isNotification reports whether body is a valid JSON-RPC notification.
func isNotification(body []byte) bool {
	method, hasID, ok := rpcMessage(body)
	return ok && !hasID && strings.HasPrefix(method, "notifications/")
}

// isIDlessInitialize reports whether body is a valid JSON-RPC initialize
// without an id, which the MCP specification does not allow: a standard
// client's initialize is refused with 400 and starts no session.
func isIDlessInitialize(body []byte) bool {
	method, hasID, ok := rpcMessage(body)
	return ok && !hasID && method == "initialize"
}

// rpcMessage reads body as one JSON-RPC 2.0 message of the keys jsonrpc
// ("2.0"), method (a string), params (an object) and id (any value): ok
// is false for anything else.
func rpcMessage(body []byte) (method string, hasID, ok bool) {
	var m map[string]json.RawMessage
	if !json.Valid(body) || hasDuplicateKey(body) || !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) || json.Unmarshal(body, &m) != nil {
		return "", false, false
	}
	var version string
	for k, v := range m {
		switch k {
		case "jsonrpc":
			if !bytes.HasPrefix(bytes.TrimSpace(v), []byte(`"`)) || json.Unmarshal(v, &version) != nil {
				return "", false, false
			}
		case "method":
			if !bytes.HasPrefix(bytes.TrimSpace(v), []byte(`"`)) || json.Unmarshal(v, &method) != nil {
				return "", false, false
			}
		case "params":
			if !bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) {
				return "", false, false
			}
		case "id":
			hasID = true
		default:
			return "", false, false
		}
	}
	return method, hasID, version == "2.0" && method != ""
}

// FuzzJSONRPC posts arbitrary bodies to /mcp. The reply is always HTTP 200
// with one valid JSON-RPC response, 202 with no body for exactly the valid
// notifications, or 400 with a JSON-RPC error for exactly the valid
// initialize requests without an id. An initialize is a standard MCP
// client's, and is answered in its shape.
func FuzzJSONRPC(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":5,"b":3}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fail"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"openenv/session/create","params":{}}`,
		`{"jsonrpc":"2.0","id":5,"method":"openenv/session/close","params":{"session_id":"x"}}`,
		`{}`, `[]`, `{"jsonrpc":`, ``, `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"initialize"}`,
	} {
		f.Add([]byte(seed))
	}
	s := mustServe(f, newFake(f), fuzzConfig)
	client := &http.Client{Timeout: waitLimit}

	f.Fuzz(func(t *testing.T, body []byte) {
		resp, err := client.Post(s.ts.URL+"/mcp", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		checkMCPPost(t, body, resp.StatusCode, out)
	})
}

// checkMCPPost checks the reply to body posted to /mcp without a session
// header: 202 and no body for exactly the valid notifications, 400 for
// exactly the valid initialize requests without an id, else 200; and one
// JSON-RPC response, in the shape of its client's dialect (a standard
// client's initialize may leave out an error's data). It reports whether
// the reply is a response.
func checkMCPPost(t *testing.T, body []byte, status int, out []byte) bool {
	t.Helper()
	if isNotification(body) {
		if status != http.StatusAccepted || len(out) != 0 {
			t.Fatalf("notification %q: %d %q, want 202 and no body", body, status, out)
		}
		return false
	}
	want := http.StatusOK
	if isIDlessInitialize(body) {
		want = http.StatusBadRequest
	}
	if status != want {
		t.Fatalf("%q: status %d, want %d", body, status, want)
	}
	method, _, _ := rpcMessage(body)
	if err := checkRPCShape(out, method != "initialize"); err != nil {
		t.Fatalf("%q: %v\n%s", body, err, out)
	}
	return true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkRPCShape checks the shape of one JSON-RPC 2.0 response; withData
// is whether an error carries data, as OpenEnv's dialect has it, or may
// leave it out, as a standard client's replies do.
func checkRPCShape(b []byte, withData bool) error {
	if !utf8.Valid(b) {
		return errors.New("not UTF-8")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		return errors.New(`jsonrpc is not "2.0"`)
	}
	if _, ok := m["id"]; !ok {
		return errors.New("no id")
	}
	_, hasResult := m["result"]
	rawErr, hasError := m["error"]
	if hasResult == hasError || len(m) != 3 {
		return errors.New("want jsonrpc, id and exactly one of result and error")
	}
	if hasError {
		var e map[string]json.RawMessage
		if err := json.Unmarshal(rawErr, &e); err != nil {
			return err
		}
		var code int
		var msg string
		if json.Unmarshal(e["code"], &code) != nil || json.Unmarshal(e["message"], &msg) != nil {
			return errors.New("error without an integer code and a string message")
		}
		if _, ok := e["data"]; (!ok && withData) || len(e) != 2+btoi(ok) {
			return errors.New("error must have exactly code, message and data")
		}
	}
	return nil
}
