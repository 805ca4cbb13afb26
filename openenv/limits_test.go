package openenv_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/openenv"
)

// smallReplies is the smallest reply limit, which every test here uses.
const smallReplies = openenv.MinReplyBytes

func TestServer_InspectReplyBytes(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{MaxReplyBytes: smallReplies})
	c := s.dial(t)

	t.Run("BackendLimit", func(t *testing.T) {
		roundTrip(t, c, `{"type":"inspect","data":{"sql":"SELECT message FROM echoes"}}`)
		lim := fake.inspectLimit.Load()
		if lim == nil || lim.MaxRows != openenv.DefaultInspectRowLimit || lim.MaxBytes != smallReplies {
			t.Errorf("the backend read with limit %+v, want %d rows and %d bytes", lim, openenv.DefaultInspectRowLimit, smallReplies)
		}
	})

	t.Run("Truncated", func(t *testing.T) {
		// 100 rows of 10 KiB: the rows that fit are sent.
		reply := roundTrip(t, c, `{"type":"inspect","data":{"sql":"SELECT wide"}}`)
		if len(reply) > smallReplies {
			t.Errorf("reply of %d bytes, over the limit of %d", len(reply), smallReplies)
		}
		rows := field(t, reply, "data.rows").([]any)
		if len(rows) == 0 || len(rows) > 6 || field(t, reply, "data.truncated") != true {
			t.Fatalf("%d rows, truncated %v; want the few that fit, truncated", len(rows), field(t, reply, "data.truncated"))
		}
		want := fmt.Sprintf("the rows after the first %d would take the reply past the limit of %d bytes on a reply (the server's max-reply-bytes)", len(rows), smallReplies)
		if got := str(t, reply, "data.truncated_reason"); got != want {
			t.Errorf("truncated_reason %q, want %q", got, want)
		}
	})

	t.Run("CutByTheBackend", func(t *testing.T) {
		reply := roundTrip(t, c, `{"type":"inspect","data":{"sql":"SELECT cut"}}`)
		if field(t, reply, "data.truncated") != true || !strings.Contains(str(t, reply, "data.truncated_reason"), "max-reply-bytes") {
			t.Errorf("reply %s: want truncated by the byte limit", reply)
		}
	})

	t.Run("RowLimitReason", func(t *testing.T) {
		reply := roundTrip(t, c, `{"type":"inspect","data":{"sql":"SELECT n FROM numbers"}}`)
		if got, want := str(t, reply, "data.truncated_reason"), "the query has more than 1000 rows; the reply holds the first 1000 (the server's inspect row limit)"; got != want {
			t.Errorf("truncated_reason %q, want %q", got, want)
		}
	})

	t.Run("ColumnNamesTooLong", func(t *testing.T) {
		reply := roundTrip(t, c, `{"type":"inspect","data":{"sql":"SELECT named"}}`)
		if str(t, reply, "data.code") != "EXECUTION_ERROR" || !strings.Contains(str(t, reply, "data.message"), "10 column names take") {
			t.Errorf("reply %s: want an error naming the column names and the limit", reply)
		}
	})

	t.Run("HTTP", func(t *testing.T) {
		status, body, _ := s.httpDo(t, "POST", "/inspect", `{"sql":"SELECT wide"}`, nil)
		if status != http.StatusOK || len(body) > smallReplies || field(t, body, "truncated") != true {
			t.Errorf("POST /inspect: %d, %d bytes, truncated %v", status, len(body), field(t, body, "truncated"))
		}
	})
}

func TestServer_ToolResultBytes(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{MaxReplyBytes: smallReplies})
	c := s.dial(t)
	const big = `{"n":30000}` // 30 KB of result, carried four times over in an MCP reply

	t.Run("Step", func(t *testing.T) {
		reply := roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"blob","arguments":`+big+`}}`)
		if len(reply) > smallReplies {
			t.Fatalf("reply of %d bytes, over the limit", len(reply))
		}
		kind, msg := str(t, reply, "data.observation.error.error_type"), str(t, reply, "data.observation.error.message")
		if kind != "execution_error" || !strings.Contains(msg, `tool "blob" returned a result too large to send: 30002 bytes of JSON, in a reply of up to`) ||
			!strings.Contains(msg, fmt.Sprintf("over the limit of %d bytes on a reply (the server's max-reply-bytes)", smallReplies)) {
			t.Errorf("error %s %q, want an execution_error naming the result's size and the limit", kind, msg)
		}
	})

	t.Run("Fits", func(t *testing.T) {
		reply := roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"blob","arguments":{"n":10000}}}`)
		if field(t, reply, "data.observation.error") != nil {
			t.Errorf("a 10 KB result was refused: %.300s", reply)
		}
	})

	t.Run("MCP", func(t *testing.T) {
		reply := s.rpc(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"blob","arguments":`+big+`}}`)
		if len(reply) > smallReplies || !strings.Contains(str(t, reply, "error.message"), "too large to send") || field(t, reply, "id") != json.Number("3") {
			t.Errorf("reply %.300s: want a JSON-RPC error for id 3 saying the result is too large", reply)
		}
	})
}

func TestServer_ReplyBytes(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{MaxReplyBytes: smallReplies})
	c := s.dial(t)
	// Each echo fits in its reply, but the state document carries them all.
	msg := strings.Repeat("m", 8000)
	for range 10 {
		reply := roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"echo","arguments":{"message":"`+msg+`"}}}`)
		if field(t, reply, "data.observation.error") != nil {
			t.Fatalf("echo: %.300s", reply)
		}
	}
	wantMsg := fmt.Sprintf("exceeds the limit of %d bytes on a reply (the server's max-reply-bytes)", smallReplies)

	// The state document leaves out the oldest records it cannot carry,
	// and says how many: the newest come, from seq dropped+1.
	fitted := func(t *testing.T, doc string) {
		t.Helper()
		dropped, _ := field(t, doc, "change_log_truncated.dropped").(json.Number).Int64()
		limit := field(t, doc, "change_log_truncated.reply_bytes")
		var state struct {
			ChangeLog []struct{ Seq int64 } `json:"change_log"`
		}
		if err := json.Unmarshal([]byte(doc), &state); err != nil {
			t.Fatal(err)
		}
		if len(doc) > smallReplies || dropped < 1 || fmt.Sprint(limit) != fmt.Sprint(smallReplies) || len(state.ChangeLog) == 0 || state.ChangeLog[0].Seq != dropped+1 ||
			state.ChangeLog[len(state.ChangeLog)-1].Seq != dropped+int64(len(state.ChangeLog)) {
			t.Errorf("state of %d bytes, %d records dropped (reply_bytes %v), %d kept: want the newest that fit in %d bytes, from seq dropped+1: %.300s",
				len(doc), dropped, limit, len(state.ChangeLog), smallReplies, doc)
		}
	}

	t.Run("State", func(t *testing.T) {
		reply := roundTrip(t, c, `{"type":"state"}`)
		if str(t, reply, "type") != "state" {
			t.Fatalf("state reply %.300s", reply)
		}
		data, _ := json.Marshal(field(t, reply, "data"))
		fitted(t, string(data))
	})

	t.Run("HTTPState", func(t *testing.T) {
		for range 10 {
			s.httpDo(t, "POST", "/step", `{"action":{"type":"call_tool","tool_name":"echo","arguments":{"message":"`+msg+`"}}}`, nil)
		}
		status, body, _ := s.httpDo(t, "GET", "/state", "", nil)
		if status != http.StatusOK {
			t.Fatalf("GET /state: %d %.300s", status, body)
		}
		fitted(t, body)
	})

	t.Run("Watch", func(t *testing.T) {
		_, body, _ := s.httpDo(t, "GET", "/sessions", "", nil)
		var list []struct{ Ref string }
		if err := json.Unmarshal([]byte(body), &list); err != nil || len(list) == 0 {
			t.Fatalf("GET /sessions: %s", body)
		}
		for _, ss := range list {
			status, body, _ := s.httpDo(t, "GET", "/sessions/"+ss.Ref+"/watch", "", nil)
			if status != http.StatusOK || len(body) > smallReplies {
				t.Fatalf("GET /sessions/%s/watch: %d, %d bytes: %.300s", ss.Ref, status, len(body), body)
			}
			data, _ := json.Marshal(field(t, body, "state"))
			fitted(t, string(data))
		}
	})

	t.Run("RPCID", func(t *testing.T) {
		// A JSON-RPC reply echoes the id; one too long to send is dropped.
		id := `"` + strings.Repeat("i", smallReplies) + `"`
		reply := s.rpc(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
		if len(reply) > smallReplies || field(t, reply, "id") != nil || !strings.Contains(str(t, reply, "error.message"), wantMsg) {
			t.Errorf("reply %.300s: want a JSON-RPC error with a null id naming the limit", reply)
		}
		if field(t, reply, "error.data") != nil || !strings.Contains(reply, `"data":null`) {
			t.Errorf("reply %.300s: want OpenEnv's error shape, data null", reply)
		}
	})

	t.Run("Batch", func(t *testing.T) {
		// A batch whose responses pass the limit stops at the message
		// whose response does, and says so: the server holds no reply many
		// times the request's size, and runs no call whose result it
		// cannot send. (A 2025-03-26 session: later versions have no
		// batches.)
		_, _, resp := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}`, nil)
		sid := resp.Header.Get(openenv.MCPSessionHeader)
		hdr := map[string]string{openenv.MCPSessionHeader: sid}
		call := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":"` + strings.Repeat("b", 4000) + `"}}}`
		var msgs []string
		for i := range 100 {
			msgs = append(msgs, fmt.Sprintf(call, i))
		}
		_, reply, _ := s.httpDo(t, "POST", "/mcp", "["+strings.Join(msgs, ",")+"]", hdr)
		msg, _ := field(t, reply, "error.message").(string)
		var k int
		if _, err := fmt.Sscanf(msg[strings.Index(msg, "at its message ")+len("at its message "):], "%d", &k); err != nil || !strings.Contains(msg, "of 100: it and the messages before it ran, the rest did not") ||
			!strings.Contains(msg, fmt.Sprintf("the limit of %d bytes on a reply (the server's max-reply-bytes)", smallReplies)) {
			t.Fatalf("reply %.400s: want an error naming the message at which the batch's reply passed the limit", reply)
		}
		_, state, _ := s.httpDo(t, "GET", "/state", "", map[string]string{openenv.SessionHeader: sid})
		if n := fmt.Sprint(field(t, state, "step_count")); n != fmt.Sprint(k) {
			t.Errorf("step_count %s after a batch refused at its message %d: want the %d calls up to it", n, k, k)
		}
	})

	t.Run("StandardRPCID", func(t *testing.T) {
		// The same on a standard client's session, in its shape: no data.
		_, _, resp := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, nil)
		hdr := map[string]string{openenv.MCPSessionHeader: resp.Header.Get(openenv.MCPSessionHeader)}
		id := `"` + strings.Repeat("i", smallReplies) + `"`
		_, reply, _ := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`, hdr)
		if len(reply) > smallReplies || field(t, reply, "id") != nil || !strings.Contains(str(t, reply, "error.message"), wantMsg) ||
			strings.Contains(reply, `"data"`) {
			t.Errorf("reply %.300s: want a JSON-RPC error with a null id naming the limit, without data", reply)
		}
	})
}

func TestParseInspect_IntegerParams(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	c := s.dial(t)
	for _, tt := range []struct {
		param string // the JSON param
		ok    bool   // accepted
	}{
		{"9223372036854775807", true},
		{"-9223372036854775808", true},
		{"9223372036854775808", false},
		{"-9223372036854775809", false},
		{"123456789012345678901234567890", false},
		{"1e30", true}, // a float, rounded as the client asked
	} {
		reply := roundTrip(t, c, `{"type":"inspect","data":{"sql":"SELECT ? AS value","params":["x",`+tt.param+`]}}`)
		if tt.ok {
			if str(t, reply, "type") != "error" || !strings.Contains(str(t, reply, "data.message"), "want 1 parameter, got 2") {
				t.Errorf("%s: %s, want it bound (and the fake to count 2 params)", tt.param, reply)
			}
			continue
		}
		if str(t, reply, "data.code") != "VALIDATION_ERROR" || !strings.Contains(str(t, reply, "data.message"), "data.params.1: Integer does not fit in 64 bits") {
			t.Errorf("%s: %s, want a VALIDATION_ERROR naming data.params.1", tt.param, reply)
		}
	}
}
