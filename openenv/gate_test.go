package openenv_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/openenv"
)

func TestWorldBackend_MaxActive(t *testing.T) {
	backend, err := app.New(faultyWorld, app.Config{InstanceRoot: t.TempDir(), Checkpoints: t.TempDir(), MaxActive: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	ctx := context.Background()
	inst, err := backend.Open(ctx, openenv.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	graded, err := backend.Open(ctx, openenv.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer graded.Close()

	// One slow call takes the only slot until it is cancelled.
	callCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := inst.CallJSON(callCtx, "slow", []byte(`{"body":"holds the slot","ms":60000}`))
		done <- err
	}()
	expired, stop := context.WithCancel(ctx)
	stop()
	waitFor(t, "the slow call to hold the slot", func() bool {
		// With the slot free, Open gets in and fails on its done context
		// inside the engine; with the slot taken, it gives up waiting.
		other, err := backend.Open(expired, openenv.OpenOptions{})
		if err == nil {
			other.Close()
		}
		return errors.Is(err, context.Canceled) && strings.Contains(err.Error(), "waited for one of 1 engine slots")
	})
	// A call that waits for the slot until its context ends ran nothing:
	// it is no step, cancelled or past its deadline.
	late, stopLate := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer stopLate()
	for _, tt := range []struct {
		ctx  context.Context
		kind string
		msg  string
	}{
		{expired, env.KindExecution, "the call was cancelled while it waited for one of the server's 1 engine slots (max-active); nothing ran"},
		{late, env.KindTimeout, "the call waited past its deadline for one of the server's 1 engine slots (max-active); nothing ran"},
	} {
		_, err := graded.CallJSON(tt.ctx, "note", []byte(`{"body":"waits"}`))
		te, ok := env.AsToolError(err)
		if !ok || te.Kind != tt.kind || te.Message != tt.msg || !errors.Is(err, env.ErrNoStep) || !errors.Is(err, tt.ctx.Err()) {
			t.Errorf("a call that waited for the slot until %v: %#v, want an error of kind %s, %q, that is no step", tt.ctx.Err(), err, tt.kind, tt.msg)
		}
	}
	// Inspect queries have slots of their own: the call does not hold them up.
	qctx, qcancel := context.WithTimeout(ctx, waitLimit)
	defer qcancel()
	if _, err := graded.Inspect(qctx, "SELECT 1", nil, openenv.InspectLimit{}); err != nil {
		t.Errorf("Inspect while the engine slot is taken: %v", err)
	}

	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the cancelled slow call succeeded")
		}
	case <-time.After(waitLimit):
		t.Fatal("the slow call did not end when cancelled")
	}
	other, err := backend.Open(ctx, openenv.OpenOptions{})
	if err != nil {
		t.Fatalf("Open after the slot is free: %v", err)
	}
	other.Close()
}

func TestWorldBackend_MaxInspect(t *testing.T) {
	backend, err := app.New(faultyWorld, app.Config{InstanceRoot: t.TempDir(), Checkpoints: t.TempDir(), MaxActive: 1, MaxInspect: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	ctx := context.Background()
	open := func() openenv.Instance {
		t.Helper()
		inst, err := backend.Open(ctx, openenv.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { inst.Close() })
		return inst
	}
	looping, other, caller := open(), open(), open()

	// A query that runs until cancelled takes the only inspect slot.
	qctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := looping.Inspect(qctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c`, nil, openenv.InspectLimit{})
		done <- err
	}()
	expired, stop := context.WithCancel(ctx)
	stop()
	waitFor(t, "the looping query to hold the inspect slot", func() bool {
		_, err := other.Inspect(expired, "SELECT 1", nil, openenv.InspectLimit{})
		return errors.Is(err, context.Canceled) && strings.Contains(err.Error(), "waited for one of 1 engine slots")
	})
	// A tool call does not wait for it.
	cctx, ccancel := context.WithTimeout(ctx, waitLimit)
	defer ccancel()
	if _, err := caller.CallJSON(cctx, "slow", []byte(`{"body":"quick","ms":1}`)); err != nil {
		t.Errorf("a call while the inspect slot is taken: %v", err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatal("the looping query did not end when cancelled")
	}
}

func TestDefaultMaxInspect(t *testing.T) {
	for _, tt := range []struct {
		active, want int // MaxActive, and its DefaultMaxInspect
	}{
		{0, app.DefaultMaxActive / 4},
		{64, 16},
		{7, 1},
		{1, 1},
		{-1, -1},
	} {
		if got := app.DefaultMaxInspect(tt.active); got != tt.want {
			t.Errorf("DefaultMaxInspect(%d) = %d, want %d", tt.active, got, tt.want)
		}
	}
}

// A call that waits for an engine slot (--max-active) until its client
// cancels it (notifications/cancelled on POST /mcp) ran nothing: it is no
// step of the episode, as a call cancelled before it changed anything is,
// and the session's next call is its first step.
func TestMCP_CancelledWaitingForEngineSlot(t *testing.T) {
	s := mustServeWorld(t, faultyWorld, app.Config{MaxActive: 1}, openenv.Config{StepTimeout: time.Hour})
	hdrA, postA := standardSession(t, s.testServer)
	hdrB, postB := standardSession(t, s.testServer)
	started := slowStarts("holds the slot")
	held := postA(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"body":"holds the slot","ms":60000}}}`)
	awaitSlow(t, started)
	waiting := postB(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"note","arguments":{"body":"waits"}}}`)
	// A cancellation sent before the call is under way is ignored: send it
	// until the call's reply comes.
	var r mcpReply
	deadline := time.Now().Add(waitLimit)
	for r.code == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the cancelled call did not end")
		}
		if code, body, _ := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`, hdrB); code != http.StatusAccepted {
			t.Fatalf("notifications/cancelled: %d %s", code, body)
		}
		select {
		case r = <-waiting:
		case <-time.After(5 * time.Millisecond):
		}
	}
	var reply struct{ Error *struct{ Message string } }
	if r.err != nil || r.code != http.StatusOK || json.Unmarshal([]byte(r.body), &reply) != nil || reply.Error == nil {
		t.Errorf("the call cancelled while it waited for an engine slot: %d %s %v, want the error of a call that is no step", r.code, r.body, r.err)
	}
	steps := func(hdr map[string]string) int {
		t.Helper()
		for _, si := range s.Sessions() {
			if si.ID == hdr[openenv.MCPSessionHeader] {
				return si.StepCount
			}
		}
		t.Fatalf("session %s is gone", hdr[openenv.MCPSessionHeader])
		return 0
	}
	if n := steps(hdrB); n != 0 {
		t.Errorf("after a call cancelled while it waited for an engine slot, the session has %d steps, want 0", n)
	}
	// The slot freed, the session's next call runs as its first step.
	if code, body, _ := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, hdrA); code != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: %d %s", code, body)
	}
	<-held
	r = <-postB(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"note","arguments":{"body":"runs"}}}`)
	if r.code != http.StatusOK || field(t, r.body, "result.isError") != false {
		t.Fatalf("the next call: %d %s %v", r.code, r.body, r.err)
	}
	if n := steps(hdrB); n != 1 {
		t.Errorf("after the next call, the session has %d steps, want 1", n)
	}
	_, state, _ := s.httpDo(t, http.MethodGet, "/state", "", map[string]string{"X-Seahaven-Session": hdrB[openenv.MCPSessionHeader]})
	var doc struct {
		StepCount int                  `json:"step_count"`
		ChangeLog []struct{ Call int } `json:"change_log"`
	}
	if err := json.Unmarshal([]byte(state), &doc); err != nil || doc.StepCount != 1 || len(doc.ChangeLog) != 1 || doc.ChangeLog[0].Call != 1 {
		t.Errorf("state %s, want step 1, and the next call's note alone in the change log, as call 1 (%v)", state, err)
	}
}

// Agents' work holds at most three quarters of the engine slots
// (--max-active), so the main listener always has the rest: with 4, three
// agent calls held in a tool take the agents' 3, a fourth waits for one of
// them, and a trainer's reset and step run at once, where before the
// fourth took the last slot and the trainer waited behind the agents.
func TestServer_AgentEngineShare(t *testing.T) {
	s := mustServeWorld(t, faultyWorld, app.Config{MaxActive: 4}, openenv.Config{StepTimeout: time.Hour})
	agentTS := httptest.NewServer(s.AgentHandler())
	t.Cleanup(agentTS.Close)
	agent := &testServer{Server: s.Server, ts: agentTS}
	type call struct {
		post  func(string) <-chan mcpReply
		reply <-chan mcpReply
	}
	var calls [4]call
	for i := range calls {
		// Each session's instance is opened first, while slots are free.
		_, calls[i].post = standardSession(t, agent)
	}
	held := func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"held","arguments":{"body":"agent %d"}}}`, i)
	}
	var releases [4]func()
	for i := range 3 {
		started, release := holdUntilReleased(fmt.Sprintf("agent %d", i))
		defer release()
		releases[i] = release
		calls[i].reply = calls[i].post(held(i))
		awaitSlow(t, started)
	}
	started, release := holdUntilReleased("agent 3")
	defer release()
	releases[3] = release
	calls[3].reply = calls[3].post(held(3))

	trainer := make(chan string, 1)
	go func() {
		h := map[string]string{openenv.SessionHeader: "trainer"}
		if code, body, _ := s.httpDo(t, "POST", "/reset", `{}`, h); code != http.StatusOK {
			trainer <- fmt.Sprintf("reset: %d %s", code, body)
			return
		}
		code, body, _ := s.httpDo(t, "POST", "/step", `{"action":{"type":"call_tool","tool_name":"note","arguments":{"body":"trainer"}}}`, h)
		trainer <- fmt.Sprintf("step: %d %s", code, body)
	}()
	select {
	case got := <-trainer:
		if !strings.HasPrefix(got, "step: 200") {
			t.Fatalf("the trainer's %s", got)
		}
	case <-time.After(waitLimit):
		t.Fatal("the trainer's reset and step waited behind the agents' calls")
	}

	// The fourth agent call waits for the agents' share, though a slot is
	// free, and runs once one of theirs is.
	select {
	case <-started:
		t.Fatal("a fourth agent call started while three held the agents' share")
	default:
	}
	releases[0]()
	awaitSlow(t, started)
	for i, c := range calls {
		if i > 0 {
			releases[i]()
		}
		if r := <-c.reply; r.code != http.StatusOK || strings.Contains(r.body, `"isError":true`) || strings.Contains(r.body, `"error"`) {
			t.Errorf("agent call %d: %d %s %v", i, r.code, r.body, r.err)
		}
	}
}

// The agents' share holds the work agents ask for, which comes only
// through the agent listener, not the work of the sessions they started:
// with the agents' 3 of 4 slots held by agent calls, a trainer's tool call
// on a fourth agent's session, sent through the main listener (as a
// trainer inspecting or finishing an agent's episode does), runs at once
// in the slot the main listener keeps. Held to the agents' share as the
// session's origin, it would wait behind the agents it is meant never to
// wait for. (The agent listener reaches no trainer's session at all:
// TestServer_AgentHandler/ReachesOnlyItsOwnSessions.)
func TestServer_AgentShareCountsTheListener(t *testing.T) {
	s := mustServeWorld(t, faultyWorld, app.Config{MaxActive: 4}, openenv.Config{StepTimeout: time.Hour})
	agentTS := httptest.NewServer(s.AgentHandler())
	t.Cleanup(agentTS.Close)
	agent := &testServer{Server: s.Server, ts: agentTS}
	// The fourth agent's session, its instance opened while slots are
	// free: its own next call would wait for the agents' share.
	hdr, _ := standardSession(t, agent)
	var replies [3]<-chan mcpReply
	var releases [3]func()
	for i := range replies {
		_, post := standardSession(t, agent)
		body := fmt.Sprintf("agent %d", i)
		started, release := holdUntilReleased(body)
		defer release()
		releases[i] = release
		replies[i] = post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"held","arguments":{"body":"` + body + `"}}}`)
		awaitSlow(t, started)
	}
	trainer := make(chan string, 1)
	go func() {
		code, body, _ := s.httpDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"note","arguments":{"body":"trainer"}}}`, hdr)
		trainer <- fmt.Sprintf("%d %s", code, body)
	}()
	// Held to the agents' share, the trainer's call would run only once an
	// agent call gave up (its client's waitLimit).
	select {
	case got := <-trainer:
		if !strings.HasPrefix(got, "200 ") || strings.Contains(got, `"isError":true`) || strings.Contains(got, `"error"`) {
			t.Fatalf("the trainer's call on the agent's session: %s", got)
		}
	case <-time.After(2 * waitLimit):
		t.Fatal("the trainer's call on an agent's session waited behind the agents' calls")
	}
	for i, reply := range replies {
		select {
		case r := <-reply:
			t.Fatalf("the trainer's call on an agent's session ran only once agent call %d ended (%d %s %v): it waited behind the agents' calls", i, r.code, r.body, r.err)
		default:
		}
	}
	for i, reply := range replies {
		releases[i]()
		if r := <-reply; r.code != http.StatusOK || strings.Contains(r.body, `"isError":true`) || strings.Contains(r.body, `"error"`) {
			t.Errorf("agent call %d: %d %s %v", i, r.code, r.body, r.err)
		}
	}
}

// agentCheckpoints records, for each checkpoint its instances take,
// whether it is the agent listener's work (openenv.FromAgentListener).
type agentCheckpoints struct {
	stallingCheckpoints
	agent chan bool
}

func (b agentCheckpoints) Open(ctx context.Context, opts openenv.OpenOptions) (openenv.Instance, error) {
	inst, err := b.fakeBackend.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	return agentCheckpointInstance{inst, b.agent}, nil
}

type agentCheckpointInstance struct {
	openenv.Instance
	agent chan bool
}

func (in agentCheckpointInstance) Checkpoint(ctx context.Context, req openenv.CheckpointRequest) (openenv.CheckpointInfo, error) {
	in.agent <- openenv.FromAgentListener(ctx)
	return openenv.CheckpointInfo{ID: "6f9619ff-8b86-d011-b42d-00c04fc964ff", Revision: req.Revision}, nil
}

// The periodic checkpoint an agent's call takes is the agent's work, held
// to the agents' share of the engine slots as the call is, where before it
// took a slot of the main listener's; a trainer's step's is not.
func TestServer_AgentCheckpointIsAgentWork(t *testing.T) {
	fake := newFake(t)
	b := agentCheckpoints{stallingCheckpoints{fake}, make(chan bool, 1)}
	s := mustServeOver(t, b, fake, openenv.Config{CheckpointEvery: 1})
	agent := httptest.NewServer(s.AgentHandler())
	t.Cleanup(agent.Close)
	_, body, _ := do(t, agent, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`, nil)
	id := str(t, body, "result.session_id")
	if _, body, _ := do(t, agent, "POST", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"session_id":"`+id+`","name":"echo","arguments":{"message":"x"}}}`, nil); strings.Contains(body, `"error"`) {
		t.Fatalf("the agent's call: %s", body)
	}
	agentWork := func() bool {
		t.Helper()
		select {
		case agent := <-b.agent:
			return agent
		case <-time.After(waitLimit):
			t.Fatal("no checkpoint was taken after the call")
			return false
		}
	}
	if !agentWork() {
		t.Error("the checkpoint after the agent's call is not the agent listener's work")
	}
	h := map[string]string{openenv.SessionHeader: "trainer"}
	s.httpDo(t, "POST", "/reset", `{}`, h)
	if code, body, _ := s.httpDo(t, "POST", "/step", `{"action":{"type":"call_tool","tool_name":"echo","arguments":{"message":"x"}}}`, h); code != http.StatusOK {
		t.Fatalf("the trainer's step: %d %s", code, body)
	}
	if agentWork() {
		t.Error("the checkpoint after the trainer's step is the agent listener's work")
	}
}

// inspectProbe is a Backend whose instances send on started as an inspect
// query reaches them, the session's call slot held, set ended once it
// returns, and set overlapped for a tool call that starts before that.
type inspectProbe struct {
	openenv.Backend
	started           chan struct{}
	ended, overlapped *atomic.Bool
}

func (b inspectProbe) Open(ctx context.Context, opts openenv.OpenOptions) (openenv.Instance, error) {
	inst, err := b.Backend.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	return inspectProbeInstance{inst, b}, nil
}

type inspectProbeInstance struct {
	openenv.Instance
	b inspectProbe
}

func (in inspectProbeInstance) Inspect(ctx context.Context, sql string, args []any, lim openenv.InspectLimit) (openenv.InspectRows, error) {
	select {
	case in.b.started <- struct{}{}:
	default:
	}
	defer in.b.ended.Store(true)
	return in.Instance.Inspect(ctx, sql, args, lim)
}

func (in inspectProbeInstance) CallJSON(ctx context.Context, name string, args json.RawMessage) (any, error) {
	if !in.b.ended.Load() {
		in.b.overlapped.Store(true)
	}
	return in.Instance.CallJSON(ctx, name, args)
}

// A step waits for the inspect query in progress on its session (the
// query reads the stores between calls, and the stores hold their files'
// locks while a call runs), but no longer than the query's inspect
// timeout: here a query that would count forever is cut at its timeout,
// and the step that waited for it then runs, as the session's first step.
func TestServer_StepWaitsForInspectAtMostItsTimeout(t *testing.T) {
	backend, err := app.New(faultyWorld, app.Config{InstanceRoot: t.TempDir(), Checkpoints: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	b := inspectProbe{backend, make(chan struct{}, 1), new(atomic.Bool), new(atomic.Bool)}
	srv := openenv.NewServer(b, openenv.Config{StepTimeout: time.Hour, InspectTimeout: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	s := &testServer{Server: srv, ts: httptest.NewServer(srv.Handler())}
	t.Cleanup(func() {
		// Shutdown first: it ends a query still running, which would hold
		// the listener's Close.
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		s.ts.Close()
		if err := backend.Close(); err != nil {
			t.Errorf("backend Close: %v", err)
		}
	})
	h := map[string]string{openenv.SessionHeader: "graded"}
	if code, body, _ := s.httpDo(t, "POST", "/reset", `{}`, h); code != http.StatusOK {
		t.Fatalf("reset: %d %s", code, body)
	}
	inspected := make(chan string, 1)
	go func() {
		code, body, _ := s.httpDo(t, "POST", "/inspect", `{"sql":"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"}`, h)
		inspected <- fmt.Sprintf("%d %s", code, body)
	}()
	select {
	case <-b.started:
	case <-time.After(waitLimit):
		t.Fatal("the inspect query did not start")
	}
	stepped := make(chan string, 1)
	go func() {
		code, body, _ := s.httpDo(t, "POST", "/step", `{"action":{"type":"call_tool","tool_name":"note","arguments":{"body":"after the query"}}}`, h)
		stepped <- fmt.Sprintf("%d %s", code, body)
	}()
	select {
	case got := <-stepped:
		if !strings.HasPrefix(got, "200 ") || !strings.Contains(got, `"is_error":false`) || !strings.Contains(got, `"error":null`) {
			t.Fatalf("the step that waited for the query: %s", got)
		}
	case <-time.After(waitLimit):
		t.Fatal("the step waited for the inspect query past its inspect timeout")
	}
	if got := <-inspected; !strings.Contains(got, "inspect timed out after 100ms") {
		t.Errorf("the endless query: %s, want it cut at its inspect timeout", got)
	}
	if b.overlapped.Load() {
		t.Error("the step's call ran beside the inspect query")
	}
	if code, state, _ := s.httpDo(t, "GET", "/state", "", h); code != http.StatusOK || field(t, state, "step_count") != json.Number("1") {
		t.Errorf("state after the step: %d %s, want step 1", code, state)
	}
}
