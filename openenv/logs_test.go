package openenv_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

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
