package openenv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/testfs"
	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/task"
)

// lateTransport is one way of calling tools on a session, for
// TestServer_LateCall.
type lateTransport struct {
	name string
	// open starts a session and returns its call (a tools/call or step of
	// tool with the JSON arguments args, answered as text: the status and
	// body, or the frame) and its probe (the value of one inspect query,
	// and the state document, as text).
	open func(t *testing.T, s *worldServer) (call func(tool, args string) string, probe func(sql string) (value, state string))
	// refused reports whether reply has the protocol's error shape.
	refused func(t *testing.T, reply string) bool
}

// lateTransports are the transports a step arrives by: /ws, POST /step,
// and tools/call of OpenEnv's JSON-RPC dialect, of a standard MCP client
// (2025-11-25) and of a 2026-07-28 client.
var lateTransports = []lateTransport{
	{
		name: "ws",
		open: func(t *testing.T, s *worldServer) (func(string, string) string, func(string) (string, string)) {
			c := s.dial(t)
			roundTrip(t, c, `{"type":"reset"}`)
			call := func(tool, args string) string {
				return roundTrip(t, c, fmt.Sprintf(`{"type":"step","data":{"type":"call_tool","tool_name":%q,"arguments":%s}}`, tool, args))
			}
			probe := func(sql string) (string, string) {
				return inspectValue(t, c, sql), roundTrip(t, c, `{"type":"state"}`)
			}
			return call, probe
		},
		refused: func(t *testing.T, reply string) bool {
			return strings.HasPrefix(reply, `{"type":"error"`) && strings.Contains(reply, `"code":"SESSION_ERROR"`)
		},
	},
	{
		name: "http",
		open: func(t *testing.T, s *worldServer) (func(string, string) string, func(string) (string, string)) {
			hdr := map[string]string{openenv.SessionHeader: "late-http"}
			if code, body := latePost(t, s, "/reset", `{}`, hdr); code != http.StatusOK {
				t.Fatalf("reset: %d %s", code, body)
			}
			call := func(tool, args string) string {
				code, body := latePost(t, s, "/step", fmt.Sprintf(`{"action":{"type":"call_tool","tool_name":%q,"arguments":%s}}`, tool, args), hdr)
				return fmt.Sprintf("%d %s", code, body)
			}
			return call, httpProbe(t, s, hdr)
		},
		refused: func(t *testing.T, reply string) bool {
			return strings.HasPrefix(reply, "503 ")
		},
	},
	{
		name: "openenv-rpc",
		open: func(t *testing.T, s *worldServer) (func(string, string) string, func(string) (string, string)) {
			sid := str(t, s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`), "result.session_id")
			call := func(tool, args string) string {
				_, body := latePost(t, s, "/mcp", fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"session_id":%q,"name":%q,"arguments":%s}}`, sid, tool, args), nil)
				return body
			}
			return call, httpProbe(t, s, map[string]string{openenv.SessionHeader: sid})
		},
		refused: rpcRefused,
	},
	{
		name: "mcp-2025-11-25",
		open: func(t *testing.T, s *worldServer) (func(string, string) string, func(string) (string, string)) {
			hdr, _ := standardSession(t, s.testServer)
			hdr["Accept"] = "application/json, text/event-stream"
			call := func(tool, args string) string {
				_, body := latePost(t, s, "/mcp", fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tool, args), hdr)
				return body
			}
			return call, httpProbe(t, s, map[string]string{openenv.SessionHeader: hdr[openenv.MCPSessionHeader]})
		},
		refused: rpcRefused,
	},
	{
		name: "mcp-2026-07-28",
		open: func(t *testing.T, s *worldServer) (func(string, string) string, func(string) (string, string)) {
			sid := str(t, s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`), "result.session_id")
			call := func(tool, args string) string {
				_, body := latePost(t, s, "/mcp?session_id="+sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":%q,"arguments":%s,%s}}`, tool, args, modernMeta),
					map[string]string{"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool})
				return body
			}
			return call, httpProbe(t, s, map[string]string{openenv.SessionHeader: sid})
		},
		refused: rpcRefused,
	},
}

// rpcRefused reports whether reply is a JSON-RPC error of the server.
func rpcRefused(t *testing.T, reply string) bool {
	return strings.Contains(reply, `"error":{"code":-32000,`)
}

// latePost posts body to path on s, failing the test when no reply comes
// within waitLimit, and returns the status and body.
func latePost(t *testing.T, s *worldServer, path, body string, hdr map[string]string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := s.ts.Client().Do(req)
	if err != nil {
		t.Fatalf("POST %s %s: %v", path, body, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// httpProbe is the probe of a session hdr names, through POST /inspect and
// GET /state.
func httpProbe(t *testing.T, s *worldServer, hdr map[string]string) func(string) (string, string) {
	return func(sql string) (string, string) {
		code, body := latePost(t, s, "/inspect", fmt.Sprintf(`{"sql":%q}`, sql), hdr)
		if code != http.StatusOK {
			t.Fatalf("inspect %s: %d %s", sql, code, body)
		}
		var reply struct{ Rows [][]any }
		if err := json.Unmarshal([]byte(body), &reply); err != nil || len(reply.Rows) != 1 || len(reply.Rows[0]) != 1 {
			t.Fatalf("inspect %s: %s, want one value", sql, body)
		}
		_, state, _ := s.httpDo(t, http.MethodGet, "/state", "", hdr)
		return fmt.Sprint(reply.Rows[0][0]), state
	}
}

// TestServer_LateCall: a tool that ignores its context and blocks past the
// step timeout is answered at its deadline, as timed out, on every
// transport, while it still blocks, where before its step was answered
// only when it returned. Its session's next request waits for it within
// the step timeout, then is refused saying why; once the tool returns, the
// session serves again, and neither the store nor the change log holds
// the late call's write.
func TestServer_LateCall(t *testing.T) {
	const timeout = 300 * time.Millisecond
	s := mustServeWorld(t, faultyWorld, app.Config{}, openenv.Config{StepTimeout: timeout})
	for _, tr := range lateTransports {
		t.Run(tr.name, func(t *testing.T) {
			late, kept := "late-"+tr.name, "kept-"+tr.name
			started, release := holdUntilReleased(late)
			t.Cleanup(release) // before the server's cleanup, which waits for the call
			call, probe := tr.open(t, s)

			reply := call("stuck", `{"body":"`+late+`"}`)
			awaitSlow(t, started)
			// The tool is still blocked: only release lets it return.
			if want := `tool \"stuck\" timed out after ` + timeout.String(); !strings.Contains(reply, want) {
				t.Fatalf("the late call: %.500s, want a timeout: %s", reply, want)
			}

			reply = call("slow", `{"body":"`+kept+`"}`)
			if !tr.refused(t, reply) || !strings.Contains(reply, `A call of tool \"stuck\" passed its deadline`) || !strings.Contains(reply, "has not returned yet (it ignores its context)") {
				t.Fatalf("a call while the late one blocks: %.500s, want it refused saying why", reply)
			}

			release()
			for deadline := time.Now().Add(waitLimit); ; {
				// The session is free once the late call has returned.
				reply = call("slow", `{"body":"`+kept+`"}`)
				if !tr.refused(t, reply) || time.Now().After(deadline) {
					break
				}
			}
			if tr.refused(t, reply) || strings.Contains(reply, "timed out") || !strings.Contains(reply, `"id"`) {
				t.Fatalf("a call after the late one returned: %.500s", reply)
			}
			n, state := probe("SELECT count(*) FROM notes WHERE body = '" + late + "'")
			if n != "0" {
				t.Errorf("%s notes of the late call in the store, want none", n)
			}
			if strings.Contains(state, late) || !strings.Contains(state, kept) {
				t.Errorf("state %.2000s: want the change log to hold %s and not %s", state, kept, late)
			}
		})
	}
}

// TestServer_LateCallSessionEnds: a session whose late call still blocks
// ends at once when its client leaves (a /ws close), and its instance
// closes once the call returns; Shutdown, bounded by its context, is not
// held by it beyond.
func TestServer_LateCallSessionEnds(t *testing.T) {
	s := mustServeWorld(t, faultyWorld, app.Config{}, openenv.Config{StepTimeout: 300 * time.Millisecond})
	c, release := lateOnWS(t, s, "late-close")
	send(t, c, `{"type":"close"}`)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("after close, while the late call blocks: %v, want a normal close", err)
	}
	release()
	s.settle(t)
}

// untilServed returns the reply of send, a /ws request, once it is no
// error frame (its session free again), or its last reply after waitLimit.
func untilServed(t *testing.T, send func() string) string {
	t.Helper()
	for deadline := time.Now().Add(waitLimit); ; {
		if reply := send(); str(t, reply, "type") != "error" || time.Now().After(deadline) {
			return reply
		}
	}
}

// lateOnWS opens a /ws session on s whose call of the stuck tool, holding
// body, is answered as timed out and runs on; release lets it return.
func lateOnWS(t *testing.T, s *worldServer, body string) (c *websocket.Conn, release func()) {
	t.Helper()
	started, release := holdUntilReleased(body)
	t.Cleanup(release)
	c = s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	if kind, _ := toolFailure(t, callTool(t, c, "stuck", fmt.Sprintf(`{"body":%q}`, body))); kind != "timeout" {
		t.Fatalf("the late call: %s, want a timeout", kind)
	}
	awaitSlow(t, started)
	return c, release
}

// TestServer_LateCallClosedSession: a request naming a session closed
// while a call past its deadline runs on is told the id is taken until the
// call returns, where before it was told the session was unknown, though
// its id could not be used again; once the call returns, it is unknown.
func TestServer_LateCallClosedSession(t *testing.T) {
	s := mustServeWorld(t, faultyWorld, app.Config{}, openenv.Config{StepTimeout: 300 * time.Millisecond})
	started, release := holdUntilReleased("late-closed")
	t.Cleanup(release)
	sid := str(t, s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`), "result.session_id")
	call := func(id int) string {
		_, body := latePost(t, s, "/mcp", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"session_id":%q,"name":"stuck","arguments":{"body":"late-closed"}}}`, id, sid), nil)
		return body
	}
	if reply := call(2); !strings.Contains(reply, `timed out after 300ms`) {
		t.Fatalf("the late call: %s, want a timeout", reply)
	}
	awaitSlow(t, started)
	if _, body := latePost(t, s, "/mcp", fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"openenv/session/close","params":{"session_id":%q}}`, sid), nil); !strings.Contains(body, `"closed":true`) {
		t.Fatalf("close: %s", body)
	}
	if reply, want := call(4), `Session `+sid+` was closed, but its call of tool \"stuck\", which passed its deadline `; !strings.Contains(reply, want) || !strings.Contains(reply, "the id is taken until it does") {
		t.Errorf("a call on the closed session while the late call runs: %s, want %s… the id is taken until it does", reply, want)
	}
	release()
	s.settle(t)
	if reply := call(5); !strings.Contains(reply, "Unknown session_id") {
		t.Errorf("a call on the closed session once the late call returned: %s, want Unknown session_id", reply)
	}
}

// TestServer_LateCallDeletedMCPSession: a standard client's session ended
// by DELETE /mcp while its call past its deadline runs on answers every
// later request naming its Mcp-Session-Id with the spec's 404, a ping and a
// notification too, where before those, needing no call slot, were
// answered as on a live session.
func TestServer_LateCallDeletedMCPSession(t *testing.T) {
	s := mustServeWorld(t, faultyWorld, app.Config{}, openenv.Config{StepTimeout: 300 * time.Millisecond})
	started, release := holdUntilReleased("late-deleted")
	t.Cleanup(release)
	hdr, _ := standardSession(t, s.testServer)
	hdr["Accept"] = "application/json, text/event-stream"
	if _, body := latePost(t, s, "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stuck","arguments":{"body":"late-deleted"}}}`, hdr); !strings.Contains(body, `timed out after 300ms`) {
		t.Fatalf("the late call: %s, want a timeout", body)
	}
	awaitSlow(t, started)
	if code, body, _ := s.httpDo(t, http.MethodDelete, "/mcp", "", hdr); code != http.StatusNoContent {
		t.Fatalf("DELETE /mcp: %d %s", code, body)
	}
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`,
	} {
		// Sent after the DELETE: the session was closed before it, not
		// while it ran.
		want := `"message":"Mcp-Session-Id ` + hdr[openenv.MCPSessionHeader] + ` was closed (ended by DELETE /mcp): initialize a new session"`
		if code, body := latePost(t, s, "/mcp", msg, hdr); code != http.StatusNotFound || !strings.Contains(body, want) {
			t.Errorf("%s on the deleted session while its late call runs: %d %s, want 404 with %s", msg, code, body, want)
		}
	}
	release()
	s.settle(t)
}

// TestServer_LateCallRecorded: a late call is a timeout failure with no
// effect wherever the episode is told: in the timeline, in the recording,
// which replays to the same episode, in the logs, which warn when the call
// runs past its deadline and when it returns, and in the metrics.
func TestServer_LateCallRecorded(t *testing.T) {
	dir := t.TempDir()
	var log testfs.Buffer
	s := mustServeWorld(t, faultyWorld, app.Config{RecordDir: dir},
		openenv.Config{StepTimeout: 300 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	started, release := holdUntilReleased("late-rec")
	t.Cleanup(release)
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"episode_id":"late-rec"}}`)
	kind, msg := toolFailure(t, callTool(t, c, "stuck", `{"body":"late-rec"}`))
	if kind != "timeout" {
		t.Fatalf("the late call: %s %s, want a timeout", kind, msg)
	}
	awaitSlow(t, started)
	release()
	reply := untilServed(t, func() string { return callTool(t, c, "note", `{"body":"after"}`) })
	mustSucceed(t, reply)

	sessions := s.Sessions()
	if len(sessions) != 1 {
		t.Fatalf("%d sessions, want 1", len(sessions))
	}
	_, watch, _ := s.httpDo(t, http.MethodGet, "/sessions/"+sessions[0].Ref+"/watch", "", nil)
	var timeline struct {
		Steps []struct {
			Step  int
			Tool  string
			Error *struct {
				Type    string `json:"error_type"`
				Message string
			}
			Changes *[2]int
		}
	}
	if err := json.Unmarshal([]byte(watch), &timeline); err != nil || len(timeline.Steps) != 2 {
		t.Fatalf("watch: %v %.1000s, want two steps", err, watch)
	}
	// Returned, the call is settled: its instance's timeout, no change.
	if st := timeline.Steps[0]; st.Step != 1 || st.Tool != "stuck" || st.Error == nil || st.Error.Type != "timeout" || st.Error.Message != composition.MsgTimedOut || st.Changes == nil || *st.Changes != [2]int{1, 0} {
		t.Errorf("the late call's step in the timeline: %+v, want step 1, a timeout saying %q, no change", st, composition.MsgTimedOut)
	}
	c.Close(websocket.StatusNormalClosure, "")
	s.settle(t)

	files, err := filepath.Glob(filepath.Join(dir, "late-rec.*.jsonl"))
	if err != nil || len(files) != 1 {
		t.Fatalf("recorded as %q (%v), want one file", files, err)
	}
	tr, err := task.ReadTrajectoryFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Calls) != 2 || tr.Calls[0].Tool != "stuck" || tr.Calls[0].Error == nil || tr.Calls[0].Error.Type != "timeout" || tr.Calls[0].Result != nil {
		t.Fatalf("recorded calls %+v, want the late call as a timeout, then the note", tr.Calls)
	}
	rep, err := task.ReplayTrajectory(context.Background(), faultyWorld, nil, tr, composition.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Mismatches) != 0 {
		t.Errorf("replay differs: %q", rep.Mismatches)
	}

	logged := log.String()
	for _, want := range []string{
		`level=WARN msg="openenv: a tool call runs on past its deadline, ignoring its context: answered as timed out, it holds its session until it returns" session=` + sessions[0].Ref,
		`level=WARN msg="openenv: a tool call past its deadline returned; what it returned was discarded" session=` + sessions[0].Ref,
	} {
		if !strings.Contains(logged, want) {
			t.Errorf("log:\n%s\nlacks %s", logged, want)
		}
	}
	if _, metrics, _ := s.httpDo(t, http.MethodGet, "/metrics", "", nil); !strings.Contains(metrics, "\nseahaven_tool_calls_late_total 1\n") {
		t.Errorf("metrics lack seahaven_tool_calls_late_total 1")
	}
}

// TestServer_LateCallSessionless: a sessionless tools/call, on a throwaway
// instance, is answered at its deadline while its tool still blocks; its
// instance closes once the tool returns, not before.
func TestServer_LateCallSessionless(t *testing.T) {
	s := mustServeWorld(t, faultyWorld, app.Config{}, openenv.Config{StepTimeout: 300 * time.Millisecond})
	started, release := holdUntilReleased("late-throwaway")
	t.Cleanup(release)
	_, reply := latePost(t, s, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stuck","arguments":{"body":"late-throwaway"}}}`, nil)
	awaitSlow(t, started)
	if !strings.Contains(reply, `tool \"stuck\" timed out after 300ms`) {
		t.Fatalf("the late call: %s, want a timeout", reply)
	}
	if dirs := s.instanceDirs(t); len(dirs) != 1 {
		t.Errorf("instance directories %v while the late call blocks, want its instance's", dirs)
	}
	release()
	s.settle(t)
}

// TestServer_LateCallUnbounded: with no step timeout (a negative
// StepTimeout), a request behind a call that ran on past its cancellation
// waits for it without bound, as it waits for any call, where before it
// was refused at once as though its wait had run out.
func TestServer_LateCallUnbounded(t *testing.T) {
	s := mustServeWorld(t, faultyWorld, app.Config{}, openenv.Config{StepTimeout: -1})
	_, post, release := cancelledOnMCP(t, s, "late-unbounded")
	second := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"note","arguments":{"body":"after"}}}`)
	select {
	case r := <-second:
		t.Fatalf("a call behind the late one was answered while it ran: %d %s", r.code, r.body)
	case <-time.After(200 * time.Millisecond): // it waits; no answer may come before the release
	}
	release()
	r := <-second
	if r.err != nil || r.code != http.StatusOK || !strings.Contains(r.body, `"isError":false`) {
		t.Fatalf("the call behind the late one: %d %s %v, want it run once the late call returned", r.code, r.body, r.err)
	}
}

// cancelledOnMCP opens a standard MCP session on s whose call of the stuck
// tool, holding body, its client cancels while the tool runs on, ignoring
// it; hdr names the session, post sends its next requests, release lets
// the call return.
func cancelledOnMCP(t *testing.T, s *worldServer, body string) (hdr map[string]string, post func(string) <-chan mcpReply, release func()) {
	t.Helper()
	var started <-chan struct{}
	started, release = holdUntilReleased(body)
	t.Cleanup(release)
	hdr, post = standardSession(t, s.testServer)
	first := post(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stuck","arguments":{"body":%q}}}`, body))
	awaitSlow(t, started)
	cancelRequest(t, s.testServer, hdr, 1, "")
	if r := <-first; r.err != nil {
		t.Fatalf("the cancelled call: %v", r.err)
	}
	return hdr, post, release
}

// TestServer_LateCallCancelled: a request refused behind a call that ran
// on past its cancellation is told the call was cancelled, where before it
// was told the call had passed its deadline, which it had not; the log's
// warnings say so too, where before they said the call ran on past its
// deadline and was answered as timed out.
func TestServer_LateCallCancelled(t *testing.T) {
	var log testfs.Buffer
	s := mustServeWorld(t, faultyWorld, app.Config{}, openenv.Config{StepTimeout: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	hdr, post, release := cancelledOnMCP(t, s, "late-cancelled")
	r := <-post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"note","arguments":{"body":"after"}}}`)
	if r.err != nil || !strings.Contains(r.body, `A call of tool \"stuck\" was cancelled `) || !strings.Contains(r.body, "has not returned yet (it ignores its context)") {
		t.Errorf("the call behind the cancelled one: %d %s %v, want it refused, saying the call was cancelled", r.code, r.body, r.err)
	}
	if code, body, _ := s.httpDo(t, http.MethodDelete, "/mcp", "", hdr); code != http.StatusNoContent {
		t.Fatalf("DELETE /mcp: %d %s", code, body)
	}
	release()
	s.settle(t)
	logged := log.String()
	for _, want := range []string{
		`level=WARN msg="openenv: a tool call runs on past its cancellation, ignoring its context: answered as cancelled, it holds its session until it returns"`,
		`level=WARN msg="openenv: the session ends once its tool call past its cancellation returns"`,
		`level=WARN msg="openenv: a tool call past its cancellation returned; what it returned was discarded"`,
	} {
		if !strings.Contains(logged, want) {
			t.Errorf("log:\n%s\nlacks %s", logged, want)
		}
	}
	if strings.Contains(logged, "past its deadline") {
		t.Errorf("log:\n%s\nsays the cancelled call passed its deadline", logged)
	}
}

// TestServer_LateCallStepTimeoutS: a POST /step behind a call past its
// deadline waits for it at most its own timeout_s, where before it waited
// the server's step timeout, however much shorter the timeout it gave.
func TestServer_LateCallStepTimeoutS(t *testing.T) {
	s := mustServeWorld(t, faultyWorld, app.Config{}, openenv.Config{StepTimeout: 5 * time.Minute})
	started, release := holdUntilReleased("late-timeout-s")
	t.Cleanup(release)
	hdr := map[string]string{openenv.SessionHeader: "late-timeout-s"}
	if code, body := latePost(t, s, "/reset", `{}`, hdr); code != http.StatusOK {
		t.Fatalf("reset: %d %s", code, body)
	}
	step := func(tool, body string) (int, string) {
		return latePost(t, s, "/step", fmt.Sprintf(`{"action":{"type":"call_tool","tool_name":%q,"arguments":{"body":%q}},"timeout_s":0.3}`, tool, body), hdr)
	}
	if _, body := step("stuck", "late-timeout-s"); !strings.Contains(body, `timed out after 300ms`) {
		t.Fatalf("the late call: %s, want a timeout", body)
	}
	awaitSlow(t, started)
	// The tool still blocks: an answer now is the wait's end, a 503 that
	// says when to retry.
	code, body, resp := s.httpDo(t, http.MethodPost, "/step", `{"action":{"type":"call_tool","tool_name":"note","arguments":{"body":"after"}},"timeout_s":0.3}`, hdr)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `A call of tool \"stuck\" passed its deadline`) || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("the step behind the late call: %d %s (Retry-After %q), want a 503 once its timeout_s passed, with Retry-After: 1", code, body, resp.Header.Get("Retry-After"))
	}
	release()
}

// TestServer_LateCallWaitEnds: a request that waited behind a call past
// its deadline, once that call returns, waits for the next call in
// progress as for any other, where before its wait behind the late call
// ran on and refused it, saying that call had not returned.
func TestServer_LateCallWaitEnds(t *testing.T) {
	s := mustServeWorld(t, faultyWorld, app.Config{}, openenv.Config{StepTimeout: 300 * time.Millisecond})
	started, release := holdUntilReleased("late-wait")
	t.Cleanup(release)
	_, post := standardSession(t, s.testServer)
	first := post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stuck","arguments":{"body":"late-wait"}}}`)
	awaitSlow(t, started)
	if r := <-first; r.err != nil || !strings.Contains(r.body, `timed out after 300ms`) {
		t.Fatalf("the late call: %d %s %v, want a timeout", r.code, r.body, r.err)
	}
	// Both wait behind the late call; once it returns, the slow call,
	// first in line, runs to its deadline, while the note waits on.
	slow := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"body":"late-wait-slow","ms":60000}}}`)
	time.Sleep(100 * time.Millisecond)
	note := post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"note","arguments":{"body":"late-wait-note"}}}`)
	time.Sleep(100 * time.Millisecond)
	release()
	r := <-note
	if r.err != nil || r.code != http.StatusOK || !strings.Contains(r.body, `"isError":false`) {
		t.Fatalf("the call that waited behind the late one: %d %s %v, want it run once the calls before it returned", r.code, r.body, r.err)
	}
	<-slow
}

// hookWorld's startup hook, given hold, blocks until the test releases
// hold (holdUntilReleased), ignoring its context.
var hookWorld = env.NewWorld(env.WorldSpec{
	Name: "hooked", Version: "1.0.0", Description: "A startup hook that ignores its context.",
	Schema: `CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT;`,
})

type holdKeywords struct {
	Hold string `json:"hold,omitempty"`
}

func init() {
	env.OnStartup(hookWorld, func(c *env.Ctx, k holdKeywords) error {
		if k.Hold == "" {
			return nil
		}
		_, release, err := holdStart(c, noteArgs{Body: k.Hold})
		<-release
		return err
	})
	env.Tool(hookWorld, "note", "Write a note.", func(c *env.Ctx, in noteArgs) (noteResult, error) {
		return writeNote(c, in.Body)
	})
}

// TestServer_LateReset: a reset whose startup hook ignores its context
// and blocks past the step timeout fails at its deadline, saying so, where
// before it was answered only when the hook returned; the session keeps
// its episode and serves on meanwhile, and the instance the reset opens
// once the hook returns is discarded.
func TestServer_LateReset(t *testing.T) {
	const timeout = 300 * time.Millisecond
	s := mustServeWorld(t, hookWorld, app.Config{}, openenv.Config{StepTimeout: timeout})
	started, release := holdUntilReleased("late-reset")
	t.Cleanup(release)
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"episode_id":"kept"}}`)
	mustSucceed(t, callTool(t, c, "note", `{"body":"before"}`))

	reply := roundTrip(t, c, `{"type":"reset","data":{"startup":{"hold":"late-reset"}}}`)
	awaitSlow(t, started) // the hook still blocks
	const want = "the reset ran past its deadline (the server's step timeout, 300ms) and opened no instance: it ignored its context and had not returned 1s later"
	if code, msg := str(t, reply, "data.code"), str(t, reply, "data.message"); code != "EXECUTION_ERROR" || !strings.HasPrefix(msg, want) {
		t.Fatalf("the late reset: %s, want an EXECUTION_ERROR starting %q", reply, want)
	}
	if ep := str(t, roundTrip(t, c, `{"type":"state"}`), "data.episode_id"); ep != "kept" {
		t.Errorf("episode %q after the late reset, want kept", ep)
	}
	mustSucceed(t, callTool(t, c, "note", `{"body":"after"}`))
	if got := inspectValue(t, c, "SELECT group_concat(body, ',') FROM (SELECT body FROM notes ORDER BY id)"); got != "before,after" {
		t.Errorf("notes %q while the late reset's hook blocks, want before,after", got)
	}
	send(t, c, `{"type":"close"}`)
	release()
	s.settle(t) // the late reset's instance is discarded, its directory gone
}

// lateRestores is a fakeBackend whose restores each send their context on
// started and then wait for gate, whatever the context, before they open
// an instance of the fake.
type lateRestores struct {
	stallingCheckpoints
	started chan context.Context
	gate    chan struct{}
}

func (b lateRestores) Restore(ctx context.Context, id string) (openenv.Instance, openenv.CheckpointRequest, error) {
	b.started <- ctx
	<-b.gate
	inst, err := b.fakeBackend.Open(context.Background(), openenv.OpenOptions{})
	return inst, openenv.CheckpointRequest{Session: json.RawMessage(`{}`)}, err
}

// TestServer_LateRestore: a restore that ignores its context fails at its
// deadline, saying so; the session keeps its episode, and the instance the
// restore returns later is discarded.
func TestServer_LateRestore(t *testing.T) {
	fake := newFake(t)
	b := lateRestores{stallingCheckpoints{fake}, make(chan context.Context, 1), make(chan struct{})}
	s := mustServeOver(t, b, fake, openenv.Config{StepTimeout: 100 * time.Millisecond})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"episode_id":"kept"}}`)
	reply := roundTrip(t, c, `{"type":"reset","data":{"checkpoint":"6f9619ff-8b86-d011-b42d-00c04fc964ff"}}`)
	<-(<-b.started).Done()
	const want = "the restore ran past its deadline (the server's step timeout, 100ms) and opened no instance: it ignored its context and had not returned 1s later"
	if code, msg := str(t, reply, "data.code"), str(t, reply, "data.message"); code != "EXECUTION_ERROR" || !strings.HasPrefix(msg, want) {
		t.Fatalf("the late restore: %s, want an EXECUTION_ERROR starting %q", reply, want)
	}
	if ep := str(t, roundTrip(t, c, `{"type":"state"}`), "data.episode_id"); ep != "kept" {
		t.Errorf("episode %q after the late restore, want kept", ep)
	}
	if n := fake.open.Load(); n != 1 {
		t.Errorf("%d instances open while the restore blocks, want the session's 1", n)
	}
	close(b.gate)
	waitFor(t, "the late restore's instance to be discarded", func() bool { return fake.open.Load() == 1 && fake.opened.Load() == 2 })
}

// TestServer_LateGrading: a step whose task's Go check ignores its context
// and blocks past the step timeout is answered at its deadline, its
// grading failed, where before it was answered only when the check
// returned; the grading holds the session until it returns, as a late
// call does, and what it returns then is not kept.
func TestServer_LateGrading(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	stuck := env.Check{Name: "stuck", Func: func(context.Context, env.Inspector, []env.ChangeRecord) (env.GradeResult, error) {
		select {
		case started <- struct{}{}:
		default:
		}
		<-release // whatever its context
		return env.Pass("graded"), nil
	}}
	s := mustServeWorld(t, redefinedWorld(stuck), app.Config{}, openenv.Config{StepTimeout: 300 * time.Millisecond})
	released := sync.OnceFunc(func() { close(release) })
	t.Cleanup(released)
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"task":"t"}}`)
	step := `{"type":"step","data":{"type":"call_tool","tool_name":"add","arguments":{"amount":5}}}`
	reply := roundTrip(t, c, step)
	<-started
	const want = "the step ran, but grading its task failed: it ran past its deadline, ignoring its context, and holds the session until it returns"
	if code, msg := str(t, reply, "data.code"), str(t, reply, "data.message"); code != "EXECUTION_ERROR" || msg != want {
		t.Fatalf("the step whose grading blocks: %s, want an EXECUTION_ERROR %q", reply, want)
	}
	reply = roundTrip(t, c, step)
	if code, msg := str(t, reply, "data.code"), str(t, reply, "data.message"); code != "SESSION_ERROR" || !strings.HasPrefix(msg, `A grading of task "t" passed its deadline`) {
		t.Fatalf("a step while the grading blocks: %s, want it refused saying why", reply)
	}
	released()
	reply = untilServed(t, func() string { return roundTrip(t, c, step) })
	if reward := fmt.Sprint(field(t, reply, "data.reward")); reward != "1" {
		t.Fatalf("a step once the grading returned: %s, want reward 1", reply)
	}
	if n := inspectValue(t, c, "SELECT count(*) FROM entries"); n != "2" {
		t.Errorf("%s entries, want the two steps that ran", n)
	}
}

// TestServer_LateResetShutdown: Shutdown waits, within its context, for a
// reset whose startup hook ignores the cancellation Shutdown sent it, and
// says so when its context ends first, where it returned nil at once and
// left the instance directory of the hook's reset behind. The log says the
// reset ran past its cancellation, where it said past its deadline.
func TestServer_LateResetShutdown(t *testing.T) {
	var log testfs.Buffer
	s := mustServeWorld(t, hookWorld, app.Config{}, openenv.Config{StepTimeout: time.Minute, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	started, release := holdUntilReleased("late-reset-shutdown")
	t.Cleanup(release)
	c := s.dial(t)
	send(t, c, `{"type":"reset","data":{"startup":{"hold":"late-reset-shutdown"}}}`)
	awaitSlow(t, started)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.Shutdown(ctx)
	if want := "the resets past their deadline"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Shutdown while a reset's hook still blocks: %v, want an error naming %s", err, want)
	}
	if want := `msg="openenv: a reset runs on past its cancellation, ignoring its context`; !strings.Contains(log.String(), want) {
		t.Errorf("log:\n%s\nwant %s", log.String(), want)
	}
	release()
	s.settle(t)
}

// TestServer_LateCallSessionClosed: a call whose tool ignores its context,
// cut off by its session's close, is answered as any call its session's
// close cut off: the session was closed while the request ran, where it
// was answered with the tool error "context canceled".
func TestServer_LateCallSessionClosed(t *testing.T) {
	s := mustServeWorld(t, faultyWorld, app.Config{}, openenv.Config{StepTimeout: time.Minute})
	started, release := holdUntilReleased("late-session-closed")
	t.Cleanup(release)
	sid := "late-session-closed"
	if code, body := latePost(t, s, "/reset", `{}`, map[string]string{openenv.SessionHeader: sid}); code != http.StatusOK {
		t.Fatalf("reset: %d %s", code, body)
	}
	replies := make(chan string, 1)
	go func() {
		code, body := latePost(t, s, "/step", `{"action":{"type":"call_tool","tool_name":"stuck","arguments":{"body":"late-session-closed"}}}`, map[string]string{openenv.SessionHeader: sid})
		replies <- fmt.Sprintf("%d %s", code, body)
	}()
	awaitSlow(t, started)
	if _, body := latePost(t, s, "/mcp", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"openenv/session/close","params":{"session_id":%q}}`, sid), nil); !strings.Contains(body, `"closed":true`) {
		t.Fatalf("close: %s", body)
	}
	want := `404 {"detail":"Session late-session-closed was closed while the request ran (closed by openenv/session/close): it no longer exists","code":"SESSION_ERROR"}`
	if reply := <-replies; reply != want {
		t.Errorf("the step whose session was closed while its tool ignored it: %s, want %s", reply, want)
	}
	release()
	s.settle(t)
}

// lateCheckpoints is a fakeBackend whose checkpoints each tell started
// (when it has room), then wait for gate, whatever their context (a checkpoint volume that
// does not answer), and then succeed.
type lateCheckpoints struct {
	stallingCheckpoints
	started chan struct{}
	gate    chan struct{}
}

func (b lateCheckpoints) Open(ctx context.Context, opts openenv.OpenOptions) (openenv.Instance, error) {
	inst, err := b.fakeBackend.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	return lateCheckpointInstance{inst, b}, nil
}

type lateCheckpointInstance struct {
	openenv.Instance
	b lateCheckpoints
}

func (in lateCheckpointInstance) Checkpoint(context.Context, openenv.CheckpointRequest) (openenv.CheckpointInfo, error) {
	select {
	case in.b.started <- struct{}{}:
	default:
	}
	<-in.b.gate
	return openenv.CheckpointInfo{ID: "6f9619ff-8b86-d011-b42d-00c04fc964ff"}, nil
}

// TestServer_LateCheckpoint: a periodic checkpoint that ignores its
// context (its volume does not answer) no longer holds its step's reply:
// the reply goes out a second after the checkpoint's deadline, and the
// checkpoint holds the session until it returns, as a late tool call
// does, where the step was answered only when the checkpoint returned.
func TestServer_LateCheckpoint(t *testing.T) {
	fake := newFake(t)
	b := lateCheckpoints{stallingCheckpoints{fake}, make(chan struct{}, 1), make(chan struct{})}
	s := mustServeOver(t, b, fake, openenv.Config{StepTimeout: 200 * time.Millisecond, CheckpointEvery: 1})
	released := sync.OnceFunc(func() { close(b.gate) })
	t.Cleanup(released)
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{}}`)
	step := `{"type":"step","data":{"type":"call_tool","tool_name":"echo","arguments":{"message":"m"}}}`
	if reply := roundTrip(t, c, step); str(t, reply, "type") != "observation" {
		t.Fatalf("the step whose checkpoint blocks: %s, want its observation", reply)
	}
	<-b.started
	reply := roundTrip(t, c, step)
	if code, msg := str(t, reply, "data.code"), str(t, reply, "data.message"); code != "SESSION_ERROR" || !strings.HasPrefix(msg, "A checkpoint passed its deadline") {
		t.Fatalf("a step while the checkpoint blocks: %s, want it refused saying why", reply)
	}
	released()
	reply = untilServed(t, func() string { return roundTrip(t, c, step) })
	if str(t, reply, "type") != "observation" {
		t.Errorf("a step once the checkpoint returned: %s", reply)
	}
}

// keptWorld's tool log_then_stuck writes in its added world ledger (which
// commits there at once) and in its own store, then blocks as stuck does.
var keptWorld = func() *env.World {
	ledger := env.NewWorld(env.WorldSpec{Name: "ledger", Version: "1.0.0", Schema: `CREATE TABLE entries (id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT;`})
	env.Tool(ledger, "log", "Log an entry.", func(c *env.Ctx, in noteArgs) (noteResult, error) {
		res, err := c.DB.Exec("INSERT INTO entries (body) VALUES (?)", in.Body)
		return noteResult{ID: res.LastInsertID}, err
	})
	w := env.NewWorld(env.WorldSpec{Name: "kept", Version: "1.0.0", Schema: `CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT;`})
	w.AddWorld(ledger, env.ToolBlockList("log"))
	env.Tool(w, "log_then_stuck", "Log in the ledger, write a note, then block whatever happens to the call.", func(c *env.Ctx, in noteArgs) (noteResult, error) {
		if _, err := c.Worlds.Get("ledger").Call("log", in); err != nil {
			return noteResult{}, err
		}
		out, release, err := holdStart(c, in)
		<-release
		return out, err
	})
	return w
}()

// TestServer_LateCallSettled: once a call answered past its deadline
// returns, its timeline entry says what its instance made of it: the
// change records it kept (the work it had committed in an added world
// before its deadline) and the instance's error, which says so, where the
// entry kept the answer's "timed out" and no change records for good.
func TestServer_LateCallSettled(t *testing.T) {
	s := mustServeWorld(t, keptWorld, app.Config{}, openenv.Config{StepTimeout: 300 * time.Millisecond})
	started, release := holdUntilReleased("late-settled")
	t.Cleanup(release)
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	if kind, _ := toolFailure(t, callTool(t, c, "log_then_stuck", `{"body":"late-settled"}`)); kind != "timeout" {
		t.Fatalf("the late call: %s, want a timeout", kind)
	}
	awaitSlow(t, started)
	release()
	if n := inspectValue(t, c, "SELECT count(*) FROM ledger.entries"); n != "1" { // waits for the call to return
		t.Fatalf("%s ledger entries, want the one committed before the deadline", n)
	}
	_, body, _ := s.httpDo(t, http.MethodGet, "/sessions/"+s.Sessions()[0].Ref+"/watch", "", nil)
	var watch struct {
		Steps []struct {
			Error   struct{ Message string } `json:"error"`
			Changes *[2]int                  `json:"changes"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(body), &watch); err != nil || len(watch.Steps) != 1 {
		t.Fatalf("watch: %v %.500s", err, body)
	}
	st := watch.Steps[0]
	if st.Error.Message != composition.MsgTimedOutKept || st.Changes == nil || *st.Changes != [2]int{1, 1} {
		t.Errorf("the late call's timeline entry: %q, changes %v; want %q with change 1", st.Error.Message, st.Changes, composition.MsgTimedOutKept)
	}
}
