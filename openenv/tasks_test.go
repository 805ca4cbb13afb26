package openenv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/schemas/schematest"
	"github.com/seahaven/seahaven/task"
)

// rewardOf returns a step reply's reward as JSON text and its done flag.
func rewardOf(tb testing.TB, reply string) (string, bool) {
	tb.Helper()
	if typ := str(tb, reply, "type"); typ != "observation" {
		tb.Fatalf("reply %s, want an observation", reply)
	}
	done, ok := field(tb, reply, "data.done").(bool)
	if !ok {
		tb.Fatalf("done is not a boolean in %s", reply)
	}
	return fmt.Sprint(field(tb, reply, "data.reward")), done
}

// stateOf asks for the state document. The frame is read raw: the task and
// checks keys of a task episode are not in schemas/state.json.
func stateOf(tb testing.TB, c *websocket.Conn) map[string]any {
	tb.Helper()
	send(tb, c, `{"type":"state"}`)
	raw := recvRaw(tb, c)
	var frame struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal([]byte(raw), &frame); err != nil || frame.Type != "state" {
		tb.Fatalf("state reply %s: %v", raw, err)
	}
	return frame.Data
}

// Over a real WebSocket: reset with a task, solve it with tool calls, and
// watch the reward reach 1 and done turn true on the final step.
func TestTasks_WebSocketSolve(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	c := s.dial(t)
	defer c.Close(websocket.StatusNormalClosure, "")

	reply := roundTrip(t, c, `{"type":"reset","data":{"task":"refund_eu_charge","episode_id":"solve-1"}}`)
	if reward, done := rewardOf(t, reply); reward != "<nil>" || done {
		t.Fatalf("reset reward %s done %v, want null and false", reward, done)
	}
	st := stateOf(t, c)
	if st["task"] != "refund_eu_charge" || st["checks"] != nil {
		t.Fatalf("state after reset: task %v checks %v", st["task"], st["checks"])
	}

	reply = callTool(t, c, "eu_list_charges", `{}`)
	if reward, done := rewardOf(t, reply); reward != "0" || done {
		t.Fatalf("after listing (nothing changed): reward %s done %v, want 0 and not done", reward, done)
	}
	charges, ok := field(t, reply, "data.observation.result.data").([]any)
	if !ok || len(charges) != 1 {
		t.Fatalf("EU charges: %s", reply)
	}
	id := charges[0].(map[string]any)["id"].(string)

	reply = callTool(t, c, "eu_refund_charge", fmt.Sprintf(`{"charge_id":%q}`, id))
	if reward, done := rewardOf(t, reply); reward != "1" || !done {
		t.Fatalf("after the refund: reward %s done %v, want 1 and done; reply %s", reward, done, reply)
	}

	st = stateOf(t, c)
	checks, ok := st["checks"].([]any)
	if st["task"] != "refund_eu_charge" || !ok || len(checks) != 2 {
		t.Fatalf("state: task %v checks %v", st["task"], st["checks"])
	}
	for _, ch := range checks {
		m := ch.(map[string]any)
		if m["passed"] != true || m["detail"] == "" {
			t.Errorf("check %v", m)
		}
	}
	if st["step_count"] != float64(2) || st["episode_id"] != "solve-1" {
		t.Errorf("state step_count %v episode_id %v", st["step_count"], st["episode_id"])
	}
}

// A wrong action over the wire: an extra write elsewhere, then the right
// refund, fails the collateral check, and the episode is not done.
func TestTasks_WebSocketCollateralDamage(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	c := s.dial(t)
	defer c.Close(websocket.StatusNormalClosure, "")
	roundTrip(t, c, `{"type":"reset","data":{"task":"refund_eu_charge"}}`)
	id := inspectValue(t, c, "SELECT id FROM payments_eu.charges")
	callTool(t, c, "chat_send_message", `{"channel":"general","text":"refunding"}`)
	reply := callTool(t, c, "eu_refund_charge", fmt.Sprintf(`{"charge_id":%q}`, id))
	if reward, done := rewardOf(t, reply); reward == "1" || done {
		t.Fatalf("reward %s done %v, want below 1 and not done", reward, done)
	}
	for _, ch := range stateOf(t, c)["checks"].([]any) {
		m := ch.(map[string]any)
		if m["name"] == "no collateral damage" && (m["passed"] != false || !strings.Contains(m["detail"].(string), "chat.messages:insert")) {
			t.Errorf("collateral check %v", m)
		}
	}
}

// The task's allow list applies to list_tools and call_tool.
func TestTasks_WebSocketAllowList(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	c := s.dial(t)
	defer c.Close(websocket.StatusNormalClosure, "")
	roundTrip(t, c, `{"type":"reset","data":{"task":"invoice_750"}}`)
	reply := roundTrip(t, c, `{"type":"step","data":{"type":"list_tools"}}`)
	var names []string
	for _, tl := range field(t, reply, "data.observation.tools").([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	if strings.Join(names, " ") != "invoice list_staff pay_list_charges" {
		t.Fatalf("tools %v", names)
	}
	if reward, _ := rewardOf(t, reply); reward == "<nil>" {
		t.Errorf("a list_tools step of a task episode has no reward: %s", reply)
	}
	reply = callTool(t, c, "hire", `{"name":"Eve"}`)
	if kind := str(t, reply, "data.observation.error.error_type"); kind != "tool_not_found" {
		t.Fatalf("hire: %s", reply)
	}
	if n := inspectValue(t, c, "SELECT count(*) FROM staff"); n != "3" {
		t.Fatalf("%s staff after a refused hire, want 3", n)
	}
}

// A task names its own fixture and seed; a reset may override them.
func TestTasks_ResetOptions(t *testing.T) {
	// No default fixture configured: without a task a reset starts from
	// the world's own default, acme.
	s := mustServeWorld(t, company.World, app.Config{}, openenv.Config{})
	c := s.dial(t)
	defer c.Close(websocket.StatusNormalClosure, "")
	tests := []struct {
		name    string // case
		reset   string // reset data
		fixture any    // the state's fixture id
		seed    any    // the state's seed
	}{
		{"NoTask", `{}`, "acme", float64(0)},
		{"TaskFixtureAndSeed", `{"task":"shop_order_1999"}`, "acme", float64(7)},
		{"ResetSeedWins", `{"task":"shop_order_1999","seed":11}`, "acme", float64(11)},
		{"EmptyTaskIsNone", `{"task":""}`, "acme", float64(0)},
		{"NullTaskIsNone", `{"task":null}`, "acme", float64(0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply := roundTrip(t, c, `{"type":"reset","data":`+tt.reset+`}`)
			if typ := str(t, reply, "type"); typ != "observation" {
				t.Fatalf("reset: %s", reply)
			}
			st := stateOf(t, c)
			var fixture any
			if f, ok := st["fixture"].(map[string]any); ok {
				fixture = f["id"]
			}
			if fixture != tt.fixture || st["seed"] != tt.seed {
				t.Fatalf("fixture %v seed %v, want %v and %v", fixture, st["seed"], tt.fixture, tt.seed)
			}
		})
	}
	t.Run("ErrUnknownTask", func(t *testing.T) {
		reply := roundTrip(t, c, `{"type":"reset","data":{"task":"nope"}}`)
		if str(t, reply, "data.code") != "VALIDATION_ERROR" || firstLoc(t, reply, "data.errors") != "[data task]" ||
			!strings.Contains(str(t, reply, "data.message"), `unknown task "nope" (tasks: hire_liskov, refund_cancelled_order, invoice_750,`) {
			t.Fatalf("reply %s", reply)
		}
	})
	t.Run("ErrTaskNotAString", func(t *testing.T) {
		reply := roundTrip(t, c, `{"type":"reset","data":{"task":3}}`)
		if str(t, reply, "data.code") != "VALIDATION_ERROR" {
			t.Fatalf("reply %s", reply)
		}
	})
}

func TestTasks_List(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	status, body, _ := s.httpDo(t, http.MethodGet, "/tasks", "", nil)
	if status != http.StatusOK {
		t.Fatalf("GET /tasks: %d %s", status, body)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	want, err := task.ForWorld(company.World)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(want) {
		t.Fatalf("%d tasks listed, want %d", len(list), len(want))
	}
	for i, tk := range want {
		got := list[i]
		if got["id"] != tk.ID || got["instruction"] != tk.Instruction || got["fixture"] != tk.Fixture || got["difficulty"] != tk.Difficulty || len(got) != 4 {
			t.Errorf("task %d: %v, want %s", i, got, tk.ID)
		}
	}
	// Infrastructure only: the agent listener does not serve it.
	rec := httptest.NewRecorder()
	s.AgentHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/tasks", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("agent listener GET /tasks: %d, want 404", rec.Code)
	}
}

// With a record directory, every episode is written as a trajectory that
// replays to the same state and reward.
func TestTasks_Record(t *testing.T) {
	dir := t.TempDir()
	s := mustServeWorld(t, company.World, app.Config{DefaultFixture: company.AcmeID, RecordDir: dir}, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"task":"invoice_750","episode_id":"rec-1","seed":3}}`)
	callTool(t, c, "hire", `{"name":"Eve"}`) // refused: recorded too
	callTool(t, c, "invoice", `{"amount":750}`)
	roundTrip(t, c, `{"type":"reset","data":{"episode_id":"rec-2"}}`)
	callTool(t, c, "hire", `{"name":"Eve"}`)
	c.Close(websocket.StatusNormalClosure, "")
	s.settle(t)

	tasks, err := task.ForWorld(company.World)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file   string  // the episode id, which names its trajectory file
		task   string  // its task
		calls  int     // its calls
		reward float64 // the replay's reward; -1 without a task
	}{
		{"rec-1", "invoice_750", 2, 1},
		{"rec-2", "", 1, -1},
	} {
		// One file per episode, <episode_id>.<start>.<random>.jsonl.
		files, err := filepath.Glob(filepath.Join(dir, tc.file+".*.jsonl"))
		if err != nil || len(files) != 1 {
			t.Fatalf("episode %s recorded as %q (%v), want one file", tc.file, files, err)
		}
		tr, err := task.ReadTrajectoryFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		if tr.Header.Task != tc.task || len(tr.Calls) != tc.calls || tr.End == nil {
			t.Fatalf("%s: header %+v, %d calls, end %v", tc.file, tr.Header, len(tr.Calls), tr.End)
		}
		rep, err := task.ReplayTrajectory(context.Background(), company.World, tasks, tr, composition.Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Mismatches) != 0 {
			t.Fatalf("%s: replay differs: %q", tc.file, rep.Mismatches)
		}
		if tc.reward >= 0 && (rep.Result == nil || rep.Result.Reward != tc.reward) {
			t.Fatalf("%s: replay result %+v", tc.file, rep.Result)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("%d files recorded, want 2", len(ents))
	}
}

// done latches: once a step's grading says done, the episode is over on
// every transport; a later step is refused and says how to start a new
// episode (to reset, or on POST /mcp to start a new session), and a reset
// starts a new episode.
func TestTasks_DoneLatches(t *testing.T) {
	const over = "The episode is over: its task graded it done after 2 tool calls. Reset to start a new episode."
	solve := func(t *testing.T, call func(tool, args string) string, lookup func(sql string) string) {
		t.Helper()
		call("eu_list_charges", `{}`)
		call("eu_refund_charge", fmt.Sprintf(`{"charge_id":%q}`, lookup("SELECT id FROM payments_eu.charges")))
	}

	t.Run("WebSocket", func(t *testing.T) {
		s := mustServeCompany(t, openenv.Config{})
		c := s.dial(t)
		defer c.Close(websocket.StatusNormalClosure, "")
		roundTrip(t, c, `{"type":"reset","data":{"task":"refund_eu_charge"}}`)
		var last string
		solve(t, func(tool, args string) string { last = callTool(t, c, tool, args); return last },
			func(sql string) string { return inspectValue(t, c, sql) })
		if reward, done := rewardOf(t, last); reward != "1" || !done {
			t.Fatalf("solved: reward %s done %v", reward, done)
		}
		for _, msg := range []string{
			`{"type":"step","data":{"type":"call_tool","tool_name":"chat_send_message","arguments":{"channel":"general","text":"done"}}}`,
			`{"type":"step","data":{"type":"list_tools"}}`,
			`{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"eu_list_charges","arguments":{}}}}`,
		} {
			reply := roundTrip(t, c, msg)
			if strings.Contains(msg, `"mcp"`) {
				if got := fmt.Sprint(field(t, reply, "data.error.message")); got != over {
					t.Errorf("%s: %s", msg, reply)
				}
				continue
			}
			if str(t, reply, "type") != "error" || str(t, reply, "data.code") != "SESSION_ERROR" || str(t, reply, "data.message") != over {
				t.Errorf("%s after done: %s", msg, reply)
			}
		}
		// Nothing was written after done; state and inspect still answer.
		if n := inspectValue(t, c, "SELECT count(*) FROM chat.messages WHERE body = 'done'"); n != "0" {
			t.Errorf("a refused step wrote: %s", n)
		}
		if st := stateOf(t, c); st["step_count"] != float64(2) {
			t.Errorf("step_count %v, want 2", st["step_count"])
		}
		// A restore of the finished episode says it is done, with its reward,
		// rather than invite a step that would be refused.
		ck := roundTrip(t, c, `{"type":"checkpoint"}`)
		restored := roundTrip(t, s.dial(t), fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q}}`, str(t, ck, "data.checkpoint_id")))
		if reward, done := rewardOf(t, restored); reward != "1" || !done {
			t.Errorf("restore of the finished episode: %s, want done with reward 1", restored)
		}
		// A reset starts over.
		roundTrip(t, c, `{"type":"reset","data":{"task":"refund_eu_charge"}}`)
		if reward, done := rewardOf(t, callTool(t, c, "eu_list_charges", `{}`)); done || reward == "1" {
			t.Errorf("after a reset: reward %s done %v", reward, done)
		}
	})

	t.Run("HTTP", func(t *testing.T) {
		s := mustServeCompany(t, openenv.Config{})
		h := map[string]string{"X-Seahaven-Session": "latch-1"}
		if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{"task":"refund_eu_charge"}`, h); status != http.StatusOK {
			t.Fatalf("reset: %d %s", status, body)
		}
		var last string
		step := func(tool, args string) string {
			status, body, _ := s.httpDo(t, http.MethodPost, "/step", fmt.Sprintf(`{"action":{"type":"call_tool","tool_name":%q,"arguments":%s}}`, tool, args), h)
			if status != http.StatusOK {
				t.Fatalf("step %s: %d %s", tool, status, body)
			}
			last = body
			return body
		}
		lookup := func(sql string) string {
			_, body, _ := s.httpDo(t, http.MethodPost, "/inspect", fmt.Sprintf(`{"sql":%q}`, sql), h)
			rows, ok := field(t, body, "rows").([]any)
			if !ok || len(rows) != 1 {
				t.Fatalf("%s: %s", sql, body)
			}
			return fmt.Sprint(rows[0].([]any)[0])
		}
		solve(t, step, lookup)
		if field(t, last, "done") != true {
			t.Fatalf("solved: %s", last)
		}
		status, body, _ := s.httpDo(t, http.MethodPost, "/step", `{"action":{"type":"list_tools"}}`, h)
		if status != http.StatusConflict || fmt.Sprint(field(t, body, "detail")) != over || fmt.Sprint(field(t, body, "code")) != "SESSION_ERROR" {
			t.Errorf("a step after done: %d %s", status, body)
		}
	})

	// An MCP client cannot reset: it is told to start a new session, and
	// the trainer, which can, how to reset this one. It was told to reset.
	const overMCP = "The episode is over: its task graded it done after 2 tool calls. "
	for _, tc := range []struct {
		name       string // case
		production bool   // the server has no HTTP episode routes
		std        bool   // a standard client's session, else OpenEnv's dialect
		want       string // the refusal of a call after done
	}{
		{"MCPStandard", false, true, overMCP + "Initialize a new session (without Mcp-Session-Id) at this /mcp URL to start a new episode; a trainer may reset this one: POST /reset with its id in X-Seahaven-Session."},
		{"MCPOpenEnv", false, false, overMCP + "Create a new session (openenv/session/create) to start a new episode; a trainer may reset this one: POST /reset with its id in X-Seahaven-Session."},
		{"MCPStandardProduction", true, true, overMCP + "Initialize a new session (without Mcp-Session-Id) at this /mcp URL to start a new episode."},
		{"MCPOpenEnvProduction", true, false, overMCP + "Create a new session (openenv/session/create) to start a new episode."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustServeCompany(t, openenv.Config{Production: tc.production})
			var sid string
			header := map[string]string{}
			if tc.std {
				_, _, resp := s.httpDo(t, http.MethodPost, "/mcp?task=refund_eu_charge", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, nil)
				sid = resp.Header.Get(openenv.MCPSessionHeader)
				header[openenv.MCPSessionHeader] = sid
			} else {
				sid = str(t, s.rpc(t, `{"jsonrpc":"2.0","id":0,"method":"openenv/session/create","params":{"task":"refund_eu_charge"}}`), "result.session_id")
			}
			if sid == "" {
				t.Fatal("no session started")
			}
			call := func(tool, args string) string {
				t.Helper()
				status, body, _ := s.httpDo(t, http.MethodPost, "/mcp?task=refund_eu_charge", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s,"session_id":%q}}`, tool, args, sid), header)
				if status != http.StatusOK {
					t.Fatalf("tools/call %s: %d %s", tool, status, body)
				}
				return body
			}
			list := call("eu_list_charges", `{}`)
			charges, _ := field(t, list, "result.structuredContent.result").([]any)
			if len(charges) != 1 {
				t.Fatalf("charges listed: %s", list)
			}
			call("eu_refund_charge", fmt.Sprintf(`{"charge_id":%q}`, charges[0].(map[string]any)["id"]))
			if g := s.rpc(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"seahaven/grade","params":{"session_id":%q}}`, sid)); field(t, g, "result.done") != true {
				t.Fatalf("seahaven/grade: %s", g)
			}
			reply := call("eu_list_charges", `{}`)
			if fmt.Sprint(field(t, reply, "error.code")) != "-32000" || fmt.Sprint(field(t, reply, "error.message")) != tc.want {
				t.Fatalf("a call after done: %s\nwant the message %q", reply, tc.want)
			}
			if tc.production {
				return
			}
			// The trainer resets the session as the message says.
			if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{"task":"refund_eu_charge"}`, map[string]string{"X-Seahaven-Session": sid}); status != http.StatusOK {
				t.Fatalf("POST /reset of the MCP session: %d %s", status, body)
			}
			if reply := call("eu_list_charges", `{}`); !strings.HasPrefix(reply, `{"jsonrpc":"2.0","id":1,"result":`) {
				t.Errorf("a call after the reset: %s", reply)
			}
		})
	}
}

// A grade request answers the task's grading now, with every check, on
// /ws, POST /grade and JSON-RPC seahaven/grade; it is not a step, it
// latches done like one, and the agent listener does not serve it.
func TestTasks_GradeRequest(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	c := s.dial(t)
	defer c.Close(websocket.StatusNormalClosure, "")

	// No task: nothing to grade.
	roundTrip(t, c, `{"type":"reset","data":{}}`)
	reply := roundTrip(t, c, `{"type":"grade"}`)
	if str(t, reply, "type") != "error" || !strings.HasPrefix(str(t, reply, "data.message"), "The episode runs no task, so there is nothing to grade") {
		t.Fatalf("grade without a task: %s", reply)
	}

	roundTrip(t, c, `{"type":"reset","data":{"task":"refund_eu_charge"}}`)
	reply = roundTrip(t, c, `{"type":"grade"}`)
	// Idle, it says so: the reward is 0 whatever the checks found.
	if str(t, reply, "type") != "grade" || fmt.Sprint(field(t, reply, "data.reward")) != "0" || field(t, reply, "data.done") != false || field(t, reply, "data.idle") != true {
		t.Fatalf("grade of an idle episode: %s, want reward 0, not done, idle", reply)
	}
	if checks := field(t, reply, "data.checks").([]any); len(checks) != 2 {
		t.Fatalf("checks: %s", reply)
	}
	if reply := roundTrip(t, c, `{"type":"grade","data":{}}`); str(t, reply, "data.code") != "VALIDATION_ERROR" {
		t.Errorf("grade with data: %s", reply)
	}
	id := inspectValue(t, c, "SELECT id FROM payments_eu.charges")
	// The refund through MCP (not graded as a step), then the grade request.
	send(t, c, fmt.Sprintf(`{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"eu_refund_charge","arguments":{"charge_id":%q}}}}`, id))
	recvRaw(t, c)
	reply = roundTrip(t, c, `{"type":"mcp","data":{"jsonrpc":"2.0","id":2,"method":"seahaven/grade"}}`)
	if fmt.Sprint(field(t, reply, "data.result.reward")) != "1" || field(t, reply, "data.result.done") != true || strings.Contains(reply, `"idle"`) {
		t.Fatalf("seahaven/grade after the refund: %s, want reward 1, done, no idle", reply)
	}
	if st := stateOf(t, c); st["step_count"] != float64(1) {
		t.Errorf("grade requests counted as steps: step_count %v", st["step_count"])
	}
	// done latched.
	if reply := roundTrip(t, c, `{"type":"step","data":{"type":"list_tools"}}`); str(t, reply, "data.code") != "SESSION_ERROR" {
		t.Errorf("a step after a grade said done: %s", reply)
	}

	// HTTP and POST /mcp name the session.
	h := map[string]string{"X-Seahaven-Session": "grade-1"}
	if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{"task":"invoice_750"}`, h); status != http.StatusOK {
		t.Fatalf("reset: %d %s", status, body)
	}
	status, body, _ := s.httpDo(t, http.MethodPost, "/grade", "", h)
	if status != http.StatusOK || fmt.Sprint(field(t, body, "reward")) != "0" || len(field(t, body, "checks").([]any)) != 3 {
		t.Fatalf("POST /grade: %d %s", status, body)
	}
	if err := schematest.Validate("grading", []byte(body)); err != nil {
		t.Errorf("POST /grade: %v", err)
	}
	if status, body, _ := s.httpDo(t, http.MethodPost, "/grade", `{"x":1}`, h); status != http.StatusUnprocessableEntity {
		t.Errorf("POST /grade with a body: %d %s", status, body)
	}
	rpc := s.rpc(t, `{"jsonrpc":"2.0","id":3,"method":"seahaven/grade","params":{"session_id":"grade-1"}}`)
	if field(t, rpc, "result.done") != false {
		t.Errorf("seahaven/grade: %s", rpc)
	}
	rpc = s.rpc(t, `{"jsonrpc":"2.0","id":4,"method":"seahaven/grade"}`)
	if fmt.Sprint(field(t, rpc, "error.code")) != "-32602" {
		t.Errorf("seahaven/grade without a session_id: %s", rpc)
	}

	// The agent listener has no grade request.
	agentRefuses(t, s.testServer, "seahaven/grade", "/grade", "grade-1")
}

// /metrics counts episodes by task: started, finished, their reward and
// steps when they end, and steps refused after done.
func TestTasks_Metrics(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	c := s.dial(t)
	defer c.Close(websocket.StatusNormalClosure, "")
	before := s.scrape(t)
	if got := before.value(t, "seahaven_build_info", "version", "devel", "world", "company", "world_version", "0.1.0"); got != 1 {
		t.Errorf("build_info = %v", got)
	}
	roundTrip(t, c, `{"type":"reset","data":{"task":"refund_eu_charge"}}`)
	id := inspectValue(t, c, "SELECT id FROM payments_eu.charges")
	callTool(t, c, "eu_refund_charge", fmt.Sprintf(`{"charge_id":%q}`, id))
	roundTrip(t, c, `{"type":"step","data":{"type":"list_tools"}}`) // refused: done
	roundTrip(t, c, `{"type":"reset","data":{}}`)                   // an episode without a task
	callTool(t, c, "hire", `{"name":"Eve"}`)
	roundTrip(t, c, `{"type":"reset","data":{}}`)

	after := s.scrape(t)
	for _, tc := range []struct {
		name string
		task string
		want float64 // the increase
	}{
		{"seahaven_episodes_started_total", "refund_eu_charge", 1},
		{"seahaven_episodes_finished_total", "refund_eu_charge", 1},
		{"seahaven_steps_refused_after_done_total", "refund_eu_charge", 1},
		{"seahaven_grading_failures_total", "refund_eu_charge", 0},
		{"seahaven_episodes_started_total", "none", 2},
		{"seahaven_episodes_finished_total", "none", 0},
	} {
		if d := after.value(t, tc.name, "task", tc.task) - before.value(t, tc.name, "task", tc.task); d != tc.want {
			t.Errorf("%s{task=%q} rose by %v, want %v", tc.name, tc.task, d, tc.want)
		}
	}
	// Histograms: one ended task episode (reward 1, 1 step), one ended
	// episode without a task (1 step, no reward).
	if n := after.value(t, "seahaven_episode_reward", "task", "refund_eu_charge"); n != 1 {
		t.Errorf("reward samples %v, want 1", n)
	}
	if n := after.value(t, "seahaven_episode_steps", "task", "none"); n != 1 {
		t.Errorf("steps samples for task none %v, want 1", n)
	}
	h := after["seahaven_episode_reward"].GetMetric()[0].GetHistogram()
	if h.GetSampleSum() != 1 {
		t.Errorf("reward sum %v, want 1", h.GetSampleSum())
	}
}

// An idle episode (no change to any store) scores 0 on every example task,
// graded on each transport: a /ws grade message, POST /grade, and
// seahaven/grade in a standard MCP session that a tools/list did not change.
// In production mode the trainer still grades, over /ws and /mcp.
func TestTasks_IdleEpisodeScoresZero(t *testing.T) {
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, production := range []bool{false, true} {
		t.Run(fmt.Sprintf("production=%v", production), func(t *testing.T) {
			s := mustServeCompany(t, openenv.Config{Production: production})
			_, body, _ := s.httpDo(t, http.MethodGet, "/tasks", "", nil)
			var tasks []struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal([]byte(body), &tasks); err != nil || len(tasks) == 0 {
				t.Fatalf("GET /tasks: %s (%v)", body, err)
			}
			c := s.dial(t)
			defer c.Close(websocket.StatusNormalClosure, "")
			idle := func(how, reward string, done any) {
				t.Helper()
				if reward != "0" || done != false {
					t.Errorf("%s: idle episode graded reward %s done %v, want 0 and false", how, reward, done)
				}
			}
			for _, task := range tasks {
				roundTrip(t, c, fmt.Sprintf(`{"type":"reset","data":{"task":%q}}`, task.ID))
				reply := roundTrip(t, c, `{"type":"grade"}`)
				idle(task.ID+" on /ws", fmt.Sprint(field(t, reply, "data.reward")), field(t, reply, "data.done"))

				if !production {
					h := map[string]string{openenv.SessionHeader: "idle-" + task.ID}
					if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", fmt.Sprintf(`{"task":%q}`, task.ID), h); status != http.StatusOK {
						t.Fatalf("POST /reset: %d %s", status, body)
					}
					status, body, _ := s.httpDo(t, http.MethodPost, "/grade", "", h)
					if status != http.StatusOK {
						t.Fatalf("POST /grade: %d %s", status, body)
					}
					idle(task.ID+" on POST /grade", fmt.Sprint(field(t, body, "reward")), field(t, body, "done"))
				}

				status, body, resp := s.httpDo(t, http.MethodPost, "/mcp?task="+task.ID, initialize, nil)
				sid := resp.Header.Get(openenv.MCPSessionHeader)
				if status != http.StatusOK || sid == "" {
					t.Fatalf("initialize with task %s: %d %s", task.ID, status, body)
				}
				h := map[string]string{openenv.MCPSessionHeader: sid}
				if status, body, _ := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, h); status != http.StatusOK {
					t.Fatalf("tools/list: %d %s", status, body)
				}
				_, body, _ = s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":3,"method":"seahaven/grade"}`, h)
				idle(task.ID+" on /mcp", fmt.Sprint(field(t, body, "result.reward")), field(t, body, "result.done"))
				s.httpDo(t, http.MethodDelete, "/mcp", "", h)
			}
		})
	}
}

// A task graded done by a list_tools step, before any tool call, says it
// was done after 0 tool calls, where it said "after step 0", though the
// step that ended it was the first.
func TestTasks_DoneBeforeAnyCall(t *testing.T) {
	w := redefinedWorld(env.Check{Name: "none", SQL: "SELECT count(*) = 0 FROM entries"})
	w.AddTask(env.Task{ID: "idle", Instruction: "Do nothing.", NoChangeCorrect: true, Checks: []env.Check{{Name: "none", SQL: "SELECT count(*) = 0 FROM entries"}}})
	s := mustServeWorld(t, w, app.Config{}, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"task":"idle"}}`)
	if reply := roundTrip(t, c, `{"type":"step","data":{"type":"list_tools"}}`); !strings.Contains(reply, `"done":true`) {
		t.Fatalf("the list_tools step: %s, want it graded done", reply)
	}
	const want = "The episode is over: its task graded it done after 0 tool calls. Reset to start a new episode."
	if reply := roundTrip(t, c, `{"type":"step","data":{"type":"list_tools"}}`); str(t, reply, "data.message") != want {
		t.Errorf("the step after done: %s, want %q", reply, want)
	}
}
