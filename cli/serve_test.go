package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/testfs"
)

// TestServeCommand_Web serves the company world on :0 and checks that the
// inspector is mounted at /web beside the protocol routes.
func TestServeCommand_Web(t *testing.T) {
	started := false
	stderr, err := serveBriefly(t, nil, func(base string) {
		started = true
		for _, tc := range []struct {
			name     string
			path     string
			status   int
			contains string // a string the body must contain
		}{
			{"WebRedirectsToPage", "/web", http.StatusOK, `<script type="module" src="app.js">`},
			// Without a token there is no sign-in, so nothing to sign out of.
			{"WebNoSignOut", "/web/", http.StatusOK, `id="sign-out" class="small" hidden>`},
			{"WebAsset", "/web/session.js", http.StatusOK, "export class Session"},
			{"WebUnknownAsset", "/web/missing.js", http.StatusNotFound, ""},
			{"Protocol", "/health", http.StatusOK, `{"status":"healthy"}`},
			{"ProtocolNotFound", "/website", http.StatusNotFound, `{"detail":"Not Found"}`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res, err := http.Get(base + tc.path)
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				body, err := io.ReadAll(res.Body)
				if err != nil {
					t.Fatal(err)
				}
				if res.StatusCode != tc.status || !strings.Contains(string(body), tc.contains) {
					t.Errorf("GET %s = %d %.200q, want %d containing %q", tc.path, res.StatusCode, body, tc.status, tc.contains)
				}
			})
		}
	})
	if !started {
		t.Fatalf("serve ended before listening: %v\n%s", err, stderr)
	}
	if err != nil {
		t.Errorf("serve: %v\n%s", err, stderr)
	}
}

// TestServeCommand_CORS: with a token and --allowed-origins, a page of an
// allowed origin can use the server from a browser: its preflight, which
// carries no credentials, is answered, and the refusal of a request
// without the token is one the page can read.
func TestServeCommand_CORS(t *testing.T) {
	const ui = "https://ui.example"
	stderr, err := serveBriefly(t, []string{"--token", "s3cret", "--allowed-origins", ui}, func(base string) {
		do := func(method string, header map[string]string) *http.Response {
			t.Helper()
			req, _ := http.NewRequest(method, base+"/mcp", nil)
			for k, v := range header {
				req.Header.Set(k, v)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			return res
		}
		res := do(http.MethodOptions, map[string]string{"Origin": ui, "Access-Control-Request-Method": "POST",
			"Access-Control-Request-Headers": "authorization,content-type,mcp-session-id"})
		if res.StatusCode/100 != 2 || res.Header.Get("Access-Control-Allow-Origin") != ui {
			t.Errorf("preflight of POST /mcp from %s: %d %v", ui, res.StatusCode, res.Header)
		}
		res = do(http.MethodPost, map[string]string{"Origin": ui, "Content-Type": "application/json"})
		if res.StatusCode != http.StatusUnauthorized || res.Header.Get("Access-Control-Allow-Origin") != ui {
			t.Errorf("POST /mcp from %s without the token: %d %v, want 401 the page can read", ui, res.StatusCode, res.Header)
		}
	})
	if err != nil {
		t.Errorf("serve: %v\n%s", err, stderr)
	}
}

// TestServeCommand_SchemaDoesNotApply: a world whose schema does not apply
// is refused at startup, naming the world and SQLite's error, instead of
// serving a /ready that every reset then fails.
func TestServeCommand_SchemaDoesNotApply(t *testing.T) {
	broken := env.NewWorld(env.WorldSpec{Name: "broken", Version: "1.0.0",
		Schema: `CREATE TABLE b (id TEXT PRIMARY KEY, x INTEGR NOT NULL,) STRICT;`})
	m := New(broken)
	m.Stdout, m.Stderr = io.Discard, io.Discard
	cmd := &ServeCommand{m: m, Listening: func(string) { t.Error("serve started with a schema that does not apply") }}
	err := cmd.Run(context.Background(), []string{"--addr", "127.0.0.1:0", "--instances", t.TempDir(), "--log-level", "error"})
	want := `world broken: the schema does not apply: sqlitestore: near ")": syntax error`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("serve: %v, want an error saying %s", err, want)
	}
}

// TestServeCommand_FixturesDirNotThere: serve of a --fixtures directory
// that is not there starts, for fixtures may arrive later, but warns that
// it serves no fixture, where before a mistyped path served none silently.
func TestServeCommand_FixturesDirNotThere(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "stock", Version: "1.0.0", Schema: `CREATE TABLE items (id TEXT PRIMARY KEY) STRICT;`})
	var stderr testfs.Buffer
	m := New(w)
	m.Stdout, m.Stderr = io.Discard, &stderr
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	missing := filepath.Join(t.TempDir(), "fixtrues")
	cmd := &ServeCommand{m: m, Listening: func(string) { cancel() }}
	if err := cmd.Run(ctx, []string{"--addr", "127.0.0.1:0", "--instances", t.TempDir(), "--fixtures", missing, "--log-level", "warn"}); err != nil {
		t.Fatalf("serve: %v", err)
	}
	want := `"level":"WARN","msg":"serve: the --fixtures directory is not there (yet): no fixture is served until it is","dir":"` + missing + `"`
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("serve's log does not warn %q:\n%s", want, stderr.String())
	}
}

// TestServeCommand_EmbeddedTasksError: a tasks file embedded in the world
// that does not load refuses the start, naming the embedded file and the
// line, not a copy on disk.
func TestServeCommand_EmbeddedTasksError(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "stock", Version: "1.0.0", Schema: `CREATE TABLE items (id TEXT PRIMARY KEY) STRICT;`,
		Fixtures: fstest.MapFS{"tasks.yaml": {Data: []byte("tasks:\n  - id: t\n    instruction: x\n    checks:\n      - sql: SELECT 1\n        wieght: 2\n")}}})
	m := New(w)
	m.Stdout, m.Stderr = io.Discard, io.Discard
	cmd := &ServeCommand{m: m, Listening: func(string) { t.Error("serve started with a tasks file that does not load") }}
	err := cmd.Run(context.Background(), []string{"--addr", "127.0.0.1:0", "--instances", t.TempDir(), "--log-level", "error"})
	want := "app: tasks: stock embedded fixtures/tasks.yaml:6: tasks[0].checks[0].wieght: unknown key"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("serve: %v, want an error starting %q", err, want)
	}
}

// TestServeCommand_ShutdownCutsSlowBodies: a client still sending a body
// when --shutdown-timeout passes has its connection cut and logged, and
// serve exits cleanly, since every session had ended.
func TestServeCommand_ShutdownCutsSlowBodies(t *testing.T) {
	var conn net.Conn
	stderr, err := serveBriefly(t, []string{"--shutdown-timeout", "300ms", "--read-timeout", "1m", "--log-level", "warn"}, func(base string) {
		var derr error
		conn, derr = net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if derr != nil {
			t.Fatal(derr)
		}
		fmt.Fprintf(conn, "POST /reset HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"seed\":")
		time.Sleep(100 * time.Millisecond) // the server is reading the body
	})
	if conn != nil {
		defer conn.Close()
	}
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "connections still open at --shutdown-timeout were closed") {
		t.Errorf("the cut connection was not logged:\n%s", stderr)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, rerr := conn.Read(make([]byte, 1)); rerr == nil {
		t.Error("the slow client's connection is still open")
	}
}

// stuckWorld's tool "stuck" sends a channel on stuckCalls and runs until
// it is closed, whatever happens to its call.
var (
	stuckWorld = env.NewWorld(env.WorldSpec{Name: "stuck", Version: "1.0.0", Schema: `CREATE TABLE notes (id INTEGER PRIMARY KEY) STRICT;`})
	stuckCalls = make(chan chan struct{})
	_          = env.Tool(stuckWorld, "stuck", "Run until the test releases the call.", func(c *env.Ctx, _ struct{}) (struct{}, error) {
		release := make(chan struct{})
		stuckCalls <- release
		<-release
		return struct{}{}, nil
	})
)

// TestServeCommand_ShutdownTimeoutTooShort: a session whose step outlasts
// --shutdown-timeout is neither checkpointed nor closed, and serve's error
// names the flag and says so, where it said only "openenv: shutdown:
// context deadline exceeded".
func TestServeCommand_ShutdownTimeoutTooShort(t *testing.T) {
	var stderr bytes.Buffer
	release, err := shutDownWhileStuck(t, t.TempDir(), "error", &stderr)
	close(release)
	const want = "--shutdown-timeout 300ms (SEAHAVEN_SHUTDOWN_TIMEOUT) was too short for the shutdown: openenv: shutdown: context deadline exceeded before the sessions were done; of 1: 0 checkpointed, 1 not checkpointed as the shutdown ended first"
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "1 still closing") {
		t.Errorf("serve: %v, want an error starting %q and saying the session is still closing", err, want)
	}
}

// TestServeCommand_ShutdownLeavesClosingInstances: the instance of a
// session still closing when --shutdown-timeout passes (its step outlasts
// it) keeps its files, and the log says so, where serve removed the
// instance directory from under it: the close of a recording episode then
// could not read its final state, and serve spent seconds removing the
// files of hundreds of instances before it exited.
func TestServeCommand_ShutdownLeavesClosingInstances(t *testing.T) {
	var stderr testfs.Buffer
	instances := t.TempDir()
	release, err := shutDownWhileStuck(t, instances, "warn", &stderr)
	defer close(release)
	if err == nil {
		t.Error("serve: nil, want the shutdown timeout's error")
	}
	files, err := filepath.Glob(filepath.Join(instances, "*", "seahaven-inst-*", "state.sqlite"))
	if err != nil || len(files) != 1 {
		t.Errorf("the instance files of the session still closing: %q (%v), want its state.sqlite left", files, err)
	}
	if logs := stderr.String(); !strings.Contains(logs, `"msg":"app: instances still closing`) || !strings.Contains(logs, `"instances":1`) {
		t.Errorf("serve logged:\n%s\nwant a line saying one instance is still closing", logs)
	}
}

// shutDownWhileStuck serves stuckWorld with --shutdown-timeout 300ms, its
// instances under instances, logging at level to stderr; starts an HTTP
// session whose step blocks in the stuck tool; and shuts the server down.
// It returns the channel whose close releases the step, and serve's error.
func shutDownWhileStuck(t *testing.T, instances, level string, stderr io.Writer) (chan struct{}, error) {
	t.Helper()
	m := New(stuckWorld)
	m.Stdout, m.Stderr = io.Discard, stderr
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc, errc := make(chan string, 1), make(chan error, 1)
	cmd := &ServeCommand{m: m, Listening: func(addr string) { addrc <- addr }}
	go func() {
		errc <- cmd.Run(ctx, []string{"--addr", "127.0.0.1:0", "--instances", instances, "--checkpoints", t.TempDir(), "--log-level", level, "--shutdown-timeout", "300ms"})
	}()
	var base string
	select {
	case addr := <-addrc:
		base = "http://" + addr
	case err := <-errc:
		t.Fatalf("serve: %v\n%s", err, stderr)
	}
	post := func(path, body string) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Seahaven-Session", "stuck")
		return http.DefaultClient.Do(req)
	}
	resp, err := post("/reset", `{}`)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("reset: %v %v", resp, err)
	}
	resp.Body.Close()
	go func() {
		if resp, err := post("/step", `{"action":{"type":"call_tool","tool_name":"stuck","arguments":{}}}`); err == nil {
			resp.Body.Close()
		}
	}()
	release := <-stuckCalls
	cancel()
	return release, <-errc
}

// TestServeCommand_LogsDefaultFixture: the startup line names the fixture
// a reset that names none starts from: --fixture when given, else the
// world's DefaultFixture.
func TestServeCommand_LogsDefaultFixture(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string // serve's flags
		want string   // in the "serving" line
	}{
		{"WorldDefault", nil, "default_fixture=demo"},
		{"Flag", []string{"--fixture", "other"}, "default_fixture=other"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := env.NewWorld(env.WorldSpec{Name: "stock", Version: "1.0.0", Schema: `CREATE TABLE items (id TEXT PRIMARY KEY) STRICT;`,
				DefaultFixture: "demo"})
			dir := compositiontest.Fixture(t, w, composition.Options{}, "demo", func(*composition.Instance) {})
			inst := compositiontest.Open(t, w, composition.Options{})
			if _, err := inst.Freeze(context.Background(), "other", "", composition.FreezeOptions{FixturesDir: dir}); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			m := New(w)
			m.Stdout, m.Stderr = io.Discard, &stderr
			ctx, cancel := context.WithCancel(context.Background())
			cmd := &ServeCommand{m: m, Listening: func(string) { cancel() }}
			err := cmd.Run(ctx, append([]string{"--addr", "127.0.0.1:0", "--instances", t.TempDir(), "--fixtures", dir, "--log-format", "text"}, tt.args...))
			if err != nil {
				t.Fatalf("serve: %v\n%s", err, &stderr)
			}
			var line string
			for l := range strings.Lines(stderr.String()) {
				if strings.Contains(l, "msg=serving") {
					line = l
				}
			}
			if !strings.Contains(line, " "+tt.want+" ") {
				t.Errorf("serving line %q, want %s", line, tt.want)
			}
		})
	}
}
