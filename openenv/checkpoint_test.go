package openenv_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/internal/testfs"
	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/schemas/schematest"
)

// TestCheckpoint_Transports takes checkpoints on every transport and
// restores them on others: /ws, POST /checkpoint with X-Seahaven-Session,
// and JSON-RPC seahaven/checkpoint; the agent listener has none. It covers
// the reset data a restore refuses, and the metrics.
func TestCheckpoint_Transports(t *testing.T) {
	s := mustServeWorld(t, company.World, app.Config{DefaultFixture: company.AcmeID, Checkpoints: t.TempDir()}, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"seed":3}}`)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Ada"},"request_id":"r-1"}}`)
	reply := roundTrip(t, c, `{"type":"checkpoint"}`)
	id := str(t, reply, "data.checkpoint_id")
	if str(t, reply, "type") != "checkpoint" || fmt.Sprint(field(t, reply, "data.revision")) != "1" || len(field(t, reply, "data.file_sha256").(map[string]any)) != 5 {
		t.Fatalf("checkpoint: %s", reply)
	}
	wsState := roundTrip(t, c, `{"type":"state"}`)

	// Restored over HTTP, the episode is the checkpointed one.
	h := map[string]string{"X-Seahaven-Session": "restored-1"}
	if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", fmt.Sprintf(`{"checkpoint":%q}`, id), h); status != http.StatusOK {
		t.Fatalf("restore: %d %s", status, body)
	}
	_, state, _ := s.httpDo(t, http.MethodGet, "/state", "", h)
	if field(t, state, "episode_id") != field(t, wsState, "data.episode_id") || fmt.Sprint(field(t, state, "step_count")) != "1" {
		t.Fatalf("restored state %s\nwant the state of %s", state, wsState)
	}
	status, body, _ := s.httpDo(t, http.MethodPost, "/checkpoint", "", h)
	if status != http.StatusOK || fmt.Sprint(field(t, body, "revision")) != "1" {
		t.Fatalf("POST /checkpoint: %d %s", status, body)
	}
	if err := schematest.Validate("checkpoint", []byte(body)); err != nil {
		t.Errorf("POST /checkpoint: %v", err)
	}
	if status, body, _ := s.httpDo(t, http.MethodPost, "/checkpoint", `{"x":1}`, h); status != http.StatusUnprocessableEntity {
		t.Errorf("POST /checkpoint with a body: %d %s", status, body)
	}
	rpc := s.rpc(t, `{"jsonrpc":"2.0","id":3,"method":"seahaven/checkpoint","params":{"session_id":"restored-1"}}`)
	if field(t, rpc, "result.episode_id") != field(t, wsState, "data.episode_id") {
		t.Errorf("seahaven/checkpoint: %s", rpc)
	}

	// What a restore refuses.
	for _, tc := range []struct{ data, code, msg string }{
		{fmt.Sprintf(`{"checkpoint":%q,"seed":4,"task":"hire_liskov"}`, id), "VALIDATION_ERROR", "seed cannot be given with checkpoint"},
		{`{"replaces":"6f9619ff-8b86-d011-b42d-00c04fc964ff"}`, "VALIDATION_ERROR", "it needs checkpoint"},
		{`{"checkpoint":"nope"}`, "VALIDATION_ERROR", `checkpoint \"nope\" is not a checkpoint id`},
		{`{"checkpoint":"6f9619ff-8b86-d011-b42d-00c04fc964ff"}`, "VALIDATION_ERROR", "does not exist in this server's checkpoint store"},
		{fmt.Sprintf(`{"checkpoint":%q,"replaces":"attempt-1"}`, id), "VALIDATION_ERROR", "is not an attempt id"},
	} {
		r := roundTrip(t, c, `{"type":"reset","data":`+tc.data+`}`)
		if str(t, r, "data.code") != tc.code || !strings.Contains(r, tc.msg) {
			t.Errorf("reset %s: %s\nwant %s with %q", tc.data, r, tc.code, tc.msg)
		}
	}
	// A refused restore leaves the episode as it was.
	if got := roundTrip(t, c, `{"type":"state"}`); got != wsState {
		t.Errorf("a refused restore changed the episode:\n%s\n%s", wsState, got)
	}

	// A retried request_id after a restore is answered from the checkpoint.
	r1 := roundTrip(t, c, fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q}}`, id))
	if !strings.Contains(r1, `"observation"`) {
		t.Fatal(r1)
	}
	again := roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Ada"},"request_id":"r-1"}}`)
	if !strings.Contains(again, `Ada`) || !strings.Contains(roundTrip(t, c, `{"type":"state"}`), `"step_count":1`) {
		t.Errorf("retried request_id after a restore: %s", again)
	}

	agentRefuses(t, s.testServer, "seahaven/checkpoint", "/checkpoint", "restored-1")
	agent := httptest.NewServer(s.AgentHandler())
	defer agent.Close()
	_, body, _ = do(t, agent, http.MethodPost, "/mcp", fmt.Sprintf(`{"jsonrpc":"2.0","id":6,"method":"openenv/session/create","params":{"checkpoint":%q}}`, id), nil)
	if !strings.Contains(body, "the agent listener does not serve them") {
		t.Errorf("agent listener restore: %s", body)
	}

	_, metrics, _ := s.httpDo(t, http.MethodGet, "/metrics", "", nil)
	for _, want := range []string{
		`seahaven_checkpoints_total{op="checkpoint",outcome="ok"} 3`,
		`seahaven_checkpoints_total{op="restore",outcome="ok"} 2`,
		`seahaven_checkpoints_total{op="restore",outcome="error"} 2`,
		`seahaven_checkpoint_duration_seconds_count{op="checkpoint"} 3`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// Two sessions hold an instance: the /ws one and restored-1. The
	// instances the restores replaced close in the background.
	deadline := time.Now().Add(5 * time.Second)
	for n := s.scrape(t).value(t, "seahaven_instances_open"); n != 2; n = s.scrape(t).value(t, "seahaven_instances_open") {
		if time.Now().After(deadline) {
			t.Fatalf("seahaven_instances_open = %v, want 2", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCheckpoint_DrainNeedsNoEngineSlot: a drain's checkpoint does not
// wait for an engine slot (--max-active), which another session's step
// holds: the idle session is checkpointed and closed with 1012 while the
// step runs, and its checkpoint restores its episode. Its checkpoint
// waited for the step, and ended without one when Shutdown's context did.
func TestCheckpoint_DrainNeedsNoEngineSlot(t *testing.T) {
	bcfg := app.Config{MaxActive: 1, Checkpoints: t.TempDir()}
	s := mustServeWorld(t, faultyWorld, bcfg, openenv.Config{StepTimeout: time.Hour, DrainCheckpoints: true})
	idle := s.dial(t)
	mustSucceed(t, callTool(t, idle, "note", `{"body":"idle"}`))
	busy := s.dial(t)
	started, release := holdUntilReleased("holds the engine slot")
	defer release()
	send(t, busy, `{"type":"step","data":{"type":"call_tool","tool_name":"held","arguments":{"body":"holds the engine slot"}}}`)
	awaitSlow(t, started)

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	shutdown := make(chan error, 1)
	go func() { shutdown <- s.Shutdown(ctx) }()
	_, _, err := idle.Read(ctx)
	ce := websocket.CloseError{}
	if !errors.As(err, &ce) || ce.Code != websocket.StatusServiceRestart || !strings.HasPrefix(ce.Reason, "checkpoint ") {
		t.Fatalf("the idle session, while the step holds the engine slot: %v, want 1012 and its checkpoint", err)
	}
	release()
	if err := <-shutdown; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}

	other := mustServeWorld(t, faultyWorld, bcfg, openenv.Config{})
	c := other.dial(t)
	if r := roundTrip(t, c, fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q}}`, strings.TrimPrefix(ce.Reason, "checkpoint "))); !strings.Contains(r, `"observation"`) {
		t.Fatalf("restore of the idle session's checkpoint: %s", r)
	}
	if r := roundTrip(t, c, `{"type":"inspect","data":{"sql":"SELECT body FROM notes"}}`); !strings.Contains(r, `"rows":[["idle"]]`) {
		t.Errorf("the restored episode's notes: %s, want the idle session's one", r)
	}
	if r := roundTrip(t, c, `{"type":"state"}`); !strings.Contains(r, `"step_count":1`) {
		t.Errorf("the restored episode's state: %s, want step 1", r)
	}
}

// latestOf returns the reply to GET /checkpoints/latest for episode on s,
// failing the test unless it is 200.
func latestOf(t *testing.T, s *worldServer, episode string) string {
	t.Helper()
	status, body, _ := s.httpDo(t, http.MethodGet, "/checkpoints/latest?episode_id="+episode, "", nil)
	if status != http.StatusOK {
		t.Fatalf("latest: %d %s", status, body)
	}
	return body
}

// TestCheckpoint_EveryNotAfterFence: a step in progress when a restore
// fences its attempt ends, but CheckpointEvery takes no checkpoint of the
// superseded attempt after it, which would become its episode's newest
// (GET /checkpoints/latest) and continue the episode a second way.
func TestCheckpoint_EveryNotAfterFence(t *testing.T) {
	s := mustServeWorld(t, faultyWorld, app.Config{Checkpoints: t.TempDir()}, openenv.Config{StepTimeout: time.Hour, CheckpointEvery: 1})
	old := s.dial(t)
	roundTrip(t, old, `{"type":"reset","data":{"episode_id":"ep-fenced"}}`)
	mustSucceed(t, callTool(t, old, "note", `{"body":"first"}`))
	first := latestOf(t, s, "ep-fenced")
	started, release := holdUntilReleased("in progress")
	defer release()
	send(t, old, `{"type":"step","data":{"type":"call_tool","tool_name":"held","arguments":{"body":"in progress"}}}`)
	awaitSlow(t, started)

	restored := s.dial(t)
	r := roundTrip(t, restored, fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q,"replaces":%q}}`, str(t, first, "checkpoint_id"), str(t, first, "attempt")))
	if str(t, r, "type") != "observation" {
		t.Fatalf("restore: %s", r)
	}
	mustSucceed(t, callTool(t, restored, "note", `{"body":"continued"}`))
	newest := latestOf(t, s, "ep-fenced")
	if field(t, newest, "attempt") == field(t, first, "attempt") {
		t.Fatalf("the restored session's step took no checkpoint: %s", newest)
	}

	release()
	mustSucceed(t, recv(t, old))
	if got := latestOf(t, s, "ep-fenced"); got != newest {
		t.Errorf("after the superseded attempt's step, the episode's newest checkpoint is\n%s\nwant the restored attempt's\n%s", got, newest)
	}
	r = roundTrip(t, old, `{"type":"step","data":{"type":"call_tool","tool_name":"note","arguments":{"body":"refused"}}}`)
	if !strings.Contains(r, "was superseded by") {
		t.Errorf("a step of the superseded attempt: %s", r)
	}
	// The refusal names the attempt to continue on beside its message.
	if got, want := fmt.Sprint(field(t, r, "data.superseded_by")), fmt.Sprint(field(t, newest, "attempt")); got != want {
		t.Errorf("the refused step's superseded_by %s, want the restored attempt %s", got, want)
	}
}

// TestCheckpoint_FenceFails: a restore whose fence cannot be written
// restores nothing, says so, and leaves the session's episode as it was.
func TestCheckpoint_FenceFails(t *testing.T) {
	dir := t.TempDir()
	s := mustServeWorld(t, company.World, app.Config{DefaultFixture: company.AcmeID, Checkpoints: dir}, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Ada"}}}`)
	reply := roundTrip(t, c, `{"type":"checkpoint"}`)
	id, attempt := str(t, reply, "data.checkpoint_id"), str(t, reply, "data.attempt")
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Bo"}}}`)
	before := roundTrip(t, c, `{"type":"state"}`)
	// The fences directory is a file now: no fence can be written.
	fences := filepath.Join(dir, "fences")
	if err := os.RemoveAll(fences); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fences, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := roundTrip(t, c, fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q,"replaces":%q}}`, id, attempt))
	if str(t, r, "type") != "error" || !strings.Contains(r, "the attempt could not be fenced") {
		t.Fatalf("a restore whose fence failed: %s", r)
	}
	if after := roundTrip(t, c, `{"type":"state"}`); after != before {
		t.Errorf("the failed restore changed the episode:\n%s\n%s", before, after)
	}
}

// hiredAndCheckpointed starts episode on a new /ws session of s, a company
// world's server that keeps checkpoints, hires Ada and checkpoints the
// episode; it returns the session and the checkpoint's id and attempt.
func hiredAndCheckpointed(t *testing.T, s *worldServer, episode string) (c *websocket.Conn, id, attempt string) {
	t.Helper()
	c = s.dial(t)
	roundTrip(t, c, fmt.Sprintf(`{"type":"reset","data":{"episode_id":%q}}`, episode))
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Ada"}}}`)
	reply := roundTrip(t, c, `{"type":"checkpoint"}`)
	return c, str(t, reply, "data.checkpoint_id"), str(t, reply, "data.attempt")
}

// TestCheckpoint_ReplacesOtherEpisode: a restore whose replaces names an
// attempt at another episode is refused at data.replaces and fences
// nothing; one at the checkpoint's own episode fences it.
func TestCheckpoint_ReplacesOtherEpisode(t *testing.T) {
	s := mustServeWorld(t, company.World, app.Config{DefaultFixture: company.AcmeID, Checkpoints: t.TempDir()}, openenv.Config{})
	victim, _, victimAttempt := hiredAndCheckpointed(t, s, "victim")
	other, otherID, otherAttempt := hiredAndCheckpointed(t, s, "other")
	step := `{"type":"step","data":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Bo"}}}`

	c := s.dial(t)
	r := roundTrip(t, c, fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q,"replaces":%q}}`, otherID, victimAttempt))
	if str(t, r, "data.code") != "VALIDATION_ERROR" || !strings.Contains(r, `"loc":["data","replaces"]`) ||
		!strings.Contains(r, fmt.Sprintf(`attempt %s is an attempt at episode \"victim\", not at \"other\"`, victimAttempt)) {
		t.Fatalf("a restore replacing an attempt at another episode: %s", r)
	}
	if r := roundTrip(t, c, `{"type":"state"}`); strings.Contains(r, `"episode_id":"other"`) {
		t.Errorf("the refused restore restored: %.200s", r)
	}
	if r := roundTrip(t, victim, step); str(t, r, "type") == "error" {
		t.Errorf("the other episode's attempt was fenced: %s", r)
	}

	if r := roundTrip(t, c, fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q,"replaces":%q}}`, otherID, otherAttempt)); str(t, r, "type") == "error" {
		t.Fatalf("a restore replacing the checkpoint's own attempt: %s", r)
	}
	if r := roundTrip(t, other, step); !strings.Contains(r, "was superseded by checkpoint "+otherID) {
		t.Errorf("the replaced attempt stepped: %s", r)
	}
}

// TestCheckpoint_ReplacesOnce: of several restores replacing one attempt
// at once, one fences it and the others are refused at body.replaces,
// naming the successor, so the episode has one live continuation; the
// successor's attempt can be replaced in turn.
func TestCheckpoint_ReplacesOnce(t *testing.T) {
	s := mustServeWorld(t, company.World, app.Config{DefaultFixture: company.AcmeID, Checkpoints: t.TempDir()}, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Ada"}}}`)
	reply := roundTrip(t, c, `{"type":"checkpoint"}`)
	id, attempt := str(t, reply, "data.checkpoint_id"), str(t, reply, "data.attempt")

	const n = 4
	bodies := make([]string, n)
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			h := map[string]string{"X-Seahaven-Session": fmt.Sprintf("successor-%d", i)}
			statuses[i], bodies[i], _ = s.httpDo(t, http.MethodPost, "/reset", fmt.Sprintf(`{"checkpoint":%q,"replaces":%q}`, id, attempt), h)
		})
	}
	wg.Wait()
	won := -1
	for i := range n {
		switch {
		case statuses[i] == http.StatusOK && won < 0:
			won = i
		case statuses[i] == http.StatusOK:
			t.Errorf("restores %d and %d both replaced attempt %s", won, i, attempt)
		case !strings.Contains(bodies[i], `"loc":["body","replaces"]`) ||
			!strings.Contains(bodies[i], fmt.Sprintf("attempt %s was already superseded by checkpoint %s, restored as attempt ", attempt, id)):
			t.Errorf("restore %d: %d %s", i, statuses[i], bodies[i])
		}
	}
	if won < 0 {
		t.Fatalf("no restore replaced the attempt: %q", bodies)
	}
	// The successor checkpoints; a restore replacing its attempt succeeds.
	h := map[string]string{"X-Seahaven-Session": fmt.Sprintf("successor-%d", won)}
	status, body, _ := s.httpDo(t, http.MethodPost, "/checkpoint", "", h)
	if status != http.StatusOK {
		t.Fatalf("successor's checkpoint: %d %s", status, body)
	}
	next := fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q,"replaces":%q}}`, str(t, body, "checkpoint_id"), str(t, body, "attempt"))
	if r := roundTrip(t, s.dial(t), next); str(t, r, "type") == "error" {
		t.Fatalf("a restore replacing the successor: %s", r)
	}
	if status, body, _ := s.httpDo(t, http.MethodPost, "/step", `{"action":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Bo"}}}`, h); status != http.StatusConflict {
		t.Errorf("the replaced successor stepped: %d %s", status, body)
	}
}

// TestCheckpoint_FenceSticky: a session that saw its attempt fenced stays
// fenced once the fence file is gone (retention removed it), for steps and
// checkpoints; a session whose fence cannot be read is refused with an
// infrastructure error rather than let through, and steps again once it
// can be read and is absent.
func TestCheckpoint_FenceSticky(t *testing.T) {
	dir := t.TempDir()
	s := mustServeWorld(t, company.World, app.Config{DefaultFixture: company.AcmeID, Checkpoints: dir}, openenv.Config{})
	step := `{"type":"step","data":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Bo"}}}`
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"episode_id":"ep-1"}}`)
	reply := roundTrip(t, c, `{"type":"checkpoint"}`)
	id, attempt := str(t, reply, "data.checkpoint_id"), str(t, reply, "data.attempt")
	h := map[string]string{"X-Seahaven-Session": "successor"}
	if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", fmt.Sprintf(`{"checkpoint":%q,"replaces":%q}`, id, attempt), h); status != http.StatusOK {
		t.Fatalf("restore: %d %s", status, body)
	}
	if r := roundTrip(t, c, step); !strings.Contains(r, "superseded by checkpoint "+id) {
		t.Fatalf("the superseded attempt stepped: %s", r)
	}
	if err := os.Remove(filepath.Join(dir, "fences", attempt)); err != nil {
		t.Fatal(err)
	}
	for _, req := range []string{step, `{"type":"checkpoint"}`} {
		if r := roundTrip(t, c, req); !strings.Contains(r, "superseded by checkpoint "+id) {
			t.Errorf("once its fence is gone, the superseded attempt's %.30s: %s", req, r)
		}
	}

	other := s.dial(t)
	reply = roundTrip(t, other, `{"type":"checkpoint"}`)
	fence := filepath.Join(dir, "fences", str(t, reply, "data.attempt"))
	if err := os.Mkdir(fence, 0o700); err != nil { // a fence that cannot be read
		t.Fatal(err)
	}
	for _, req := range []string{step, `{"type":"checkpoint"}`} {
		if r := roundTrip(t, other, req); str(t, r, "data.fault") != "storage_error" || strings.Contains(r, dir) {
			t.Errorf("a request whose fence cannot be read: %s, want an infrastructure error naming no path", r)
		}
	}
	if err := os.Remove(fence); err != nil {
		t.Fatal(err)
	}
	if r := roundTrip(t, other, step); str(t, r, "type") == "error" {
		t.Errorf("a step once the fence reads as absent: %s", r)
	}
}

// TestCheckpoint_DrainSuperseded: a draining server takes no checkpoint
// of a session whose attempt a restore superseded: it closes the /ws
// session saying so, and the episode's newest checkpoint stays the
// successor's.
func TestCheckpoint_DrainSuperseded(t *testing.T) {
	s := mustServeWorld(t, company.World, app.Config{DefaultFixture: company.AcmeID, Checkpoints: t.TempDir()}, openenv.Config{DrainCheckpoints: true})
	c, id, attempt := hiredAndCheckpointed(t, s, "ep-v")
	h := map[string]string{"X-Seahaven-Session": "successor"}
	if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", fmt.Sprintf(`{"checkpoint":%q,"replaces":%q}`, id, attempt), h); status != http.StatusOK {
		t.Fatalf("restore: %d %s", status, body)
	}
	s.httpDo(t, http.MethodPost, "/step", `{"action":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Bo"}}}`, h)

	ce, err := shutdownClose(t, s, c)
	if ce.Code != websocket.StatusGoingAway || !strings.HasPrefix(ce.Reason, "superseded by checkpoint "+id) {
		t.Errorf("the superseded /ws session closed with %v, want 1001 and the restore that superseded it", err)
	}
	if _, body, _ := s.httpDo(t, http.MethodGet, "/checkpoints/latest?episode_id=ep-v", "", nil); fmt.Sprint(field(t, body, "revision")) != "2" {
		t.Errorf("the episode's newest checkpoint is not the successor's: %s", body)
	}
}

// agentRefuses checks that the agent listener of s serves neither the
// JSON-RPC method nor the HTTP route of a trainer's request on session.
func agentRefuses(t *testing.T, s *testServer, method, path, session string) {
	t.Helper()
	agent := httptest.NewServer(s.AgentHandler())
	defer agent.Close()
	_, body, _ := do(t, agent, http.MethodPost, "/mcp", fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":%q,"params":{"session_id":%q}}`, method, session), nil)
	if fmt.Sprint(field(t, body, "error.code")) != "-32601" {
		t.Errorf("agent listener %s: %s", method, body)
	}
	if status, _, _ := do(t, agent, http.MethodPost, path, "", map[string]string{"X-Seahaven-Session": session}); status != http.StatusNotFound {
		t.Errorf("agent listener POST %s: %d", path, status)
	}
}

// TestCheckpoint_Unsupported: a backend without checkpoints says so.
func TestCheckpoint_Unsupported(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	c := s.dial(t)
	if r := roundTrip(t, c, `{"type":"checkpoint"}`); !strings.Contains(r, "This server cannot checkpoint episodes") {
		t.Errorf("checkpoint: %s", r)
	}
	if r := roundTrip(t, c, `{"type":"reset","data":{"checkpoint":"6f9619ff-8b86-d011-b42d-00c04fc964ff"}}`); !strings.Contains(r, "This server cannot restore checkpoints") {
		t.Errorf("restore: %s", r)
	}
}

// TestCheckpoint_Drain: with DrainCheckpoints, Shutdown checkpoints every
// live session before closing it; a /ws client gets the checkpoint id in
// the close reason (status 1012), an HTTP client in its next request's
// error, from another server sharing the checkpoint store too; with
// CheckpointEvery, GET /checkpoints/latest names an episode's newest.
func TestCheckpoint_Drain(t *testing.T) {
	dir := t.TempDir()
	bcfg := app.Config{DefaultFixture: company.AcmeID, Checkpoints: dir}
	s := mustServeWorld(t, company.World, bcfg, openenv.Config{DrainCheckpoints: true, CheckpointEvery: 2, Replica: "r1"})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"episode_id":"ep-ws"}}`)
	for range 3 {
		roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Ada"}}}`)
	}
	h := map[string]string{"X-Seahaven-Session": "drain-http"}
	if status, body, resp := s.httpDo(t, http.MethodPost, "/reset", `{"episode_id":"ep-http"}`, h); status != http.StatusOK || resp.Header.Get("X-Seahaven-Replica") != "r1" {
		t.Fatalf("reset: %d %s (replica %q)", status, body, resp.Header.Get("X-Seahaven-Replica"))
	}
	s.httpDo(t, http.MethodPost, "/step", `{"action":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Bo"}}}`, h)
	_, _, resp := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, nil)
	mcp := map[string]string{openenv.MCPSessionHeader: resp.Header.Get(openenv.MCPSessionHeader)}
	if _, body, _ := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hire","arguments":{"name":"Cy"}}}`, mcp); strings.Contains(body, `"error"`) {
		t.Fatalf("MCP call: %s", body)
	}

	// Step 2 of the /ws episode was checkpointed, and is its newest.
	status, body, _ := s.httpDo(t, http.MethodGet, "/checkpoints/latest?episode_id=ep-ws", "", nil)
	if status != http.StatusOK || fmt.Sprint(field(t, body, "revision")) != "2" {
		t.Fatalf("latest: %d %s", status, body)
	}
	// The shape of every other 404 of a thing not there, with its code.
	if status, body, _ := s.httpDo(t, http.MethodGet, "/checkpoints/latest?episode_id=nope", "", nil); status != http.StatusNotFound || compact(t, body) != `{"detail":"Episode nope has no checkpoint in this server's checkpoint store.","code":"SESSION_ERROR"}` {
		t.Errorf("latest of an unknown episode: %d %s", status, body)
	}
	// Validation failures in their shape: a list of failures, each at
	// its location.
	for query, want := range map[string]string{
		"episode_id=nope&episode_id=ep-ws": `{"detail":[{"type":"duplicate_key","loc":["query","episode_id"],"msg":"The URL names episode_id 2 times; name it once","input":["nope","ep-ws"]}]}`,
		"episode_id=ep-ws;x=1":             `{"detail":[{"type":"url_parsing","loc":["query"],"msg":"The URL's query does not parse (invalid semicolon separator in query): write it as key=value pairs joined by &, each percent-encoded","input":"episode_id=ep-ws;x=1"}]}`,
		"episode_id=":                      `{"detail":[{"type":"missing","loc":["query","episode_id"],"msg":"Field required","input":null}]}`,
	} {
		if status, body, _ := s.httpDo(t, http.MethodGet, "/checkpoints/latest?"+query, "", nil); status != http.StatusUnprocessableEntity || compact(t, body) != want {
			t.Errorf("latest?%s: %d %s, want 422 %s", query, status, body, want)
		}
	}

	ce, err := shutdownClose(t, s, c)
	if ce.Code != websocket.StatusServiceRestart || !strings.HasPrefix(ce.Reason, "checkpoint ") {
		t.Fatalf("the /ws session closed with %v, want 1012 and the checkpoint", err)
	}
	wsCheckpoint := strings.TrimPrefix(ce.Reason, "checkpoint ")
	if _, body, _ := s.httpDo(t, http.MethodGet, "/checkpoints/latest?episode_id=ep-ws", "", nil); field(t, body, "checkpoint_id") != wsCheckpoint || fmt.Sprint(field(t, body, "revision")) != "3" {
		t.Errorf("the drain's checkpoint is not the episode's newest: %s", body)
	}

	// Another server on the same checkpoint store tells the HTTP client
	// where its session went, and restores both.
	other := mustServeWorld(t, company.World, bcfg, openenv.Config{})
	status, body, _ = other.httpDo(t, http.MethodGet, "/state", "", h)
	id, _ := field(t, body, "checkpoint_id").(string)
	if status != http.StatusNotFound || id == "" || !strings.Contains(body, "was checkpointed and closed when its server drained") {
		t.Fatalf("the drained HTTP session on another server: %d %s", status, body)
	}
	if status, body, _ := other.httpDo(t, http.MethodPost, "/reset", fmt.Sprintf(`{"checkpoint":%q}`, id), h); status != http.StatusOK {
		t.Fatalf("restore of the drained HTTP session: %d %s", status, body)
	}
	if _, body, _ := other.httpDo(t, http.MethodGet, "/state", "", h); field(t, body, "episode_id") != "ep-http" || fmt.Sprint(field(t, body, "step_count")) != "1" {
		t.Errorf("restored HTTP session: %s", body)
	}
	// The session lives again: no server sends it back to its drained
	// checkpoint any more (a proxy that routes it to a third one gets a
	// plain unknown session, not an instruction to lose its new steps).
	third := mustServeWorld(t, company.World, bcfg, openenv.Config{})
	if status, body, _ := third.httpDo(t, http.MethodGet, "/state", "", h); status != http.StatusNotFound || strings.Contains(body, "checkpoint_id") {
		t.Errorf("the restored HTTP session on a third server: %d %s, want 404 without a checkpoint", status, body)
	}
	// A standard MCP client is told the same, in its protocol's terms.
	status, body, _ = other.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, mcp)
	mcpCheckpoint, _ := field(t, body, "error.data.checkpoint_id").(string)
	if status != http.StatusNotFound || mcpCheckpoint == "" || !strings.Contains(str(t, body, "error.message"), "initialize a new session at /mcp?checkpoint="+mcpCheckpoint+" to continue its episode at step 1") {
		t.Fatalf("the drained MCP session on another server: %d %s", status, body)
	}
	_, initialized, resp := other.httpDo(t, http.MethodPost, "/mcp?checkpoint="+mcpCheckpoint, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, nil)
	restored := map[string]string{openenv.MCPSessionHeader: resp.Header.Get(openenv.MCPSessionHeader)}
	if _, body, _ := other.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_staff","arguments":{}}}`, restored); !strings.Contains(body, "Cy") {
		t.Errorf("the restored MCP session's staff: %.300s (initialize: %.200s)", body, initialized)
	}
	// Its episode goes on in the new session: a retry of the old session's
	// request is no longer told to restore the checkpoint, which would
	// fork the episode.
	if status, body, _ := third.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, mcp); status != http.StatusNotFound || strings.Contains(body, "checkpoint") {
		t.Errorf("the drained MCP session after its restore: %d %s, want 404 without a checkpoint", status, body)
	}
	c2 := other.dial(t)
	roundTrip(t, c2, fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q}}`, wsCheckpoint))
	if st := roundTrip(t, c2, `{"type":"state"}`); !strings.Contains(st, `"step_count":3`) || !strings.Contains(st, `"episode_id":"ep-ws"`) {
		t.Errorf("restored /ws session: %.200s", st)
	}
}

// TestCheckpoint_DrainOfEarlierVersion continues an episode a server of an
// earlier version (commit 330716e, before sessionRecord.DrainedFrom) drained:
// testdata/checkpoints-330716e is its checkpoint store as it left it after
// checkpointing a standard MCP session that had hired Cy. This server tells
// the session's next request where it went, restores the checkpoint, and
// from then on no longer sends the session's old id back to it, where the
// old checkpoint, which does not name the session, left the drain's record
// in place and a retry of the old request was told to restore it again,
// forking the episode.
func TestCheckpoint_DrainOfEarlierVersion(t *testing.T) {
	const (
		checkpoint = "3cc22603-fe22-44b9-b5a3-3cb1798a4847"
		drained    = "a1086b3e-6620-4271-a026-95ab9da12536"
	)
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "checkpoints-330716e"))); err != nil {
		t.Fatal(err)
	}
	s := mustServeWorld(t, company.World, app.Config{DefaultFixture: company.AcmeID, Checkpoints: dir}, openenv.Config{})
	old := map[string]string{openenv.MCPSessionHeader: drained}
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	status, body, _ := s.httpDo(t, http.MethodPost, "/mcp", list, old)
	if status != http.StatusNotFound || field(t, body, "error.data.checkpoint_id") != checkpoint {
		t.Fatalf("the drained MCP session's next request: %d %s, want 404 naming checkpoint %s", status, body, checkpoint)
	}
	if _, body, _ := s.httpDo(t, http.MethodGet, "/checkpoints/latest?episode_id=ep-old-mcp", "", nil); field(t, body, "checkpoint_id") != checkpoint {
		t.Errorf("latest: %s, want checkpoint %s", body, checkpoint)
	}
	status, body, resp := s.httpDo(t, http.MethodPost, "/mcp?checkpoint="+checkpoint, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, nil)
	if status != http.StatusOK {
		t.Fatalf("initialize from the checkpoint: %d %s", status, body)
	}
	restored := resp.Header.Get(openenv.MCPSessionHeader)
	if _, body, _ := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_staff","arguments":{}}}`, map[string]string{openenv.MCPSessionHeader: restored}); !strings.Contains(body, `\"Cy\"`) {
		t.Errorf("the restored session's staff: %.300s", body)
	}
	if _, body, _ := s.httpDo(t, http.MethodGet, "/state", "", map[string]string{"X-Seahaven-Session": restored}); field(t, body, "episode_id") != "ep-old-mcp" || fmt.Sprint(field(t, body, "step_count")) != "2" {
		t.Errorf("the restored session's state: %.300s", body)
	}
	if status, body, _ := s.httpDo(t, http.MethodPost, "/mcp", list, old); status != http.StatusNotFound || strings.Contains(body, "checkpoint") {
		t.Errorf("the drained MCP session after its restore: %d %s, want 404 without a checkpoint", status, body)
	}
}

// TestCheckpoint_MCPCallsAreSteps: a JSON-RPC tools/call is a step for
// checkpoints as a /ws or POST /step one is: CheckpointEvery checkpoints its
// session after every N of them, and once a restore replaced the attempt a
// checkpoint reply named, the session's calls are refused as superseded,
// in both dialects, where an MCP session was never checkpointed
// periodically and a superseded one went on calling tools.
func TestCheckpoint_MCPCallsAreSteps(t *testing.T) {
	s := mustServeWorld(t, company.World, app.Config{DefaultFixture: company.AcmeID, Checkpoints: t.TempDir()}, openenv.Config{CheckpointEvery: 2})
	_, _, resp := s.httpDo(t, http.MethodPost, "/mcp?episode_id=ep-std", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, nil)
	std := resp.Header.Get(openenv.MCPSessionHeader)
	dialect := str(t, s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{"episode_id":"ep-dialect"}}`), "result.session_id")
	calls := map[string]func(n int) string{
		"ep-std": func(n int) string {
			_, body, _ := s.httpDo(t, http.MethodPost, "/mcp", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hire","arguments":{"name":"Ada"}}}`, n), map[string]string{openenv.MCPSessionHeader: std})
			return body
		},
		"ep-dialect": func(n int) string {
			return s.rpc(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"session_id":%q,"name":"hire","arguments":{"name":"Ada"}}}`, n, dialect))
		},
	}
	sessions := map[string]string{"ep-std": std, "ep-dialect": dialect}
	for episode, call := range calls {
		for n := range 3 {
			if body := call(n + 2); strings.Contains(body, `"error"`) {
				t.Fatalf("%s: call %d: %s", episode, n+1, body)
			}
		}
		status, body, _ := s.httpDo(t, http.MethodGet, "/checkpoints/latest?episode_id="+episode, "", nil)
		if status != http.StatusOK || fmt.Sprint(field(t, body, "revision")) != "2" {
			t.Errorf("%s: latest after 3 calls: %d %s, want the checkpoint after call 2", episode, status, body)
		}
		ck := s.rpc(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"seahaven/checkpoint","params":{"session_id":%q}}`, sessions[episode]))
		h := map[string]string{"X-Seahaven-Session": "restored-" + episode}
		if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", fmt.Sprintf(`{"checkpoint":%q,"replaces":%q}`, str(t, ck, "result.checkpoint_id"), str(t, ck, "result.attempt")), h); status != http.StatusOK {
			t.Fatalf("%s: restore replacing the attempt: %d %s", episode, status, body)
		}
		restored := s.rpc(t, `{"jsonrpc":"2.0","id":9,"method":"seahaven/checkpoint","params":{"session_id":"restored-`+episode+`"}}`)
		if body := call(10); !strings.Contains(body, "was superseded by checkpoint") {
			t.Errorf("%s: a call of the superseded attempt: %s, want it refused", episode, body)
		} else if got, want := fmt.Sprint(field(t, body, "error.data.superseded_by")), str(t, restored, "result.attempt"); got != want {
			t.Errorf("%s: the refused call's superseded_by %s, want the restored attempt %s", episode, got, want)
		}
	}
}

// TestCheckpoint_DrainedDialectSession drains a session of OpenEnv's
// /mcp dialect: its next tools/call, on another server, is an error whose
// data.checkpoint_id names the checkpoint, as an HTTP or standard MCP
// client's is, where the dialect's error carried it only in its message
// (data null); a session created from it continues the episode.
func TestCheckpoint_DrainedDialectSession(t *testing.T) {
	bcfg := app.Config{DefaultFixture: company.AcmeID, Checkpoints: t.TempDir()}
	s := mustServeWorld(t, company.World, bcfg, openenv.Config{DrainCheckpoints: true})
	sid := str(t, s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`), "result.session_id")
	hire := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"session_id":%q,"name":"hire","arguments":{"name":"Cy"}}}`, sid)
	if body := s.rpc(t, hire); strings.Contains(body, `"error"`) {
		t.Fatalf("call: %s", body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	other := mustServeWorld(t, company.World, bcfg, openenv.Config{})
	body := other.rpc(t, hire)
	checkpoint, _ := field(t, body, "error.data.checkpoint_id").(string)
	if checkpoint == "" || !strings.Contains(str(t, body, "error.message"), "restore checkpoint "+checkpoint) {
		t.Fatalf("the drained session's next call: %s, want an error naming the checkpoint in data.checkpoint_id", body)
	}
	restored := str(t, other.rpc(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"openenv/session/create","params":{"checkpoint":%q}}`, checkpoint)), "result.session_id")
	if body := other.rpc(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"session_id":%q,"name":"list_staff","arguments":{}}}`, restored)); !strings.Contains(body, `\"Cy\"`) {
		t.Errorf("the restored session's staff: %.300s", body)
	}
}

// TestCheckpoint_DrainRecordsNamedSessions: a drain records the checkpoint
// of a session a later request can name (HTTP, MCP) for that request, and
// none for a /ws session, whose id no client is told and whose checkpoint
// its close reason names: such a record served nobody, and kept the
// checkpoint from the store's size budget until the TTL.
func TestCheckpoint_DrainRecordsNamedSessions(t *testing.T) {
	dir := t.TempDir()
	bcfg := app.Config{DefaultFixture: company.AcmeID, Checkpoints: dir}
	s := mustServeWorld(t, company.World, bcfg, openenv.Config{DrainCheckpoints: true})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"episode_id":"ep-ws"}}`)
	h := map[string]string{"X-Seahaven-Session": "drain-http"}
	if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{"episode_id":"ep-http"}`, h); status != http.StatusOK {
		t.Fatalf("reset: %d %s", status, body)
	}
	if ce, err := shutdownClose(t, s, c); ce.Code != websocket.StatusServiceRestart {
		t.Fatalf("the /ws session closed with %v, want 1012 and the checkpoint", err)
	}
	records, err := os.ReadDir(filepath.Join(dir, "drained"))
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 1 {
		t.Errorf("%d drain records of a /ws and an HTTP session, want 1, the HTTP session's", len(records))
	}
	other := mustServeWorld(t, company.World, bcfg, openenv.Config{})
	if status, body, _ := other.httpDo(t, http.MethodGet, "/state", "", h); status != http.StatusNotFound || field(t, body, "checkpoint_id") == nil {
		t.Errorf("the drained HTTP session on another server: %d %s", status, body)
	}
}

// TestCheckpoint_DrainClientNotReading drains two /ws sessions, each with a
// reply in flight: its client read the reply's first byte and then nothing
// more (a reply of 12 MB, more than the sockets' buffers hold), or reads
// all of it. Shutdown returns within wsEndGrace, not at WriteTimeout: the
// first connection is closed, logged at warn, and the second client gets
// its whole reply and then its close frame, 1012 with the checkpoint.
func TestCheckpoint_DrainClientNotReading(t *testing.T) {
	var logs testfs.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s := mustServeWorld(t, company.World, app.Config{DefaultFixture: company.AcmeID, Checkpoints: t.TempDir()},
		openenv.Config{DrainCheckpoints: true, WriteTimeout: 10 * waitLimit, MaxReplyBytes: 64 << 20, Logger: logger})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	// begin asks c for a reply of size bytes and more, and reads its first byte.
	begin := func(c *websocket.Conn, size int) io.Reader {
		roundTrip(t, c, `{"type":"reset"}`)
		send(t, c, fmt.Sprintf(`{"type":"inspect","data":{"sql":"SELECT printf('%%.*c', %d, 'x') AS x"}}`, size))
		_, r, err := c.Reader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(r, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		return r
	}
	// The client that stops reading has a small socket buffer.
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			c.(*net.TCPConn).SetReadBuffer(16 << 10)
		}
		return c, err
	}
	begin(s.dialWith(t, &websocket.DialOptions{HTTPClient: &http.Client{Transport: &http.Transport{DialContext: dial}}}), 12_000_000)
	const size = 1_000_000
	reading := s.dial(t)
	rest := begin(reading, size)

	type outcome struct {
		n   int64 // bytes of the reply read, its first one included
		err error // how the connection closed
	}
	read := make(chan outcome, 1)
	go func() {
		n, err := io.Copy(io.Discard, rest)
		if err != nil {
			read <- outcome{n + 1, err}
			return
		}
		_, _, err = reading.Read(ctx)
		read <- outcome{n + 1, err}
	}()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with a client that does not read: %v", err)
	}
	got := <-read
	var ce websocket.CloseError
	if !errors.As(got.err, &ce) || ce.Code != websocket.StatusServiceRestart || !strings.HasPrefix(ce.Reason, "checkpoint ") {
		t.Errorf("the reading client's connection ended with %v, want 1012 and its checkpoint", got.err)
	}
	if want := int64(len(`{"type":"inspect","data":{"columns":["x"],"rows":[[""]],"truncated":false}}`) + size); got.n != want {
		t.Errorf("the reading client read %d bytes of its reply, want %d", got.n, want)
	}
	if n := strings.Count(logs.String(), `"level":"WARN","msg":"openenv: websocket closed: its client did not take a reply within 2s of the session's end","session":`); n != 1 {
		t.Errorf("%d warn records of a connection closed for not reading, want 1:\n%s", n, logs.String())
	}
}

// shutdownClose shuts s down and returns how it closed its /ws session c:
// the close frame (zero when there was none) and the read's error.
func shutdownClose(t *testing.T, s *worldServer, c *websocket.Conn) (websocket.CloseError, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	_, _, err := c.Read(ctx)
	var ce websocket.CloseError
	errors.As(err, &ce)
	return ce, err
}

// TestCheckpoint_DrainNamesNoCheckpointToAgents drains an agent's MCP
// session and a trainer's HTTP session, then asks another server's agent
// listener about both, by header, in params and with DELETE /mcp: the
// agent listener is told the sessions are unknown, and never a checkpoint
// id, which is the trainer's capability.
func TestCheckpoint_DrainNamesNoCheckpointToAgents(t *testing.T) {
	bcfg := app.Config{DefaultFixture: company.AcmeID, Checkpoints: t.TempDir()}
	s := mustServeWorld(t, company.World, bcfg, openenv.Config{DrainCheckpoints: true})
	agent := httptest.NewServer(s.AgentHandler())
	defer agent.Close()
	_, _, resp := do(t, agent, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, nil)
	own := resp.Header.Get(openenv.MCPSessionHeader)
	if _, body, _ := do(t, agent, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hire","arguments":{"name":"Ada"}}}`, map[string]string{openenv.MCPSessionHeader: own}); strings.Contains(body, `"error"`) {
		t.Fatalf("agent's call: %s", body)
	}
	trainer := map[string]string{"X-Seahaven-Session": "grader-1"}
	s.httpDo(t, http.MethodPost, "/reset", `{}`, trainer)
	s.httpDo(t, http.MethodPost, "/step", `{"action":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Bo"}}}`, trainer)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	other := mustServeWorld(t, company.World, bcfg, openenv.Config{})
	if _, body, _ := other.httpDo(t, http.MethodGet, "/state", "", trainer); !strings.Contains(body, "checkpoint_id") {
		t.Fatalf("the trainer is not told its drained session's checkpoint: %s", body)
	}
	otherAgent := httptest.NewServer(other.AgentHandler())
	defer otherAgent.Close()
	for _, sid := range []string{own, "grader-1"} {
		for _, r := range []struct {
			method, body string
			header       map[string]string
		}{
			{http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, map[string]string{openenv.MCPSessionHeader: sid}},
			{http.MethodPost, fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"session_id":%q}}`, sid), nil},
			{http.MethodDelete, "", map[string]string{openenv.MCPSessionHeader: sid}},
		} {
			status, body, _ := do(t, otherAgent, r.method, "/mcp", r.body, r.header)
			if strings.Contains(body, "checkpoint") || !strings.Contains(body, sid) {
				t.Errorf("agent listener %s /mcp on drained session %s: %d %s, want it unknown, naming no checkpoint", r.method, sid, status, body)
			}
		}
	}
}

// hookHandler is a slog.Handler that calls fn, once, in the goroutine
// logging the first record whose message contains substr.
type hookHandler struct {
	substr string
	once   *sync.Once
	fn     func()
}

func (h hookHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h hookHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.substr) {
		h.once.Do(h.fn)
	}
	return nil
}
func (h hookHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h hookHandler) WithGroup(string) slog.Handler      { return h }

// TestCheckpoint_DrainedMCPSessionIsGone asks a standard MCP session for a
// tool call after its server drained it, while the draining server still
// answers: the spec's 404, telling the client to initialize a new session
// from the checkpoint, as another server would (it was a 200 JSON-RPC
// error naming reset data, which a standard client cannot send).
func TestCheckpoint_DrainedMCPSessionIsGone(t *testing.T) {
	var (
		s           *worldServer
		sid         string
		status      int
		body        string
		initialized = make(chan struct{})
	)
	hook := hookHandler{substr: "drain: session checkpointed", once: new(sync.Once), fn: func() {
		<-initialized
		status, body, _ = s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hire","arguments":{"name":"Cy"}}}`, map[string]string{openenv.MCPSessionHeader: sid})
	}}
	s = mustServeWorld(t, company.World, app.Config{DefaultFixture: company.AcmeID, Checkpoints: t.TempDir()}, openenv.Config{DrainCheckpoints: true, Logger: slog.New(hook)})
	_, _, resp := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, nil)
	sid = resp.Header.Get(openenv.MCPSessionHeader)
	close(initialized)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	checkpoint, _ := field(t, body, "error.data.checkpoint_id").(string)
	if status != http.StatusNotFound || checkpoint == "" || !strings.Contains(body, "initialize a new session at /mcp?checkpoint="+checkpoint) {
		t.Errorf("a drained MCP session's request: %d %s, want 404 naming the checkpoint to initialize from", status, body)
	}
}

// stallingCheckpoints is a fakeBackend whose checkpoints and restores run
// until their context ends and then fail with an error of their own that
// does not wrap the context's, as an engine interrupted mid-write does.
type stallingCheckpoints struct{ *fakeBackend }

func (b stallingCheckpoints) Open(ctx context.Context, opts openenv.OpenOptions) (openenv.Instance, error) {
	inst, err := b.fakeBackend.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	return stallingInstance{inst}, nil
}

func (stallingCheckpoints) Restore(ctx context.Context, id string) (openenv.Instance, openenv.CheckpointRequest, error) {
	<-ctx.Done()
	return nil, openenv.CheckpointRequest{}, errors.New("restore interrupted")
}
func (stallingCheckpoints) Fence(string, string, string, string) error { return nil }
func (stallingCheckpoints) FencedBy(string) (string, bool, error)      { return "", false, nil }
func (stallingCheckpoints) Latest(string) (openenv.CheckpointInfo, bool) {
	return openenv.CheckpointInfo{}, false
}
func (stallingCheckpoints) Drained(string, openenv.CheckpointInfo) error { return nil }
func (stallingCheckpoints) DrainedTo(string) (openenv.CheckpointInfo, bool) {
	return openenv.CheckpointInfo{}, false
}
func (stallingCheckpoints) Undrained(string) error { return nil }

type stallingInstance struct{ openenv.Instance }

func (stallingInstance) Checkpoint(ctx context.Context, _ openenv.CheckpointRequest) (openenv.CheckpointInfo, error) {
	<-ctx.Done()
	return openenv.CheckpointInfo{}, errors.New("checkpoint interrupted")
}

// heldCheckpoints is stallingCheckpoints whose checkpoints each send a
// channel on held and wait for it to close, then succeed, or fail as an
// interrupted write does if their context ended meanwhile.
type heldCheckpoints struct {
	stallingCheckpoints
	held chan chan struct{}
}

func (b heldCheckpoints) Open(ctx context.Context, opts openenv.OpenOptions) (openenv.Instance, error) {
	inst, err := b.fakeBackend.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	return heldInstance{inst, b.held}, nil
}

type heldInstance struct {
	openenv.Instance
	held chan chan struct{}
}

func (in heldInstance) Checkpoint(ctx context.Context, req openenv.CheckpointRequest) (openenv.CheckpointInfo, error) {
	release := make(chan struct{})
	in.held <- release
	<-release
	if ctx.Err() != nil {
		return openenv.CheckpointInfo{}, errors.New("checkpoint interrupted")
	}
	return openenv.CheckpointInfo{ID: "6f9619ff-8b86-d011-b42d-00c04fc964ff", Revision: req.Revision}, nil
}

// TestCheckpoint_PeriodicThoughTheRequestEnds: the periodic checkpoint
// after a tools/call is taken though its request ends meanwhile (a
// standard MCP client's notifications/cancelled once the call ran), as
// after a /ws step, whose checkpoint only its session's end cuts short,
// where the checkpoint was cut short and the episode went unsaved until
// the next one.
func TestCheckpoint_PeriodicThoughTheRequestEnds(t *testing.T) {
	fake := newFake(t)
	b := heldCheckpoints{stallingCheckpoints{fake}, make(chan chan struct{})}
	s := mustServeOver(t, b, fake, openenv.Config{CheckpointEvery: 1})
	_, _, resp := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, nil)
	mh := map[string]string{openenv.MCPSessionHeader: resp.Header.Get(openenv.MCPSessionHeader)}
	replied := make(chan string, 1)
	go func() {
		_, body, _ := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"m"}}}`, mh)
		replied <- body
	}()
	release := <-b.held // the call ran; its checkpoint waits
	if status, body, _ := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, mh); status != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: %d %s", status, body)
	}
	close(release)
	if body := <-replied; !strings.Contains(body, `"isError":false`) {
		t.Errorf("the call: %s", body)
	}
	if n := s.scrape(t).value(t, "seahaven_checkpoints_total", "op", "checkpoint", "outcome", "ok"); n != 1 {
		t.Errorf(`seahaven_checkpoints_total{op="checkpoint",outcome="ok"} = %v, want 1`, n)
	}
}

// TestCheckpoint_TimeoutMetric: a checkpoint or restore cut short by the
// server's own deadline counts as a timeout, whatever error the backend
// returns for it.
func TestCheckpoint_TimeoutMetric(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	s := mustServeOver(t, stallingCheckpoints{fake}, fake, openenv.Config{StepTimeout: 50 * time.Millisecond})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{}}`)
	if r := roundTrip(t, c, `{"type":"checkpoint"}`); str(t, r, "type") != "error" {
		t.Fatalf("a checkpoint past the deadline: %s", r)
	}
	if r := roundTrip(t, c, `{"type":"reset","data":{"checkpoint":"6f9619ff-8b86-d011-b42d-00c04fc964ff"}}`); str(t, r, "type") != "error" {
		t.Fatalf("a restore past the deadline: %s", r)
	}
	m := s.scrape(t)
	for _, op := range []string{"checkpoint", "restore"} {
		if n := m.value(t, "seahaven_checkpoints_total", "op", op, "outcome", "timeout"); n != 1 {
			t.Errorf(`seahaven_checkpoints_total{op=%q,outcome="timeout"} = %v, want 1`, op, n)
		}
	}
}

// watchedCheckpoints is stallingCheckpoints whose checkpoints each send
// their context on started before they run until it ends.
type watchedCheckpoints struct {
	stallingCheckpoints
	started chan context.Context
}

func (b watchedCheckpoints) Open(ctx context.Context, opts openenv.OpenOptions) (openenv.Instance, error) {
	inst, err := b.fakeBackend.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watchedInstance{stallingInstance{inst}, b.started}, nil
}

type watchedInstance struct {
	stallingInstance
	started chan context.Context
}

func (in watchedInstance) Checkpoint(ctx context.Context, req openenv.CheckpointRequest) (openenv.CheckpointInfo, error) {
	in.started <- ctx
	return in.stallingInstance.Checkpoint(ctx, req)
}

// releasedCheckpoints is watchedCheckpoints whose checkpoints succeed
// when a value comes on release before their context ends.
type releasedCheckpoints struct {
	watchedCheckpoints
	release chan struct{}
}

func (b releasedCheckpoints) Open(ctx context.Context, opts openenv.OpenOptions) (openenv.Instance, error) {
	inst, err := b.fakeBackend.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	return releasedInstance{inst, b.started, b.release}, nil
}

type releasedInstance struct {
	openenv.Instance
	started chan context.Context
	release chan struct{}
}

func (in releasedInstance) Checkpoint(ctx context.Context, req openenv.CheckpointRequest) (openenv.CheckpointInfo, error) {
	in.started <- ctx
	select {
	case <-in.release:
		return openenv.CheckpointInfo{ID: "6f9619ff-8b86-d011-b42d-00c04fc964ff", Revision: req.Revision}, nil
	case <-ctx.Done():
		return openenv.CheckpointInfo{}, errors.New("checkpoint interrupted")
	}
}

// TestCheckpoint_DrainCutByShutdown: a drain's checkpoint still running
// when Shutdown's context ends is cut short with it, and the /ws session
// closes with 1001 and no checkpoint. A checkpoint bounded by its
// session's context and the step timeout alone would run on, holding
// Shutdown past its deadline for as long as it took.
func TestCheckpoint_DrainCutByShutdown(t *testing.T) {
	fake := newFake(t)
	b := watchedCheckpoints{stallingCheckpoints{fake}, make(chan context.Context, 1)}
	s := mustServeOver(t, b, fake, openenv.Config{StepTimeout: time.Hour, DrainCheckpoints: true})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	shutdown := make(chan error, 1)
	go func() { shutdown <- s.Shutdown(ctx) }()
	var checkpoint context.Context
	select {
	case checkpoint = <-b.started:
	case <-time.After(waitLimit):
		t.Fatal("the drain took no checkpoint")
	}
	cancel()
	select {
	case <-checkpoint.Done():
	case <-time.After(waitLimit):
		t.Fatal("the drain's checkpoint ran on when Shutdown's context ended")
	}
	rctx, rcancel := context.WithTimeout(context.Background(), waitLimit)
	defer rcancel()
	_, _, err := c.Read(rctx)
	if ce := (websocket.CloseError{}); !errors.As(err, &ce) || ce.Code != websocket.StatusGoingAway || ce.Reason != "server shutting down" {
		t.Errorf("the session whose drain checkpoint Shutdown's context cut short: %v, want 1001 and no checkpoint", err)
	}
	if err := <-shutdown; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestCheckpoint_DrainDoesNotWaitOnAStep: a draining server checkpoints
// every idle session while another session's step is still in progress;
// that session alone waits for its step to end. Its wait held one of the
// few checkpoints that run at once (one a CPU: one on one), so the
// sessions after it waited for its step too, and lost their checkpoints
// when the step outlasted the shutdown timeout.
func TestCheckpoint_DrainDoesNotWaitOnAStep(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one checkpoint at a time
	s := mustServeWorld(t, faultyWorld, app.Config{}, openenv.Config{StepTimeout: time.Hour, DrainCheckpoints: true})
	busy, post := standardSession(t, s.testServer)
	started := slowStarts("runs through the drain")
	slow := post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"body":"runs through the drain","ms":60000}}}`)
	awaitSlow(t, started)
	endSlow := func() {
		s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, busy)
	}
	t.Cleanup(endSlow) // before the server's cleanup, which would wait for it
	var idle []string
	for i := range 16 {
		hdr, post := standardSession(t, s.testServer)
		if r := <-post(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"note","arguments":{"body":"idle %d"}}}`, i)); r.code != http.StatusOK {
			t.Fatalf("a note: %d %s %v", r.code, r.body, r.err)
		}
		idle = append(idle, hdr[openenv.MCPSessionHeader])
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	shutdown := make(chan error, 1)
	go func() { shutdown <- s.Shutdown(ctx) }()
	waitFor(t, "every idle session's checkpoint while a step runs", func() bool {
		select {
		case r := <-slow:
			t.Fatalf("the step ended before the idle sessions were checkpointed: %d %s %v", r.code, r.body, r.err)
		default:
		}
		for _, sid := range idle {
			if _, ok := s.backend.DrainedTo(sid); !ok {
				return false
			}
		}
		return true
	})
	endSlow()
	<-slow
	if err := <-shutdown; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if _, ok := s.backend.DrainedTo(busy[openenv.MCPSessionHeader]); !ok {
		t.Error("the session whose step ran was not checkpointed once it ended")
	}
}

// TestCheckpoint_DrainTakesACheckpointPerCPU: a draining server on two
// CPUs checkpoints two sessions at once, and every session is
// checkpointed. It took one at a time (half the CPUs), so a server of a
// few hundred idle sessions checkpointed them one by one past the
// shutdown timeout: here the first checkpoint waits for a second to
// start, which then never did.
func TestCheckpoint_DrainTakesACheckpointPerCPU(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	fake := newFake(t)
	b := heldCheckpoints{stallingCheckpoints{fake}, make(chan chan struct{})}
	s := mustServeOver(t, b, fake, openenv.Config{StepTimeout: time.Hour, DrainCheckpoints: true})
	const sessions = 6
	for i := range sessions {
		if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{}`, map[string]string{openenv.SessionHeader: fmt.Sprintf("idle-%d", i)}); status != http.StatusOK {
			t.Fatalf("reset: %d %s", status, body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	shutdown := make(chan error, 1)
	go func() { shutdown <- s.Shutdown(ctx) }()
	first := <-b.held
	select {
	case second := <-b.held:
		close(second)
	case <-ctx.Done():
		t.Error("the drain took one checkpoint at a time on two CPUs: the second waited for the first to end")
	}
	close(first)
	go func() {
		for release := range b.held {
			close(release)
		}
	}()
	if err := <-shutdown; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if n := s.scrape(t).value(t, "seahaven_checkpoints_total", "op", "checkpoint", "outcome", "ok"); n != sessions {
		t.Errorf(`seahaven_checkpoints_total{op="checkpoint",outcome="ok"} = %v, want every session's, %d`, n, sessions)
	}
}

// TestCheckpoint_ShutdownSaysWhatTheDrainDidNot: a Shutdown whose context
// ends mid-drain says, in its error (which wraps the context's) and in the
// drain's log line, how many sessions were checkpointed and how many not,
// and why. It said only "openenv: shutdown: context canceled", and the log line
// counted every session as drained.
func TestCheckpoint_ShutdownSaysWhatTheDrainDidNot(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one checkpoint at a time
	var logs testfs.Buffer
	fake := newFake(t)
	b := releasedCheckpoints{watchedCheckpoints{stallingCheckpoints{fake}, make(chan context.Context, 3)}, make(chan struct{})}
	s := mustServeOver(t, b, fake, openenv.Config{StepTimeout: time.Hour, DrainCheckpoints: true, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	for i := range 3 {
		if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{}`, map[string]string{openenv.SessionHeader: fmt.Sprintf("idle-%d", i)}); status != http.StatusOK {
			t.Fatalf("reset: %d %s", status, body)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	shutdown := make(chan error, 1)
	go func() { shutdown <- s.Shutdown(ctx) }()
	<-b.started
	b.release <- struct{}{} // the first session is checkpointed
	<-b.started
	cancel() // the second's checkpoint is cut short, the third's never ends
	err := <-shutdown
	const want = "1 checkpointed, 2 not checkpointed as the shutdown ended first"
	if !errors.Is(err, context.Canceled) || !strings.Contains(fmt.Sprint(err), want) {
		t.Errorf("Shutdown: %v, want context.Canceled saying %q", err, want)
	}
	var drained map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(line, `"msg":"openenv: drained"`) {
			if err := json.Unmarshal([]byte(line), &drained); err != nil {
				t.Fatal(err)
			}
		}
	}
	if drained["level"] != "WARN" || drained["sessions"] != 3.0 || drained["checkpointed"] != 1.0 || drained["cut_short"] != 2.0 {
		t.Errorf("the drain's log line: %v, want a warning of 3 sessions, 1 checkpointed and 2 cut short", drained)
	}
}

// TestCheckpoint_RestoreReachingTheDrainingServer: a drained HTTP session's
// restore (a reset under its header naming its checkpoint) that reaches
// its draining server, as a proxy sends it while that server is still
// /ready, is refused as a new session on a server shutting down (503),
// which says to try again, where before it was answered 404 telling the
// client to restore the very checkpoint it was restoring. Another server
// then restores it.
func TestCheckpoint_RestoreReachingTheDrainingServer(t *testing.T) {
	bcfg := app.Config{Checkpoints: t.TempDir()}
	s := mustServeWorld(t, faultyWorld, bcfg, openenv.Config{StepTimeout: time.Hour, DrainCheckpoints: true})
	h := map[string]string{"X-Seahaven-Session": "drained"}
	busy := map[string]string{"X-Seahaven-Session": "busy"}
	for _, hdr := range []map[string]string{h, busy} {
		if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{}`, hdr); status != http.StatusOK {
			t.Fatalf("reset: %d %s", status, body)
		}
	}
	if status, body, _ := s.httpDo(t, http.MethodPost, "/step", `{"action":{"type":"call_tool","tool_name":"note","arguments":{"body":"kept"}}}`, h); status != http.StatusOK {
		t.Fatalf("step: %d %s", status, body)
	}
	// A step in progress holds the drain, and the server's sessions with
	// it: the drained one is still there when its restore arrives.
	started, release := holdUntilReleased("holds the drain")
	t.Cleanup(release)
	held := s.httpDoLater(t, http.MethodPost, "/step", `{"action":{"type":"call_tool","tool_name":"held","arguments":{"body":"holds the drain"}}}`, busy)
	awaitSlow(t, started)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	shutdown := make(chan error, 1)
	go func() { shutdown <- s.Shutdown(ctx) }()
	waitFor(t, "the idle session's checkpoint", func() bool { _, ok := s.backend.DrainedTo("drained"); return ok })
	info, _ := s.backend.DrainedTo("drained")
	restore := fmt.Sprintf(`{"checkpoint":%q}`, info.ID)
	status, body, _ := s.httpDo(t, http.MethodPost, "/reset", restore, h)
	if status != http.StatusServiceUnavailable || strings.Contains(body, "restore checkpoint") || !strings.Contains(body, "shutting down") {
		t.Errorf("the restore on the draining server: %d %s, want 503 saying it shuts down", status, body)
	}
	// Any other request of the session is still told where it went.
	if status, body, _ := s.httpDo(t, http.MethodGet, "/state", "", h); status != http.StatusNotFound || !strings.Contains(body, info.ID) {
		t.Errorf("the drained session's state on the draining server: %d %s, want 404 naming its checkpoint", status, body)
	}
	release()
	<-held
	if err := <-shutdown; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	other := mustServeWorld(t, faultyWorld, bcfg, openenv.Config{})
	if status, body, _ := other.httpDo(t, http.MethodPost, "/reset", restore, h); status != http.StatusOK {
		t.Fatalf("the restore on another server: %d %s", status, body)
	}
	if _, body, _ := other.httpDo(t, http.MethodGet, "/state", "", h); fmt.Sprint(field(t, body, "step_count")) != "1" {
		t.Errorf("the restored session: %.300s", body)
	}
}

// TestCheckpoint_LatestAfterARestoreReplacing: a restore with replaces of
// an older checkpoint of the attempt makes that checkpoint the episode's
// newest, where before GET /checkpoints/latest went on naming the
// superseded attempt's later checkpoints (CheckpointEvery), whose restore
// would bring back the steps the restore had undone, as a fork of the
// episode or, replacing the restored attempt, in its place.
func TestCheckpoint_LatestAfterARestoreReplacing(t *testing.T) {
	s := mustServeWorld(t, company.World, app.Config{DefaultFixture: company.AcmeID}, openenv.Config{CheckpointEvery: 2})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"episode_id":"ep-back"}}`)
	hire := `{"type":"step","data":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Ada"}}}`
	roundTrip(t, c, hire)
	reply := roundTrip(t, c, `{"type":"checkpoint"}`)
	id, attempt := str(t, reply, "data.checkpoint_id"), str(t, reply, "data.attempt")
	for range 3 { // steps 2 to 4: checkpoints at 2 and 4
		roundTrip(t, c, hire)
	}
	if body := latestOf(t, s, "ep-back"); fmt.Sprint(field(t, body, "revision")) != "4" {
		t.Fatalf("the attempt's newest checkpoint: %s", body)
	}
	// The trainer takes the episode back to step 1.
	c2 := s.dial(t)
	roundTrip(t, c2, fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q,"replaces":%q}}`, id, attempt))
	if body := latestOf(t, s, "ep-back"); field(t, body, "checkpoint_id") != id {
		t.Errorf("the episode's newest checkpoint after the restore: %s, want %s, which it goes on from", body, id)
	}
	// Its own checkpoints follow as usual.
	roundTrip(t, c2, hire)
	if body := latestOf(t, s, "ep-back"); fmt.Sprint(field(t, body, "revision")) != "2" || field(t, body, "attempt") == attempt {
		t.Errorf("the restored attempt's checkpoint at step 2: %s", body)
	}
}

// TestCheckpoint_SupersededRefusalNamesTheSuccessor: a restore replacing
// an attempt another restore already replaced is refused with the
// successor's attempt in superseded_by and, once it took one, its newest
// checkpoint in checkpoint_id, on /ws, the HTTP route and /mcp, so a
// client whose restore reply was lost replaces the successor in turn;
// where before the successor was named only in the message's text.
func TestCheckpoint_SupersededRefusalNamesTheSuccessor(t *testing.T) {
	s := mustServeWorld(t, company.World, app.Config{DefaultFixture: company.AcmeID, Checkpoints: t.TempDir()}, openenv.Config{})
	_, id, attempt := hiredAndCheckpointed(t, s, "ep-twice")
	restore := fmt.Sprintf(`{"checkpoint":%q,"replaces":%q}`, id, attempt)
	successor := map[string]string{"X-Seahaven-Session": "successor"}
	if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", restore, successor); status != http.StatusOK {
		t.Fatalf("the first restore: %d %s", status, body)
	}
	// refusals returns the refusal of a second restore replacing attempt
	// on each route, as (route, what the refusal carries) pairs.
	refusals := func() map[string]map[string]any {
		t.Helper()
		got := map[string]map[string]any{}
		members := func(route, body, at string) {
			var m map[string]any
			ok := json.Unmarshal([]byte(body), &m) == nil
			if at != "" {
				m, ok = field(t, body, at).(map[string]any)
			}
			if !ok {
				t.Fatalf("%s: %s", route, body)
			}
			got[route] = m
		}
		status, body, _ := s.httpDo(t, http.MethodPost, "/reset", restore, map[string]string{"X-Seahaven-Session": "again"})
		if status != http.StatusUnprocessableEntity || !strings.Contains(body, `"loc":["body","replaces"]`) {
			t.Errorf("POST /reset: %d %s", status, body)
		}
		members("POST /reset", body, "")
		r := roundTrip(t, s.dial(t), `{"type":"reset","data":`+restore+`}`)
		if str(t, r, "data.code") != "VALIDATION_ERROR" {
			t.Errorf("/ws: %s", r)
		}
		members("/ws", r, "data")
		status, body, _ = s.httpDo(t, http.MethodPost, fmt.Sprintf("/mcp?checkpoint=%s&replaces=%s", id, attempt), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, nil)
		if status != http.StatusBadRequest { // a refusal of the URL's query
			t.Errorf("/mcp?checkpoint: %d %s", status, body)
		}
		members("/mcp?checkpoint", body, "error.data")
		members("openenv/session/create", s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":`+restore+`}`), "error.data")
		return got
	}
	var successorAttempt string
	for route, m := range refusals() {
		if _, ok := m["checkpoint_id"]; ok {
			t.Errorf("%s: a checkpoint_id before the successor took one: %v", route, m)
		}
		if s, _ := m["superseded_by"].(string); s == "" || s == attempt || (successorAttempt != "" && s != successorAttempt) {
			t.Errorf("%s: superseded_by %v", route, m["superseded_by"])
		} else {
			successorAttempt = s
		}
	}
	status, body, _ := s.httpDo(t, http.MethodPost, "/checkpoint", "", successor)
	if status != http.StatusOK || str(t, body, "attempt") != successorAttempt {
		t.Fatalf("the successor's checkpoint: %d %s, want attempt %s", status, body, successorAttempt)
	}
	newest := str(t, body, "checkpoint_id")
	for route, m := range refusals() {
		if m["superseded_by"] != successorAttempt || m["checkpoint_id"] != newest {
			t.Errorf("%s: %v, want superseded_by %s and checkpoint_id %s", route, m, successorAttempt, newest)
		}
	}
	// The client replaces the successor in turn.
	retry := fmt.Sprintf(`{"checkpoint":%q,"replaces":%q}`, newest, successorAttempt)
	if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", retry, map[string]string{"X-Seahaven-Session": "retry"}); status != http.StatusOK {
		t.Errorf("the restore replacing the successor: %d %s", status, body)
	}
}

// redefinedWorld is a world "redefined" whose task t has checks: two
// servers given two of them define the task otherwise, as two servers
// whose tasks.yaml differ.
func redefinedWorld(checks ...env.Check) *env.World {
	w := env.NewWorld(env.WorldSpec{Name: "redefined", Version: "1.0.0", Schema: `CREATE TABLE entries (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL) STRICT;`})
	type args struct {
		Amount int64 `json:"amount"`
	}
	env.Tool(w, "add", "Add an entry.", func(c *env.Ctx, in args) (int64, error) {
		res, err := c.DB.Exec("INSERT INTO entries (amount) VALUES (?)", in.Amount)
		return res.LastInsertID, err
	})
	w.AddTask(env.Task{ID: "t", Instruction: "Add entries.", Checks: checks})
	return w
}

// TestCheckpoint_RestoreRegradingCut: a restore whose grading under
// another definition of its task outlives the step timeout fails as a
// restore that ran past its deadline, an EXECUTION_ERROR, where before it
// was a VALIDATION_ERROR saying the checkpoint cannot be restored, as if
// the checkpoint were at fault.
func TestCheckpoint_RestoreRegradingCut(t *testing.T) {
	ckdir := t.TempDir()
	five := env.Check{Name: "five", SQL: "SELECT count(*) FROM entries WHERE amount = 5"}
	first := mustServeWorld(t, redefinedWorld(five), app.Config{Checkpoints: ckdir}, openenv.Config{})
	c := first.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"task":"t"}}`)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"add","arguments":{"amount":5}}}`)
	id := str(t, roundTrip(t, c, `{"type":"checkpoint"}`), "data.checkpoint_id")

	slow := env.Check{Name: "slow", Func: func(ctx context.Context, _ env.Inspector, _ []env.ChangeRecord) (env.GradeResult, error) {
		<-ctx.Done()
		return env.GradeResult{}, ctx.Err()
	}}
	second := mustServeWorld(t, redefinedWorld(five, slow), app.Config{Checkpoints: ckdir}, openenv.Config{StepTimeout: 200 * time.Millisecond})
	reply := roundTrip(t, second.dial(t), fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q}}`, id))
	if code := str(t, reply, "data.code"); code != "EXECUTION_ERROR" || !strings.Contains(reply, "the restore ran past its deadline (the server's step timeout, 200ms) and opened no instance") {
		t.Errorf("restore whose grading outlived the step timeout: %s, want an EXECUTION_ERROR saying it ran past its deadline", reply)
	}
}

// TestCheckpoint_RestoreUnderAnotherDefinition: a checkpoint restored on
// a server whose task of its id is defined otherwise is graded under that
// definition as it is restored, on every transport: its state document's
// checks are the new definition's, and, as that grading says done, the
// restore answers done with its reward and the next step is refused.
// Before, the state document and the session's reward were the
// checkpoint's grading under the old definition until a step was graded.
// Restored on a server of the same definition, the episode is the
// checkpoint's, its state document the one of the episode checkpointed.
func TestCheckpoint_RestoreUnderAnotherDefinition(t *testing.T) {
	ckdir := t.TempDir()
	five := env.Check{Name: "five", SQL: "SELECT count(*) FROM entries WHERE amount = 5"}
	seven := env.Check{Name: "seven", SQL: "SELECT count(*) FROM entries WHERE amount = 7"}
	first := mustServeWorld(t, redefinedWorld(five, seven), app.Config{Checkpoints: ckdir}, openenv.Config{})
	c := first.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"task":"t","episode_id":"ep-def"}}`)
	add := `{"type":"step","data":{"type":"call_tool","tool_name":"add","arguments":{"amount":5}}}`
	if step := roundTrip(t, c, add); fmt.Sprint(field(t, step, "data.reward")) != "0.5" || field(t, step, "data.done") != false {
		t.Fatalf("step: %s", step)
	}
	id := str(t, roundTrip(t, c, `{"type":"checkpoint"}`), "data.checkpoint_id")
	state := roundTrip(t, c, `{"type":"state"}`)
	restore := fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q}}`, id)

	same := first.dial(t)
	if reply := roundTrip(t, same, restore); reply != `{"type":"observation","data":{"observation":{},"reward":null,"done":false}}` {
		t.Errorf("restore under the same definition: %s", reply)
	}
	if got := roundTrip(t, same, `{"type":"state"}`); got != state {
		t.Errorf("state restored under the same definition:\n%s\nwant the checkpointed episode's\n%s", got, state)
	}

	second := mustServeWorld(t, redefinedWorld(five), app.Config{Checkpoints: ckdir}, openenv.Config{})
	// checks returns the names of a state document's checks that
	// passed, and of those that failed.
	checks := func(doc any) string {
		var out []string
		for _, c := range doc.([]any) {
			out = append(out, fmt.Sprintf("%s:%v", c.(map[string]any)["name"], c.(map[string]any)["passed"]))
		}
		return strings.Join(out, ",")
	}
	if got := checks(field(t, state, "data.checks")); got != "five:true,seven:false" {
		t.Fatalf("checks before the restore: %s", got)
	}
	const over = "The episode is over: its task graded it done after 1 tool call."
	t.Run("WebSocket", func(t *testing.T) {
		r := second.dial(t)
		if reply := roundTrip(t, r, restore); reply != `{"type":"observation","data":{"observation":{},"reward":1,"done":true}}` {
			t.Errorf("restore: %s, want done with the new definition's reward", reply)
		}
		if got := checks(field(t, roundTrip(t, r, `{"type":"state"}`), "data.checks")); got != "five:true" {
			t.Errorf("restored state's checks %s, want the new definition's", got)
		}
		if reply := roundTrip(t, r, add); !strings.Contains(reply, over) {
			t.Errorf("a step after the restore: %s", reply)
		}
	})
	t.Run("HTTP", func(t *testing.T) {
		h := map[string]string{"X-Seahaven-Session": "restored-def"}
		status, body, _ := second.httpDo(t, http.MethodPost, "/reset", fmt.Sprintf(`{"checkpoint":%q}`, id), h)
		if status != http.StatusOK || fmt.Sprint(field(t, body, "reward")) != "1" || field(t, body, "done") != true {
			t.Errorf("restore: %d %s, want done with the new definition's reward", status, body)
		}
		if _, body, _ := second.httpDo(t, http.MethodGet, "/state", "", h); checks(field(t, body, "checks")) != "five:true" {
			t.Errorf("restored state %s, want the new definition's checks", body)
		}
	})
	t.Run("MCP", func(t *testing.T) {
		sid := str(t, second.rpc(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{"checkpoint":%q}}`, id)), "result.session_id")
		call := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"session_id":%q,"name":"add","arguments":{"amount":5}}}`, sid)
		if body := second.rpc(t, call); !strings.Contains(body, over) {
			t.Errorf("a call after the restore: %s", body)
		}
		if _, body, _ := second.httpDo(t, http.MethodGet, "/state", "", map[string]string{"X-Seahaven-Session": sid}); checks(field(t, body, "checks")) != "five:true" {
			t.Errorf("restored state %s, want the new definition's checks", body)
		}
	})
	if n := second.scrape(t).value(t, "seahaven_episodes_finished_total", "task", "t"); n != 3 {
		t.Errorf("seahaven_episodes_finished_total = %v, want 3: each restore finished its episode", n)
	}
}

// TestCheckpoint_RestoreDoneUnderAnotherDefinition: an episode its
// checkpoint's grading had finished stays done when restored under a
// definition whose grading says it is not: the restore, a grading asked
// for after it (over /ws and HTTP) and the refused step all say so, with
// the new definition's reward. Before, the grading answered done false
// while every step was refused as the episode was over.
func TestCheckpoint_RestoreDoneUnderAnotherDefinition(t *testing.T) {
	ckdir := t.TempDir()
	five := env.Check{Name: "five", SQL: "SELECT count(*) FROM entries WHERE amount = 5"}
	seven := env.Check{Name: "seven", SQL: "SELECT count(*) FROM entries WHERE amount = 7"}
	first := mustServeWorld(t, redefinedWorld(five), app.Config{Checkpoints: ckdir}, openenv.Config{})
	c := first.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"task":"t","episode_id":"ep-done"}}`)
	add := `{"type":"step","data":{"type":"call_tool","tool_name":"add","arguments":{"amount":5}}}`
	if step := roundTrip(t, c, add); field(t, step, "data.done") != true {
		t.Fatalf("step: %s", step)
	}
	id := str(t, roundTrip(t, c, `{"type":"checkpoint"}`), "data.checkpoint_id")

	second := mustServeWorld(t, redefinedWorld(five, seven), app.Config{Checkpoints: ckdir}, openenv.Config{})
	r := second.dial(t)
	if reply := roundTrip(t, r, fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q}}`, id)); reply != `{"type":"observation","data":{"observation":{},"reward":0.5,"done":true}}` {
		t.Errorf("restore: %s, want done with the new definition's reward", reply)
	}
	if reply := roundTrip(t, r, `{"type":"grade"}`); fmt.Sprint(field(t, reply, "data.reward")) != "0.5" || field(t, reply, "data.done") != true {
		t.Errorf("grading after the restore: %s, want done with the new definition's reward", reply)
	}
	if reply := roundTrip(t, r, add); !strings.Contains(reply, "The episode is over") {
		t.Errorf("a step after the restore: %s, want it refused as over", reply)
	}
	h := map[string]string{"X-Seahaven-Session": "restored-done"}
	if status, body, _ := second.httpDo(t, http.MethodPost, "/reset", fmt.Sprintf(`{"checkpoint":%q}`, id), h); status != http.StatusOK || field(t, body, "done") != true {
		t.Fatalf("HTTP restore: %d %s", status, body)
	}
	if status, body, _ := second.httpDo(t, http.MethodPost, "/grade", "", h); status != http.StatusOK || field(t, body, "done") != true {
		t.Errorf("HTTP grading after the restore: %d %s, want done", status, body)
	}
}

// TestCheckpoint_SuccessorReplacedBeforeItsCheckpoint: a session a restore
// with replaces started, replaced in turn (by the attempt its fence
// published, superseded_by) before it took a checkpoint of its own, is
// refused as superseded at its next step and checkpoint, where it went on
// stepping and checkpointing beside its successor, two continuations of
// one episode, until its first checkpoint.
func TestCheckpoint_SuccessorReplacedBeforeItsCheckpoint(t *testing.T) {
	s := mustServeWorld(t, company.World, app.Config{DefaultFixture: company.AcmeID, Checkpoints: t.TempDir()}, openenv.Config{})
	_, id, attempt := hiredAndCheckpointed(t, s, "ep-lost-reply")
	restore := fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q,"replaces":%q}}`, id, attempt)
	successor := s.dial(t) // the restore whose reply its client lost
	if r := roundTrip(t, successor, restore); str(t, r, "type") != "observation" {
		t.Fatalf("the first restore: %s", r)
	}
	retry := roundTrip(t, s.dial(t), restore)
	by := str(t, retry, "data.superseded_by")
	if by == "" {
		t.Fatalf("the retried restore: %s, want it refused naming the successor", retry)
	}
	if r := roundTrip(t, s.dial(t), fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q,"replaces":%q}}`, id, by)); str(t, r, "type") != "observation" {
		t.Fatalf("the restore replacing the successor: %s", r)
	}
	for _, msg := range []string{
		`{"type":"step","data":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Bob"}}}`,
		`{"type":"checkpoint"}`,
	} {
		if r := roundTrip(t, successor, msg); str(t, r, "data.code") != "SESSION_ERROR" || !strings.Contains(str(t, r, "data.message"), "superseded") {
			t.Errorf("%s on the replaced successor: %s, want it refused as superseded", msg, r)
		}
	}
}
