package openenv_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/schemas/schematest"
)

// The fuzz targets here drive a real server over the company world (fixture
// acme, SQLite stores on disk). Their properties: nothing panics, every
// input gets exactly the replies the protocol promises, every refusal is a
// protocol error that names the problem, and once the client is gone no
// session and no instance directory is left.

// worldFuzzConfig keeps fuzzed calls and queries short.
var worldFuzzConfig = openenv.Config{
	MaxSessions: 1 << 16, StepTimeout: 2 * time.Second, InspectTimeout: 50 * time.Millisecond,
	MaxMessageBytes: fuzzLimit,
}

// toolErrorTypes are the error_type values a failed call may carry.
var toolErrorTypes = []string{"execution_error", "invalid_args", "tool_not_found", "timeout"}

// checkRefusals fails when reply, a /ws frame, refuses without naming the
// problem: an error frame needs a message (and, for a validation error, one
// entry per failure, each named in the message) and must not be the server
// failing (a panic, an unencodable reply); a failed call needs a known
// error_type and a message; an MCP error needs a message.
func checkRefusals(tb testing.TB, reply []byte) {
	tb.Helper()
	var f struct {
		Type string `json:"type"`
		Data struct {
			Message     string                 `json:"message"`
			Code        string                 `json:"code"`
			Errors      []struct{ Msg string } `json:"errors"`
			Observation struct {
				Error *struct {
					ErrorType string `json:"error_type"`
					Message   string `json:"message"`
				} `json:"error"`
			} `json:"observation"`
			Error *struct {
				Message string `json:"message"`
				Data    *struct {
					ErrorType *string `json:"error_type"`
				} `json:"data"`
			} `json:"error"`
		} `json:"data"`
	}
	if err := json.Unmarshal(reply, &f); err != nil {
		tb.Fatalf("reply %.300s: %v", reply, err)
	}
	d := f.Data
	switch f.Type {
	case "error":
		if strings.TrimSpace(d.Message) == "" {
			tb.Errorf("error frame without a message: %.300s", reply)
		}
		// The server's own failures: it could not handle the input.
		if strings.HasPrefix(d.Message, "reply cannot be encoded") || strings.HasPrefix(d.Message, "internal error:") {
			tb.Errorf("the server failed on the input: %.300s", reply)
		}
		if d.Code == "VALIDATION_ERROR" {
			if len(d.Errors) == 0 {
				tb.Errorf("validation error that lists no failure: %.300s", reply)
			}
			for _, e := range d.Errors {
				if !strings.Contains(d.Message, e.Msg) {
					tb.Errorf("message %.300q does not name the failure %q", d.Message, e.Msg)
				}
			}
		}
	case "observation":
		if e := d.Observation.Error; e != nil {
			if !slices.Contains(toolErrorTypes, e.ErrorType) || strings.TrimSpace(e.Message) == "" {
				tb.Errorf("tool failure %q %.300q, want a known error_type and a message", e.ErrorType, e.Message)
			}
		}
	case "mcp":
		if e := d.Error; e != nil {
			if strings.TrimSpace(e.Message) == "" {
				tb.Errorf("JSON-RPC error without a message: %.300s", reply)
			}
			if e.Data != nil && e.Data.ErrorType != nil && !slices.Contains(toolErrorTypes, *e.Data.ErrorType) {
				tb.Errorf("JSON-RPC tool failure with error_type %q", *e.Data.ErrorType)
			}
		}
	}
}

// FuzzWorldWSMessage sends one arbitrary frame on a fresh /ws connection to
// the company world, then a state message. The frame gets exactly one valid
// reply that names any problem (none for a close message; an error and a
// close for a binary frame or a text frame that is not UTF-8), the state message is still answered, and
// closing the connection leaves no session and no instance behind.
func FuzzWorldWSMessage(f *testing.F) {
	for _, seed := range []string{
		`{"type":"reset","data":{"seed":7,"episode_id":"ep-1"}}`,
		`{"type":"step","data":{"type":"list_tools"}}`,
		`{"type":"step","data":{"type":"call_tool","tool_name":"invoice","arguments":{"amount":500}}}`,
		`{"type":"step","data":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Ada","role":"x"}}}`,
		`{"type":"step","data":{"tool_name":"chat_send_message","arguments":{"channel":"general","text":"hi"}}}`,
		`{"type":"step","data":{"tool_name":"pay_refund_charge","arguments":{"charge_id":"nope"}}}`,
		`{"type":"step","data":{"tool_name":"pay_create_charge","arguments":{"amount":9223372036854775808}}}`,
		`{"type":"step","data":{"tool_name":"invoice'; DROP TABLE staff;--"}}`,
		`{"type":"step","data":{"tool_name":"seahaven_control","arguments":{"action":"advance_clock","seconds":60}}}`,
		`{"type":"step","data":{"tool_name":"reset"}}`,
		`{"type":"state"}`, `{"type":"close"}`, `{"type":"close","data":{}}`,
		`{"type":"inspect","data":{"sql":"SELECT count(*) FROM payments.charges WHERE amount > ?","params":[100]}}`,
		`{"type":"inspect","data":{"sql":"DROP TABLE staff"}}`,
		`{"type":"inspect","data":{"sql":"WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n) SELECT max(x) FROM n"}}`,
		`{"type":"inspect","data":{"sql":"PRAGMA integrity_check"}}`,
		`{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_staff"}}}`,
		`{"type":"mcp","data":{"jsonrpc":"2.0","id":2,"method":"openenv/session/create"}}`,
		`{"type":"reset","data":{"fixture":"../../etc/passwd"}}`,
		`{"type":"reset","data":{"fixture":"","clock_mode":"step","control_tools":true}}`,
		`{"type":`, `[]`, `"x"`, "{\"type\":\"st\xffate\"}", `{"type":"step","data":[[[[[[[[[[[[]]]]]]]]]]]]}`,
	} {
		f.Add([]byte(seed), false)
	}
	f.Add([]byte(`{"type":"state"}`), true)
	s := mustServeCompany(f, worldFuzzConfig)

	f.Fuzz(func(t *testing.T, frame []byte, binary bool) {
		if len(frame) > fuzzLimit {
			t.Skip("over the message limit, covered by TestHostile_Frame17MiB")
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
		switch {
		case binary:
			reply := recv(t, c)
			if !strings.Contains(reply, `"code":"SESSION_ERROR"`) {
				t.Fatalf("binary frame: reply %s", reply)
			}
			expectClose(t, c, websocket.StatusUnsupportedData, "")
		case !utf8.Valid(frame):
			if reply := recv(t, c); !strings.Contains(reply, `"code":"INVALID_JSON"`) {
				t.Fatalf("frame that is not UTF-8: reply %s", reply)
			}
			expectClose(t, c, websocket.StatusInvalidFramePayloadData, "")
		case isCloseMessage(frame):
			if _, b, err := c.Read(ctx); err == nil {
				t.Fatalf("close message got a reply %s", b)
			} else if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("close message: %v, want a normal close", err)
			}
		default:
			send(t, c, `{"type":"state"}`)
			first := recvRaw(t, c)
			if !utf8.ValidString(first) {
				t.Errorf("reply is not UTF-8: %q", first)
			}
			if err := schematest.Validate("server_message", []byte(first)); err != nil {
				t.Errorf("reply to %q: %v", frame, err)
			}
			checkRefusals(t, []byte(first))
			if n := len(s.Sessions()); n != 1 {
				t.Errorf("%d sessions live with one connection open", n)
			}
			if second := recv(t, c); !strings.HasPrefix(second, `{"type":"state"`) {
				t.Errorf("reply to the following state message: %s", second)
			}
			c.CloseNow()
		}
		s.settle(t)
	})
}

// FuzzWorldJSONRPC posts arbitrary bodies to /mcp on the company world. The
// reply is one valid JSON-RPC response (202 and no body for exactly the
// notifications) whose errors name their problem; a session the body made
// is closed by the test, and then none is left, nor any instance.
func FuzzWorldJSONRPC(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"invoice","arguments":{"amount":500}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"hire","arguments":{"name":"` + strings.Repeat("n", 201) + `"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"chat_read_channel","arguments":{"channel":"general"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"eu_create_charge","arguments":{"amount":1e400}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"shop_place_order","arguments":{"total":-1}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x'; DROP TABLE staff;--"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"openenv/session/create","params":{}}`,
		`{"jsonrpc":"2.0","id":9,"method":"openenv/session/close","params":{"session_id":"x"}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"accounts","session_id":"nope"}}`,
		`{}`, `[]`, `{"jsonrpc":`, ``, `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"initialize"}`, `{"jsonrpc":"2.0","id":0,"method":"initialize"}`,
	} {
		f.Add([]byte(seed))
	}
	s := mustServeCompany(f, worldFuzzConfig)
	client := &http.Client{Timeout: waitLimit}

	f.Fuzz(func(t *testing.T, body []byte) {
		resp, err := client.Post(s.ts.URL+"/mcp", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if sid := resp.Header.Get(openenv.MCPSessionHeader); sid != "" {
			// An initialize started a standard MCP session: end it.
			if status, body, _ := s.httpDo(t, http.MethodDelete, "/mcp", "", map[string]string{openenv.MCPSessionHeader: sid}); status != http.StatusNoContent {
				t.Fatalf("DELETE /mcp of the session initialize made: %d %s", status, body)
			}
		}
		if checkMCPPost(t, body, resp.StatusCode, out) {
			checkRefusals(t, []byte(`{"type":"mcp","data":`+string(out)+`}`))
			var made struct {
				Result struct {
					SessionID string `json:"session_id"`
				} `json:"result"`
			}
			if json.Unmarshal(out, &made) == nil && made.Result.SessionID != "" {
				closeReply := s.rpc(t, `{"jsonrpc":"2.0","id":0,"method":"openenv/session/close","params":{"session_id":`+
					string(mustJSON(t, made.Result.SessionID))+`}}`)
				if !strings.Contains(closeReply, `"closed":true`) {
					t.Fatalf("closing the session the body made: %s", closeReply)
				}
			}
		}
		s.settle(t)
	})
}

// mustJSON encodes v.
func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// FuzzResetData sends arbitrary reset data on a fresh /ws connection to the
// company world. The reset either succeeds, and the state document then
// shows what the data asked for, or is refused with a VALIDATION_ERROR,
// EXECUTION_ERROR or INVALID_JSON naming the problem, and the session has
// no instance (data that is not UTF-8 also closes the socket with 1007). Either way closing the connection leaves nothing behind.
func FuzzResetData(f *testing.F) {
	for _, seed := range []string{
		`{}`, `null`, `{"seed":7,"episode_id":"ep-7"}`, `{"fixture":""}`, `{"fixture":"acme"}`,
		`{"fixture":"acme","now":"2026-01-01T00:00:00Z","clock_mode":"step"}`,
		`{"now":"2026-13-45T99:99:99Z"}`, `{"now":"yesterday"}`, `{"clock_mode":"wall"}`, `{"clock_mode":"FROZEN"}`,
		`{"startup":{"plan":"pro"}}`, `{"startup":{"region":""}}`, `{"startup":{"nope":1}}`,
		`{"startup":{"plan":1e999}}`, `{"startup":{"plan":[1,{"a":null}]}}`, `{"startup":[]}`,
		`{"fixture":"../../etc/passwd"}`, `{"fixture":"/etc/passwd"}`, `{"fixture":"acme\u0000"}`,
		`{"control_tools":true}`, `{"control_tools":"yes"}`, `{"seed":-1}`, `{"seed":1e3}`,
		`{"seed":9223372036854775807}`, `{"seed":9223372036854775808}`,
		`{"episode_id":"` + strings.Repeat("e", 256) + `"}`, `{"episode_id":"\ud800"}`,
		`{"seed":1,"seed":2}`, `{"extra":1,"other":2}`, `[]`, `"x"`, `1`, `{`, "{\"episode_id\":\"\xff\"}",
	} {
		f.Add([]byte(seed))
	}
	s := mustServeCompany(f, worldFuzzConfig)

	f.Fuzz(func(t *testing.T, data []byte) {
		frame := []byte(`{"type":"reset","data":` + string(data) + `}`)
		if len(frame) > fuzzLimit {
			t.Skip("over the message limit")
		}
		c := s.dial(t)
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := c.Write(ctx, websocket.MessageText, frame); err != nil {
			t.Fatal(err)
		}
		reply := recv(t, c)
		checkRefusals(t, []byte(reply))
		if !utf8.Valid(frame) {
			if code := str(t, reply, "data.code"); code != "INVALID_JSON" {
				t.Errorf("reset that is not UTF-8 refused with %s: %s", code, reply)
			}
			expectClose(t, c, websocket.StatusInvalidFramePayloadData, "")
			s.settle(t)
			return
		}
		state := roundTrip(t, c, `{"type":"state"}`)
		switch str(t, reply, "type") {
		case "observation":
			checkResetState(t, data, state)
		case "error":
			code := str(t, reply, "data.code")
			if code != "VALIDATION_ERROR" && code != "EXECUTION_ERROR" && code != "INVALID_JSON" {
				t.Errorf("reset refused with %s: %s", code, reply)
			}
			if comp := field(t, state, "data.composition"); comp != nil {
				t.Errorf("a refused first reset left an instance: %.300s", state)
			}
		default:
			t.Fatalf("reply to a reset: %.300s", reply)
		}
		c.CloseNow()
		s.settle(t)
	})
}

// checkResetState checks the state document after a successful reset with
// data: the episode id, seed, fixture and clock mode it asked for.
func checkResetState(tb testing.TB, data []byte, state string) {
	tb.Helper()
	var req map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&req); err != nil {
		return // null: the defaults
	}
	str := func(k string) (string, bool) {
		var s string
		raw, ok := req[k]
		return s, ok && bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) && json.Unmarshal(raw, &s) == nil
	}
	if want, ok := str("episode_id"); ok {
		if got, _ := field(tb, state, "data.episode_id").(string); got != want {
			tb.Errorf("episode_id %q, want %q", got, want)
		}
	}
	if raw, ok := req["seed"]; ok && string(bytes.TrimSpace(raw)) != "null" {
		lit := string(bytes.TrimSpace(raw))
		want, err := strconv.ParseInt(lit, 10, 64)
		if f, ferr := strconv.ParseFloat(lit, 64); err != nil && ferr == nil && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			want, err = int64(f), nil // a zero fraction reads as the integer
		}
		if got := fmt.Sprint(field(tb, state, "data.seed")); err != nil || got != strconv.FormatInt(want, 10) {
			tb.Errorf("seed %s, want %s", got, raw)
		}
	}
	var fixtureID *string
	if m, ok := field(tb, state, "data.fixture").(map[string]any); ok {
		id, _ := m["id"].(string)
		fixtureID = &id
	}
	want, ok := str("fixture")
	if !ok {
		want = "acme" // the server's default fixture
	}
	switch {
	case want == "" && fixtureID != nil:
		tb.Errorf("fixture %q, want genesis", *fixtureID)
	case want != "" && (fixtureID == nil || *fixtureID != want):
		tb.Errorf("fixture %v, want %q", fixtureID, want)
	}
	if want, ok := str("clock_mode"); ok {
		if got, _ := field(tb, state, "data.clock_mode").(string); got != want {
			tb.Errorf("clock_mode %q, want %q", got, want)
		}
	}
}
