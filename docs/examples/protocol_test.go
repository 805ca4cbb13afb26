package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/openenv"
)

// serveCompany serves the examples' company world as `make run` does
// (default fixture acme) on a test server.
func serveCompany() (*httptest.Server, func()) {
	quiet := slog.New(slog.DiscardHandler)
	instances, err := os.MkdirTemp("", "instances-")
	if err != nil {
		panic(err)
	}
	backend, err := app.New(company.World, app.Config{
		DefaultFixture: "acme", InstanceRoot: instances, Checkpoints: filepath.Join(instances, "checkpoints"), Logger: quiet,
	})
	if err != nil {
		panic(err)
	}
	srv := openenv.NewServer(backend, openenv.Config{Logger: quiet})
	ts := httptest.NewServer(srv.Handler())
	return ts, func() {
		ts.Close()
		srv.Shutdown(context.Background())
		backend.Close()
		os.RemoveAll(instances)
	}
}

// client sends HTTP requests to a test server and prints each request and
// its reply, one line each. Session ids it has learned print as <session>.
type client struct {
	ts       *httptest.Server
	sessions []string
}

// do sends one request. header, when not empty, is the SessionHeader value;
// shorten, when not nil, rewrites the reply for printing.
func (c *client) do(method, path, header, body string, shorten func(string) string) string {
	req, err := http.NewRequest(method, c.ts.URL+path, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if header != "" {
		req.Header.Set(openenv.SessionHeader, header)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	reply := string(b)
	var created struct {
		Result struct {
			SessionID string `json:"session_id"`
		} `json:"result"`
	}
	if json.Unmarshal(b, &created) == nil && created.Result.SessionID != "" {
		c.sessions = append(c.sessions, created.Result.SessionID)
	}
	line := method + " " + path
	if header != "" {
		line += " (" + openenv.SessionHeader + ": " + header + ")"
	}
	if body != "" {
		line += " " + body
	}
	shown := reply
	if shorten != nil {
		shown = shorten(reply)
	}
	if got := resp.Header.Get(openenv.SessionHeader); got != "" && got != header {
		shown += " (" + openenv.SessionHeader + ": " + got + ")"
	}
	fmt.Println("→", c.hide(line))
	fmt.Println(strings.TrimSpace(fmt.Sprint("← ", resp.StatusCode, " ", c.hide(shown))))
	return reply
}

// hide writes the session ids the client learned as <session>.
func (c *client) hide(s string) string {
	for _, id := range c.sessions {
		s = strings.ReplaceAll(s, id, "<session>")
	}
	return s
}

// with writes the latest session id in place of <session>.
func (c *client) with(s string) string {
	return strings.ReplaceAll(s, "<session>", c.sessions[len(c.sessions)-1])
}

// firstTool cuts a tools/list reply down to its first tool.
func firstTool(reply string) string {
	var r struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	json.Unmarshal([]byte(reply), &r)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"result":{"tools":[%s, … %d more]}}`, r.Result.Tools[0], len(r.Result.Tools)-1)
}

// JSON-RPC on POST /mcp in OpenEnv's dialect: a session made by
// openenv/session/create, tools/list and tools/call naming it, and its end.
func Example_protocolMCP() {
	ts, stop := serveCompany()
	defer stop()
	c := &client{ts: ts}
	c.do("POST", "/mcp", "", `{"jsonrpc":"2.0","id":2,"method":"openenv/session/create","params":{}}`, nil)
	c.do("POST", "/mcp", "", c.with(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"session_id":"<session>"}}`), firstTool)
	c.do("POST", "/mcp", "", c.with(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"session_id":"<session>","name":"pay_list_charges","arguments":{"limit":1}}}`), nil)
	c.do("POST", "/mcp", "", c.with(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"session_id":"<session>","name":"invoice","arguments":{"amount":0}}}`), nil)
	c.do("POST", "/mcp", "", c.with(`{"jsonrpc":"2.0","id":6,"method":"openenv/session/close","params":{"session_id":"<session>"}}`), nil)
	c.do("POST", "/mcp", "", `{"jsonrpc":"2.0","id":7,"method":"reset"}`, nil)
	// Output:
	// → POST /mcp {"jsonrpc":"2.0","id":2,"method":"openenv/session/create","params":{}}
	// ← 200 {"jsonrpc":"2.0","id":2,"result":{"session_id":"<session>"}} (X-Seahaven-Session: <session>)
	// → POST /mcp {"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"session_id":"<session>"}}
	// ← 200 {"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"invoice","description":"Charge the company's payment account and file an invoice against the charge.","inputSchema":{"type":"object","properties":{"amount":{"type":"integer","description":"Amount in cents.","minimum":1,"maximum":1000000000000}},"required":["amount"],"additionalProperties":false},"outputSchema":{"type":"object","properties":{"id":{"type":"string"},"charge_id":{"type":"string"},"amount":{"type":"integer"}},"required":["id","charge_id","amount"],"additionalProperties":false}}, … 13 more]}}
	// → POST /mcp {"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"session_id":"<session>","name":"pay_list_charges","arguments":{"limit":1}}}
	// ← 200 {"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"[{\"amount\":4999,\"created_at\":\"2026-06-01 09:00:00\",\"id\":\"07dd3345-465b-47f3-9c99-9a9eb20b2ef1\",\"refunded\":0}]","annotations":null,"meta":null}],"structured_content":{"result":[{"amount":4999,"created_at":"2026-06-01 09:00:00","id":"07dd3345-465b-47f3-9c99-9a9eb20b2ef1","refunded":0}]},"meta":null,"data":[{"amount":4999,"created_at":"2026-06-01 09:00:00","id":"07dd3345-465b-47f3-9c99-9a9eb20b2ef1","refunded":0}],"is_error":false,"structuredContent":{"result":[{"amount":4999,"created_at":"2026-06-01 09:00:00","id":"07dd3345-465b-47f3-9c99-9a9eb20b2ef1","refunded":0}]},"isError":false}}
	// → POST /mcp {"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"session_id":"<session>","name":"invoice","arguments":{"amount":0}}}
	// ← 200 {"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"invalid arguments: field \"amount\": value 0 is less than minimum 1","data":{"error_type":"invalid_args"}}}
	// → POST /mcp {"jsonrpc":"2.0","id":6,"method":"openenv/session/close","params":{"session_id":"<session>"}}
	// ← 200 {"jsonrpc":"2.0","id":6,"result":{"session_id":"<session>","closed":true}}
	// → POST /mcp {"jsonrpc":"2.0","id":7,"method":"reset"}
	// ← 200 {"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found: reset","data":null}}
}

// The HTTP routes: a lasting session chosen by X-Seahaven-Session.
func Example_protocolHTTP() {
	ts, stop := serveCompany()
	defer stop()
	c := &client{ts: ts}
	c.do("GET", "/health", "", "", nil)
	c.do("GET", "/metadata", "", "", nil)
	c.do("GET", "/fixtures", "", "", elideTimes)
	c.do("POST", "/reset", "grader-1", `{"seed":7,"episode_id":"ep-1","fixture":"acme","clock_mode":"step","control_tools":true}`, nil)
	c.do("POST", "/step", "grader-1", `{"action":{"type":"call_tool","tool_name":"accounts","arguments":{}}}`, nil)
	c.do("POST", "/step", "grader-1", `{"action":{"type":"call_tool","tool_name":"seahaven_control","arguments":{"action":"advance_clock","seconds":3600}}}`, nil)
	c.do("GET", "/state", "grader-1", "", stateSummary)
	c.do("POST", "/inspect", "grader-1", `{"sql":"SELECT count(*) AS charges, sum(amount) AS total FROM payments.charges"}`, nil)
	c.do("GET", "/sessions", "", "", elideTimes)
	c.do("POST", "/reset", "grader-1", `{"fixture":"acme","colour":"red"}`, nil)
	c.do("POST", "/step", "nobody", `{"action":{"type":"list_tools"}}`, nil)
	// Output:
	// → GET /health
	// ← 200 {"status":"healthy"}
	// → GET /metadata
	// ← 200 {"name":"company","description":"A small company: staff, invoices, two payment accounts, a shop and team chat.","readme_content":null,"version":"0.1.0","author":null,"documentation_url":null}
	// → GET /fixtures
	// ← 200 [{"id":"acme","description":"Acme Corp: three staff, an invoice, a shop order, an EU charge and some chat.","parent_id":null,"created_at":"…","world_version":"0.1.0","file_sha256":{"chat":"97240c3a41a2886d948c398c973b35f5a5b98403a740b79c1ddcb2db075f308a","main":"39319d855719cceac4389e9db026b877dbe8374096d95a557fcbaf2f4112c913","payments":"3bbc069d0f5de0b87fec6ae763a8ee4d0bddd4d412a992e2f02262dbea52dd9f","payments_eu":"77a0fce3940a7a33ab897bd2725420dc5de7913b8dd5781bfbbfc4288850bcbe","shop":"bbb94ce9e9ae93ea2eae67a7068fab8de9596f7d2d28cb1b5ff94f791ff49fb5"},"default":true}]
	// → POST /reset (X-Seahaven-Session: grader-1) {"seed":7,"episode_id":"ep-1","fixture":"acme","clock_mode":"step","control_tools":true}
	// ← 200 {"observation":{},"reward":null,"done":false}
	// → POST /step (X-Seahaven-Session: grader-1) {"action":{"type":"call_tool","tool_name":"accounts","arguments":{}}}
	// ← 200 {"observation":{"tool_name":"accounts","result":{"content":[{"type":"text","text":"{\"payments\":\"us\",\"payments_eu\":\"eu\",\"plan\":\"free\"}","annotations":null,"meta":null}],"structured_content":{"payments":"us","payments_eu":"eu","plan":"free"},"meta":null,"data":{"payments":"us","payments_eu":"eu","plan":"free"},"is_error":false},"error":null},"reward":null,"done":false}
	// → POST /step (X-Seahaven-Session: grader-1) {"action":{"type":"call_tool","tool_name":"seahaven_control","arguments":{"action":"advance_clock","seconds":3600}}}
	// ← 200 {"observation":{"tool_name":"seahaven_control","result":{"content":[{"type":"text","text":"{\"now\":\"2026-06-01T10:00:01.000Z\"}","annotations":null,"meta":null}],"structured_content":{"now":"2026-06-01T10:00:01.000Z"},"meta":null,"data":{"now":"2026-06-01T10:00:01.000Z"},"is_error":false},"error":null},"reward":null,"done":false}
	// → GET /state (X-Seahaven-Session: grader-1)
	// ← 200 {"episode_id":"ep-1","step_count":2,"world":"company","now":"2026-06-01T10:00:02.000Z","clock_mode":"step", … 5 nodes, 0 change records}
	// → POST /inspect (X-Seahaven-Session: grader-1) {"sql":"SELECT count(*) AS charges, sum(amount) AS total FROM payments.charges"}
	// ← 200 {"columns":["charges","total"],"rows":[[2,124999]],"truncated":false}
	// → GET /sessions
	// ← 200 [{"ref":"7e2e0163ba4b","transport":"http","created":"…","last_activity":"…","step_count":2,"episode_id":"ep-1"}]
	// → POST /reset (X-Seahaven-Session: grader-1) {"fixture":"acme","colour":"red"}
	// ← 422 {"detail":[{"type":"extra_forbidden","loc":["body","colour"],"msg":"Extra inputs are not permitted","input":"red"}]}
	// → POST /step (X-Seahaven-Session: nobody) {"action":{"type":"list_tools"}}
	// ← 404 {"detail":"Unknown session_id: nobody","code":"SESSION_ERROR"}
}

var timeRE = regexp.MustCompile(`"(created|created_at|last_activity)":"[^"]+"`)

// elideTimes writes wall-clock instants as "…".
func elideTimes(reply string) string { return timeRE.ReplaceAllString(reply, `"$1":"…"`) }

// stateSummary keeps the scalar fields of a state document and says how
// many nodes and change records it holds.
func stateSummary(reply string) string {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(reply), &doc); err != nil {
		return reply
	}
	var nodes map[string]json.RawMessage
	var log []json.RawMessage
	json.Unmarshal(doc["composition"], &nodes)
	json.Unmarshal(doc["change_log"], &log)
	return fmt.Sprintf(`{"episode_id":%s,"step_count":%s,"world":%s,"now":%s,"clock_mode":%s, … %d nodes, %d change records}`,
		doc["episode_id"], doc["step_count"], doc["world"], doc["now"], doc["clock_mode"], len(nodes), len(log))
}

// mcpDo sends one JSON-RPC request as a standard MCP client does, with the
// Mcp-Session-Id header when sid is set, and prints it and the reply with
// the session header the reply carries. It returns that header.
func (c *client) mcpDo(method, path, sid, body string, shorten func(string) string) string {
	req, err := http.NewRequest(method, c.ts.URL+path, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if sid != "" {
		req.Header.Set(openenv.MCPSessionHeader, sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	got := resp.Header.Get(openenv.MCPSessionHeader)
	if got != "" {
		c.sessions = append(c.sessions, got)
	}
	line := method + " " + path
	if sid != "" {
		line += " (" + openenv.MCPSessionHeader + ": " + sid + ")"
	}
	if body != "" {
		line += " " + body
	}
	shown := string(b)
	if shorten != nil {
		shown = shorten(shown)
	}
	if got != "" {
		shown += " (" + openenv.MCPSessionHeader + ": " + got + ")"
	}
	fmt.Println("→", c.hide(line))
	fmt.Println(strings.TrimSpace(fmt.Sprint("← ", resp.StatusCode, " ", c.hide(shown))))
	return got
}

// Standard MCP on POST /mcp: initialize starts an episode (here a task's,
// from the URL's query) named by Mcp-Session-Id; tools/call results carry
// isError; the trainer reads the reward; DELETE ends the session.
func Example_protocolMCPStandard() {
	ts, stop := serveCompany()
	defer stop()
	c := &client{ts: ts}
	sid := c.mcpDo("POST", "/mcp?task=invoice_750&seed=3", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"8"}}}`, nil)
	c.mcpDo("POST", "/mcp", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	c.mcpDo("POST", "/mcp", sid, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, firstTool)
	c.mcpDo("POST", "/mcp", sid, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"invoice","arguments":{"amount":0}}}`, nil)
	c.mcpDo("POST", "/mcp", sid, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"invoice","arguments":{"amount":750}}}`, nil)
	c.mcpDo("POST", "/mcp", sid, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"fly"}}`, nil)
	// The trainer, on its own listener, reads the episode's reward.
	c.mcpDo("POST", "/mcp", "", `{"jsonrpc":"2.0","id":7,"method":"seahaven/grade","params":{"session_id":"`+sid+`"}}`, nil)
	c.mcpDo("DELETE", "/mcp", sid, "", nil)
	c.mcpDo("POST", "/mcp", sid, `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`, nil)
	// Output:
	// → POST /mcp?task=invoice_750&seed=3 {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"8"}}}
	// ← 200 {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":false}},"serverInfo":{"name":"company","version":"0.1.0"}}} (Mcp-Session-Id: <session>)
	// → POST /mcp (Mcp-Session-Id: <session>) {"jsonrpc":"2.0","method":"notifications/initialized"}
	// ← 202
	// → POST /mcp (Mcp-Session-Id: <session>) {"jsonrpc":"2.0","id":3,"method":"tools/list"}
	// ← 200 {"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"invoice","description":"Charge the company's payment account and file an invoice against the charge.","inputSchema":{"type":"object","properties":{"amount":{"type":"integer","description":"Amount in cents.","minimum":1,"maximum":1000000000000}},"required":["amount"],"additionalProperties":false},"outputSchema":{"type":"object","properties":{"id":{"type":"string"},"charge_id":{"type":"string"},"amount":{"type":"integer"}},"required":["id","charge_id","amount"],"additionalProperties":false}}, … 2 more]}}
	// → POST /mcp (Mcp-Session-Id: <session>) {"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"invoice","arguments":{"amount":0}}}
	// ← 200 {"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"invalid arguments: field \"amount\": value 0 is less than minimum 1"}],"isError":true}}
	// → POST /mcp (Mcp-Session-Id: <session>) {"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"invoice","arguments":{"amount":750}}}
	// ← 200 {"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"{\"id\":\"247be86e-b21f-4dfe-a16a-e11514b2de21\",\"charge_id\":\"1375897a-7758-41b6-a61c-52fe3bdba975\",\"amount\":750}"}],"structuredContent":{"id":"247be86e-b21f-4dfe-a16a-e11514b2de21","charge_id":"1375897a-7758-41b6-a61c-52fe3bdba975","amount":750},"isError":false}}
	// → POST /mcp (Mcp-Session-Id: <session>) {"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"fly"}}
	// ← 200 {"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"unknown tool \"fly\": task invoice_750 allows invoice, list_staff, pay_list_charges"}}
	// → POST /mcp {"jsonrpc":"2.0","id":7,"method":"seahaven/grade","params":{"session_id":"<session>"}}
	// ← 200 {"jsonrpc":"2.0","id":7,"result":{"reward":1,"done":true,"checks":[{"name":"invoice filed","passed":true,"score":1,"weight":1,"detail":"expected 1, found 1"},{"name":"charged on the company account","passed":true,"score":1,"weight":1,"detail":"expected 1, found 1"},{"name":"no collateral damage","passed":true,"score":1,"weight":1,"detail":"2 changes, all to main.invoices:insert, payments.charges:insert"}]}}
	// → DELETE /mcp (Mcp-Session-Id: <session>)
	// ← 204
	// → POST /mcp (Mcp-Session-Id: <session>) {"jsonrpc":"2.0","id":8,"method":"tools/list"}
	// ← 404 {"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Unknown Mcp-Session-Id: <session> (it ended, or never existed): initialize a new session"}}
}

// modernDo sends one JSON-RPC request of MCP 2026-07-28 to path, with the
// headers that repeat its version, method and tool name (name, when not
// empty), and prints it and the reply.
func (c *client) modernDo(path, method, name, body string, shorten func(string) string) {
	req, err := http.NewRequest("POST", c.ts.URL+path, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	headers := "MCP-Protocol-Version: 2026-07-28, Mcp-Method: " + method
	if name != "" {
		req.Header.Set("Mcp-Name", name)
		headers += ", Mcp-Name: " + name
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	shown := string(b)
	if shorten != nil {
		shown = shorten(shown)
	}
	fmt.Println("→", c.hide("POST "+path+" ("+headers+") "+body))
	fmt.Println(strings.TrimSpace(fmt.Sprint("← ", resp.StatusCode, " ", c.hide(shown))))
}

// MCP 2026-07-28 on POST /mcp: no initialize and no session header; every
// request carries its version in _meta and headers. At /mcp naming no
// session, server/discover lists the initialize versions alone, which
// start an episode there, and a call is refused; the /mcp URL's
// session_id reaches the episode a trainer created, which the trainer
// grades.
func Example_protocolMCPModern() {
	ts, stop := serveCompany()
	defer stop()
	c := &client{ts: ts}
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	c.modernDo("/mcp", "server/discover", "", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta+`}}`, nil)
	c.modernDo("/mcp", "tools/list", "", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+meta+`}}`, nil)
	// The trainer creates the episode and gives the agent its URL.
	c.do("POST", "/mcp", "", `{"jsonrpc":"2.0","id":3,"method":"openenv/session/create","params":{"task":"invoice_750","seed":3}}`, nil)
	c.modernDo(c.with("/mcp?session_id=<session>"), "tools/call", "invoice", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"invoice","arguments":{"amount":750},`+meta+`}}`, nil)
	c.modernDo(c.with("/mcp?session_id=<session>"), "tools/call", "hire", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"invoice","arguments":{"amount":750},`+meta+`}}`, nil)
	c.do("POST", "/mcp", "", c.with(`{"jsonrpc":"2.0","id":6,"method":"seahaven/grade","params":{"session_id":"<session>"}}`), nil)
	c.modernDo(c.with("/mcp?session_id=<session>"), "server/discover", "", `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{`+meta+`}}`, nil)
	c.modernDo(c.with("/mcp?session_id=<session>"), "ping", "", `{"jsonrpc":"2.0","id":8,"method":"ping","params":{`+meta+`}}`, nil)
	// Output:
	// → POST /mcp (MCP-Protocol-Version: 2026-07-28, Mcp-Method: server/discover) {"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
	// ← 200 {"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"company","version":"0.1.0"}},"ttlMs":0,"cacheScope":"public","supportedVersions":["2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"capabilities":{"tools":{"listChanged":false}},"instructions":"This URL starts an episode by initialize (MCP 2025-11-25 and older); a 2026-07-28 client reaches an episode at /mcp?session_id=<id> of a session a trainer created (openenv/session/create)."}}
	// → POST /mcp (MCP-Protocol-Version: 2026-07-28, Mcp-Method: tools/list) {"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
	// ← 400 {"jsonrpc":"2.0","id":2,"error":{"code":-32022,"message":"Unsupported MCP-Protocol-Version 2026-07-28 (supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05): this /mcp URL starts an episode by initialize, which a client of those versions sends here; a 2026-07-28 client reaches an episode at /mcp?session_id=<id> of a session a trainer created (openenv/session/create)","data":{"supported":["2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"2026-07-28"}}}
	// → POST /mcp {"jsonrpc":"2.0","id":3,"method":"openenv/session/create","params":{"task":"invoice_750","seed":3}}
	// ← 200 {"jsonrpc":"2.0","id":3,"result":{"session_id":"<session>"}} (X-Seahaven-Session: <session>)
	// → POST /mcp?session_id=<session> (MCP-Protocol-Version: 2026-07-28, Mcp-Method: tools/call, Mcp-Name: invoice) {"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"invoice","arguments":{"amount":750},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
	// ← 200 {"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"{\"id\":\"247be86e-b21f-4dfe-a16a-e11514b2de21\",\"charge_id\":\"1375897a-7758-41b6-a61c-52fe3bdba975\",\"amount\":750}"}],"structuredContent":{"id":"247be86e-b21f-4dfe-a16a-e11514b2de21","charge_id":"1375897a-7758-41b6-a61c-52fe3bdba975","amount":750},"isError":false,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"company","version":"0.1.0"}}}}
	// → POST /mcp?session_id=<session> (MCP-Protocol-Version: 2026-07-28, Mcp-Method: tools/call, Mcp-Name: hire) {"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"invoice","arguments":{"amount":750},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
	// ← 400 {"jsonrpc":"2.0","id":5,"error":{"code":-32020,"message":"Header mismatch: Mcp-Name header value 'hire' does not match body value 'invoice'"}}
	// → POST /mcp {"jsonrpc":"2.0","id":6,"method":"seahaven/grade","params":{"session_id":"<session>"}}
	// ← 200 {"jsonrpc":"2.0","id":6,"result":{"reward":1,"done":true,"checks":[{"name":"invoice filed","passed":true,"score":1,"weight":1,"detail":"expected 1, found 1"},{"name":"charged on the company account","passed":true,"score":1,"weight":1,"detail":"expected 1, found 1"},{"name":"no collateral damage","passed":true,"score":1,"weight":1,"detail":"2 changes, all to main.invoices:insert, payments.charges:insert"}]}}
	// → POST /mcp?session_id=<session> (MCP-Protocol-Version: 2026-07-28, Mcp-Method: server/discover) {"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
	// ← 200 {"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"company","version":"0.1.0"}},"ttlMs":0,"cacheScope":"public","supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"capabilities":{"tools":{"listChanged":false}}}}
	// → POST /mcp?session_id=<session> (MCP-Protocol-Version: 2026-07-28, Mcp-Method: ping) {"jsonrpc":"2.0","id":8,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
	// ← 404 {"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"Method not found: ping (a 2026-07-28 request is server/discover, tools/list or tools/call)"}}
}
