package openenv_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/seahaven/seahaven/internal/runecut"
	"github.com/seahaven/seahaven/openenv"
)

// httpFuzzRoutes are the routes FuzzHTTPRequest sends to, with the body
// each gets when the fuzzed one is left empty.
var httpFuzzRoutes = []struct{ method, path, body string }{
	{http.MethodPost, "/reset", `{"seed":7}`},
	{http.MethodPost, "/step", `{"action":{"type":"call_tool","tool_name":"echo","arguments":{"message":"hi"}}}`},
	{http.MethodGet, "/state", ``},
	{http.MethodPost, "/inspect", `{"sql":"SELECT 1"}`},
	{http.MethodPost, "/grade", ``},
	{http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`},
	{http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
	{http.MethodDelete, "/mcp", ``},
	{http.MethodGet, "/checkpoints/latest", ``},
	{http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},` + modernMeta + `}}`},
	{http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":4,"method":"server/discover","params":{` + modernMeta + `}}`},
}

// modernRoute reports whether a route of httpFuzzRoutes speaks MCP
// 2026-07-28, whose requests FuzzHTTPRequest sends at a URL naming a live
// session when its query is empty.
func modernRoute(body string) bool { return strings.Contains(body, modernMeta) }

// validHeaderValue reports whether net/http's client sends v as a header
// value: no control character but a tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < 0x20 && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// jsonStrings appends every string in the JSON value v, keys included,
// but for the inputs a validation failure repeats as FastAPI does.
func jsonStrings(v any, out []string) []string {
	switch v := v.(type) {
	case string:
		out = append(out, v)
	case []any:
		for _, e := range v {
			out = jsonStrings(e, out)
		}
	case map[string]any:
		for k, e := range v {
			if k != "input" {
				out = jsonStrings(e, append(out, k))
			}
		}
	}
	return out
}

// FuzzHTTPRequest sends one HTTP request to an episode route, /mcp or
// /checkpoints/latest with an arbitrary body (the route's own when empty),
// query and Content-Type, Content-Encoding, X-Seahaven-Session,
// Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name and Origin
// headers (a 2026-07-28 request at a URL naming a live session when the
// query is empty). The server never
// fails (no 5xx); every reply with a body is JSON in its route's shape (a
// JSON-RPC response on /mcp, else a result or an error whose detail names
// the problem); and no message repeats more than runecut.MaxEcho bytes of
// a header.
func FuzzHTTPRequest(f *testing.F) {
	long := strings.Repeat("x", 3*runecut.MaxEcho)
	for i := range httpFuzzRoutes {
		f.Add(uint8(i), []byte(nil), "", "application/json", "", "", "", "", "", "", "")
	}
	for _, seed := range []struct {
		route                                byte
		body                                 string
		query, ctype, cenc, sid, mcpSID, ver string
		origin, method, name                 string
	}{
		{route: 9, ctype: "application/json", ver: "2026-07-28", method: "tools/call", name: "echo"},
		{route: 9, ctype: "application/json", ver: "2026-07-28", method: "tools/call", name: "=?base64?ZWNobw==?="},
		{route: 9, ctype: "application/json", ver: "2026-07-28", method: "tools/call", name: "=?base64?" + long + "?="},
		{route: 9, ctype: "application/json", ver: "2026-07-28", method: long, name: long},
		{route: 9, ctype: "application/json", ver: "2026-07-28", method: "tools/call", name: "add", query: "session_id=nope"},
		{route: 10, ctype: "application/json", ver: "2026-07-28", method: "server/discover"},
		{route: 10, ctype: "application/json", ver: "2026-07-28", method: "tools/list", mcpSID: "s"},
		{route: 0, body: `{"episode_id":"e"}`, ctype: "application/json", sid: "s-1"},
		{route: 1, body: `{"action":{"tool_name":"add","arguments":{"a":1,"b":2}},"timeout_s":0.5}`, ctype: "application/json", sid: "s-1"},
		{route: 1, body: `{"action":[]}`, ctype: "text/plain"},
		{route: 3, body: `{"sql":"SELECT ?","params":[1e999]}`, ctype: "application/vnd.x+json; charset=utf-8"},
		{route: 0, ctype: "application/json", cenc: long},
		{route: 0, ctype: long},
		{route: 1, ctype: "application/json", sid: long},
		{route: 5, ctype: "application/json", ver: long},
		{route: 5, ctype: "application/json", ver: "2025-06-18", query: "seed=3&fixture=x"},
		{route: 5, ctype: "application/json", query: "seed=%zz"},
		{route: 5, ctype: "application/json", query: "task=" + long},
		{route: 6, ctype: "application/json", mcpSID: long},
		{route: 7, mcpSID: long},
		{route: 5, ctype: "application/json", origin: "https://" + long},
		{route: 8, query: "session=" + long},
		{route: 8, query: "%"},
	} {
		f.Add(seed.route, []byte(seed.body), seed.query, seed.ctype, seed.cenc, seed.sid, seed.mcpSID, seed.ver, seed.origin, seed.method, seed.name)
	}
	s := mustServe(f, newFake(f), fuzzConfig)
	live := str(f, s.rpc(f, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`), "result.session_id")
	client := &http.Client{Timeout: waitLimit}

	f.Fuzz(func(t *testing.T, route uint8, body []byte, query, ctype, cenc, sid, mcpSID, ver, origin, method, name string) {
		rt := httpFuzzRoutes[int(route)%len(httpFuzzRoutes)]
		if len(body) == 0 {
			body = []byte(rt.body)
		}
		if query == "" && modernRoute(rt.body) {
			query = "session_id=" + live
		}
		if len(body) > fuzzLimit {
			t.Skip("over the message limit")
		}
		headers := map[string]string{
			"Content-Type": ctype, "Content-Encoding": cenc, openenv.SessionHeader: sid,
			openenv.MCPSessionHeader: mcpSID, "MCP-Protocol-Version": ver, "Origin": origin,
			"Mcp-Method": method, "Mcp-Name": name,
		}
		for _, v := range headers {
			if !validHeaderValue(v) {
				return
			}
		}
		if strings.ContainsAny(query, "# \t") || !utf8.ValidString(query) {
			return // not one query the client sends as it is
		}
		u := s.ts.URL + rt.path
		if query != "" {
			u += "?" + query
		}
		req, err := http.NewRequest(rt.method, u, bytes.NewReader(body))
		if err != nil {
			return // a query that is not part of a URL
		}
		for k, v := range headers {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", rt.method, u, err)
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		where := rt.method + " " + rt.path
		if resp.StatusCode == http.StatusInternalServerError {
			t.Fatalf("%s: the server failed: %d %.500s", where, resp.StatusCode, out)
		}
		if len(out) == 0 {
			if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusNoContent {
				t.Fatalf("%s: %d with no body", where, resp.StatusCode)
			}
			return
		}
		var doc any
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber() // a number out of float64's range, repeated as its input, is JSON too
		if !utf8.Valid(out) || !json.Valid(out) || dec.Decode(&doc) != nil {
			t.Fatalf("%s: %d, a body that is not JSON: %.500q", where, resp.StatusCode, out)
		}
		switch {
		case rt.path == "/mcp":
			if err := checkRPCShape(out, false); err != nil {
				t.Fatalf("%s: %d %.500s: %v", where, resp.StatusCode, out, err)
			}
		case resp.StatusCode != http.StatusOK:
			checkHTTPError(t, where, resp.StatusCode, out)
		}
		for _, s := range jsonStrings(doc, nil) {
			for name, v := range headers {
				if len(v) > runecut.MaxEcho && strings.Contains(s, v) {
					t.Fatalf("%s: the reply repeats the whole %s header of %d bytes: %.300s", where, name, len(v), out)
				}
			}
			if q, err := url.QueryUnescape(query); err == nil && len(q) > 2*runecut.MaxEcho && strings.Contains(s, q) {
				t.Fatalf("%s: the reply repeats the whole query of %d bytes", where, len(q))
			}
		}
	})
}

// checkHTTPError checks an HTTP error body: a detail that is a list of
// failures, each with a type, a location and a message, or a message with
// its code (the 403 refusing a Host or a page's Origin has none).
func checkHTTPError(t *testing.T, where string, status int, out []byte) {
	t.Helper()
	var e struct {
		Detail json.RawMessage `json:"detail"`
		Code   string          `json:"code"`
	}
	if err := json.Unmarshal(out, &e); err != nil || e.Detail == nil {
		t.Fatalf("%s: %d, an error without a detail: %.500s", where, status, out)
	}
	var msg string
	var list []struct {
		Type string `json:"type"`
		Loc  []any  `json:"loc"`
		Msg  string `json:"msg"`
	}
	switch {
	case json.Unmarshal(e.Detail, &msg) == nil:
		if strings.TrimSpace(msg) == "" || (e.Code == "" && status != http.StatusForbidden) {
			t.Fatalf("%s: %d, an error without a message or a code: %.500s", where, status, out)
		}
	case json.Unmarshal(e.Detail, &list) == nil && len(list) > 0:
		for _, p := range list {
			if p.Type == "" || len(p.Loc) == 0 || strings.TrimSpace(p.Msg) == "" {
				t.Fatalf("%s: %d, a failure without a type, a location or a message: %.500s", where, status, out)
			}
		}
	default:
		t.Fatalf("%s: %d, a detail that is neither a message nor a list of failures: %.500s", where, status, out)
	}
}
