package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/seahaven/seahaven/openenv"
)

// TestOpenAPI_Replies serves the company world and sends each HTTP route
// requests that succeed and requests it refuses: every reply's status is
// one /openapi.json lists for the route, and its body matches the schema
// listed for that status, so a client generated from the description
// reads what the server sends.
func TestOpenAPI_Replies(t *testing.T) {
	url, _ := serveCompany(t, openenv.Config{})
	send := func(method, path, body string, header map[string]string) (int, []byte, http.Header) {
		t.Helper()
		return sendTo(t, url, method, path, body, header)
	}

	_, raw, _ := send("GET", "/openapi.json", "", nil)
	d := describe(t, raw)
	call := func(method, path, route, body string, header map[string]string) (int, []byte, http.Header) {
		t.Helper()
		status, b, h := send(method, path, body, header)
		d.check(t, method, route, status, b)
		return status, b, h
	}

	for _, p := range []string{"/health", "/metadata", "/schema", "/fixtures", "/tasks", "/composition", "/sessions", "/ready", "/accepting", "/debug/runtime", "/metrics"} {
		call("GET", p, p, "", nil)
	}
	call("GET", "/checkpoints/latest?episode_id=none", "/checkpoints/latest", "", nil)
	call("GET", "/checkpoints/latest", "/checkpoints/latest", "", nil)
	call("POST", "/reset", "/reset", `{"seed":"x"}`, nil)
	status, _, h := call("POST", "/reset", "/reset", `{"task":"hire_liskov","episode_id":"ep-1"}`, nil)
	if status != http.StatusOK {
		t.Fatalf("reset: %d", status)
	}
	session := map[string]string{openenv.SessionHeader: h.Get(openenv.SessionHeader)}
	unknown := map[string]string{openenv.SessionHeader: "no-such-session"}
	for _, body := range []string{
		`{"action":{"type":"list_tools"}}`,
		`{"action":{"type":"call_tool","tool_name":"list_staff","arguments":{}}}`,
		`{"action":{"type":"call_tool","tool_name":"invoice","arguments":{"amount":0}}}`,
		`{"action":{"type":"call_tool","tool_name":"no_such_tool"}}`,
		`{"action":{"type":"dance"}}`,
		`{"action":[]}`,
	} {
		call("POST", "/step", "/step", body, session)
	}
	call("POST", "/step", "/step", `{"action":{"type":"list_tools"}}`, unknown)
	call("GET", "/state", "/state", "", session)
	call("GET", "/state", "/state", "", unknown)
	call("POST", "/inspect", "/inspect", `{"sql":"SELECT name, role FROM staff"}`, session)
	call("POST", "/inspect", "/inspect", `{"sql":"SELECT * FROM nowhere"}`, session)
	call("POST", "/inspect", "/inspect", `{"sql":1}`, session)
	call("POST", "/grade", "/grade", `{}`, session)
	call("POST", "/grade", "/grade", `{}`, unknown)
	call("POST", "/checkpoint", "/checkpoint", `{}`, session)
	call("POST", "/checkpoint", "/checkpoint", `{}`, unknown)
	call("GET", "/checkpoints/latest?episode_id=ep-1", "/checkpoints/latest", "", nil)
	call("GET", "/sessions/none/watch", "/sessions/{ref}/watch", "", nil)
	var live []struct {
		Ref string `json:"ref"`
	}
	_, b, _ := send("GET", "/sessions", "", nil)
	if err := json.Unmarshal(b, &live); err != nil || len(live) == 0 {
		t.Fatalf("GET /sessions: %v, %s", err, b)
	}
	call("GET", "/sessions/"+live[0].Ref+"/watch", "/sessions/{ref}/watch", "", nil)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"no/such/method"}`,
		`{"jsonrpc":"2.0","id":3,"method":"openenv/session/create","params":{}}`,
		`not json`,
	} {
		call("POST", "/mcp", "/mcp", body, nil)
	}

	// A server with a token: the probes answer without it, every other
	// route refuses a request that does not carry it.
	const token = "openapi-test-token-0123456789"
	guarded, _ := serveCompany(t, openenv.Config{Token: token})
	for _, r := range []struct{ method, path, route, body string }{
		{"GET", "/health", "/health", ""},
		{"GET", "/ready", "/ready", ""},
		{"GET", "/accepting", "/accepting", ""},
		{"GET", "/metadata", "/metadata", ""},
		{"GET", "/openapi.json", "/openapi.json", ""},
		{"POST", "/reset", "/reset", `{}`},
		{"POST", "/step", "/step", `{"action":{"type":"list_tools"}}`},
		{"GET", "/state", "/state", ""},
		{"POST", "/mcp", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{"GET", "/sessions/none/watch", "/sessions/{ref}/watch", ""},
	} {
		status, b, _ := sendTo(t, guarded, r.method, r.path, r.body, nil)
		if want := map[bool]int{true: http.StatusOK, false: http.StatusUnauthorized}[r.route == "/health" || r.route == "/ready" || r.route == "/accepting"]; status != want {
			t.Errorf("%s %s without the token: %d, want %d", r.method, r.path, status, want)
		}
		d.check(t, r.method, r.route, status, b)
		if status, _, _ := sendTo(t, guarded, r.method, r.path, r.body, map[string]string{"Authorization": "Bearer " + token}); status == http.StatusUnauthorized {
			t.Errorf("%s %s with the token: 401", r.method, r.path)
		}
	}

	// The agent listener, with a token of its own, and its description.
	const agentToken = "openapi-test-agent-token-0123456789"
	_, srv := serveCompany(t, openenv.Config{AgentToken: agentToken})
	agent := httptest.NewServer(srv.AgentHandler())
	t.Cleanup(agent.Close)
	bearer := map[string]string{"Authorization": "Bearer " + agentToken}
	status, raw, _ = sendTo(t, agent.URL, "GET", "/openapi.json", "", bearer)
	if status != http.StatusOK {
		t.Fatalf("the agent listener's /openapi.json: %d %s", status, raw)
	}
	da := describe(t, raw)
	for _, r := range []struct {
		method, path, body string
		header             map[string]string
		want               int
	}{
		{"GET", "/health", "", nil, http.StatusOK},
		{"GET", "/metadata", "", nil, http.StatusUnauthorized},
		{"GET", "/metadata", "", bearer, http.StatusOK},
		{"GET", "/schema", "", bearer, http.StatusOK},
		{"GET", "/openapi.json", "", nil, http.StatusUnauthorized},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil, http.StatusUnauthorized},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, bearer, http.StatusOK},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_staff"}}`, bearer, http.StatusOK},
	} {
		status, b, _ := sendTo(t, agent.URL, r.method, r.path, r.body, r.header)
		if status != r.want {
			t.Errorf("agent listener: %s %s: %d %s, want %d", r.method, r.path, status, b, r.want)
		}
		da.check(t, r.method, r.path, status, b)
	}
	if _, ok := da.paths["/reset"]; ok {
		t.Errorf("the agent listener's description lists /reset, which it does not serve")
	}
}

// description is an /openapi.json, read to hold replies to it.
type description struct {
	schemas *jsonschema.Compiler
	paths   map[string]map[string]json.RawMessage
	replies map[string]json.RawMessage // components/responses
}

// descriptionURL is where a description's schemas resolve.
const descriptionURL = "https://seahaven.test/openapi.json"

// describe reads the OpenAPI document raw.
func describe(tb testing.TB, raw []byte) *description {
	tb.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		tb.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(descriptionURL, doc); err != nil {
		tb.Fatal(err)
	}
	var d struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		tb.Fatal(err)
	}
	return &description{c, d.Paths, d.Components.Responses}
}

// check holds a reply, its status and body, to the description of route's
// method: the status is listed, and the body matches the schema listed
// for it.
func (d *description) check(tb testing.TB, method, route string, status int, body []byte) {
	tb.Helper()
	where := fmt.Sprintf("%s %s: %d %.300s", method, route, status, body)
	var op struct {
		Responses map[string]json.RawMessage `json:"responses"`
	}
	if raw, ok := d.paths[route][strings.ToLower(method)]; !ok || json.Unmarshal(raw, &op) != nil {
		tb.Errorf("%s: the route is not described", where)
		return
	}
	resp, ok := op.Responses[strconv.Itoa(status)]
	if !ok {
		tb.Errorf("%s: the status is not described", where)
		return
	}
	escape := strings.NewReplacer("~", "~0", "/", "~1").Replace
	pointer := "/paths/" + escape(route) + "/" + strings.ToLower(method) + "/responses/" + strconv.Itoa(status)
	var r struct {
		Ref     string                     `json:"$ref"`
		Content map[string]json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		tb.Fatal(err)
	}
	if name, ok := strings.CutPrefix(r.Ref, "#/components/responses/"); ok {
		pointer = "/components/responses/" + escape(name)
		if err := json.Unmarshal(d.replies[name], &r); err != nil {
			tb.Fatal(err)
		}
	}
	if _, ok := r.Content["application/json"]; !ok {
		if len(body) > 0 && !json.Valid(body) {
			return // a text body, such as /metrics
		}
		if len(r.Content) == 0 && len(body) > 0 {
			tb.Errorf("%s: a body where the description lists none", where)
		}
		return
	}
	sch, err := d.schemas.Compile(descriptionURL + "#" + pointer + "/content/application~1json/schema")
	if err != nil {
		tb.Fatalf("%s: %v", where, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		tb.Errorf("%s: not JSON: %v", where, err)
		return
	}
	if err := sch.Validate(v); err != nil {
		tb.Errorf("%s: does not match the described schema: %v", where, err)
	}
}

// sendTo sends one request to the server at url (a JSON body when body is
// not empty) and returns the reply's status, body and headers.
func sendTo(tb testing.TB, url, method, path, body string, header map[string]string) (int, []byte, http.Header) {
	tb.Helper()
	req, err := http.NewRequest(method, url+path, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}
