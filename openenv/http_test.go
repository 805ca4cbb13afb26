package openenv_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/schemas"
	"github.com/seahaven/seahaven/schemas/schematest"
)

func TestHTTP_Routes(t *testing.T) {
	tests := []struct {
		name   string
		method string
		path   string
		status int
		want   string // the whole body; "" to skip
	}{
		{"Health", "GET", "/health", 200, `{"status":"healthy"}`},
		{"Metadata", "GET", "/metadata", 200, `{"name":"fake","description":"A fake world for tests.","readme_content":null,"version":"1.2.3","author":null,"documentation_url":null}`},
		{"Fixtures", "GET", "/fixtures", 200, `[{"id":"base","description":"Two customers.","parent_id":null,"created_at":"2026-01-01T00:00:00.000Z","world_version":"1.2.3","default":true},` +
			`{"id":"child","description":"Base plus a refund.","parent_id":"base","created_at":"2026-01-02T00:00:00.000Z","world_version":"1.2.3"}]`},
		{"SessionsEmpty", "GET", "/sessions", 200, `[]`},
		{"NotFound", "GET", "/nowhere", 404, `{"detail":"Not Found"}`},
		{"MethodNotAllowed", "POST", "/health", 405, `{"detail":"Method Not Allowed"}`},
		{"StateNotPost", "POST", "/state", 405, `{"detail":"Method Not Allowed"}`},
		{"ResetNotGet", "GET", "/reset", 405, `{"detail":"Method Not Allowed"}`},
		{"WSWithoutUpgrade", "GET", "/ws", 426, ""},
		{"HeadHealth", "HEAD", "/health", 200, ""},
		{"HeadReady", "HEAD", "/ready", 200, ""},
		{"HeadMetrics", "HEAD", "/metrics", 200, ""},
		{"HeadNowhere", "HEAD", "/nowhere", 404, ""},
	}
	s := mustServe(t, newFake(t), openenv.Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, resp := s.httpDo(t, tt.method, tt.path, "", nil)
			if code != tt.status {
				t.Fatalf("status %d, want %d: %s", code, tt.status, body)
			}
			if tt.method == "HEAD" && body != "" {
				t.Errorf("HEAD answered with a body: %s", body)
			}
			if tt.want != "" {
				if compact(t, body) != compact(t, tt.want) {
					t.Errorf("got  %s\nwant %s", body, tt.want)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q", ct)
				}
			}
		})
	}
}

// TestHTTP_Allow: a 405 names the methods the route takes, as RFC 9110
// asks (HEAD wherever GET is).
func TestHTTP_Allow(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	for _, tt := range []struct{ method, path, allow string }{
		{"POST", "/health", "GET, HEAD"},
		{"PUT", "/state", "GET, HEAD"},
		{"GET", "/reset", "POST"},
		{"DELETE", "/step", "POST"},
		{"PATCH", "/fixtures", "GET, HEAD"},
	} {
		code, body, resp := s.httpDo(t, tt.method, tt.path, "", nil)
		if code != 405 || resp.Header.Get("Allow") != tt.allow {
			t.Errorf("%s %s: %d %s (Allow %q), want 405 with Allow %q", tt.method, tt.path, code, body, resp.Header.Get("Allow"), tt.allow)
		}
	}
}

// TestHTTP_UnknownMethod: a method the router has no table for (FOO,
// PROPFIND) on a path no route serves is 404, as PUT there is; on a route,
// 405 with the route's methods. It was 405 with an empty Allow header
// wherever the path, the production mode's absent episode routes and the
// agent listener's absent routes included.
func TestHTTP_UnknownMethod(t *testing.T) {
	s := mustServeAgent(t, openenv.Config{})
	prod := mustServe(t, newFake(t), openenv.Config{Production: true})
	for _, tt := range []struct {
		name         string
		url          string // the server's base URL
		method, path string
		status       int
		allow        string
	}{
		{"Nowhere", s.ts.URL, "FOO", "/nowhere", 404, ""},
		{"NowherePROPFIND", s.ts.URL, "PROPFIND", "/nowhere", 404, ""},
		{"NowherePUT", s.ts.URL, "PUT", "/nowhere", 404, ""},
		{"Route", s.ts.URL, "FOO", "/health", 405, "GET, HEAD"},
		{"RouteMCP", s.ts.URL, "FOO", "/mcp", 405, "POST, DELETE"},
		{"ProductionReset", prod.ts.URL, "FOO", "/reset", 404, ""},
		{"AgentWS", s.agent.URL, "FOO", "/ws", 404, ""},
		{"AgentMetadata", s.agent.URL, "FOO", "/metadata", 405, "GET, HEAD"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, tt.url+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || resp.Header.Get("Allow") != tt.allow {
				t.Errorf("%s %s: %d %s (Allow %q), want %d with Allow %q", tt.method, tt.path, resp.StatusCode, body, resp.Header.Get("Allow"), tt.status, tt.allow)
			}
			if _, ok := resp.Header["Allow"]; ok && tt.allow == "" {
				t.Errorf("%s %s: an Allow header %q on a path no route serves", tt.method, tt.path, resp.Header.Get("Allow"))
			}
			if tt.status == 404 {
				jsonEq(t, string(body), `{"detail":"Not Found"}`)
			}
		})
	}
}

func TestHTTP_Schema(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	_, body, _ := s.httpDo(t, "GET", "/schema", "", nil)
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Errorf("keys %v, want action, observation, state", got)
	}
	for _, name := range []string{"action", "observation", "state"} {
		want, err := schemas.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if compact(t, string(got[name])) != compact(t, string(want)) {
			t.Errorf("%s schema differs from package schemas", name)
		}
	}
}

// POST /mcp answers other statuses than 200 and 202, and /openapi.json
// lists each: a set-up in the URL the episode cannot start with (400), an
// unknown Mcp-Session-Id (404), a server at capacity (503). It said the
// route always answered 200.
func TestHTTP_OpenAPIMCPStatuses(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{MaxSessions: 1})
	_, body, _ := s.httpDo(t, "GET", "/openapi.json", "", nil)
	var doc struct {
		Paths map[string]map[string]struct {
			Description string                     `json:"description"`
			Responses   map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	op := doc.Paths["/mcp"]["post"]
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`
	for _, c := range []struct {
		path, session string
		status        int
	}{
		{"/mcp", "", http.StatusOK}, // holds the one session
		{"/mcp?colour=red", "", http.StatusBadRequest},
		{"/mcp", "nope", http.StatusNotFound},
		{"/mcp", "", http.StatusServiceUnavailable},
	} {
		var header map[string]string
		if c.session != "" {
			header = map[string]string{openenv.MCPSessionHeader: c.session}
		}
		code, reply, _ := s.httpDo(t, "POST", c.path, initialize, header)
		if code != c.status {
			t.Fatalf("POST %s (session %q): %d %s, want %d", c.path, c.session, code, reply, c.status)
		}
		if _, ok := op.Responses[fmt.Sprint(code)]; !ok {
			t.Errorf("POST %s answers %d, which /openapi.json does not list for POST /mcp (it lists %d responses: %s)", c.path, code, len(op.Responses), op.Description)
		}
	}
}

func TestHTTP_OpenAPI(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	code, body, _ := s.httpDo(t, "GET", "/openapi.json", "", nil)
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct {
			Title   string `json:"title"`
			Version string `json:"version"`
		} `json:"info"`
		Paths      map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Info.Title != "OpenEnv Environment HTTP API" || doc.Info.Version != "1.0.0" {
		t.Errorf("openapi %q, info %+v", doc.OpenAPI, doc.Info)
	}
	for path, method := range map[string]string{"/reset": "post", "/step": "post", "/state": "get", "/health": "get",
		"/metadata": "get", "/schema": "get", "/mcp": "post", "/inspect": "post"} {
		if _, ok := doc.Paths[path][method]; !ok {
			t.Errorf("no %s %s in paths", method, path)
		}
	}
	// Every reference points from the document's root and resolves there,
	// as OpenAPI tools read one (openapi-typescript and Redocly resolve no
	// other); no component is a JSON Schema resource of its own.
	var all any
	if err := json.Unmarshal([]byte(body), &all); err != nil {
		t.Fatal(err)
	}
	resolve := func(ref string) bool {
		var v any = all
		for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			m, ok := v.(map[string]any)
			if !ok {
				return false
			}
			if v, ok = m[strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)]; !ok {
				return false
			}
		}
		return true
	}
	refs := 0
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				refs++
				if !strings.HasPrefix(ref, "#/components/") || !resolve(ref) {
					t.Errorf("$ref %q does not resolve from the document's root", ref)
				}
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(all)
	if refs < 40 {
		t.Errorf("%d references in the document, want the components' own", refs)
	}
	for name, c := range doc.Components.Schemas {
		for _, k := range []string{"$id", "$schema", "$defs"} {
			if _, ok := c[k]; ok {
				t.Errorf("component %s has %s", name, k)
			}
		}
	}
	for _, name := range []string{"Action", "CallToolAction", "Observation", "CallToolResult", "State", "ChangeRecord", "StepResponse"} {
		if _, ok := doc.Components.Schemas[name]; !ok {
			t.Errorf("no component %s", name)
		}
	}
}

func TestHTTP_StatefulSessions(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	grader := map[string]string{openenv.SessionHeader: "grader-1"}
	other := map[string]string{openenv.SessionHeader: "grader-2"}

	code, body, resp := s.httpDo(t, "POST", "/reset", `{"seed":4,"episode_id":"g1"}`, grader)
	if code != 200 || compact(t, body) != `{"observation":{},"reward":null,"done":false}` {
		t.Fatalf("POST /reset: %d %s", code, body)
	}
	if h := resp.Header.Get(openenv.SessionHeader); h != "grader-1" {
		t.Errorf("reply session header %q", h)
	}
	s.httpDo(t, "POST", "/reset", `{"episode_id":"g2"}`, other)

	for i := range 3 {
		code, body, _ = s.httpDo(t, "POST", "/step", fmt.Sprintf(`{"action":{"type":"call_tool","tool_name":"echo","arguments":{"message":"m%d"}}}`, i), grader)
		if code != 200 {
			t.Fatalf("POST /step: %d %s", code, body)
		}
	}
	jsonEq(t, body, `{"observation":{"tool_name":"echo","result":{"content":[{"type":"text","text":"{\"message\":\"m2\"}","annotations":null,"meta":null}],"structured_content":{"message":"m2"},"meta":null,"data":{"message":"m2"},"is_error":false},"error":null},"reward":null,"done":false}`)
	if err := schematest.Validate("step_response", []byte(body)); err != nil {
		t.Error(err)
	}

	_, state, _ := s.httpDo(t, "GET", "/state", "", grader)
	if err := schematest.Validate("state", []byte(state)); err != nil {
		t.Error(err)
	}
	if ep, n, seed := str(t, state, "episode_id"), fmt.Sprint(field(t, state, "step_count")), fmt.Sprint(field(t, state, "seed")); ep != "g1" || n != "3" || seed != "4" {
		t.Errorf("grader-1 state: episode %s, steps %s, seed %s; want g1, 3, 4", ep, n, seed)
	}
	_, state, _ = s.httpDo(t, "GET", "/state", "", other)
	if ep, n := str(t, state, "episode_id"), fmt.Sprint(field(t, state, "step_count")); ep != "g2" || n != "0" {
		t.Errorf("grader-2 state: episode %s, steps %s; want g2, 0", ep, n)
	}
	_, rows, _ := s.httpDo(t, "POST", "/inspect", `{"sql":"SELECT message FROM echoes"}`, grader)
	jsonEq(t, rows, `{"columns":["message"],"rows":[["m0"],["m1"],["m2"]],"truncated":false}`)

	t.Run("DefaultSession", func(t *testing.T) {
		_, state, resp := s.httpDo(t, "GET", "/state", "", nil)
		if ep := field(t, state, "episode_id"); ep != nil {
			t.Errorf("default session episode %v before any reset", ep)
		}
		id := resp.Header.Get(openenv.SessionHeader)
		if id == "" || id == "grader-1" || id == "grader-2" {
			t.Errorf("default session id %q", id)
		}
		_, body, _ := s.httpDo(t, "POST", "/step", `{"action":{"tool_name":"add","arguments":{"a":2,"b":2}}}`, nil)
		if d := fmt.Sprint(field(t, body, "observation.result.data")); d != "4" {
			t.Errorf("default session step: %s", body)
		}
		_, state, resp = s.httpDo(t, "GET", "/state", "", nil)
		if n := fmt.Sprint(field(t, state, "step_count")); n != "1" || resp.Header.Get(openenv.SessionHeader) != id {
			t.Errorf("default session not kept: %s", state)
		}
	})
	t.Run("UnknownSession", func(t *testing.T) {
		for _, r := range []struct{ method, path, body string }{
			{"POST", "/step", `{"action":{"type":"list_tools"}}`},
			{"GET", "/state", ""},
			{"POST", "/inspect", `{"sql":"SELECT 1"}`},
		} {
			code, body, resp := s.httpDo(t, r.method, r.path, r.body, map[string]string{openenv.SessionHeader: "nobody"})
			if code != 404 || compact(t, body) != `{"detail":"Unknown session_id: nobody","code":"SESSION_ERROR"}` {
				t.Errorf("%s %s: %d %s", r.method, r.path, code, body)
			}
			// A proxy learning where sessions live from this header must
			// not learn a server that does not hold the session.
			if h := resp.Header.Get(openenv.SessionHeader); h != "" {
				t.Errorf("%s %s of an unknown session names session %q", r.method, r.path, h)
			}
		}
	})
	t.Run("RefusedFirstReset", func(t *testing.T) {
		// A session whose first reset is refused ends: it holds no slot,
		// and a step naming it is not run on an episode nobody asked for.
		before := len(s.Sessions())
		for i := range 5 {
			hdr := map[string]string{openenv.SessionHeader: fmt.Sprintf("q%d", i)}
			code, body, resp := s.httpDo(t, "POST", "/reset", `{"fixture":"nope"}`, hdr)
			if code == 200 {
				t.Fatalf("reset to an unknown fixture: %d %s", code, body)
			}
			if h := resp.Header.Get(openenv.SessionHeader); h != "" {
				t.Errorf("refused reset names session %q", h)
			}
		}
		if n := len(s.Sessions()); n != before {
			t.Errorf("%d sessions after five refused first resets, want %d", n, before)
		}
		code, body, _ := s.httpDo(t, "POST", "/step", `{"action":{"type":"list_tools"}}`, map[string]string{openenv.SessionHeader: "q0"})
		if code != 404 {
			t.Errorf("step on the refused session: %d %s, want 404", code, body)
		}
		// A live session keeps its episode through a refused reset.
		code, _, _ = s.httpDo(t, "POST", "/reset", `{"fixture":"nope"}`, grader)
		if _, state, _ := s.httpDo(t, "GET", "/state", "", grader); code == 200 || str(t, state, "episode_id") != "g1" {
			t.Errorf("grader-1 after a refused reset: %d, %s", code, state)
		}
	})
	if n := len(s.Sessions()); n != 3 {
		t.Errorf("%d sessions, want 3 (two named, one default)", n)
	}
}

func TestHTTP_Errors(t *testing.T) {
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		header string // X-Seahaven-Session
		status int
		want   string // the whole body
	}{
		{"ResetNegativeSeed", "POST", "/reset", `{"seed":-1}`, "", 422,
			`{"detail":[{"type":"greater_than_equal","loc":["body","seed"],"msg":"Input should be greater than or equal to 0","input":-1}]}`},
		{"ResetUnknownKey", "POST", "/reset", `{"difficulty":"hard"}`, "", 422,
			`{"detail":[{"type":"extra_forbidden","loc":["body","difficulty"],"msg":"Extra inputs are not permitted","input":"hard"}]}`},
		{"ResetInvalidJSON", "POST", "/reset", `{"seed":`, "", 422,
			`{"detail":[{"type":"json_invalid","loc":["body"],"msg":"JSON decode error","input":{},"ctx":{"error":"unexpected end of JSON input"}}]}`},
		{"StepTrailingBytes", "POST", "/step", `{"action":{"type":"list_tools"}}x`, "", 422,
			`{"detail":[{"type":"json_invalid","loc":["body"],"msg":"JSON decode error","input":{},"ctx":{"error":"invalid character 'x' after top-level value"}}]}`},
		{"ResetBadHeader", "POST", "/reset", `{}`, "bad id!", 422,
			`{"detail":[{"type":"string_pattern_mismatch","loc":["header","X-Seahaven-Session"],"msg":"String should match pattern '^[A-Za-z0-9._:-]{1,255}$'","input":"bad id!"}]}`},
		{"ResetUnknownFixture", "POST", "/reset", `{"fixture":"nope"}`, "", 500,
			`{"detail":"unknown fixture \"nope\"","code":"EXECUTION_ERROR"}`},
		{"StepMissingAction", "POST", "/step", `{}`, "", 422,
			`{"detail":[{"type":"missing","loc":["body","action"],"msg":"Field required","input":{}}]}`},
		{"StepNoBody", "POST", "/step", ``, "", 422,
			`{"detail":[{"type":"missing","loc":["body","action"],"msg":"Field required","input":{}}]}`},
		{"StepActionNull", "POST", "/step", `{"action":null}`, "", 422,
			`{"detail":[{"type":"dict_type","loc":["body","action"],"msg":"Input should be a valid dictionary","input":null}]}`},
		{"StepActionList", "POST", "/step", `{"action":[],"trace":1}`, "", 422,
			`{"detail":[{"type":"dict_type","loc":["body","action"],"msg":"Input should be a valid dictionary","input":[]},{"type":"extra_forbidden","loc":["body","trace"],"msg":"Extra inputs are not permitted","input":1}]}`},
		{"StepMissingToolName", "POST", "/step", `{"action":{"type":"call_tool"}}`, "", 422,
			`{"detail":[{"type":"missing","loc":["tool_name"],"msg":"Field required","input":{"type":"call_tool"}}]}`},
		{"StepBadTimeout", "POST", "/step", `{"action":{"type":"list_tools"},"timeout_s":0}`, "", 422,
			`{"detail":[{"type":"greater_than","loc":["body","timeout_s"],"msg":"Input should be greater than 0","input":0}]}`},
		{"StepHugeTimeout", "POST", "/step", `{"action":{"type":"list_tools"},"timeout_s":1e10}`, "", 422,
			`{"detail":[{"type":"less_than_equal","loc":["body","timeout_s"],"msg":"Input should be less than or equal to 86400","input":1e10}]}`},
		{"ResetNowPastMax", "POST", "/reset", `{"now":"9999-12-31T00:00:00Z"}`, "", 422,
			`{"detail":[{"type":"value_error","loc":["body","now"],"msg":"Value error, now must be an RFC 3339 time from 1000-01-01T00:00:00.000Z to 9000-01-01T00:00:00.000Z","input":"9999-12-31T00:00:00Z"}]}`},
		{"StepExtra", "POST", "/step", `{"action":{"type":"list_tools"},"trace":true}`, "", 422,
			`{"detail":[{"type":"extra_forbidden","loc":["body","trace"],"msg":"Extra inputs are not permitted","input":true}]}`},
		{"StepPanic", "POST", "/step", `{"action":{"tool_name":"boom"}}`, "", 500,
			`{"detail":"internal error: tool \"boom\" panicked: tool exploded","code":"EXECUTION_ERROR"}`},
		{"StepToolError", "POST", "/step", `{"action":{"tool_name":"fail"},"request_id":"r1"}`, "", 200,
			`{"observation":{"tool_name":"fail","result":null,"error":{"error_type":"execution_error","message":"card declined"}},"reward":null,"done":false}`},
		{"StepTimeoutS", "POST", "/step", `{"action":{"tool_name":"slow"},"timeout_s":0.02}`, "", 200,
			`{"observation":{"tool_name":"slow","result":null,"error":{"error_type":"timeout","message":"tool \"slow\" timed out after 20ms"}},"reward":null,"done":false}`},
		{"InspectMissingSQL", "POST", "/inspect", `{}`, "", 422,
			`{"detail":[{"type":"missing","loc":["body","sql"],"msg":"Field required","input":{}}]}`},
		{"InspectSQLError", "POST", "/inspect", `{"sql":"DROP TABLE x"}`, "", 400,
			`{"detail":"no such table: DROP TABLE x","code":"EXECUTION_ERROR"}`},
		{"ResetTooLarge", "POST", "/reset", `{"episode_id":"` + strings.Repeat("x", 300) + `"}`, "", 413,
			`{"detail":"Request body exceeds the limit of 256 bytes","code":"SESSION_ERROR"}`},
	}
	s := mustServe(t, newFake(t), openenv.Config{MaxMessageBytes: 256})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h map[string]string
			if tt.header != "" {
				h = map[string]string{openenv.SessionHeader: tt.header}
			}
			code, body, _ := s.httpDo(t, tt.method, tt.path, tt.body, h)
			if code != tt.status || compact(t, body) != compact(t, tt.want) {
				t.Errorf("got  %d %s\nwant %d %s", code, body, tt.status, tt.want)
			}
		})
	}
}

func TestHTTP_ResetFailureKeepsInstance(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	s.httpDo(t, "POST", "/reset", `{"episode_id":"keep"}`, nil)
	if code, _, _ := s.httpDo(t, "POST", "/reset", `{"fixture":"nope"}`, nil); code != 500 {
		t.Fatalf("failing reset: %d", code)
	}
	_, state, _ := s.httpDo(t, "GET", "/state", "", nil)
	if ep := str(t, state, "episode_id"); ep != "keep" {
		t.Errorf("episode %s after a failed reset, want keep", ep)
	}
	if n := fake.open.Load(); n != 1 {
		t.Errorf("%d instances open, want 1", n)
	}
}

func TestHTTP_Capacity(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{MaxSessions: 1})
	s.httpDo(t, "POST", "/reset", "", map[string]string{openenv.SessionHeader: "a"})
	code, body, _ := s.httpDo(t, "POST", "/reset", "", map[string]string{openenv.SessionHeader: "b"})
	if code != 503 || compact(t, body) != `{"detail":"Server at capacity: 1/1 sessions active. Cannot accept new connections.","code":"CAPACITY_REACHED","active_sessions":1,"max_sessions":1}` {
		t.Errorf("reset over capacity: %d %s", code, body)
	}
}

// TestHTTP_TrailingSlash: a route's path with a trailing slash (an MCP URL
// pasted with one) is redirected to the route with 307, which keeps the
// method and the body, as FastAPI does; a client that follows it gets the
// route's answer. A path that is no route with or without the slash, or
// that would name another host ("//…"), is still 404.
func TestHTTP_TrailingSlash(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	noFollow := *s.ts.Client()
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, tt := range []struct{ method, path, location string }{
		{"POST", "/mcp/", "/mcp"},
		{"GET", "/health/", "/health"},
		{"HEAD", "/health/", "/health"},
		{"POST", "/reset/?task=t", "/reset?task=t"},
		{"GET", "/sessions/x/watch/", "/sessions/x/watch"},
		{"GET", "/nowhere/", ""},
		{"GET", "//health/", ""},
		{"GET", "/health//", ""},
	} {
		req, err := http.NewRequest(tt.method, s.ts.URL+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tt.method, tt.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case tt.location == "" && (resp.StatusCode != http.StatusNotFound || tt.method != "HEAD" && string(body) != `{"detail":"Not Found"}`):
			t.Errorf("%s %s: %d %s, want 404", tt.method, tt.path, resp.StatusCode, body)
		case tt.location != "" && (resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != tt.location):
			t.Errorf("%s %s: %d to %q, want 307 to %s", tt.method, tt.path, resp.StatusCode, resp.Header.Get("Location"), tt.location)
		}
	}
	code, body, _ := s.httpDo(t, "POST", "/mcp/", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"slash","version":"1"}}}`, nil)
	if code != http.StatusOK || !strings.Contains(body, `"protocolVersion"`) {
		t.Errorf("initialize at /mcp/, the redirect followed: %d %s", code, body)
	}
}

// TestHTTP_RefusalNamesItsSession: a request refused for its body (a
// validation error, a content type) on a live session still names that
// session in X-Seahaven-Session, as every other reply of the session
// does, where it named none and a proxy learning routes from replies lost
// track of the session.
func TestHTTP_RefusalNamesItsSession(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	h := map[string]string{openenv.SessionHeader: "refused-here"}
	if code, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{}`, h); code != http.StatusOK {
		t.Fatalf("reset: %d %s", code, body)
	}
	for _, tt := range []struct{ path, body, contentType string }{
		{"/step", `{"action":{"type":"nope"}}`, ""},
		{"/step", `{`, ""},
		{"/step", `{"action":{"type":"list_tools"}}`, "text/plain"},
		{"/reset", `{"colour":"red"}`, ""},
		{"/inspect", `{"sql":"SELECT 1","x":1}`, ""},
	} {
		hdr := map[string]string{openenv.SessionHeader: "refused-here"}
		if tt.contentType != "" {
			hdr["Content-Type"] = tt.contentType
		}
		code, body, resp := s.httpDo(t, http.MethodPost, tt.path, tt.body, hdr)
		if code < 400 || resp.Header.Get(openenv.SessionHeader) != "refused-here" {
			t.Errorf("POST %s %s (%s): %d %s, %s %q, want a refusal naming the session", tt.path, tt.body, tt.contentType, code, body, openenv.SessionHeader, resp.Header.Get(openenv.SessionHeader))
		}
	}
	// A session this server does not hold is named by none.
	if code, _, resp := s.httpDo(t, http.MethodPost, "/step", `{`, map[string]string{openenv.SessionHeader: "not-here"}); code < 400 || resp.Header.Get(openenv.SessionHeader) != "" {
		t.Errorf("a refusal on an unknown session: %d, %s %q, want none", code, openenv.SessionHeader, resp.Header.Get(openenv.SessionHeader))
	}
}
