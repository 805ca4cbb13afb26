package openenv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/internal/testfs"
	"github.com/seahaven/seahaven/openenv"
)

func TestServer_Logs(t *testing.T) {
	var logs testfs.Buffer
	fake := newFake(t)
	srv := openenv.NewServer(fake, openenv.Config{Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	s := &testServer{Server: srv, ts: ts, fake: fake}

	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"seed":1}}`)
	roundTrip(t, c, `{"type":"reset","data":{"fixture":"nope"}}`)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"fail","arguments":{}}}`)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"boom","arguments":{}}}`)
	roundTrip(t, c, `{"type":"inspect","data":{"sql":"SELECT * FROM nowhere"}}`)
	wsID := str(t, roundTrip(t, c, `{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}}`), "data.result.session_id")
	_, _, resp := s.httpDo(t, "POST", "/reset", `{}`, nil)
	httpID := resp.Header.Get(openenv.SessionHeader)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	// Every line is one JSON object; collect them by message.
	byMsg := map[string][]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %v\n%s", err, line)
		}
		msg, _ := rec["msg"].(string)
		byMsg[msg] = append(byMsg[msg], rec)
	}
	for _, tt := range []struct {
		msg      string
		n        int  // lines with this message
		duration bool // they carry duration_ms
	}{
		{"openenv: session opened", 2, false},
		{"openenv: session closed", 2, true},
		{"openenv: reset failed", 1, true},
		{"openenv: tool call failed", 1, true},
		{"openenv: recovered a panic", 1, true},
		{"openenv: inspect query failed", 1, true},
	} {
		recs := byMsg[tt.msg]
		if len(recs) != tt.n {
			t.Errorf("%d lines %q, want %d", len(recs), tt.msg, tt.n)
			continue
		}
		for _, rec := range recs {
			if ref, _ := rec["session"].(string); len(ref) != 12 {
				t.Errorf("%q: session %v, want a 12-digit ref", tt.msg, rec["session"])
			}
			if tr, _ := rec["transport"].(string); tr != "ws" && tr != "http" {
				t.Errorf("%q: transport %v", tt.msg, rec["transport"])
			}
			if d, ok := rec["duration_ms"].(float64); tt.duration && (!ok || d < 0) {
				t.Errorf("%q: duration_ms %v", tt.msg, rec["duration_ms"])
			}
		}
	}
	if p := byMsg["openenv: recovered a panic"]; len(p) == 1 && !strings.Contains(p[0]["stack"].(string), "goroutine") {
		t.Error("the panic line has no stack")
	}
	// The session ids themselves, capabilities, never reach the logs.
	for _, id := range []string{wsID, httpID} {
		if id == "" || strings.Contains(logs.String(), id) {
			t.Errorf("session id %q: empty, or in a log line", id)
		}
	}
}

// TestServer_LogsNameNoCheckpoint: the checkpoint and attempt ids a
// restore fences with and a drain closes with, capabilities like session
// ids, reach the logs only as digests: not in the fenced attempt's record,
// nor in a drained or superseded session's close reason.
func TestServer_LogsNameNoCheckpoint(t *testing.T) {
	var logs testfs.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := mustServeWorld(t, company.World, app.Config{DefaultFixture: company.AcmeID, Checkpoints: t.TempDir()}, openenv.Config{DrainCheckpoints: true, Logger: logger})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	reply := roundTrip(t, c, `{"type":"checkpoint"}`)
	id, attempt := str(t, reply, "data.checkpoint_id"), str(t, reply, "data.attempt")
	h := map[string]string{openenv.SessionHeader: "successor"}
	if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", fmt.Sprintf(`{"checkpoint":%q,"replaces":%q}`, id, attempt), h); status != http.StatusOK {
		t.Fatalf("restore: %d %s", status, body)
	}
	ce, _ := shutdownClose(t, s, c)
	if !strings.Contains(ce.Reason, id) {
		t.Fatalf("the superseded /ws session closed with %q, want the checkpoint that superseded it", ce.Reason)
	}
	_, body, _ := s.httpDo(t, http.MethodGet, "/checkpoints/latest?episode_id="+str(t, reply, "data.episode_id"), "", nil)
	drained := str(t, body, "checkpoint_id")
	for _, capability := range []string{id, attempt, drained} {
		if strings.Contains(logs.String(), capability) {
			t.Errorf("the id %s is in a log line:\n%s", capability, logs.String())
		}
	}
}

// TestServer_LogsClipClientText: an error that repeats what the client
// sent (SQLite's "unrecognized token" repeats the query's token, an
// unknown tool's error its name, an unknown task's the task) reaches the
// log cut, so that each request
// of megabytes does not write megabytes to the log.
func TestServer_LogsClipClientText(t *testing.T) {
	var logs testfs.Buffer
	s := mustServeCompany(t, openenv.Config{Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	long := strings.Repeat("a", 1<<20)
	for _, msg := range []string{
		`{"type":"inspect","data":{"sql":"SELECT '` + long + `"}}`,
		`{"type":"inspect","data":{"sql":"SELECT ` + long + `"}}`,
		`{"type":"step","data":{"type":"call_tool","tool_name":"` + long + `","arguments":{}}}`,
		`{"type":"reset","data":{"task":"` + long + `"}}`,
	} {
		roundTrip(t, c, msg)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec struct{ Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %v\n%.300s", err, line)
		}
		seen[rec.Msg] = true
		if len(line) > 4<<10 {
			t.Errorf("a log line of %d bytes: %.300s", len(line), line)
		}
	}
	if !seen["openenv: inspect query failed"] || !seen["openenv: tool call failed"] || !seen["openenv: reset failed"] {
		t.Errorf("the failures are not logged:\n%.2000s", logs.String())
	}
}

// TestServer_LogsToolErrorCause: a world's error handler that turns a
// driver error into a sentence for the agent keeps the error as its
// *env.ToolError's Err "for logs"; the failed call's record carries it as
// cause, where before the log said only what the agent saw. A cause the
// message already says is not repeated.
func TestServer_LogsToolErrorCause(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "hidden", Version: "1", Schema: "CREATE TABLE t (id INTEGER PRIMARY KEY) STRICT;"})
	w.Use(func(c *env.Ctx, next func() (any, error)) (any, error) {
		out, err := next()
		if _, ok := env.AsToolError(err); err == nil || ok {
			return out, err
		}
		return nil, &env.ToolError{Kind: env.KindExecution, Message: c.Call.Tool + " failed; nothing was changed", Err: err}
	})
	env.Tool(w, "misspelt", "Writes to a table that is not there.", func(c *env.Ctx, _ struct{}) (any, error) {
		_, err := c.DB.Exec("INSERT INTO tt (id) VALUES (1)")
		return nil, err
	})
	env.Tool(w, "refuse", "Refuses in the product's words.", func(c *env.Ctx, _ struct{}) (any, error) {
		return nil, env.Errorf("not today")
	})
	var logs testfs.Buffer
	s := mustServeWorld(t, w, app.Config{}, openenv.Config{Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	reply := roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"misspelt","arguments":{}}}`)
	if msg := str(t, reply, "data.observation.error.message"); msg != "misspelt failed; nothing was changed" {
		t.Fatalf("the agent sees %q", msg)
	}
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"refuse","arguments":{}}}`)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"refuse","arguments":{"x":1}}}`)
	causes := map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %v\n%s", err, line)
		}
		if rec["msg"] == "openenv: tool call failed" {
			causes[rec["err"].(string)] = rec["cause"]
		}
	}
	if len(causes) != 3 {
		t.Fatalf("%d failed calls logged, want 3:\n%s", len(causes), logs.String())
	}
	for msg, cause := range causes {
		want := msg == "misspelt failed; nothing was changed"
		if got, _ := cause.(string); want != strings.Contains(got, "no such table: tt") || !want && cause != nil {
			t.Errorf("the record of %q has cause %v", msg, cause)
		}
	}
}
