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
		// Streamable HTTP: a server answers 403 to a foreign Origin on
		// every request to its MCP endpoint, the methods it does not
		// serve included (they were 405).
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut} {
			code, body, _ := s.httpDo(t, m, "/mcp", "", map[string]string{"Origin": "https://evil.example"})
			if code != http.StatusForbidden || (m != http.MethodHead && !strings.Contains(body, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Origin https://evil.example is not allowed`)) {
				t.Errorf("%s /mcp from a foreign Origin: %d %s, want 403", m, code, body)
			}
		}
		if code, body, _ := s.httpDo(t, http.MethodGet, "/mcp", "", map[string]string{"Origin": s.ts.URL}); code != http.StatusMethodNotAllowed {
			t.Errorf("GET /mcp from the server's own origin: %d %s, want 405", code, body)
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

// A page of an allowed origin opens /ws; a page of the same host under
// another scheme, or of another host, is refused at the handshake.
func TestServer_BrowserWSOrigin(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{AllowedOrigins: []string{"https://ui.example.com", "http://[::1]:5173"}})
	for _, c := range []struct {
		origin string
		ok     bool
	}{
		{"https://ui.example.com", true},
		{"HTTPS://UI.EXAMPLE.COM", true},
		{"http://[::1]:5173", true},
		{"http://ui.example.com", false},
		{"https://ui.example.com:8443", false},
		{"https://evil.example", false},
		{"http://[::2]:5173", false},
	} {
		if ok, status := wsOpens(t, s, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {c.origin}}}); ok != c.ok {
			t.Errorf("/ws from Origin %s: opened %v (status %d), want %v", c.origin, ok, status, c.ok)
		}
	}
}

// The server's own origin is its Host over the scheme the request came
// by: behind a proxy that ends TLS and says so (X-Forwarded-Proto: https),
// a page of the same host over http is refused, on every state-changing
// route and at the /ws handshake, whose own check admits the host of any
// scheme; a request that says nothing of TLS admits either scheme, as a
// proxy may end TLS without saying so.
func TestServer_BrowserOwnOriginScheme(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{AllowedHosts: []string{"seahaven.example.com"}})
	port := s.ts.URL[strings.LastIndex(s.ts.URL, ":"):]
	host := "seahaven.example.com" + port
	for _, c := range []struct {
		origin string
		tls    bool
		ok     bool
	}{
		{"https://" + host, true, true},
		{"http://" + host, true, false},
		{"http://" + host, false, true},
		{"https://" + host, false, true},
	} {
		h := map[string]string{"Host": host, "Origin": c.origin}
		if c.tls {
			h["X-Forwarded-Proto"] = "https"
		}
		for _, r := range []struct{ method, path, body string }{
			{"POST", "/reset", `{}`},
			{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		} {
			code, body, _ := s.httpDo(t, r.method, r.path, r.body, h)
			if ok := code == http.StatusOK; ok != c.ok {
				t.Errorf("%s %s from %s (TLS said: %v): %d %s, want allowed %v", r.method, r.path, c.origin, c.tls, code, body, c.ok)
			}
		}
		hdr := http.Header{"Origin": {c.origin}}
		if c.tls {
			hdr.Set("X-Forwarded-Proto", "https")
		}
		if ok, status := wsOpens(t, s, &websocket.DialOptions{HTTPHeader: hdr, Host: host}); ok != c.ok {
			t.Errorf("/ws from %s (TLS said: %v): opened %v (status %d), want %v", c.origin, c.tls, ok, status, c.ok)
		}
	}
}

// A page of an allowed origin can use the server from a browser, the MCP
// TypeScript SDK's client on /mcp among them: the browser's preflight of
// a JSON POST (or of a DELETE /mcp) is answered, before the token check,
// since a preflight carries no credentials; every reply to that origin
// lets the page read it and the Mcp-Session-Id header; a 2026-07-28
// client's Mcp-Method and Mcp-Name headers are allowed. A page of another
// origin gets none of this.
func TestServer_BrowserCORS(t *testing.T) {
	const ui = "https://ui.example.com"
	s := mustServe(t, newFake(t), openenv.Config{AllowedOrigins: []string{ui}, Token: "s3cret"})
	preflight := func(origin, method, path string) *http.Response {
		t.Helper()
		_, _, resp := s.httpDo(t, http.MethodOptions, path, "", map[string]string{
			"Origin": origin, "Access-Control-Request-Method": method,
			"Access-Control-Request-Headers": "authorization,content-type,mcp-protocol-version,mcp-session-id",
		})
		return resp
	}
	for _, r := range []struct{ method, path string }{{"POST", "/mcp"}, {"DELETE", "/mcp"}, {"POST", "/reset"}, {"POST", "/step"}} {
		resp := preflight(ui, r.method, r.path)
		h := resp.Header
		if resp.StatusCode/100 != 2 || h.Get("Access-Control-Allow-Origin") != ui || !strings.Contains(h.Get("Access-Control-Allow-Methods"), r.method) ||
			!strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "mcp-session-id") ||
			!strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "authorization") {
			t.Errorf("preflight of %s %s from %s: %d %v", r.method, r.path, ui, resp.StatusCode, h)
		}
		if resp := preflight("https://evil.example", r.method, r.path); resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight of %s %s from another origin allowed: %v", r.method, r.path, resp.Header)
		}
	}
	// A client of MCP 2026-07-28 repeats its method and tool name in
	// headers of their own.
	_, _, resp := s.httpDo(t, http.MethodOptions, "/mcp", "", map[string]string{
		"Origin": ui, "Access-Control-Request-Method": "POST",
		"Access-Control-Request-Headers": "authorization,content-type,mcp-protocol-version,mcp-method,mcp-name",
	})
	if allowed := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")); resp.StatusCode/100 != 2 || resp.Header.Get("Access-Control-Allow-Origin") != ui ||
		!strings.Contains(allowed, "mcp-method") || !strings.Contains(allowed, "mcp-name") {
		t.Errorf("preflight of a 2026-07-28 POST /mcp from %s: %d %v", ui, resp.StatusCode, resp.Header)
	}
	code, body, resp := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		map[string]string{"Origin": ui, "Authorization": "Bearer s3cret"})
	sid := resp.Header.Get(openenv.MCPSessionHeader)
	if code != http.StatusOK || sid == "" || resp.Header.Get("Access-Control-Allow-Origin") != ui ||
		!strings.Contains(strings.ToLower(resp.Header.Get("Access-Control-Expose-Headers")), "mcp-session-id") {
		t.Errorf("initialize from %s: %d %s %v", ui, code, body, resp.Header)
	}
	// The token is still required of the requests themselves.
	if code, _, resp := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, map[string]string{"Origin": ui, openenv.MCPSessionHeader: sid}); code != http.StatusUnauthorized || resp.Header.Get("Access-Control-Allow-Origin") != ui {
		t.Errorf("ping from %s without the token: %d %v, want 401 the page can read", ui, code, resp.Header)
	}
	if code, _, _ := s.httpDo(t, "DELETE", "/mcp", "", map[string]string{"Origin": ui, "Authorization": "Bearer s3cret", openenv.MCPSessionHeader: sid}); code != http.StatusNoContent {
		t.Errorf("DELETE /mcp from %s: %d", ui, code)
	}
	if _, _, resp := s.httpDo(t, "GET", "/health", "", map[string]string{"Origin": "https://evil.example"}); resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("a reply to another origin allows it: %v", resp.Header)
	}
}

// The 403s refusing a Host or a page's Origin repeat at most 1 KiB of it,
// where they repeated the whole header (up to the megabyte net/http reads),
// and /mcp's names the allowed origins as every other route's does, where
// it said pages of the server's own origin alone were answered.
func TestServer_BrowserRefusalsBounded(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{AllowedOrigins: []string{"https://ui.example.com"}})
	long := "http://" + strings.Repeat("a", 4096) + ".example"
	for _, tt := range []struct {
		method, path, body string
		header             map[string]string
		want               string
	}{
		{"GET", "/state", "", map[string]string{"Host": strings.Repeat("h", 4096) + ".example"},
			`"Host ` + strings.Repeat("h", 1024) + `… (4104 bytes, not echoed) is not one this server answers to`},
		{"POST", "/reset", `{}`, map[string]string{"Origin": long},
			`"Origin http://` + strings.Repeat("a", 1017) + `… (4111 bytes, not echoed) is not allowed: this server answers pages of its own origin and of its allowed origins only"`},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Origin": long},
			`"message":"Origin http://` + strings.Repeat("a", 1017) + `… (4111 bytes, not echoed) is not allowed: this server answers pages of its own origin and of its allowed origins only"`},
	} {
		code, body, _ := s.httpDo(t, tt.method, tt.path, tt.body, tt.header)
		if code != http.StatusForbidden || !strings.Contains(body, tt.want) || len(body) > 2048 {
			t.Errorf("%s %s: %d %.300s… (%d bytes), want 403 with %.200s…", tt.method, tt.path, code, body, len(body), tt.want)
		}
	}
}

// wsOpens dials s's /ws with opts and reports whether the handshake
// succeeded (closing the connection), with the refusal's status if not.
func wsOpens(t *testing.T, s *testServer, opts *websocket.DialOptions) (bool, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, s.wsURL(), opts)
	if err == nil {
		c.Close(websocket.StatusNormalClosure, "")
		return true, 0
	}
	if resp == nil {
		return false, 0
	}
	return false, resp.StatusCode
}
