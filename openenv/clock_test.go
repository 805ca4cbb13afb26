package openenv_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/openenv"
)

// TestServer_ControlToolBounds moves a real instance's clock with the
// control tool over HTTP and WebSocket: a duration or an instant past the
// clock's bounds is the tool's invalid-args error naming the field and the
// bound, and the clock does not move.
func TestServer_ControlToolBounds(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	const reset = `{"now":"2026-06-01T09:00:00Z","control_tools":true}`
	tests := []struct {
		name string
		args string // the control tool's arguments
		want string // part of the error message
	}{
		{"AdvanceHuge", `{"action":"advance_clock","seconds":1e10}`, `field \"seconds\": advance_clock needs 0 <= seconds <= 3153600000 (100 years)`},
		{"AdvanceBackToThePast", `{"action":"advance_clock","seconds":9.3e9}`, `field \"seconds\": advance_clock needs 0 <= seconds <= 3153600000`},
		{"SetPastSQLite", `{"action":"set_clock","now":"9999-12-31T00:00:00Z"}`, `field \"now\": composition: now \"9999-12-31T00:00:00Z\" is outside the clock's range, 1000-01-01T00:00:00.000Z to 9000-01-01T00:00:00.000Z`},
	}
	// wantRefused checks the step reply, whose observation is at path.
	wantRefused := func(t *testing.T, reply, path, want string) {
		t.Helper()
		if typ := str(t, reply, path+".error.error_type"); typ != "invalid_args" {
			t.Errorf("error_type %s, want invalid_args: %s", typ, reply)
		}
		if !strings.Contains(reply, want) {
			t.Errorf("reply %s lacks %s", reply, want)
		}
	}
	for _, tt := range tests {
		step := `{"type":"call_tool","tool_name":"` + env.ControlTool + `","arguments":` + tt.args + `}`
		t.Run("HTTP/"+tt.name, func(t *testing.T) {
			h := map[string]string{openenv.SessionHeader: "clock-" + tt.name}
			if code, body, _ := s.httpDo(t, http.MethodPost, "/reset", reset, h); code != http.StatusOK {
				t.Fatalf("reset: %d %s", code, body)
			}
			code, body, _ := s.httpDo(t, http.MethodPost, "/step", `{"action":`+step+`}`, h)
			if code != http.StatusOK {
				t.Fatalf("step: %d %s", code, body)
			}
			wantRefused(t, body, "observation", tt.want)
			_, state, _ := s.httpDo(t, http.MethodGet, "/state", "", h)
			if now := str(t, state, "now"); now != "2026-06-01T09:00:00.000Z" {
				t.Errorf("clock %s after a refused control call, want it unmoved", now)
			}
		})
		t.Run("WS/"+tt.name, func(t *testing.T) {
			c := s.dial(t)
			roundTrip(t, c, `{"type":"reset","data":`+reset+`}`)
			reply := roundTrip(t, c, `{"type":"step","data":`+step+`}`)
			wantRefused(t, reply, "data.observation", tt.want)
			if now := str(t, roundTrip(t, c, `{"type":"state"}`), "data.now"); now != "2026-06-01T09:00:00.000Z" {
				t.Errorf("clock %s after a refused control call, want it unmoved", now)
			}
		})
	}
}
