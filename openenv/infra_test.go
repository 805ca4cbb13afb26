package openenv_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/internal/testfs"
	"github.com/seahaven/seahaven/openenv"
)

// fillDisk writes a file into dir's file system until nothing is free.
func fillDisk(tb testing.TB, dir string) {
	tb.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "filler"), make([]byte, int64(st.Bavail)*int64(st.Bsize)), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// mustInfraFrame fails unless reply is an error frame reporting an
// infrastructure error with fault, whose message names no path.
func mustInfraFrame(tb testing.TB, reply, fault string) {
	tb.Helper()
	if typ := str(tb, reply, "type"); typ != "error" {
		tb.Fatalf("reply %.300s, want an error frame", reply)
	}
	if code, got := str(tb, reply, "data.code"), str(tb, reply, "data.fault"); code != "EXECUTION_ERROR" || got != fault {
		tb.Fatalf("code %s, fault %s in %s, want EXECUTION_ERROR with fault %s", code, got, reply, fault)
	}
	if msg := str(tb, reply, "data.message"); strings.Contains(msg, "/") || !strings.HasPrefix(msg, "infrastructure error ("+fault+")") {
		tb.Fatalf("message %q, want one that says infrastructure error (%s) and names no path", msg, fault)
	}
}

// firstLoc returns the loc of the first validation failure listed at path.
func firstLoc(tb testing.TB, reply, path string) string {
	tb.Helper()
	errs, ok := field(tb, reply, path).([]any)
	if !ok || len(errs) == 0 {
		tb.Fatalf("%s lists no failures in %s", path, reply)
	}
	fe, ok := errs[0].(map[string]any)
	if !ok {
		tb.Fatalf("%s: %v is not an object", path, errs[0])
	}
	return fmt.Sprint(fe["loc"])
}

// TestInfraErrors_DiskFull runs a session's disk full. The call that cannot
// write, and the resets after it, fail with the protocol's own error, which
// says the fault and names no path, on every transport; never with a tool
// result. Each is counted by fault and operation.
func TestInfraErrors_DiskFull(t *testing.T) {
	dir := testfs.MountTmpfs(t, "1m")
	recs := t.TempDir()
	s := mustServeWorld(t, faultyWorld, app.Config{InstanceRoot: dir, MinFreeDisk: 64 << 10, RecordDir: recs}, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"episode_id":"full"}}`)
	mustSucceed(t, callTool(t, c, "note", `{"body":"kept"}`))
	fillDisk(t, dir)
	big := fmt.Sprintf(`{"body":%q}`, strings.Repeat("x", 64<<10))

	t.Run("WebSocketCall", func(t *testing.T) {
		mustInfraFrame(t, callTool(t, c, "note", big), "disk_full")
	})
	t.Run("MCPOnSocket", func(t *testing.T) {
		reply := roundTrip(t, c, `{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"note","arguments":`+big+`}}}`)
		if code, fault := fmt.Sprint(field(t, reply, "data.error.code")), str(t, reply, "data.error.data.fault"); code != "-32000" || fault != "disk_full" {
			t.Fatalf("code %s fault %s in %.300s, want -32000 with fault disk_full", code, fault, reply)
		}
		if msg := str(t, reply, "data.error.message"); strings.Contains(msg, "/") {
			t.Errorf("message %q names a path", msg)
		}
	})
	t.Run("HTTPStep", func(t *testing.T) {
		id := s.Sessions()[0].ID
		status, body, resp := s.httpDo(t, http.MethodPost, "/step", `{"action":{"type":"call_tool","tool_name":"note","arguments":`+big+`}}`,
			map[string]string{openenv.SessionHeader: id})
		if status != http.StatusServiceUnavailable || str(t, body, "fault") != "disk_full" || strings.Contains(str(t, body, "detail"), "/") || resp.Header.Get("Retry-After") != "1" {
			t.Fatalf("status %d %s (Retry-After %q), want 503 with fault disk_full, no path and Retry-After: 1", status, body, resp.Header.Get("Retry-After"))
		}
	})
	t.Run("NoStep", func(t *testing.T) {
		// The calls that failed on the host changed nothing: no step of the
		// episode, as a retry once the host recovers must run as they would have.
		if got := field(t, roundTrip(t, c, `{"type":"state"}`), "data.step_count"); got != json.Number("1") {
			t.Errorf("step_count %v after three calls failed on the host, want 1", got)
		}
	})
	t.Run("Reset", func(t *testing.T) {
		mustInfraFrame(t, roundTrip(t, c, `{"type":"reset","data":{"episode_id":"again"}}`), "disk_full")
	})
	t.Run("NotReady", func(t *testing.T) {
		// Every reset fails now: the probes say so, where they said ready
		// and accepting.
		for _, path := range []string{"/ready", "/accepting"} {
			if status, body, _ := s.httpDo(t, http.MethodGet, path, "", nil); status != http.StatusServiceUnavailable || body != `{"status":"not_ready","fault":"disk_full"}` {
				t.Errorf("%s: %d %s, want 503 not_ready with fault disk_full", path, status, body)
			}
		}
	})
	t.Run("Counted", func(t *testing.T) {
		m := s.scrape(t)
		if got := m.value(t, "seahaven_infrastructure_errors_total", "fault", "disk_full", "op", "call"); got != 3 {
			t.Errorf("%v calls counted, want 3", got)
		}
		if got := m.value(t, "seahaven_infrastructure_errors_total", "fault", "disk_full", "op", "reset"); got != 1 {
			t.Errorf("%v resets counted, want 1", got)
		}
		if got := m.value(t, "seahaven_tool_calls_total", "tool", "note", "outcome", "infrastructure_error"); got != 3 {
			t.Errorf("%v tool calls with outcome infrastructure_error, want 3", got)
		}
	})
	t.Run("SessionSurvives", func(t *testing.T) {
		if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
			t.Fatal(err)
		}
		if status, body, _ := s.httpDo(t, http.MethodGet, "/ready", "", nil); status != http.StatusOK {
			t.Errorf("/ready with room again: %d %s", status, body)
		}
		mustSucceed(t, callTool(t, c, "note", big))
		if got := inspectValue(t, c, "SELECT count(*) FROM notes"); got != "2" {
			t.Errorf("%s notes, want the 2 written with room", got)
		}
		checkIntegrity(t, c)
	})
	t.Run("Recording", func(t *testing.T) {
		// The trajectory holds the two calls that ran, not the failures of
		// the host, which no replay could repeat, and ends when the session does.
		c.Close(websocket.StatusNormalClosure, "")
		waitFor(t, "the session to end", func() bool { return len(s.Sessions()) == 0 })
		files, _ := filepath.Glob(filepath.Join(recs, "*.jsonl"))
		if len(files) != 1 {
			t.Fatalf("recordings %v, want one", files)
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			types = append(types, str(t, line, "type"))
		}
		if got := strings.Join(types, " "); got != "header call call end" {
			t.Errorf("recording lines %q, want header call call end:\n%s", got, b)
		}
	})
}

// hostFailWorld's tools fail on the host (a full disk), having changed
// nothing (fail) or after a nested call committed a note on its child
// (note_then_fail).
func hostFailWorld() *env.World {
	child := env.NewWorld(env.WorldSpec{Name: "hostfailnotes", Version: "1.0.0",
		Schema: `CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT;`})
	note := env.Tool(child, "note", "Write a note.", func(c *env.Ctx, in noteArgs) (noteResult, error) {
		return writeNote(c, in.Body)
	})
	w := env.NewWorld(env.WorldSpec{Name: "hostfail", Version: "1.0.0", Schema: `CREATE TABLE h (x INTEGER) STRICT;`})
	w.AddWorld(child, env.Name("notes"))
	full := &os.PathError{Op: "write", Path: "/x/state.sqlite", Err: syscall.ENOSPC}
	env.Tool(w, "fail", "Fail on the host, having changed nothing.", func(c *env.Ctx, in noteArgs) (noteResult, error) {
		return noteResult{}, full
	})
	env.Tool(w, "note_then_fail", "Write a note on the child, then fail on the host.", func(c *env.Ctx, in noteArgs) (noteResult, error) {
		if _, err := env.Call(c.Context(), c.Worlds.Get("notes"), note, in); err != nil {
			return noteResult{}, err
		}
		return noteResult{}, full
	})
	return w
}

// TestInfraErrors_NoStep fails calls on the host on every transport: those
// that changed nothing are no step of the episode, as their error says
// (env.InfraError.NoStep); one that changed something is a step.
func TestInfraErrors_NoStep(t *testing.T) {
	s := mustServeWorld(t, hostFailWorld(), app.Config{}, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"episode_id":"nostep"}}`)
	steps := func() string {
		t.Helper()
		return fmt.Sprint(field(t, roundTrip(t, c, `{"type":"state"}`), "data.step_count"))
	}
	mustSucceed(t, callTool(t, c, "note", `{"body":"kept"}`))
	mustInfraFrame(t, callTool(t, c, "fail", `{"body":"ws"}`), "disk_full")
	reply := roundTrip(t, c, `{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fail","arguments":{"body":"mcp"}}}}`)
	if fault := str(t, reply, "data.error.data.fault"); fault != "disk_full" {
		t.Fatalf("MCP: %.300s, want an error with fault disk_full", reply)
	}
	status, body, _ := s.httpDo(t, http.MethodPost, "/step", `{"action":{"type":"call_tool","tool_name":"fail","arguments":{"body":"http"}}}`,
		map[string]string{openenv.SessionHeader: s.Sessions()[0].ID})
	if status != http.StatusServiceUnavailable {
		t.Fatalf("POST /step: %d %s, want 503", status, body)
	}
	if got := steps(); got != "1" {
		t.Errorf("step_count %s after three calls that failed on the host and changed nothing, want 1", got)
	}
	mustInfraFrame(t, callTool(t, c, "note_then_fail", `{"body":"committed"}`), "disk_full")
	if got := steps(); got != "2" {
		t.Errorf("step_count %s after a call that failed on the host having changed something, want 2", got)
	}
	if got := inspectValue(t, c, "SELECT count(*) FROM notes.notes"); got != "2" {
		t.Errorf("%s notes, want 2", got)
	}
}

// TestInfraErrors_UnknownFixture resets to fixtures that do not exist: a
// validation error at the fixture key that names the id and lists the
// fixtures, and no path.
func TestInfraErrors_UnknownFixture(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	c := s.dial(t)
	for _, id := range []string{"nope", "../etc"} {
		reply := roundTrip(t, c, fmt.Sprintf(`{"type":"reset","data":{"fixture":%q}}`, id))
		if code := str(t, reply, "data.code"); code != "VALIDATION_ERROR" {
			t.Fatalf("reset to %s: %s, want a VALIDATION_ERROR", id, reply)
		}
		if loc := firstLoc(t, reply, "data.errors"); loc != "[data fixture]" {
			t.Errorf("loc %s, want [data fixture]", loc)
		}
		if msg := str(t, reply, "data.message"); strings.Contains(msg, "/"+id) || strings.Contains(msg, s.backend.InstanceDir()) || !strings.Contains(msg, fmt.Sprintf("%q", id)) {
			t.Errorf("message %q, want one naming %q and no path", msg, id)
		}
	}
	reply := roundTrip(t, c, `{"type":"reset","data":{"fixture":"nope"}}`)
	if msg := str(t, reply, "data.message"); msg != `Invalid message: data.fixture: unknown fixture "nope" (fixtures: acme)` {
		t.Errorf("message %q", msg)
	}
	status, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{"fixture":"nope"}`, nil)
	if status != http.StatusUnprocessableEntity || firstLoc(t, body, "detail") != "[body fixture]" {
		t.Errorf("POST /reset: %d %s, want 422 at body.fixture", status, body)
	}
}

// TestReset_UnknownStartupKeyword resets with a startup keyword no startup
// hook of the tree accepts: a validation error at the startup key, with the
// keywords given as its input, naming the unknown one and listing those
// accepted, as an unknown fixture is one at the fixture key; the session
// keeps its episode.
func TestReset_UnknownStartupKeyword(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"episode_id":"kept"}}`)
	reply := roundTrip(t, c, `{"type":"reset","data":{"startup":{"colour":1,"region":"eu"}}}`)
	want := `{"type":"error","data":{"message":"Invalid message: data.startup: unknown startup keyword \"colour\": no startup hook of company's tree accepts it (accepted: plan, region)","code":"VALIDATION_ERROR",` +
		`"errors":[{"type":"value_error","loc":["data","startup"],"msg":"unknown startup keyword \"colour\": no startup hook of company's tree accepts it (accepted: plan, region)","input":{"colour":1,"region":"eu"}}]}}`
	jsonEq(t, reply, want)
	if id := str(t, roundTrip(t, c, `{"type":"state"}`), "data.episode_id"); id != "kept" {
		t.Errorf("episode_id %s after a refused reset, want kept", id)
	}
	status, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{"startup":{"colour":1,"size":2}}`, nil)
	if status != http.StatusUnprocessableEntity || firstLoc(t, body, "detail") != "[body startup]" ||
		!strings.Contains(body, `unknown startup keywords \"colour\", \"size\": no startup hook of company's tree accepts them`) {
		t.Errorf("POST /reset: %d %s, want 422 at body.startup naming both keywords", status, body)
	}
	// So is a value the hook taking it would not decode.
	for startup, want := range map[string]string{
		`{"region":5}`: `field \"region\": expected string, got number`,
		`{"plan":"` + strings.Repeat("x", 40) + `"}`: `field \"plan\": string length 40 exceeds maxLength 32`,
	} {
		status, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{"startup":`+startup+`}`, nil)
		if status != http.StatusUnprocessableEntity || firstLoc(t, body, "detail") != "[body startup]" ||
			!strings.Contains(body, `startup hook of payments (node payments): startup keywords: invalid arguments: `+want) {
			t.Errorf("POST /reset with startup %s: %d %s, want 422 at body.startup saying %s", startup, status, body, want)
		}
	}
}

// TestInfraErrors_InstanceRootRemoved removes the instance root under a
// running server, as a cleaner of the temp directory may. The next reset
// makes it again; while it cannot be made, resets fail with an
// infrastructure error and /ready says not ready.
func TestInfraErrors_InstanceRootRemoved(t *testing.T) {
	root := filepath.Join(t.TempDir(), "instances")
	s := mustServeWorld(t, faultyWorld, app.Config{InstanceRoot: root}, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	ready := func() (int, string) {
		status, body, _ := s.httpDo(t, http.MethodGet, "/ready", "", nil)
		return status, body
	}

	t.Run("Remade", func(t *testing.T) {
		if err := os.RemoveAll(root); err != nil {
			t.Fatal(err)
		}
		if reply := roundTrip(t, c, `{"type":"reset"}`); str(t, reply, "type") != "observation" {
			t.Fatalf("reset after the root was removed: %s", reply)
		}
		mustSucceed(t, callTool(t, c, "note", `{"body":"after"}`))
		if status, body := ready(); status != http.StatusOK {
			t.Errorf("/ready: %d %s", status, body)
		}
		if _, err := os.Stat(s.backend.InstanceDir() + ".lock"); err != nil {
			t.Errorf("the lock file was not made again: %v", err)
		}
	})
	t.Run("CannotBeMade", func(t *testing.T) {
		if err := os.RemoveAll(root); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(root, nil, 0o600); err != nil { // a file where the root was
			t.Fatal(err)
		}
		if status, body := ready(); status != http.StatusServiceUnavailable || body != `{"status":"not_ready","fault":"storage_error"}` {
			t.Errorf("/ready: %d %s, want 503 not_ready", status, body)
		}
		mustInfraFrame(t, roundTrip(t, c, `{"type":"reset"}`), "storage_error")
		if err := os.Remove(root); err != nil {
			t.Fatal(err)
		}
		if status, body := ready(); status != http.StatusOK {
			t.Errorf("/ready once the root can be made: %d %s", status, body)
		}
		if reply := roundTrip(t, c, `{"type":"reset"}`); str(t, reply, "type") != "observation" {
			t.Fatalf("reset once the root can be made: %s", reply)
		}
	})
}

// TestState_ChangeLogTruncated bounds a session's change log: once its
// records outgrow the bound, the state document (valid against the state
// schema) keeps the newest and says how many were dropped.
func TestState_ChangeLogTruncated(t *testing.T) {
	s := mustServeWorld(t, faultyWorld, app.Config{MaxChangeLogBytes: 4900}, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	mustSucceed(t, callTool(t, c, "note", `{"body":"small"}`))
	if st := roundTrip(t, c, `{"type":"state"}`); strings.Contains(st, "change_log_truncated") {
		t.Fatalf("a whole log is marked truncated: %s", st)
	}
	for range 3 {
		mustSucceed(t, callTool(t, c, "note", fmt.Sprintf(`{"body":%q}`, strings.Repeat("b", 1500))))
	}
	st := roundTrip(t, c, `{"type":"state"}`)
	if d, m := fmt.Sprint(field(t, st, "data.change_log_truncated.dropped")), fmt.Sprint(field(t, st, "data.change_log_truncated.max_bytes")); d != "1" || m != "4900" {
		t.Fatalf("change_log_truncated dropped %s max_bytes %s, want 1 and 4900: %.400s", d, m, st)
	}
	log, ok := field(t, st, "data.change_log").([]any)
	if !ok || len(log) != 3 || fmt.Sprint(log[0].(map[string]any)["seq"]) != "2" {
		t.Fatalf("change_log %v, want the 3 newest records from seq 2", log)
	}
}

// TestInfraErrors_RecordingDiskFull records episodes into a full file
// system: the reset that cannot start its trajectory fails with an
// infrastructure error naming no path, not an EXECUTION_ERROR with the
// recording's path.
func TestInfraErrors_RecordingDiskFull(t *testing.T) {
	dir := testfs.MountTmpfs(t, "64k")
	fillDisk(t, dir)
	s := mustServeWorld(t, faultyWorld, app.Config{RecordDir: dir}, openenv.Config{})
	c := s.dial(t)
	mustInfraFrame(t, roundTrip(t, c, `{"type":"reset","data":{"episode_id":"rec"}}`), "disk_full")
}

// TestInfraErrors_RecordingFullRetry fills the recording's file system
// while an episode runs: the step whose call ran but could not be recorded
// fails with an infrastructure error, and its retry under the same
// request_id is told so and runs nothing, where it ran the call a second
// time.
func TestInfraErrors_RecordingFullRetry(t *testing.T) {
	dir := testfs.MountTmpfs(t, "64k")
	s := mustServeWorld(t, faultyWorld, app.Config{RecordDir: dir}, openenv.Config{})
	c := s.dial(t)
	if reply := roundTrip(t, c, `{"type":"reset","data":{"episode_id":"rec"}}`); str(t, reply, "type") != "observation" {
		t.Fatalf("reset: %s", reply)
	}
	// The call's line, written as the call is answered, does not fit.
	mustSucceed(t, callTool(t, c, "note", `{"body":"fits"}`))
	step := fmt.Sprintf(`{"type":"step","data":{"type":"call_tool","tool_name":"note","arguments":{"body":"once %s"},"request_id":"r-2"}}`, strings.Repeat("x", 128<<10))
	mustInfraFrame(t, roundTrip(t, c, step), "disk_full")
	reply := roundTrip(t, c, step)
	if code, msg := str(t, reply, "data.code"), str(t, reply, "data.message"); code != "EXECUTION_ERROR" || !strings.Contains(msg, `request_id "r-2": its step ran as step 2 but failed on the host`) || !strings.HasSuffix(msg, "the step is not run again") {
		t.Errorf("retry: %s, want an EXECUTION_ERROR saying the step ran and is not run again", reply)
	}
	if got := inspectValue(t, c, "SELECT count(*) FROM notes WHERE body LIKE 'once %'"); got != "1" {
		t.Errorf("%s notes written by the step and its retry, want 1", got)
	}
}

// TestInfraErrors_BrokenFixture serves a fixtures directory in which one
// sidecar does not parse: GET /fixtures lists the others, an unknown
// fixture's error lists them too, and the server logs the broken one by id
// and cause, once.
func TestInfraErrors_BrokenFixture(t *testing.T) {
	dir := t.TempDir()
	src := compositiontest.FixturesDir(t, company.World)
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "broken"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, company.AcmeID, "fixture.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b = append(bytes.Replace(b, []byte("id: acme"), []byte("id: broken"), 1), "colour: red\n"...)
	if err := os.WriteFile(filepath.Join(dir, "broken", "fixture.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var log testfs.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	s := mustServeWorld(t, company.World, app.Config{FixturesDir: dir, DefaultFixture: company.AcmeID, Logger: logger}, openenv.Config{})
	status, body, _ := s.httpDo(t, http.MethodGet, "/fixtures", "", nil)
	if status != http.StatusOK || !strings.Contains(body, `"id":"acme"`) || strings.Contains(body, "broken") {
		t.Errorf("GET /fixtures: %d %s, want acme listed and broken not", status, body)
	}
	c := s.dial(t)
	reply := roundTrip(t, c, `{"type":"reset","data":{"fixture":"nope"}}`)
	if msg := str(t, reply, "data.message"); msg != `Invalid message: data.fixture: unknown fixture "nope" (fixtures: acme)` {
		t.Errorf("message %q", msg)
	}
	s.httpDo(t, http.MethodGet, "/fixtures", "", nil)
	got := log.String()
	if n := strings.Count(got, `msg="fixtures: a fixture is broken and cannot be served"`); n != 1 || !strings.Contains(got, "fixture=broken") || !strings.Contains(got, "colour: unknown key") {
		t.Errorf("log (%d lines about the broken fixture):\n%s\nwant one naming it and its cause", n, got)
	}
}
