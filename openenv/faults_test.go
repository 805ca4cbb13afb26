package openenv_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/openenv"
)

// TestFaults_PanickingTool calls a tool that writes a row and then panics,
// on every transport. The engine recovers the panic at the call boundary:
// the client sees an execution_error naming the panic, the row is rolled
// back, and the session goes on serving calls.
func TestFaults_PanickingTool(t *testing.T) {
	s := mustServeWorld(t, faultyWorld, app.Config{}, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"episode_id":"panics"}}`)

	t.Run("WebSocket", func(t *testing.T) {
		kind, msg := toolFailure(t, callTool(t, c, "boom", `{"body":"ws"}`))
		if kind != "execution_error" || !strings.Contains(msg, "boom: the tool exploded after writing WS") {
			t.Errorf("error %s %q, want an execution_error naming the panic", kind, msg)
		}
	})
	t.Run("MCPOnSocket", func(t *testing.T) {
		reply := roundTrip(t, c, `{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"boom","arguments":{"body":"mcp"}}}}`)
		if code := fmt.Sprint(field(t, reply, "data.error.code")); code != "-32603" {
			t.Errorf("code %s, want -32603", code)
		}
		if kind := str(t, reply, "data.error.data.error_type"); kind != "execution_error" {
			t.Errorf("error_type %s, want execution_error", kind)
		}
		if msg := str(t, reply, "data.error.message"); !strings.Contains(msg, "exploded after writing MCP") {
			t.Errorf("message %q does not name the panic", msg)
		}
	})
	t.Run("HTTPStep", func(t *testing.T) {
		id := s.Sessions()[0].ID
		status, body, _ := s.httpDo(t, http.MethodPost, "/step", `{"action":{"type":"call_tool","tool_name":"boom","arguments":{"body":"http"}}}`,
			map[string]string{openenv.SessionHeader: id})
		if status != http.StatusOK {
			t.Fatalf("status %d: %s", status, body)
		}
		if kind := str(t, body, "observation.error.error_type"); kind != "execution_error" {
			t.Errorf("error_type %s in %s", kind, body)
		}
	})
	t.Run("SessionSurvives", func(t *testing.T) {
		mustSucceed(t, callTool(t, c, "note", `{"body":"after"}`))
		if got := inspectValue(t, c, "SELECT group_concat(body) FROM notes"); got != "after" {
			t.Errorf("notes %q, want only the note written after the panics", got)
		}
		state := roundTrip(t, c, `{"type":"state"}`)
		if ep, steps := str(t, state, "data.episode_id"), fmt.Sprint(field(t, state, "data.step_count")); ep != "panics" || steps != "4" {
			t.Errorf("episode %s with step_count %s, want panics with 4", ep, steps)
		}
		checkIntegrity(t, c)
	})
}

// TestFaults_UnencodableResult calls a tool that writes a row and returns
// a value JSON cannot hold (NaN), on every transport: the client sees an
// execution_error saying so, and the row is rolled back, as for any failed
// call, so a retry does not write it twice.
func TestFaults_UnencodableResult(t *testing.T) {
	s := mustServeWorld(t, faultyWorld, app.Config{}, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"episode_id":"nan"}}`)
	const want = `tool "nan" returned a result that cannot be encoded as JSON`
	kind, msg := toolFailure(t, callTool(t, c, "nan", `{"body":"ws"}`))
	if kind != "execution_error" || !strings.Contains(msg, want) {
		t.Errorf("WebSocket: error %s %q, want an execution_error saying %q", kind, msg, want)
	}
	reply := roundTrip(t, c, `{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nan","arguments":{"body":"mcp"}}}}`)
	if !strings.Contains(str(t, reply, "data.error.message"), want) {
		t.Errorf("MCP: %s, want an error saying %q", reply, want)
	}
	_, body, _ := s.httpDo(t, http.MethodPost, "/step", `{"action":{"type":"call_tool","tool_name":"nan","arguments":{"body":"http"}}}`,
		map[string]string{openenv.SessionHeader: s.Sessions()[0].ID})
	if !strings.Contains(str(t, body, "observation.error.message"), want) {
		t.Errorf("HTTP: %s, want an error saying %q", body, want)
	}
	if got := inspectValue(t, c, "SELECT count(*) FROM notes"); got != "0" {
		t.Errorf("%s notes after the failed calls, want 0", got)
	}
	if log := field(t, roundTrip(t, c, `{"type":"state"}`), "data.change_log"); fmt.Sprint(log) != "[]" {
		t.Errorf("change log %v, want none", log)
	}
}

// TestFaults_Deadline calls tools that write a row and then run past the
// step timeout: a runaway SQL query, interrupted inside SQLite, a tool
// waiting on its context, and one that sleeps without looking at it and
// then returns a result. Each is reported as error_type timeout, its row is
// rolled back, and the session goes on.
func TestFaults_Deadline(t *testing.T) {
	const timeout = 300 * time.Millisecond
	s := mustServeWorld(t, faultyWorld, app.Config{}, openenv.Config{StepTimeout: timeout})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	mustSucceed(t, callTool(t, c, "note", `{"body":"kept"}`))

	tests := []struct {
		name string
		tool string // the tool to call
		args string // its arguments
	}{
		{"RunawayQuery", "spin", `{"body":"spun"}`},
		{"WaitsOnContext", "slow", `{"body":"slept","ms":60000}`},
		{"IgnoresContext", "stall", `{"body":"stalled","ms":600}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, msg := toolFailure(t, callTool(t, c, tt.tool, tt.args))
			if kind != "timeout" || !strings.Contains(msg, "deadline") || !strings.Contains(msg, "rolled back") {
				t.Errorf("error %s %q, want a timeout saying the call was rolled back", kind, msg)
			}
			if got := inspectValue(t, c, "SELECT group_concat(body) FROM notes"); got != "kept" {
				t.Errorf("notes %q: the timed-out call's row was not rolled back", got)
			}
		})
	}
	t.Run("HTTPTimeoutS", func(t *testing.T) {
		// timeout_s shortens the bound of one HTTP step.
		id := s.Sessions()[0].ID
		status, body, _ := s.httpDo(t, http.MethodPost, "/step",
			`{"action":{"type":"call_tool","tool_name":"slow","arguments":{"body":"http","ms":60000}},"timeout_s":0.05}`,
			map[string]string{openenv.SessionHeader: id})
		if status != http.StatusOK {
			t.Fatalf("status %d: %s", status, body)
		}
		if kind := str(t, body, "observation.error.error_type"); kind != "timeout" {
			t.Errorf("error_type %s in %s", kind, body)
		}
	})
	t.Run("HTTPTinyTimeoutS", func(t *testing.T) {
		// A timeout_s under a nanosecond is a bound of a nanosecond, not
		// a duration of 0, which would lift StepTimeout.
		id := s.Sessions()[0].ID
		start := time.Now()
		status, body, _ := s.httpDo(t, http.MethodPost, "/step",
			`{"action":{"type":"call_tool","tool_name":"slow","arguments":{"body":"tiny","ms":60000}},"timeout_s":1e-10}`,
			map[string]string{openenv.SessionHeader: id})
		if status != http.StatusOK {
			t.Fatalf("status %d: %s", status, body)
		}
		if kind := str(t, body, "observation.error.error_type"); kind != "timeout" {
			t.Errorf("error_type %s in %s after %v", kind, body, time.Since(start))
		}
	})
	t.Run("SessionSurvives", func(t *testing.T) {
		mustSucceed(t, callTool(t, c, "slow", `{"body":"quick","ms":1}`))
		if got := inspectValue(t, c, "SELECT group_concat(body, ',') FROM (SELECT body FROM notes ORDER BY id)"); got != "kept,quick" {
			t.Errorf("notes %q, want kept,quick", got)
		}
		checkIntegrity(t, c)
	})
}

// stallingWorld's startup hook, given stall, waits until its context ends.
var stallingWorld = env.NewWorld(env.WorldSpec{
	Name: "stalling", Version: "1.0.0", Description: "A startup hook that waits for its deadline.",
	Schema: `CREATE TABLE t (x INTEGER) STRICT;`,
})

type stallKeywords struct {
	Stall bool `json:"stall,omitempty"`
}

func init() {
	env.OnStartup(stallingWorld, func(c *env.Ctx, k stallKeywords) error {
		if k.Stall {
			<-c.Context().Done()
			return c.Context().Err()
		}
		return nil
	})
}

// TestFaults_ResetDeadline resets with a startup hook that runs past the
// step timeout: the reset fails saying it ran past its deadline, the step
// timeout, where it said only "context deadline exceeded"; the session
// keeps its episode.
func TestFaults_ResetDeadline(t *testing.T) {
	s := mustServeWorld(t, stallingWorld, app.Config{}, openenv.Config{StepTimeout: time.Second})
	const want = "the reset ran past its deadline (the server's step timeout, 1s) and opened no instance"
	t.Run("WebSocket", func(t *testing.T) {
		c := s.dial(t)
		if reply := roundTrip(t, c, `{"type":"reset","data":{"episode_id":"kept"}}`); str(t, reply, "type") != "observation" {
			t.Fatalf("reset: %s", reply)
		}
		reply := roundTrip(t, c, `{"type":"reset","data":{"startup":{"stall":true}}}`)
		if code, msg := str(t, reply, "data.code"), str(t, reply, "data.message"); code != "EXECUTION_ERROR" || !strings.HasPrefix(msg, want) {
			t.Errorf("reply %s, want an EXECUTION_ERROR starting %q", reply, want)
		}
		if ep := str(t, roundTrip(t, c, `{"type":"state"}`), "data.episode_id"); ep != "kept" {
			t.Errorf("episode %q after the failed reset, want kept", ep)
		}
	})
	t.Run("HTTP", func(t *testing.T) {
		status, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{"startup":{"stall":true}}`, map[string]string{openenv.SessionHeader: "stalls"})
		if status != http.StatusInternalServerError || str(t, body, "code") != "EXECUTION_ERROR" || !strings.HasPrefix(str(t, body, "detail"), want) {
			t.Errorf("reset: %d %s, want 500 EXECUTION_ERROR starting %q", status, body, want)
		}
	})
}

// TestFaults_CancelledStep: a step whose client goes away, or whose session
// is closed, while its tool runs is rolled back and is no step: the session
// goes on at the step count it had, and a request on a session closed
// meanwhile learns that, not a tool error nobody is waiting for.
func TestFaults_CancelledStep(t *testing.T) {
	s := mustServeWorld(t, faultyWorld, app.Config{}, openenv.Config{})
	h := map[string]string{openenv.SessionHeader: "cancelled-step"}
	step := func(ctx context.Context, tool, args string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.ts.URL+"/step",
			strings.NewReader(`{"action":{"type":"call_tool","tool_name":"`+tool+`","arguments":`+args+`}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(openenv.SessionHeader, h[openenv.SessionHeader])
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		return res.StatusCode, string(body), err
	}
	if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{}`, h); status != http.StatusOK {
		t.Fatalf("reset: %d %s", status, body)
	}
	if status, body, err := step(context.Background(), "note", `{"body":"kept"}`); status != http.StatusOK || err != nil {
		t.Fatalf("step: %d %s %v", status, body, err)
	}

	t.Run("ClientGone", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if _, _, err := step(ctx, "slow", `{"body":"gone","ms":60000}`); err == nil {
			t.Fatal("the step returned before its client gave up")
		}
		// The next step waits for the cancelled one to end.
		if status, body, err := step(context.Background(), "note", `{"body":"after"}`); status != http.StatusOK || err != nil {
			t.Fatalf("step: %d %s %v", status, body, err)
		}
		_, body, _ := s.httpDo(t, http.MethodGet, "/state", "", h)
		if got := fmt.Sprint(field(t, body, "step_count")); got != "2" {
			t.Errorf("step_count %s after the cancelled step and one more, want 2", got)
		}
	})
	t.Run("SessionClosed", func(t *testing.T) {
		type reply struct {
			status int
			body   string
		}
		replied := make(chan reply, 1)
		started := slowStarts("closed")
		go func() {
			status, body, _ := step(context.Background(), "slow", `{"body":"closed","ms":60000}`)
			replied <- reply{status, body}
		}()
		awaitSlow(t, started)
		if _, body, _ := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/close","params":{"session_id":"cancelled-step"}}`, nil); !strings.Contains(body, `"closed":true`) {
			t.Fatalf("close: %s", body)
		}
		got := <-replied
		if got.status != http.StatusNotFound || strings.Contains(got.body, "rolled back") {
			t.Errorf("step on a session closed meanwhile: %d %s, want 404 saying the session is gone", got.status, got.body)
		}
	})
	t.Run("MCPCancelled", func(t *testing.T) {
		// A standard MCP client's notifications/cancelled rolls its call
		// back, and the call is no step either.
		_, _, resp := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, nil)
		mh := map[string]string{openenv.MCPSessionHeader: resp.Header.Get(openenv.MCPSessionHeader)}
		replied := make(chan string, 1)
		started := slowStarts("cancelled")
		go func() {
			_, body, _ := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"body":"cancelled","ms":60000}}}`, mh)
			replied <- body
		}()
		awaitSlow(t, started)
		if status, body, _ := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, mh); status != http.StatusAccepted {
			t.Fatalf("notifications/cancelled: %d %s", status, body)
		}
		if body := <-replied; !strings.Contains(body, "is no step") {
			t.Errorf("the cancelled call's reply: %s, want an error saying it is no step", body)
		}
		_, body, _ := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"note","arguments":{"body":"next"}}}`, mh)
		if !strings.Contains(body, `"isError":false`) {
			t.Fatalf("the call after the cancelled one: %s", body)
		}
		found := false
		for _, info := range s.Sessions() {
			if info.Transport == openenv.TransportMCP {
				found = true
				if info.StepCount != 1 {
					t.Errorf("step_count %d after a cancelled call and one more, want 1", info.StepCount)
				}
			}
		}
		if !found {
			t.Error("the MCP session is not live")
		}
	})
}
