package openenv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/openenv"
)

// openAPIPaths returns the paths /openapi.json lists, sorted.
func openAPIPaths(tb testing.TB, body string) []string {
	tb.Helper()
	var doc struct {
		Paths map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		tb.Fatalf("openapi.json: %v", err)
	}
	var paths []string
	for p := range doc.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

func TestServer_Production(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{Production: true})
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/reset", `{}`},
		{"POST", "/step", `{"action":{"type":"list_tools"}}`},
		{"GET", "/state", ""},
		{"POST", "/inspect", `{"sql":"SELECT message FROM echoes"}`},
		{"POST", "/grade", ""},
		{"POST", "/checkpoint", ""},
		{"GET", "/reset", ""}, // 405 in simulation mode, absent here
	} {
		code, body, _ := s.httpDo(t, r.method, r.path, r.body, nil)
		if code != http.StatusNotFound {
			t.Errorf("%s %s: status %d, want 404", r.method, r.path, code)
		}
		jsonEq(t, body, `{"detail":"Not Found"}`)
	}
	if n := s.fake.opened.Load(); n != 0 {
		t.Errorf("%d instances opened by absent routes", n)
	}

	t.Run("OpenAPI", func(t *testing.T) {
		_, body, _ := s.httpDo(t, "GET", "/openapi.json", "", nil)
		paths := openAPIPaths(t, body)
		for _, p := range []string{"/reset", "/step", "/state", "/inspect", "/grade", "/checkpoint"} {
			if slices.Contains(paths, p) {
				t.Errorf("production /openapi.json lists %s", p)
			}
		}
		for _, p := range []string{"/health", "/mcp", "/metadata", "/schema"} {
			if !slices.Contains(paths, p) {
				t.Errorf("production /openapi.json does not list %s (it lists %v)", p, paths)
			}
		}
		// The simulation-mode document still lists the episode routes.
		sim := mustServe(t, newFake(t), openenv.Config{})
		_, body, _ = sim.httpDo(t, "GET", "/openapi.json", "", nil)
		if p := openAPIPaths(t, body); !slices.Contains(p, "/reset") || !slices.Contains(p, "/inspect") {
			t.Errorf("simulation /openapi.json lists %v", p)
		}
	})

	t.Run("EpisodesStillRun", func(t *testing.T) {
		// /ws (infrastructure) and /mcp (agents) remain.
		c := s.dial(t)
		roundTrip(t, c, `{"type":"reset","data":{"seed":1}}`)
		reply := roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"add","arguments":{"a":1,"b":2}}}`)
		if got := field(t, reply, "data.observation.result.data"); got != json.Number("3") {
			t.Errorf("step reply %s", reply)
		}
		reply = s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":2}}}`)
		if got := field(t, reply, "result.data"); got != json.Number("4") {
			t.Errorf("tools/call reply %s", reply)
		}
	})
}

// agentServer serves AgentHandler and Handler of one Server.
type agentServer struct {
	*testServer
	agent *httptest.Server
}

func mustServeAgent(tb testing.TB, cfg openenv.Config) *agentServer {
	tb.Helper()
	s := mustServe(tb, newFake(tb), cfg)
	agent := httptest.NewServer(s.AgentHandler())
	tb.Cleanup(agent.Close)
	return &agentServer{testServer: s, agent: agent}
}

// agentDo makes one request to the agent listener.
func (s *agentServer) agentDo(tb testing.TB, method, path, body string, header map[string]string) (int, string) {
	tb.Helper()
	code, b, _ := do(tb, s.agent, method, path, body, header)
	return code, b
}

func TestServer_AgentHandler(t *testing.T) {
	s := mustServeAgent(t, openenv.Config{})

	t.Run("AgentRoutes", func(t *testing.T) {
		for _, r := range []struct{ method, path, body string }{
			{"GET", "/health", ""},
			{"GET", "/metadata", ""},
			{"GET", "/schema", ""},
			{"GET", "/openapi.json", ""},
			{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		} {
			if code, body := s.agentDo(t, r.method, r.path, r.body, nil); code != http.StatusOK {
				t.Errorf("%s %s: status %d, body %s", r.method, r.path, code, body)
			}
		}
	})

	t.Run("InfrastructureRoutesAbsent", func(t *testing.T) {
		for _, r := range []struct{ method, path, body string }{
			{"GET", "/ws", ""},
			{"POST", "/reset", `{}`},
			{"POST", "/step", `{"action":{"type":"list_tools"}}`},
			{"GET", "/state", ""},
			{"POST", "/inspect", `{"sql":"SELECT message FROM echoes"}`},
			{"GET", "/sessions", ""},
			{"GET", "/sessions/x/watch", ""},
			{"GET", "/fixtures", ""},
			{"GET", "/metrics", ""},
			{"GET", "/ready", ""},
		} {
			code, body := s.agentDo(t, r.method, r.path, r.body, nil)
			if code != http.StatusNotFound {
				t.Errorf("%s %s: status %d, want 404", r.method, r.path, code)
			}
			jsonEq(t, body, `{"detail":"Not Found"}`)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.agent.URL, "http")+"/ws", nil)
		if err == nil {
			c.CloseNow()
			t.Fatal("a WebSocket upgrade succeeded on the agent listener")
		}
		if resp == nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("dial: %v, response %v; want a 404", err, resp)
		}
		if n := s.fake.opened.Load(); n != 0 {
			t.Errorf("%d instances opened through absent routes", n)
		}
	})

	t.Run("OpenAPIListsOnlyAgentRoutes", func(t *testing.T) {
		_, body := s.agentDo(t, "GET", "/openapi.json", "", nil)
		paths := openAPIPaths(t, body)
		for _, p := range paths {
			if !slices.Contains(openenv.AgentPaths, p) {
				t.Errorf("the agent's /openapi.json lists %s", p)
			}
		}
		if !slices.Contains(paths, "/mcp") {
			t.Errorf("the agent's /openapi.json does not list /mcp: %v", paths)
		}
	})

	t.Run("SharesSessions", func(t *testing.T) {
		// A session made on the agent listener is one of the server's, seen
		// by the infrastructure listener.
		_, body := s.agentDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`, nil)
		id := str(t, body, "result.session_id")
		_, body = s.agentDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"session_id":"`+id+`","name":"echo","arguments":{"message":"hi"}}}`, nil)
		if got := str(t, body, "result.data.message"); got != "hi" {
			t.Fatalf("tools/call: %s", body)
		}
		code, state, _ := s.httpDo(t, "GET", "/state", "", map[string]string{openenv.SessionHeader: id})
		if code != http.StatusOK || field(t, state, "step_count") != json.Number("1") {
			t.Errorf("GET /state of the agent's session: %d %s", code, state)
		}
	})

	t.Run("ReachesOnlyItsOwnSessions", func(t *testing.T) {
		// A trainer's HTTP session (its id chosen by the trainer), a /ws
		// session, an MCP session and a standard MCP session of the main
		// listener.
		if code, body, _ := s.httpDo(t, "POST", "/reset", `{}`, map[string]string{openenv.SessionHeader: "grader-1"}); code != http.StatusOK {
			t.Fatalf("POST /reset: %d %s", code, body)
		}
		// A /ws session's id is the one openenv/session/create names on it.
		ws := s.dial(t)
		wsID := str(t, roundTrip(t, ws, `{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}}`), "data.result.session_id")
		_, body, _ := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`, nil)
		mcpID := str(t, body, "result.session_id")
		_, _, hdr := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
		stdID := hdr.Header.Get(openenv.MCPSessionHeader)
		if stdID == "" {
			t.Fatal("initialize on the main listener issued no session")
		}
		before := len(s.Sessions())
		for _, id := range []string{"grader-1", wsID, mcpID, stdID} {
			for _, req := range []string{
				`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"session_id":"` + id + `","name":"echo","arguments":{"message":"x"}}}`,
				`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"session_id":"` + id + `"}}`,
				`{"jsonrpc":"2.0","id":1,"method":"openenv/session/close","params":{"session_id":"` + id + `"}}`,
			} {
				_, body := s.agentDo(t, "POST", "/mcp", req, nil)
				if got := str(t, body, "error.message"); got != "Unknown session_id: "+id {
					t.Errorf("agent %s: %s, want Unknown session_id", req, body)
				}
			}
		}
		if code, body := s.agentDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{openenv.MCPSessionHeader: stdID}); code != http.StatusNotFound {
			t.Errorf("agent POST /mcp with the main listener's Mcp-Session-Id: %d %s, want 404", code, body)
		}
		if code, body := s.agentDo(t, "DELETE", "/mcp", "", map[string]string{openenv.MCPSessionHeader: stdID}); code != http.StatusNotFound {
			t.Errorf("agent DELETE /mcp of the main listener's session: %d %s, want 404", code, body)
		}
		if after := len(s.Sessions()); after != before {
			t.Errorf("%d sessions live after the agent's attempts, want %d", after, before)
		}
		if reply := roundTrip(t, ws, `{"type":"state"}`); field(t, reply, "data.step_count") != json.Number("0") {
			t.Errorf("the /ws session after the agent's attempts: %s", reply)
		}
		if code, state, _ := s.httpDo(t, "GET", "/state", "", map[string]string{openenv.SessionHeader: "grader-1"}); code != http.StatusOK || field(t, state, "step_count") != json.Number("0") {
			t.Errorf("the trainer's session after the agent's attempts: %d %s", code, state)
		}
	})

	t.Run("IDsAreServerIssuedSecrets", func(t *testing.T) {
		// An agent session's id is its only key: random (a version 4 UUID,
		// 122 random bits), issued by the server, never chosen by the client.
		_, body := s.agentDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`, nil)
		created := str(t, body, "result.session_id")
		code, _, resp := do(t, s.agent, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
		if code != http.StatusOK {
			t.Fatalf("agent initialize: %d", code)
		}
		ids := map[string]bool{}
		for _, id := range []string{created, resp.Header.Get(openenv.MCPSessionHeader)} {
			if u, err := uuid.Parse(id); err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != id {
				t.Errorf("agent session id %q is not a server-issued random UUID", id)
			}
			ids[id] = true
		}
		if len(ids) < 2 {
			t.Errorf("agent session ids %v, want two distinct", ids)
		}
		// Asking for an id is refused, not ignored.
		_, body = s.agentDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{"session_id":"mine"}}`, nil)
		if msg := str(t, body, "error.message"); !strings.Contains(msg, "params.session_id: Extra inputs are not permitted") {
			t.Errorf("openenv/session/create naming its id: %s, want the key refused", body)
		}
	})

	t.Run("AgentQuota", func(t *testing.T) {
		s := mustServeAgent(t, openenv.Config{MaxSessions: 8, AgentMaxSessions: 2})
		create := `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`
		sessionless := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"}}}`
		for i := range 2 {
			// A sessionless call counts only while it runs.
			if _, body := s.agentDo(t, "POST", "/mcp", sessionless, nil); !strings.Contains(string(body), `"isError":false`) {
				t.Fatalf("a sessionless call with %d agent sessions: %s", i, body)
			}
			if _, body := s.agentDo(t, "POST", "/mcp", create, nil); str(t, body, "result.session_id") == "" {
				t.Fatalf("agent session %d: %s", i+1, body)
			}
		}
		_, body := s.agentDo(t, "POST", "/mcp", create, nil)
		if msg := str(t, body, "error.message"); !strings.Contains(msg, "Agent sessions at capacity: 2/2") {
			t.Fatalf("a third agent session: %s, want the agent quota's refusal", body)
		}
		// A sessionless call opens an instance too: the quota holds for it.
		_, body = s.agentDo(t, "POST", "/mcp", sessionless, nil)
		if msg := str(t, body, "error.message"); !strings.Contains(msg, "Agent sessions at capacity: 2/2") {
			t.Fatalf("a sessionless call with the agents at their quota: %s, want the agent quota's refusal", body)
		}
		// The trainers' share stays free.
		for i := range 6 {
			id := fmt.Sprintf("trainer-%d", i)
			if code, body, _ := s.httpDo(t, "POST", "/reset", `{}`, map[string]string{openenv.SessionHeader: id}); code != http.StatusOK {
				t.Fatalf("trainer reset %d with the agents at their quota: %d %s", i, code, body)
			}
		}
	})

	t.Run("AgentIdleTimeout", func(t *testing.T) {
		// An agent's idle session is closed after AgentIdleTimeout while a
		// trainer's, idle as long, lives on until IdleTimeout.
		s := mustServeAgent(t, openenv.Config{IdleTimeout: time.Hour, AgentIdleTimeout: 30 * time.Millisecond})
		_, body := s.agentDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`, nil)
		agentID := str(t, body, "result.session_id")
		if code, body, _ := s.httpDo(t, "POST", "/reset", `{}`, map[string]string{openenv.SessionHeader: "trainer"}); code != http.StatusOK {
			t.Fatalf("trainer reset: %d %s", code, body)
		}
		waitFor(t, "the agent's idle session to close", func() bool { return len(s.Sessions()) == 1 })
		_, body = s.agentDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"session_id":"`+agentID+`"}}`, nil)
		if got := str(t, body, "error.message"); got != "Unknown session_id: "+agentID {
			t.Errorf("the agent's session after its idle timeout: %s", body)
		}
		if code, body, _ := s.httpDo(t, "GET", "/state", "", map[string]string{openenv.SessionHeader: "trainer"}); code != http.StatusOK {
			t.Errorf("the trainer's session: %d %s", code, body)
		}
	})

	t.Run("Token", func(t *testing.T) {
		s := mustServeAgent(t, openenv.Config{Token: testToken})
		if code, _ := s.agentDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil); code != http.StatusUnauthorized {
			t.Errorf("/mcp without the token: status %d", code)
		}
		if code, _ := s.agentDo(t, "GET", "/health", "", nil); code != http.StatusOK {
			t.Errorf("/health without the token: status %d", code)
		}
		if code, _ := s.agentDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			map[string]string{"Authorization": "Bearer " + testToken}); code != http.StatusOK {
			t.Errorf("/mcp with the token: status %d", code)
		}
	})

	// seahaven_control moves the episode's clock: the agent cannot switch
	// it on for a session it starts, in either dialect; the trainer can.
	t.Run("NoControlTools", func(t *testing.T) {
		const want = "control_tools: seahaven_control, which sets the episode's clock, is the trainer's; the agent listener does not serve it"
		if code, body := s.agentDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{"control_tools":true}}`, nil); code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("openenv/session/create with control_tools: %d %s", code, body)
		}
		if code, body := s.agentDo(t, "POST", "/mcp?control_tools=true", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, nil); !strings.Contains(body, want) {
			t.Errorf("initialize at /mcp?control_tools=true: %d %s", code, body)
		}
		if code, body := s.agentDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{"control_tools":false}}`, nil); code != http.StatusOK || !strings.Contains(body, "session_id") {
			t.Errorf("openenv/session/create with control_tools false: %d %s", code, body)
		}
		if code, body, _ := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{"control_tools":true}}`, nil); code != http.StatusOK || !strings.Contains(body, "session_id") {
			t.Errorf("the main listener's openenv/session/create with control_tools: %d %s", code, body)
		}
	})

	// An episode's id files its checkpoints (GET /checkpoints/latest): the
	// agent cannot name the episode a session it starts runs, in the
	// params or the URL's query of any request that starts one; the
	// server gives it a new UUID, which the trainer finds in /sessions.
	t.Run("NoEpisodeID", func(t *testing.T) {
		const want = "episode_id: an episode's id, under which its checkpoints are filed, is the trainer's; the agent listener names every episode it starts itself"
		before := len(s.Sessions())
		for _, r := range []struct{ path, body string }{
			{"/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{"episode_id":"ep-1"}}`},
			{"/mcp?episode_id=ep-1", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`},
			{"/mcp?episode_id=ep-1", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`},
			{"/mcp?episode_id=", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`},
		} {
			if code, body := s.agentDo(t, "POST", r.path, r.body, nil); !strings.Contains(body, want) || strings.Contains(body, "session_id") {
				t.Errorf("POST %s %s: %d %s, want the episode id refused", r.path, r.body, code, body)
			}
		}
		if after := len(s.Sessions()); after != before {
			t.Errorf("%d sessions live after the refusals, want %d", after, before)
		}
		_, body := s.agentDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`, nil)
		id := str(t, body, "result.session_id")
		if _, body := s.agentDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"session_id":"`+id+`","name":"echo","arguments":{"message":"x"}}}`, nil); strings.Contains(body, `"error"`) {
			t.Fatalf("tools/call: %s", body)
		}
		_, state, _ := s.httpDo(t, "GET", "/state", "", map[string]string{openenv.SessionHeader: id})
		episode, _ := field(t, state, "episode_id").(string)
		if u, err := uuid.Parse(episode); err != nil || u.Version() != 4 || u.String() != episode {
			t.Errorf("the agent session's episode id %q is not a server-issued UUID", episode)
		}
		if !slices.ContainsFunc(s.Sessions(), func(si openenv.SessionInfo) bool { return si.EpisodeID == episode }) {
			t.Errorf("/sessions does not list the agent session's episode %s", episode)
		}
		if code, body, _ := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{"episode_id":"ep-1"}}`, nil); code != http.StatusOK || !strings.Contains(body, "session_id") {
			t.Errorf("the main listener's openenv/session/create with episode_id: %d %s", code, body)
		}
	})

	// With periodic checkpoints, an agent session naming the trainer's
	// episode would file its checkpoints as that episode's newest, and a
	// failover would restore the agent's world: the newest stays the
	// trainer's, and the episode id is live in one session only.
	t.Run("TrainersCheckpointsStayTheirs", func(t *testing.T) {
		s := mustServeWorld(t, company.World, app.Config{DefaultFixture: company.AcmeID}, openenv.Config{CheckpointEvery: 1})
		agent := httptest.NewServer(s.AgentHandler())
		t.Cleanup(agent.Close)
		h := map[string]string{openenv.SessionHeader: "trainer"}
		if code, body, _ := s.httpDo(t, "POST", "/reset", `{"episode_id":"ep-1"}`, h); code != http.StatusOK {
			t.Fatalf("trainer reset: %d %s", code, body)
		}
		if code, body, _ := s.httpDo(t, "POST", "/step", `{"action":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Ada"}}}`, h); code != http.StatusOK {
			t.Fatalf("trainer step: %d %s", code, body)
		}
		latest := func() string {
			t.Helper()
			code, body, _ := s.httpDo(t, "GET", "/checkpoints/latest?episode_id=ep-1", "", nil)
			if code != http.StatusOK {
				t.Fatalf("GET /checkpoints/latest: %d %s", code, body)
			}
			return str(t, body, "checkpoint_id")
		}
		trainers := latest()
		_, body, _ := do(t, agent, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{"episode_id":"ep-1"}}`, nil)
		if !strings.Contains(body, `"error"`) {
			id := str(t, body, "result.session_id")
			do(t, agent, "POST", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"session_id":"`+id+`","name":"hire","arguments":{"name":"Mallory","role":"admin"}}}`, nil)
		}
		// The agent's own session, checkpointed after its call too.
		_, body, _ = do(t, agent, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`, nil)
		id := str(t, body, "result.session_id")
		if _, body, _ := do(t, agent, "POST", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"session_id":"`+id+`","name":"hire","arguments":{"name":"Mallory","role":"admin"}}}`, nil); strings.Contains(body, `"error"`) {
			t.Fatalf("the agent's call: %s", body)
		}
		if got := latest(); got != trainers {
			t.Errorf("the newest checkpoint of ep-1 is %s after the agent's calls, want the trainer's %s", got, trainers)
		}
		n := 0
		for _, si := range s.Sessions() {
			if si.EpisodeID == "ep-1" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d live sessions run episode ep-1, want 1", n)
		}
	})

	// A trainer's reset of an agent's session with control_tools gives the
	// tool to the trainer's listener only: the agent neither lists nor
	// calls it. Before, it did both, and moved its episode's clock.
	t.Run("ControlToolsOfATrainersReset", func(t *testing.T) {
		_, body := s.agentDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`, nil)
		id, _ := field(t, body, "result.session_id").(string)
		if id == "" {
			t.Fatalf("openenv/session/create: %s", body)
		}
		if code, body, _ := s.httpDo(t, "POST", "/reset", `{"control_tools":true}`, map[string]string{openenv.SessionHeader: id}); code != http.StatusOK {
			t.Fatalf("the trainer's reset of the agent's session: %d %s", code, body)
		}
		list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"session_id":"` + id + `"}}`
		if _, body, _ := s.httpDo(t, "POST", "/mcp", list, nil); !strings.Contains(body, `"name":"seahaven_control"`) {
			t.Errorf("the trainer's tools/list of the session lacks seahaven_control: %.300s", body)
		}
		if _, body := s.agentDo(t, "POST", "/mcp", list, nil); !strings.Contains(body, `"tools"`) || strings.Contains(body, "seahaven_control") {
			t.Errorf("the agent's tools/list: %.300s, want the tools without seahaven_control", body)
		}
		steps := func() string {
			t.Helper()
			_, body, _ := s.httpDo(t, "GET", "/state", "", map[string]string{openenv.SessionHeader: id})
			return fmt.Sprint(field(t, body, "step_count"))
		}
		before := steps()
		call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"session_id":"` + id + `","name":"seahaven_control","arguments":{"action":"advance_clock","seconds":3600}}}`
		if _, body := s.agentDo(t, "POST", "/mcp", call, nil); !strings.Contains(body, "the agent listener does not serve it") {
			t.Errorf("the agent's call of seahaven_control: %.300s, want it refused", body)
		}
		// A step that failed, as a call of a tool the world does not have
		// is: counted, timelined and subject to the episode's end.
		if after := steps(); before != "0" || after != "1" {
			t.Errorf("step_count %s after the agent's refused call of seahaven_control, %s before; want 1 and 0: it counts as a step", after, before)
		}
	})
}

// With an agent token, each listener takes its own credential only: an
// agent sandbox's token opens /mcp on the agent listener and nothing on the
// main one, and the trainer's token does not open the agent listener.
func TestServer_AgentToken(t *testing.T) {
	s := mustServeAgent(t, openenv.Config{Token: testToken, AgentToken: "agent-secret"})
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	tests := []struct {
		name  string
		agent bool   // the agent listener, else the main one
		token string // "" sends none
		want  int
	}{
		{"AgentWithAgentToken", true, "agent-secret", http.StatusOK},
		{"AgentWithMainToken", true, testToken, http.StatusUnauthorized},
		{"AgentWithout", true, "", http.StatusUnauthorized},
		{"MainWithMainToken", false, testToken, http.StatusOK},
		{"MainWithAgentToken", false, "agent-secret", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr map[string]string
			if tt.token != "" {
				hdr = bearer(tt.token)
			}
			var code int
			var body string
			if tt.agent {
				code, body = s.agentDo(t, "POST", "/mcp", list, hdr)
			} else {
				code, body, _ = s.httpDo(t, "POST", "/mcp", list, hdr)
			}
			if code != tt.want {
				t.Errorf("status %d, want %d; body %s", code, tt.want, body)
			}
		})
	}
	if code, _ := s.agentDo(t, "GET", "/health", "", nil); code != http.StatusOK {
		t.Errorf("agent /health without a token: status %d", code)
	}
}

func TestServer_Ready(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{MaxSessions: 2})
	probe := func(path string, want int, status string) {
		t.Helper()
		code, body, _ := s.httpDo(t, "GET", path, "", nil)
		if code != want {
			t.Errorf("GET %s: status %d, want %d; body %s", path, code, want, body)
		}
		jsonEq(t, body, `{"status":"`+status+`"}`)
	}
	probe("/ready", http.StatusOK, "ready")
	probe("/accepting", http.StatusOK, "accepting")
	c1 := s.dial(t)
	roundTrip(t, c1, `{"type":"state"}`) // the session exists once its first reply comes
	probe("/accepting", http.StatusOK, "accepting")
	c2 := s.dial(t)
	roundTrip(t, c2, `{"type":"state"}`)
	// Full: no new sessions, but the replica serves its own and stays in
	// rotation.
	probe("/accepting", http.StatusServiceUnavailable, "at_capacity")
	probe("/ready", http.StatusOK, "ready")
	// /health says the process is fine: a full server is not restarted.
	if code, _, _ := s.httpDo(t, "GET", "/health", "", nil); code != http.StatusOK {
		t.Errorf("GET /health at capacity: %d", code)
	}
	send(t, c2, `{"type":"close"}`)
	waitFor(t, "a free slot", func() bool { return len(s.Sessions()) < 2 })
	probe("/accepting", http.StatusOK, "accepting")

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	probe("/ready", http.StatusServiceUnavailable, "shutting_down")
	probe("/accepting", http.StatusServiceUnavailable, "shutting_down")
}

func TestServer_OpenAPIByMode(t *testing.T) {
	// Servers of both modes in one process keep their own documents.
	for _, tt := range []struct {
		production bool
		hasReset   bool
	}{{false, true}, {true, false}, {false, true}} {
		srv := openenv.NewServer(newFake(t), openenv.Config{Production: tt.production, Logger: slog.New(slog.DiscardHandler)})
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
		if got := slices.Contains(openAPIPaths(t, rec.Body.String()), "/reset"); got != tt.hasReset {
			t.Errorf("production=%v: lists /reset %v, want %v", tt.production, got, tt.hasReset)
		}
	}
}
