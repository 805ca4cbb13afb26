package openenv_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/chat"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/examples/worlds/payments"
	"github.com/seahaven/seahaven/examples/worlds/shop"
	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/schemas/schematest"
)

// The official MCP Go SDK's client plays episodes on /mcp over Streamable
// HTTP: each client its own session, a second call seeing the first call's
// write, tool errors as isError results, an unknown tool a protocol error,
// and Close ending the session.
func TestMCP_GoSDKClient(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	ctx := context.Background()
	text := func(t *testing.T, res *mcp.CallToolResult) string {
		t.Helper()
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}

	a := sdkConnect(t, s, "")
	tools, err := a.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 14 {
		t.Errorf("%d tools, want 14", len(tools.Tools))
	}
	// Every tool declares an output schema, and each result's structured
	// content matches it (checked with an independent validator).
	outputs := map[string]*schematest.Schema{}
	for _, tl := range tools.Tools {
		if tl.OutputSchema == nil {
			t.Errorf("tool %s has no output schema", tl.Name)
			continue
		}
		raw, _ := json.Marshal(tl.OutputSchema)
		s, err := schematest.Compile(raw)
		if err != nil {
			t.Fatalf("tool %s: %v", tl.Name, err)
		}
		outputs[tl.Name] = s
	}
	conforms := func(t *testing.T, name string, res *mcp.CallToolResult) {
		t.Helper()
		raw, _ := json.Marshal(res.StructuredContent)
		if s := outputs[name]; s != nil {
			if err := s.Validate(raw); err != nil {
				t.Errorf("%s: structured content %s does not match the output schema: %v", name, raw, err)
			}
		}
	}
	res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "hire", Arguments: map[string]any{"name": "Eve Example", "role": "engineer"}})
	if err != nil || res.IsError {
		t.Fatalf("hire: %v %v", err, res)
	}
	conforms(t, "hire", res)
	res, err = a.CallTool(ctx, &mcp.CallToolParams{Name: "list_staff", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.Contains(text(t, res), "Eve Example") {
		t.Fatalf("list_staff after hire: %v %s", err, text(t, res))
	}
	conforms(t, "list_staff", res)
	for _, call := range []struct {
		name string
		args map[string]any
	}{
		{"accounts", nil}, {"pay_list_charges", nil}, {"eu_list_charges", nil},
		{"invoice", map[string]any{"amount": 750}},
	} {
		res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: call.name, Arguments: cmpOr(call.args, map[string]any{})})
		if err != nil || res.IsError {
			t.Errorf("%s: %v %s", call.name, err, text(t, res))
			continue
		}
		conforms(t, call.name, res)
	}
	// structuredContent is an object: a list result comes as {"result": [...]}.
	var staff struct{ Result []map[string]any }
	if b, _ := json.Marshal(res.StructuredContent); json.Unmarshal(b, &staff) != nil || len(staff.Result) != 4 {
		t.Errorf("structured content %v, want 4 staff", res.StructuredContent)
	}

	// The tool's own refusal and invalid arguments: results the model reads.
	res, err = a.CallTool(ctx, &mcp.CallToolParams{Name: "invoice", Arguments: map[string]any{"amount": 0}})
	if err != nil || !res.IsError || !strings.Contains(text(t, res), `field "amount"`) {
		t.Errorf("invoice with amount 0: %v %+v", err, res)
	}
	// An unknown tool: a protocol error.
	var rpcErr *jsonrpc.Error
	if _, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "fly", Arguments: map[string]any{}}); !errors.As(err, &rpcErr) || rpcErr.Code != -32602 {
		t.Errorf("unknown tool: %v", err)
	}

	// A second client is a second episode.
	b := sdkConnect(t, s, "")
	res, err = b.CallTool(ctx, &mcp.CallToolParams{Name: "list_staff", Arguments: map[string]any{}})
	if err != nil || strings.Contains(text(t, res), "Eve Example") {
		t.Errorf("the second client sees the first's hire: %v %s", err, text(t, res))
	}
	if n := len(s.Sessions()); n != 2 {
		t.Errorf("%d sessions, want 2", n)
	}
	if err := a.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if n := len(s.Sessions()); n != 0 {
		t.Errorf("%d sessions after both closed, want 0", n)
	}
}

func cmpOr(m, fallback map[string]any) map[string]any {
	if m == nil {
		return fallback
	}
	return m
}

// toolNames lists the tools of the session cs, by name, in a line.
func toolNames(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	return strings.Join(names, " ")
}

// An MCP client sets its episode up with reset data: in the /mcp URL's
// query for a standard client, in openenv/session/create's params for
// OpenEnv's dialect. A task session lists only the task's tools, and the
// trainer reads its reward with seahaven/grade.
func TestMCP_TaskSession(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	ctx := context.Background()
	cs := sdkConnect(t, s, "task=invoice_750&seed=3")
	defer cs.Close()
	if names := toolNames(t, cs); names != "invoice list_staff pay_list_charges" {
		t.Errorf("task session tools %s", names)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "invoice", Arguments: map[string]any{"amount": 750}}); err != nil || res.IsError {
		t.Fatalf("invoice: %v %+v", err, res)
	}
	graded := s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"seahaven/grade","params":{"session_id":"`+cs.ID()+`"}}`)
	if fmt.Sprint(field(t, graded, "result.reward")) != "1" || field(t, graded, "result.done") != true {
		t.Errorf("the trainer's grading of the MCP session: %s", graded)
	}

	// A bad set-up is refused before any session exists, with the
	// initialize's id, so the Go SDK's client reports why (with a null id
	// it says only "Bad Request"), in the specification's shape (no null
	// data).
	code, body, _ := s.httpDo(t, http.MethodPost, "/mcp?colour=red", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, nil)
	if code != http.StatusBadRequest || !strings.Contains(body, "colour") || fmt.Sprint(field(t, body, "id")) != "1" || strings.Contains(body, `"data"`) {
		t.Errorf("initialize with an unknown set-up key: %d %s", code, body)
	}
	for q, want := range map[string]string{
		"colour=red": "query.colour: Extra inputs are not permitted",
		"seed=-1":    "query.seed: Input should be greater than or equal to 0",
		"seed=3;x=1": "The /mcp URL's query does not parse",
	} {
		client := mcp.NewClient(&mcp.Implementation{Name: "sdk-test", Version: "1"}, nil)
		_, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.ts.URL + "/mcp?" + q, MaxRetries: -1}, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the Go SDK's client at /mcp?%s: %v, want an error saying %s", q, err, want)
		}
	}

	// So is a URL whose query does not parse, which would drop the pairs
	// it cannot read (seed=3;x=1 is no seed, task=invoice_750%zz no task).
	for _, q := range []string{"seed=3;x=1", "seed=3&task=invoice_750%zz"} {
		code, body, resp := s.httpDo(t, http.MethodPost, "/mcp?"+q, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, nil)
		if code != http.StatusBadRequest || resp.Header.Get(openenv.MCPSessionHeader) != "" || !strings.Contains(body, "The /mcp URL's query does not parse") || strings.Contains(body, `"data"`) {
			t.Errorf("initialize at /mcp?%s: %d %s, want 400 saying the query does not parse", q, code, body)
		}
	}

	// So is reset data the reset refuses, an unknown fixture, task or
	// startup keyword, in either dialect: every request to the URL would
	// repeat it, as an unknown key. It was 200, beside 400 for seed=-1.
	for q, want := range map[string]string{
		"fixture=nope":              `query.fixture: unknown fixture \"nope\"`,
		"task=nope":                 `query.task: unknown task \"nope\"`,
		"startup=%7B%22x%22%3A1%7D": `query.startup: unknown startup keyword \"x\"`,
		"replaces=x":                "query.replaces: Value error, replaces names the attempt a restore supersedes: it needs checkpoint",
	} {
		for method, params := range map[string]string{"initialize": `{"protocolVersion":"2025-06-18"}`, "openenv/session/create": `{}`} {
			code, body, resp := s.httpDo(t, http.MethodPost, "/mcp?"+q, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`, nil)
			if code != http.StatusBadRequest || resp.Header.Get(openenv.MCPSessionHeader) != "" || !strings.Contains(body, want) ||
				fmt.Sprint(field(t, body, "id")) != "1" || fmt.Sprint(field(t, body, "error.code")) != "-32602" || strings.Contains(body, `"data"`) {
				t.Errorf("%s at /mcp?%s: %d %s, want 400 saying %s", method, q, code, body, want)
			}
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "sdk-test", Version: "1"}, nil)
		if _, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.ts.URL + "/mcp?" + q, MaxRetries: -1}, nil); err == nil || !strings.Contains(err.Error(), strings.ReplaceAll(want, `\"`, `"`)) {
			t.Errorf("the Go SDK's client at /mcp?%s: %v, want an error saying %s", q, err, want)
		}
	}
	// The same data in openenv/session/create's params is that request's
	// fault alone: 200, as JSON-RPC has it.
	code, body, _ = s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{"fixture":"nope"}}`, nil)
	if code != http.StatusOK || !strings.Contains(body, `params.fixture: unknown fixture \"nope\"`) {
		t.Errorf("openenv/session/create with an unknown fixture in its params: %d %s", code, body)
	}
	if n := len(s.Sessions()); n != 1 { // the task session above
		t.Errorf("%d sessions after the refused set-ups, want 1", n)
	}

	// A JSON value nested past the decoder's depth is named as such.
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	code, body, _ = s.httpDo(t, http.MethodPost, "/mcp?startup="+deep, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, nil)
	if msg, _ := field(t, body, "error.message").(string); code != http.StatusBadRequest || !strings.HasPrefix(msg, "The /mcp URL's startup is not a JSON value") || !strings.Contains(msg, "nested past the depth limit of 10000") {
		t.Errorf("initialize with a startup nested too deep: %d %.300s", code, body)
	}

	for q, want := range map[string]string{
		"startup=" + deep[1:len(deep)-1]:  "The /mcp URL's reset data is not valid JSON as one object (arrays and objects nested past the depth limit of 10000 (at byte 10010))",
		`startup={"plan":"a","plan":"b"}`: `query.startup.plan: Duplicate key \"plan\"`,
	} {
		code, body, _ = s.httpDo(t, http.MethodPost, "/mcp?"+strings.ReplaceAll(q, `"`, "%22"), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, nil)
		if code != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("initialize at /mcp?%.40s: %d %.300s, want 400 saying %s", q, code, body, want)
		}
	}

	// OpenEnv's dialect: openenv/session/create takes the same data.
	created := s.rpc(t, `{"jsonrpc":"2.0","id":2,"method":"openenv/session/create","params":{"task":"invoice_750"}}`)
	sid := str(t, created, "result.session_id")
	list := s.rpc(t, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"session_id":"`+sid+`"}}`)
	if n := len(field(t, list, "result.tools").([]any)); n != 3 {
		t.Errorf("openenv/session/create with a task lists %d tools, want 3", n)
	}
	bad := s.rpc(t, `{"jsonrpc":"2.0","id":4,"method":"openenv/session/create","params":{"tsak":"invoice_750"}}`)
	if fmt.Sprint(field(t, bad, "error.code")) != "-32602" || !strings.Contains(bad, "tsak") {
		t.Errorf("openenv/session/create with an unknown key: %s", bad)
	}
	s.rpc(t, `{"jsonrpc":"2.0","id":5,"method":"openenv/session/close","params":{"session_id":"`+sid+`"}}`)
}

// Every tool of every example world, called through the official Go SDK
// with arguments made from its input schema, answers structured content
// that matches the output schema it lists (checked with an independent
// validator, as the TypeScript SDK's client checks every result), on a
// session with the control tool listed too. A tool's own refusal is an
// isError result with text, not a protocol error; each tool succeeds once.
func TestMCP_GoSDKOutputSchemas(t *testing.T) {
	worlds := []struct {
		world *env.World
		bcfg  app.Config
	}{
		{company.World, app.Config{DefaultFixture: company.AcmeID}},
		{payments.World, app.Config{}},
		{shop.World, app.Config{}},
		{chat.World, app.Config{}},
	}
	ctx := context.Background()
	for _, w := range worlds {
		t.Run(w.world.Name(), func(t *testing.T) {
			s := mustServeWorld(t, w.world, w.bcfg, openenv.Config{})
			cs := sdkConnect(t, s, "control_tools=true")
			defer cs.Close()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string // ids the results named, for the arguments that take one
			for _, tl := range tools.Tools {
				raw, _ := json.Marshal(tl.OutputSchema)
				out, err := schematest.Compile(raw)
				if tl.OutputSchema == nil || err != nil {
					t.Errorf("tool %s: output schema %s: %v", tl.Name, raw, err)
					continue
				}
				var in map[string]any
				if b, _ := json.Marshal(tl.InputSchema); json.Unmarshal(b, &in) != nil {
					t.Fatalf("tool %s: input schema %s", tl.Name, b)
				}
				args, succeeded := sampleArgs(in, ids), false
				if tl.Name == "seahaven_control" { // its seconds are optional, and needed
					args["seconds"] = 60
				}
				for range 2 { // twice: a second call may find what the first made
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tl.Name, Arguments: args})
					if err != nil {
						t.Errorf("%s %v: %v", tl.Name, args, err)
						break
					}
					if res.IsError {
						if len(res.Content) == 0 || res.StructuredContent != nil {
							t.Errorf("%s %v: an error result %+v, want text and no structured content", tl.Name, args, res)
						}
						continue
					}
					doc, _ := json.Marshal(res.StructuredContent)
					if err := out.Validate(doc); err != nil {
						t.Errorf("%s %v: structured content %s does not match the output schema %s: %v", tl.Name, args, doc, raw, err)
					}
					ids = append(ids, idsIn(res.StructuredContent)...)
					succeeded = true
				}
				if !succeeded {
					t.Errorf("%s %v: no call succeeded", tl.Name, args)
				}
			}
		})
	}
}

// sampleArgs makes arguments that an input schema accepts: each required
// property, a string property named like an id taken from ids (the newest).
func sampleArgs(schema map[string]any, ids []string) map[string]any {
	args := map[string]any{}
	props, _ := schema["properties"].(map[string]any)
	required, _ := schema["required"].([]any)
	for _, r := range required {
		name, _ := r.(string)
		p, _ := props[name].(map[string]any)
		args[name] = sampleValue(name, p, ids)
	}
	return args
}

func sampleValue(name string, p map[string]any, ids []string) any {
	if e, ok := p["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	typ := p["type"]
	if ts, ok := typ.([]any); ok && len(ts) > 0 {
		typ = ts[0]
	}
	switch typ {
	case "integer", "number":
		if m, ok := p["minimum"].(float64); ok && m > 5 {
			return m
		}
		return 5
	case "boolean":
		return true
	case "array":
		return []any{}
	case "object":
		return sampleArgs(p, ids)
	}
	switch {
	case strings.HasSuffix(name, "id") && len(ids) > 0:
		return ids[len(ids)-1]
	case name == "channel":
		return "general"
	}
	return "hello"
}

// idsIn returns the values of the "id" keys in v, a decoded JSON value.
func idsIn(v any) []string {
	var ids []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "id" {
				ids = append(ids, s)
			}
			ids = append(ids, idsIn(x)...)
		}
	case []any:
		for _, x := range v {
			ids = append(ids, idsIn(x)...)
		}
	}
	return ids
}

// A call whose request is over the server's size limit fails alone: the
// Go SDK's client keeps its session only when a refused POST's body is a
// JSON-RPC error response with the request's id (with a null id it
// closes the session, and every later call fails "client is closing"), so
// the 413 names the id the body opened with.
func TestMCP_GoSDKBodyTooLarge(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{MaxMessageBytes: 4096})
	ctx := context.Background()
	cs := sdkConnect(t, s, "")
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hire", Arguments: map[string]any{"name": strings.Repeat("x", 8000)}})
	if err == nil || !strings.Contains(err.Error(), "Request body exceeds the limit of 4096 bytes") {
		t.Errorf("a call over the size limit: %v, want the limit's error", err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_staff", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Errorf("the next call on the session: %v %+v", err, res)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if n := len(s.Sessions()); n != 0 {
		t.Errorf("%d sessions after close, want 0", n)
	}
}

// A Go SDK client whose session ended learns so: the 404 of an ended
// Mcp-Session-Id carries an error naming no request id, which the client
// (v1.8.0) reports as mcp.ErrSessionMissing. An error naming the request's
// id, as MCP has most errors do, it would take for that call's refusal
// alone, and go on with the ended session.
func TestMCP_GoSDKSessionEnded(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	cs := sdkConnect(t, s, "")
	if code, body, _ := do(t, s.ts, http.MethodDelete, "/mcp", "", map[string]string{openenv.MCPSessionHeader: cs.ID()}); code != http.StatusNoContent {
		t.Fatalf("DELETE /mcp: %d %s", code, body)
	}
	if _, err := cs.ListTools(context.Background(), nil); !errors.Is(err, mcp.ErrSessionMissing) {
		t.Errorf("tools/list on the ended session: %v, want mcp.ErrSessionMissing", err)
	}
}

// sdkConnect connects the official Go SDK's client to the server's /mcp
// with the URL's query q (none when empty).
func sdkConnect(tb testing.TB, s *worldServer, q string) *mcp.ClientSession {
	tb.Helper()
	endpoint := s.ts.URL + "/mcp"
	if q != "" {
		endpoint += "?" + q
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "sdk-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, nil)
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	return cs
}

// The reset data of the /mcp URL's query sets up the session the request
// starts in OpenEnv's dialect too, or is refused saying where it can: a
// task's session from openenv/session/create with the {} params OpenEnv's
// client sends lists the task's tools, and a request naming no session,
// which runs on a throwaway instance with the default reset, is -32602.
// The URL's data was checked, then dropped: the session had every tool,
// and the sessionless call ran on another fixture or seed than asked.
func TestMCP_URLResetDataOpenEnvDialect(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	post := func(path, body string) string {
		t.Helper()
		status, reply, _ := do(t, s.ts, http.MethodPost, path, body, nil)
		if status != http.StatusOK {
			t.Fatalf("POST %s %s: %d %s", path, body, status, reply)
		}
		return reply
	}
	reply := post("/mcp?task=invoice_750", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`)
	sid, _ := field(t, reply, "result.session_id").(string)
	reply = post("/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"session_id":"`+sid+`"}}`)
	var list struct {
		Result struct{ Tools []struct{ Name string } }
	}
	if err := json.Unmarshal([]byte(reply), &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Result.Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "invoice,list_staff,pay_list_charges" {
		t.Errorf("the tools of a session created at /mcp?task=invoice_750: %s, want the task's", got)
	}

	for _, c := range []struct{ path, body, want string }{
		{"/mcp?task=invoice_750", `{"jsonrpc":"2.0","id":3,"method":"openenv/session/create","params":{"seed":3}}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"openenv/session/create has reset data in both the /mcp URL's query and its params: give it in one of them","data":null}}`},
		{"/mcp?seed=3", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"accounts","arguments":{}}}`,
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"The /mcp URL's reset data sets up the session a request starts (initialize, or openenv/session/create); this request names no session, and would run on a throwaway instance without it: start a session at this URL, or name one in params.session_id","data":null}}`},
		{"/mcp?task=invoice_750", `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"The /mcp URL's reset data sets up the session a request starts (initialize, or openenv/session/create); this request names no session, and would run on a throwaway instance without it: start a session at this URL, or name one in params.session_id","data":null}}`},
	} {
		jsonEq(t, post(c.path, c.body), c.want)
	}
	// A request naming its session carries the URL it was set up with,
	// as a standard client's do.
	reply = post("/mcp?task=invoice_750", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"session_id":"`+sid+`","name":"list_staff","arguments":{}}}`)
	if field(t, reply, "result.isError") != false {
		t.Errorf("list_staff on the session at its own URL: %s", reply)
	}
	post("/mcp", `{"jsonrpc":"2.0","id":7,"method":"openenv/session/close","params":{"session_id":"`+sid+`"}}`)
}
