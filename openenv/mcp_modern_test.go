package openenv_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/schemas/schematest"
)

// sentRequest is what a recording client sent in one POST /mcp.
type sentRequest struct {
	method, version, session, mcpMethod string
}

// recorder is an http.RoundTripper that records the JSON-RPC method and
// the MCP headers of every request it sends.
type recorder struct {
	mu   sync.Mutex
	sent []sentRequest
}

func (rec *recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	var msg struct{ Method string }
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		json.Unmarshal(b, &msg)
	}
	rec.mu.Lock()
	rec.sent = append(rec.sent, sentRequest{msg.Method, r.Header.Get("MCP-Protocol-Version"), r.Header.Get(openenv.MCPSessionHeader), r.Header.Get("Mcp-Method")})
	rec.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// requests returns what was sent so far.
func (rec *recorder) requests() []sentRequest {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]sentRequest(nil), rec.sent...)
}

// sdkModern connects the official Go SDK's client to the server behind
// base's /mcp with the URL's query q, naming a session_id, as it connects
// by default (2026-07-28 first), recording what it sends; it must not fall
// back to initialize: the connection speaks 2026-07-28.
func sdkModern(tb testing.TB, base, q string) (*mcp.ClientSession, *recorder) {
	tb.Helper()
	endpoint := base + "/mcp?" + q
	rec := &recorder{}
	client := mcp.NewClient(&mcp.Implementation{Name: "sdk-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1, HTTPClient: &http.Client{Transport: rec}}, nil)
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		tb.Fatalf("the client speaks %s, want 2026-07-28", v)
	}
	for _, r := range rec.requests() {
		if r.method == "initialize" {
			tb.Fatalf("the client fell back to initialize: %+v", rec.requests())
		}
	}
	return cs, rec
}

// resultText is the text of a tool call's result.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// The official Go SDK's client, left on its defaults (2026-07-28 first),
// at /mcp naming no session_id, is told by server/discover that the URL
// serves the initialize versions alone, falls back to initialize and
// plays the episode of its session: its second call sees its first's
// write. So does it at a URL holding reset data.
func TestMCP_GoSDKDefaultClientInitializes(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	ctx := context.Background()
	for _, q := range []string{"", "?task=invoice_750&seed=3"} {
		rec := &recorder{}
		client := mcp.NewClient(&mcp.Implementation{Name: "sdk-test", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.ts.URL + "/mcp" + q, MaxRetries: -1, HTTPClient: &http.Client{Transport: rec}}, nil)
		if err != nil {
			t.Fatalf("/mcp%s: connect: %v", q, err)
		}
		if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
			t.Errorf("/mcp%s: the client speaks %s, want 2025-11-25", q, v)
		}
		if sent := rec.requests(); len(sent) < 2 || sent[0].method != "server/discover" || sent[0].version != "2026-07-28" || sent[1].method != "initialize" {
			t.Errorf("/mcp%s: the client sent %+v, want server/discover of 2026-07-28, then initialize", q, sent)
		}
		charges := func() int {
			t.Helper()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pay_list_charges", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("/mcp%s: pay_list_charges: %v %v", q, err, res)
			}
			var list struct{ Result []any }
			b, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(b, &list)
			return len(list.Result)
		}
		before := charges()
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "invoice", Arguments: map[string]any{"amount": 750}}); err != nil || res.IsError {
			t.Fatalf("/mcp%s: invoice: %v %+v", q, err, res)
		}
		if after := charges(); after != before+1 {
			t.Errorf("/mcp%s: %d charges after the invoice, %d before: the client's call does not see its previous call's write", q, after, before)
		}
		cs.Close()
	}
}

// The official Go SDK's client speaks MCP 2026-07-28 at /mcp naming a
// session_id as it connects by default, without falling back to
// initialize: it discovers the server, lists the world's tools and calls
// them on the session, every request carrying the version in its header
// and no Mcp-Session-Id, every structured content matching its tool's
// output schema, and each call sees the earlier calls' writes.
func TestMCP_ModernGoSDKClient(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	ctx := context.Background()
	sid, _ := field(t, s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`), "result.session_id").(string)
	cs, rec := sdkModern(t, s.ts.URL, "session_id="+sid)
	if got := cs.InitializeResult().ServerInfo; got == nil || got.Name != "company" {
		t.Errorf("server info %+v, want the company world's", got)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 14 {
		t.Errorf("%d tools, want 14", len(tools.Tools))
	}
	outputs := map[string]*schematest.Schema{}
	for _, tl := range tools.Tools {
		raw, _ := json.Marshal(tl.OutputSchema)
		schema, err := schematest.Compile(raw)
		if tl.OutputSchema == nil || err != nil {
			t.Fatalf("tool %s: output schema %s: %v", tl.Name, raw, err)
		}
		outputs[tl.Name] = schema
	}
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %v", name, err, res)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		if err := outputs[name].Validate(raw); err != nil {
			t.Errorf("%s: structured content %s does not match the output schema: %v", name, raw, err)
		}
		return res
	}
	call("hire", map[string]any{"name": "Eve Example", "role": "engineer"})
	if staff := resultText(call("list_staff", map[string]any{})); !strings.Contains(staff, "Eve Example") {
		t.Errorf("a call on the session does not see the previous call's hire: %s", staff)
	}
	call("invoice", map[string]any{"amount": 750})
	call("pay_list_charges", map[string]any{})

	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "invoice", Arguments: map[string]any{"amount": 0}}); err != nil || !res.IsError || !strings.Contains(resultText(res), `field "amount"`) {
		t.Errorf("invoice with amount 0: %v %+v", err, res)
	}
	var rpcErr *jsonrpc.Error
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fly", Arguments: map[string]any{}}); !errors.As(err, &rpcErr) || rpcErr.Code != -32602 {
		t.Errorf("unknown tool: %v", err)
	}

	sent := rec.requests()
	if len(sent) == 0 || sent[0].method != "server/discover" {
		t.Errorf("the client's first request %+v, want server/discover", sent)
	}
	for _, r := range sent {
		if r.version != "2026-07-28" || r.session != "" || r.mcpMethod != r.method {
			t.Errorf("request %+v: want MCP-Protocol-Version 2026-07-28, Mcp-Method its method and no %s", r, openenv.MCPSessionHeader)
		}
	}
	if n := len(s.Sessions()); n != 1 {
		t.Errorf("%d sessions, want the trainer's one", n)
	}
}

// A 2026-07-28 client reaches the episode of a session a trainer created
// by the /mcp URL's session_id: its calls, over two connections, continue
// the episode the trainer's own call began (the step count goes on, each
// call sees the earlier ones' writes), and the trainer grades the change
// log they made together. A task's session lists only the task's tools.
// A session of the HTTP routes is reached by its label the same way.
func TestMCP_ModernSessionEpisode(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	ctx := context.Background()
	created := s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{"task":"invoice_750","seed":3}}`)
	sid, _ := field(t, created, "result.session_id").(string)
	if sid == "" {
		t.Fatalf("openenv/session/create: %s", created)
	}
	// The trainer's call: step 1.
	if got := s.rpc(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"session_id":"`+sid+`","name":"list_staff","arguments":{}}}`); field(t, got, "result.isError") != false {
		t.Fatalf("the trainer's call: %s", got)
	}

	a, _ := sdkModern(t, s.ts.URL, "session_id="+sid)
	if names := toolNames(t, a); names != "invoice list_staff pay_list_charges" {
		t.Errorf("the task session's tools %s", names)
	}
	charges := func(cs *mcp.ClientSession) int {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pay_list_charges", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("pay_list_charges: %v %v", err, res)
		}
		var list struct{ Result []any }
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &list)
		return len(list.Result)
	}
	before := charges(a) // step 2
	if res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "invoice", Arguments: map[string]any{"amount": 750}}); err != nil || res.IsError {
		t.Fatalf("invoice: %v %+v", err, res) // step 3
	}
	b, _ := sdkModern(t, s.ts.URL, "session_id="+sid)
	if after := charges(b); after != before+1 { // step 4
		t.Errorf("%d charges after the invoice on the session, %d before: the second connection does not see the first's write", after, before)
	}
	if _, body, _ := s.httpDo(t, http.MethodGet, "/state", "", map[string]string{openenv.SessionHeader: sid}); fmt.Sprint(field(t, body, "step_count")) != "4" {
		t.Errorf("state after the trainer's call and three of the 2026-07-28 client's: %s, want step_count 4", body)
	}
	graded := s.rpc(t, `{"jsonrpc":"2.0","id":3,"method":"seahaven/grade","params":{"session_id":"`+sid+`"}}`)
	if fmt.Sprint(field(t, graded, "result.reward")) != "1" || !strings.Contains(graded, "2 changes, all to main.invoices:insert, payments.charges:insert") {
		t.Errorf("the trainer's grading: %s", graded)
	}
	if n := len(s.Sessions()); n != 1 {
		t.Errorf("%d sessions, want the trainer's one", n)
	}

	// So does a session of the HTTP routes, by the label its trainer gave it.
	if code, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{}`, map[string]string{openenv.SessionHeader: "ep-http"}); code != http.StatusOK {
		t.Fatalf("reset of the HTTP session: %d %s", code, body)
	}
	c, _ := sdkModern(t, s.ts.URL, "session_id=ep-http")
	if res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "hire", Arguments: map[string]any{"name": "Eve Example", "role": "engineer"}}); err != nil || res.IsError {
		t.Fatalf("hire on the HTTP session: %v %+v", err, res)
	}
	if _, body, _ := s.httpDo(t, http.MethodGet, "/state", "", map[string]string{openenv.SessionHeader: "ep-http"}); fmt.Sprint(field(t, body, "step_count")) != "1" {
		t.Errorf("the HTTP session's state after the 2026-07-28 client's call: %.200s, want step_count 1", body)
	}

	// A session that ended is unknown.
	s.rpc(t, `{"jsonrpc":"2.0","id":4,"method":"openenv/session/close","params":{"session_id":"`+sid+`"}}`)
	var rpcErr *jsonrpc.Error
	if _, err := a.ListTools(ctx, nil); !errors.As(err, &rpcErr) || rpcErr.Code != -32602 || rpcErr.Message != "Unknown session_id: "+sid {
		t.Errorf("tools/list on the closed session: %v", err)
	}
}

// modernPost posts body to path on ts as a 2026-07-28 request, with the
// headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name …) header gives; a
// header given as "" is not sent.
func modernPost(t *testing.T, ts *httptest.Server, path, body string, header map[string]string) (int, string) {
	t.Helper()
	h := http.Header{"Accept": {"application/json, text/event-stream"}}
	for k, v := range header {
		if v != "" {
			h.Set(k, v)
		}
	}
	code, got, _ := doHeader(t, ts, http.MethodPost, path, body, h)
	return code, strings.TrimSpace(got)
}

// A 2026-07-28 request is refused, before anything runs, for what it lacks
// or contradicts, each with the specification's error and status: a
// version the server does not speak (-32022 with the versions it does,
// which the client retries with) apart from a header contradicting the
// body (-32020), the _meta keys every request carries (-32602), the
// headers repeating its method and tool name, a session header, a method
// 2026-07-28 does not have (404), a /mcp URL whose query it cannot take
// (reset data beside session_id: it starts no session), and a tools/list
// or tools/call at a URL naming no session_id, which serves 2026-07-28 no
// episode (-32022 listing the initialize versions, which start one
// there).
func TestMCP_ModernRefusals(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	const (
		list    = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`
		call    = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_staff","arguments":{},` + modernMeta + `}}`
		modern  = "2026-07-28"
		listing = "tools/list"
	)
	std := map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": listing}
	with := func(h map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range h {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	for _, tt := range []struct {
		name, path, body string
		header           map[string]string
		status           int
		want             string
	}{
		{"unsupported version", "/mcp?session_id=x", strings.ReplaceAll(list, modern, "1999-01-01"), with(std, "MCP-Protocol-Version", "1999-01-01"), 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported MCP-Protocol-Version 1999-01-01 (supported: 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)","data":{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"1999-01-01"}}}`},
		{"unsupported version, no session_id", "/mcp", strings.ReplaceAll(list, modern, "1999-01-01"), with(std, "MCP-Protocol-Version", "1999-01-01"), 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported MCP-Protocol-Version 1999-01-01 (supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)","data":{"supported":["2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"1999-01-01"}}}`},
		{"header contradicts _meta", "/mcp", strings.ReplaceAll(list, modern, "1999-01-01"), std, 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch: MCP-Protocol-Version header value '2026-07-28' does not match body value '1999-01-01' (params._meta's io.modelcontextprotocol/protocolVersion)"}}`},
		{"no version header", "/mcp", list, with(std, "MCP-Protocol-Version", ""), 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch: no MCP-Protocol-Version header: a request repeats in it its params._meta's io.modelcontextprotocol/protocolVersion (2026-07-28)"}}`},
		{"no _meta", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, std, 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params - a 2026-07-28 request carries params._meta with io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities; this one has no params._meta"}}`},
		{"no params", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, std, 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params - a 2026-07-28 request carries params._meta with io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities; this one has no params._meta"}}`},
		{"no protocolVersion in _meta", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`, std, 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params - params._meta lacks io.modelcontextprotocol/protocolVersion, which every 2026-07-28 request carries"}}`},
		{"protocolVersion not a string", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}}}}`, std, 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params - params._meta's io.modelcontextprotocol/protocolVersion must be a string, such as \"2026-07-28\""}}`},
		{"no clientCapabilities", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, std, 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params - params._meta lacks io.modelcontextprotocol/clientCapabilities, which every 2026-07-28 request carries ({} for none)"}}`},
		{"clientCapabilities not an object", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}}`, std, 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params - params._meta's io.modelcontextprotocol/clientCapabilities must be an object ({} for none)"}}`},
		{"no Mcp-Method", "/mcp", list, with(std, "Mcp-Method", ""), 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch: no Mcp-Method header: a 2026-07-28 request repeats in it its method (tools/list)"}}`},
		{"Mcp-Method contradicts the method", "/mcp", list, with(std, "Mcp-Method", "server/discover"), 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch: Mcp-Method header value 'server/discover' does not match body value 'tools/list'"}}`},
		{"no Mcp-Name", "/mcp", call, with(std, "Mcp-Method", "tools/call"), 400,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32020,"message":"Header mismatch: no Mcp-Name header: a 2026-07-28 tools/call repeats in it its tool's name (params.name)"}}`},
		{"Mcp-Name contradicts the name", "/mcp", call, with(std, "Mcp-Method", "tools/call", "Mcp-Name", "hire"), 400,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32020,"message":"Header mismatch: Mcp-Name header value 'hire' does not match body value 'list_staff'"}}`},
		{"Mcp-Name not Base64", "/mcp", call, with(std, "Mcp-Method", "tools/call", "Mcp-Name", "=?base64?!!?="), 400,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32020,"message":"Header mismatch: Mcp-Name header value '=?base64?!!?=' is neither printable ASCII nor Base64 between =?base64? and ?=, as a name outside printable ASCII is sent"}}`},
		{"Mcp-Session-Id", "/mcp", list, with(std, openenv.MCPSessionHeader, "abc"), 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid request: Mcp-Session-Id on a 2026-07-28 request, a version without protocol sessions: name the episode in the /mcp URL's session_id, or send the session's requests in the version its initialize negotiated"}}`},
		{"ping", "/mcp", strings.ReplaceAll(list, listing, "ping"), with(std, "Mcp-Method", "ping"), 404,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: ping (a 2026-07-28 request is server/discover, tools/list or tools/call)"}}`},
		{"initialize", "/mcp", strings.ReplaceAll(list, listing, "initialize"), with(std, "Mcp-Method", "initialize"), 404,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: initialize, the handshake of MCP 2025-11-25 and older, in a 2026-07-28 request (its _meta and MCP-Protocol-Version name 2026-07-28, which has none): send initialize without them to start a session of an older version"}}`},
		{"a batch", "/mcp", "[" + list + "]", std, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: a JSON-RPC batch, which MCP 2025-06-18 and later do not have (this request speaks 2026-07-28): send each message in a POST of its own"}}`},
		{"tools/list naming no session", "/mcp", list, std, 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported MCP-Protocol-Version 2026-07-28 (supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05): this /mcp URL starts an episode by initialize, which a client of those versions sends here; a 2026-07-28 client reaches an episode at /mcp?session_id=<id> of a session a trainer created (openenv/session/create)","data":{"supported":["2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"2026-07-28"}}}`},
		{"tools/call naming no session", "/mcp", call, with(std, "Mcp-Method", "tools/call", "Mcp-Name", "list_staff"), 400,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32022,"message":"Unsupported MCP-Protocol-Version 2026-07-28 (supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05): this /mcp URL starts an episode by initialize, which a client of those versions sends here; a 2026-07-28 client reaches an episode at /mcp?session_id=<id> of a session a trainer created (openenv/session/create)","data":{"supported":["2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"2026-07-28"}}}`},
		{"reset data in the URL", "/mcp?task=invoice_750&seed=3", list, std, 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported MCP-Protocol-Version 2026-07-28 (supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05): this /mcp URL starts an episode by initialize, which a client of those versions sends here; a 2026-07-28 client reaches an episode at /mcp?session_id=<id> of a session a trainer created (openenv/session/create)","data":{"supported":["2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"2026-07-28"}}}`},
		{"reset data beside session_id", "/mcp?session_id=x&task=invoice_750", list, std, 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"The /mcp URL names task beside session_id: a 2026-07-28 request runs on the session session_id names, set up when it was created, and starts none; give the URL session_id alone"}}`},
		{"an unknown session", "/mcp?session_id=nope", list, std, 200,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unknown session_id: nope"}}`},
	} {
		code, got := modernPost(t, s.ts, tt.path, tt.body, tt.header)
		if code != tt.status || got != tt.want {
			t.Errorf("%s: %d %s\nwant %d %s", tt.name, code, got, tt.status, tt.want)
		}
	}

	// A name sent Base64-encoded is the name.
	sid, _ := field(t, s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`), "result.session_id").(string)
	code, got := modernPost(t, s.ts, "/mcp?session_id="+sid, call, with(std, "Mcp-Method", "tools/call", "Mcp-Name", "=?base64?bGlzdF9zdGFmZg==?="))
	if code != http.StatusOK || field(t, got, "result.isError") != false || field(t, got, "result.resultType") != "complete" {
		t.Errorf("tools/call with its name Base64-encoded: %d %s", code, got)
	}
	// A client of an older version naming the session of 2026-07-28
	// requests in its URL is refused, as the URL's other faults are.
	code, got, _ = s.httpDo(t, http.MethodPost, "/mcp?session_id=x", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`, nil)
	if want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"The /mcp URL's session_id names the session of 2026-07-28 requests (MCP-Protocol-Version: 2026-07-28); this request speaks an older version, whose session is its initialize's or, in OpenEnv's dialect, params.session_id's: drop session_id from the URL"}}`; code != http.StatusBadRequest || strings.TrimSpace(got) != want {
		t.Errorf("initialize at /mcp?session_id=x: %d %s\nwant 400 %s", code, got, want)
	}
	if n := len(s.Sessions()); n != 1 {
		t.Errorf("refused requests left %d sessions beside the one created", n)
	}

	// An initialize without 2026-07-28's _meta selects the handshake, the
	// 2026-07-28 header notwithstanding (a client falling back may send
	// it): it starts a session of the version it negotiates.
	_, got, resp := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		map[string]string{"MCP-Protocol-Version": modern})
	if resp.StatusCode != http.StatusOK || resp.Header.Get(openenv.MCPSessionHeader) == "" || field(t, got, "result.protocolVersion") != "2025-11-25" {
		t.Errorf("initialize with the 2026-07-28 header: %d %s %v", resp.StatusCode, got, resp.Header)
	}
}

// server/discover and the other results of 2026-07-28 carry what the
// revision has every result carry: resultType, the server's identity in
// _meta, and on listings the caching hints. server/discover lists
// 2026-07-28 at a /mcp URL naming a session_id; at any other, the
// initialize versions alone, with instructions saying where a 2026-07-28
// client reaches an episode.
func TestMCP_ModernResults(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	sid, _ := field(t, s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`), "result.session_id").(string)
	at := "/mcp?session_id=" + sid
	discover := `{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{` + modernMeta + `}}`
	code, got := modernPost(t, s.ts, at, discover, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"})
	if want := `{"jsonrpc":"2.0","id":"d","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"company","version":"0.1.0"}},"ttlMs":0,"cacheScope":"public","supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"capabilities":{"tools":{"listChanged":false}}}}`; code != http.StatusOK || got != want {
		t.Errorf("server/discover at %s: %d %s\nwant 200 %s", at, code, got, want)
	}
	for _, path := range []string{"/mcp", "/mcp?task=invoice_750"} {
		code, got := modernPost(t, s.ts, path, discover, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"})
		if want := `{"jsonrpc":"2.0","id":"d","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"company","version":"0.1.0"}},"ttlMs":0,"cacheScope":"public","supportedVersions":["2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"capabilities":{"tools":{"listChanged":false}},` +
			`"instructions":"This URL starts an episode by initialize (MCP 2025-11-25 and older); a 2026-07-28 client reaches an episode at /mcp?session_id=<id> of a session a trainer created (openenv/session/create)."}}`; code != http.StatusOK || got != want {
			t.Errorf("server/discover at %s: %d %s\nwant 200 %s", path, code, got, want)
		}
	}
	code, got = modernPost(t, s.ts, at, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"})
	if code != http.StatusOK || field(t, got, "result.resultType") != "complete" || field(t, got, "result.cacheScope") != "private" ||
		fmt.Sprint(field(t, got, "result.ttlMs")) != "0" || field(t, got, "result._meta") == nil || len(field(t, got, "result.tools").([]any)) != 14 {
		t.Errorf("tools/list: %d %.400s", code, got)
	}
	code, got = modernPost(t, s.ts, at, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_staff",`+modernMeta+`}}`, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "list_staff"})
	if code != http.StatusOK || field(t, got, "result.resultType") != "complete" || field(t, got, "result.isError") != false || field(t, got, "result._meta") == nil {
		t.Errorf("tools/call: %d %.400s", code, got)
	}
	// A notification is taken, and nothing is answered.
	code, got = modernPost(t, s.ts, "/mcp", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,`+modernMeta+`}}`, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "notifications/cancelled"})
	if code != http.StatusAccepted || got != "" {
		t.Errorf("a notification: %d %s", code, got)
	}
}

// On the agent listener a 2026-07-28 client reaches only the sessions
// started there: one its harness created with openenv/session/create on
// the agent listener, not the trainer's.
func TestMCP_ModernAgentListener(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	agent := httptest.NewServer(s.AgentHandler())
	t.Cleanup(agent.Close)
	ctx := context.Background()

	trainers, _ := field(t, s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`), "result.session_id").(string)
	cs, _ := sdkModern(t, agent.URL, "session_id="+trainers)
	var rpcErr *jsonrpc.Error
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_staff", Arguments: map[string]any{}}); !errors.As(err, &rpcErr) || rpcErr.Message != "Unknown session_id: "+trainers {
		t.Errorf("the trainer's session from the agent listener: %v", err)
	}

	_, body, _ := do(t, agent, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`, nil)
	own, _ := field(t, body, "result.session_id").(string)
	cs, _ = sdkModern(t, agent.URL, "session_id="+own)
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hire", Arguments: map[string]any{"name": "Eve Example", "role": "engineer"}}); err != nil || res.IsError {
		t.Fatalf("hire on the agent's session: %v %v", err, res)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_staff", Arguments: map[string]any{}}); err != nil || !strings.Contains(resultText(res), "Eve Example") {
		t.Errorf("list_staff on the agent's session after its hire: %v %v", err, res)
	}
}

// A 2026-07-28 client cancels a request by closing its stream (the
// revision has no notifications/cancelled over HTTP): the call on the
// session stops, and the session's next call runs instead of waiting for
// it.
func TestMCP_ModernCancel(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{StepTimeout: time.Hour})
	sid, _ := field(t, s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`), "result.session_id").(string)
	header := func(name string) map[string]string {
		return map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": name}
	}
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.ts.URL+"/mcp?session_id="+sid, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{},`+modernMeta+`}}`))
		for k, v := range header("slow") {
			req.Header.Set(k, v)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := s.ts.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		ended <- err
	}()
	select {
	case <-fake.slowStarted:
	case err := <-ended:
		t.Fatalf("the request ended before its call started: %v", err)
	}
	cancel()
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled request: %v", err)
	}
	code, got := modernPost(t, s.ts, "/mcp?session_id="+sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2},`+modernMeta+`}}`, header("add"))
	if code != http.StatusOK || fmt.Sprint(field(t, got, "result.structuredContent.result")) != "3" {
		t.Errorf("the call after the cancelled one: %d %s", code, got)
	}
	if c := s.scrape(t).value(t, "seahaven_tool_calls_total", "tool", "slow", "outcome", "cancelled"); c != 1 {
		t.Errorf("seahaven_tool_calls_total{tool=slow,outcome=cancelled} = %v, want 1", c)
	}
}
