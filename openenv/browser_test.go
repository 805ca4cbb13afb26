package openenv_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/openenv"
)

// A page of another site reaches neither the episode routes by DNS
// rebinding (its own name resolving to the loopback listener) nor, from a
// foreign Origin, any state-changing route.
func TestServer_BrowserGuard(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	port := s.ts.URL[strings.LastIndex(s.ts.URL, ":"):]
	routes := []struct{ method, path, body string }{
		{"POST", "/reset", `{}`},
		{"POST", "/step", `{"action":{"type":"list_tools"}}`},
		{"POST", "/inspect", `{"sql":"SELECT 1"}`},
		{"GET", "/state", ""},
		{"GET", "/sessions", ""},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
	}

	t.Run("Rebinding", func(t *testing.T) {
		h := map[string]string{"Host": "rebind.attacker.example" + port, "Origin": "http://rebind.attacker.example" + port}
		for _, r := range routes {
			if code, body, _ := s.httpDo(t, r.method, r.path, r.body, h); code != http.StatusForbidden || !strings.Contains(body, "is not one this server answers to") {
				t.Errorf("%s %s with a foreign Host: %d %s, want 403", r.method, r.path, code, body)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		hdr := http.Header{"Origin": {"http://rebind.attacker.example" + port}}
		opts := &websocket.DialOptions{HTTPHeader: hdr, Host: "rebind.attacker.example" + port}
		if c, resp, err := websocket.Dial(ctx, s.wsURL(), opts); err == nil {
			c.CloseNow()
			t.Error("a WebSocket upgrade with a rebound Host succeeded")
		} else if resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("rebound upgrade: %v %v, want 403", err, resp)
		}
		for _, host := range []string{"localhost" + port, "127.0.0.1" + port} {
			if code, body, _ := s.httpDo(t, "GET", "/state", "", map[string]string{"Host": host}); code != http.StatusOK {
				t.Errorf("GET /state with Host %s: %d %s", host, code, body)
			}
		}
		if code, _, _ := s.httpDo(t, "GET", "/health", "", h); code != http.StatusOK {
			t.Errorf("GET /health with a foreign Host: %d, want 200 (probes)", code)
		}
		if n := s.fake.opened.Load(); n != 0 {
			t.Errorf("%d instances opened by refused requests", n)
		}
	})

	t.Run("ForeignOrigin", func(t *testing.T) {
		for _, r := range routes {
			if r.method != "POST" {
				continue
			}
			code, body, _ := s.httpDo(t, r.method, r.path, r.body, map[string]string{"Origin": "https://evil.example"})
			if code != http.StatusForbidden && !(r.path == "/mcp" && strings.Contains(body, "is not allowed")) {
				t.Errorf("%s %s from a foreign Origin: %d %s, want 403", r.method, r.path, code, body)
			}
		}
		if code, body, _ := s.httpDo(t, "POST", "/reset", `{}`, map[string]string{"Origin": s.ts.URL}); code != http.StatusOK {
			t.Errorf("POST /reset from the server's own origin: %d %s", code, body)
		}
	})

	t.Run("Allowed", func(t *testing.T) {
		s := mustServe(t, newFake(t), openenv.Config{AllowedHosts: []string{"seahaven.internal"}, AllowedOrigins: []string{"https://ui.example.com"}})
		port := s.ts.URL[strings.LastIndex(s.ts.URL, ":"):]
		h := map[string]string{"Host": "seahaven.internal" + port, "Origin": "https://ui.example.com"}
		if code, body, _ := s.httpDo(t, "POST", "/reset", `{}`, h); code != http.StatusOK {
			t.Errorf("POST /reset from an allowed host and origin: %d %s", code, body)
		}
		if code, _, _ := s.httpDo(t, "POST", "/reset", `{}`, map[string]string{"Host": "other.internal" + port}); code != http.StatusForbidden {
			t.Errorf("POST /reset with a Host not allowed: %d, want 403", code)
		}
		if code, _, _ := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Origin": "https://ui.example.com"}); code != http.StatusOK {
			t.Errorf("POST /mcp from an allowed origin: %d", code)
		}
	})
}
