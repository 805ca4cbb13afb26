package openenv_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seahaven/seahaven/app"
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
	t.Run("SessionSurvives", func(t *testing.T) {
		mustSucceed(t, callTool(t, c, "slow", `{"body":"quick","ms":1}`))
		if got := inspectValue(t, c, "SELECT group_concat(body, ',') FROM (SELECT body FROM notes ORDER BY id)"); got != "kept,quick" {
			t.Errorf("notes %q, want kept,quick", got)
		}
		checkIntegrity(t, c)
	})
}
