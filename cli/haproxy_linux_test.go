//go:build linux

package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seahaven/seahaven/internal/testfs"
)

// fakeReplica answers as a replica behind the proxy: every health route
// 200, and every request with its name in X-Seahaven-Replica. A reset
// makes the session of its X-Seahaven-Session header live here (the header
// in the reply), unless refuse says to answer it 503 as a draining
// replica does, before doing anything. A step of a session refuse names
// is answered 503 too. On POST /mcp it speaks OpenEnv's MCP dialect:
// openenv/session/create makes a session named after the replica, its id
// in the result and in X-Seahaven-Session, and any other method is
// answered with an empty result. It counts the requests of each method,
// path and session (the header's, or on /mcp the body's
// params.session_id).
type fakeReplica struct {
	name    string
	mu      sync.Mutex
	refuse  map[string]bool // sessions whose resets and steps are answered 503
	seen    map[string]int  // requests by "METHOD /path session"
	created int             // sessions made by openenv/session/create
}

func (f *fakeReplica) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Seahaven-Replica", f.name)
	session := r.Header.Get("X-Seahaven-Session")
	var rpc struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			SessionID string `json:"session_id"`
		} `json:"params"`
	}
	if r.URL.Path == "/mcp" {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		json.Unmarshal(body, &rpc)
		session = rpc.Params.SessionID
	}
	f.mu.Lock()
	f.seen[r.Method+" "+r.URL.Path+" "+session]++
	refused := f.refuse[session]
	f.mu.Unlock()
	switch r.URL.Path {
	case "/health", "/ready", "/accepting":
		fmt.Fprint(w, `{"status":"ok"}`)
	case "/mcp":
		result := "{}"
		if rpc.Method == "openenv/session/create" {
			f.mu.Lock()
			f.created++
			id := fmt.Sprintf("%s-mcp-%d", f.name, f.created)
			f.mu.Unlock()
			w.Header().Set("X-Seahaven-Session", id)
			result = `{"session_id":"` + id + `"}`
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, rpc.ID, result)
	case "/reset", "/step":
		if refused {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"detail":"Server is shutting down. Cannot accept new sessions.","code":"SESSION_ERROR"}`)
			return
		}
		w.Header().Set("X-Seahaven-Session", r.Header.Get("X-Seahaven-Session"))
		fmt.Fprint(w, `{"observation":{},"reward":null,"done":false}`)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeReplica) count(route string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[route]
}

// freeLoopbackAddr returns a loopback address with a port free now.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// composeProxy runs deploy/compose/haproxy.cfg over two fake replicas, a
// and b, on loopback, once it answers at addr; do sends a request with an
// empty JSON body through it (with X-Seahaven-Session: session, unless "")
// and returns the status and the replica that answered.
func composeProxy(t *testing.T) (replicas map[string]*fakeReplica, do func(method, path, session string) (int, string), addr string) {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("CI") != "" {
		skip = t.Fatalf
	}
	if _, err := exec.LookPath("haproxy"); err != nil {
		skip("the test needs HAProxy (Debian package haproxy; .ci/run installs it)")
	}
	replicas = map[string]*fakeReplica{}
	var servers []string
	for _, name := range []string{"a", "b"} {
		f := &fakeReplica{name: name, refuse: map[string]bool{}, seen: map[string]int{}}
		ts := httptest.NewServer(f)
		t.Cleanup(ts.Close)
		replicas[name] = f
		servers = append(servers, fmt.Sprintf("    server %s %s check", name, ts.Listener.Addr()))
	}
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "compose", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := freeLoopbackAddr(t)
	cfg := string(b)
	cfg = regexp.MustCompile(`(?m)^resolvers docker\n(    .*\n)*`).ReplaceAllString(cfg, "")
	cfg = regexp.MustCompile(`(?m)^    server-template .*$`).ReplaceAllString(cfg, strings.Join(servers, "\n"))
	cfg = strings.Replace(cfg, "bind :8000", "bind "+proxy, 1)
	cfg = regexp.MustCompile(`(?m)^(    peer seahaven-proxy) .*$`).ReplaceAllString(cfg, "$1 "+freeLoopbackAddr(t))
	if regexp.MustCompile(`(?m)^\s*(server-template|resolvers)`).MatchString(cfg) || !strings.Contains(cfg, "bind "+proxy) {
		t.Fatalf("the HAProxy configuration did not take the fake replicas:\n%s", cfg)
	}
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out := new(testfs.Buffer)
	cmd := exec.Command("haproxy", "-db", "-f", path)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("HAProxy's log:\n%s", out.String())
		}
	})
	client := &http.Client{Timeout: 30 * time.Second}
	do = func(method, path, session string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+proxy+path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if session != "" {
			req.Header.Set("X-Seahaven-Session", session)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("X-Seahaven-Replica")
	}
	deadline := time.Now().Add(crashWait)
	for status, _ := do(http.MethodGet, "/health", ""); status != http.StatusOK; status, _ = do(http.MethodGet, "/health", "") {
		if time.Now().After(deadline) {
			t.Fatalf("HAProxy did not answer within %s", crashWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return replicas, do, proxy
}

// TestHAProxy_RetriesARefusedReset runs deploy/compose/haproxy.cfg over two
// fake replicas on loopback. The reset of an HTTP session the proxy knows
// (here: the restore of a session its draining replica checkpointed, sent
// back to that replica while it is still /ready) that its replica refuses
// with 503 is passed to the other replica, where before the client got the
// 503; a step its replica refuses is not sent again, so a step cannot run
// twice.
func TestHAProxy_RetriesARefusedReset(t *testing.T) {
	replicas, do, _ := composeProxy(t)
	// A session started on replica a (new sessions go round robin).
	session := ""
	for i := range 4 {
		id := fmt.Sprintf("h-%d", i)
		if status, replica := do(http.MethodPost, "/reset", id); status != http.StatusOK {
			t.Fatalf("the first reset of %s: %d %s", id, status, replica)
		} else if replica == "a" {
			session = id
			break
		}
	}
	if session == "" {
		t.Fatal("no session started on replica a")
	}
	a := replicas["a"]
	a.mu.Lock()
	a.refuse[session] = true // a drains: it takes no session now
	a.mu.Unlock()
	if status, replica := do(http.MethodPost, "/reset", session); status != http.StatusOK || replica != "b" {
		t.Errorf("a reset of %s, which a refuses with 503: %d from %q, want 200 from b", session, status, replica)
	}
	// A step of a session the proxy has not seen goes by the hash of its
	// header: one that a refuses is not sent to b.
	for i := range 20 {
		id := fmt.Sprintf("h-step-%d", i)
		a.mu.Lock()
		a.refuse[id] = true
		a.mu.Unlock()
		status, replica := do(http.MethodPost, "/step", id)
		if a.count("POST /step "+id) == 0 {
			continue // hashed to b
		}
		if n := replicas["b"].count("POST /step " + id); status != http.StatusServiceUnavailable || n != 0 {
			t.Errorf("a step a refused: %d from %q, and sent to b %d times", status, replica, n)
		}
		return
	}
	t.Error("no step's session hashed to replica a")
}

// TestHAProxy_RoutesTheURLsSession sends MCP 2026-07-28 requests, which
// name their session in the /mcp URL's session_id and carry no session
// header, through deploy/compose/haproxy.cfg: each goes to the replica
// that last answered that HTTP session, where before they went round
// robin, half of them to a replica that does not hold it.
func TestHAProxy_RoutesTheURLsSession(t *testing.T) {
	replicas, do, _ := composeProxy(t)
	session, other := "", ""
	for i := range 4 {
		id := fmt.Sprintf("u-%d", i)
		if status, replica := do(http.MethodPost, "/reset", id); status != http.StatusOK {
			t.Fatalf("the first reset of %s: %d %s", id, status, replica)
		} else if session == "" {
			session = id
			other = map[string]string{"a": "b", "b": "a"}[replica]
		}
	}
	for range 6 {
		do(http.MethodPost, "/mcp?session_id="+session, "")
	}
	if n := replicas[other].count("POST /mcp "); n != 0 {
		t.Errorf("%d of 6 requests to /mcp?session_id=%s went to replica %s, which does not hold it", n, session, other)
	}
}

// TestHAProxy_RoutesOpenEnvMCPSessions plays OpenEnv MCP sessions
// (openenv/session/create on POST /mcp, then params.session_id in each
// body, no header) through deploy/compose/haproxy.cfg: every request of a
// client that keeps the proxy's cookie, a tools/call over the proxy's
// buffer too, and every small request of a client that keeps none,
// reaches the replica that created the session, where before they went
// round robin, half of them to a replica that does not hold it.
func TestHAProxy_RoutesOpenEnvMCPSessions(t *testing.T) {
	replicas, _, addr := composeProxy(t)
	large := strings.Repeat("x", 40<<10) // over the proxy's 16 KB buffer
	for i := range 8 {
		// Bodies with their length, then chunked (no Content-Length),
		// which the proxy's read of a body cut short must also tell.
		cookies, chunked := i%2 == 0, i >= 4
		client := &http.Client{Timeout: 30 * time.Second}
		if cookies {
			jar, err := cookiejar.New(nil)
			if err != nil {
				t.Fatal(err)
			}
			client.Jar = jar
		}
		post := func(id int, method, params string) (session, replica string) {
			t.Helper()
			body := fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s,"id":%d}`, method, params, id)
			var r io.Reader = strings.NewReader(body)
			if chunked {
				r = io.MultiReader(r) // of no length the client knows
			}
			resp, err := client.Post("http://"+addr+"/mcp", "application/json", r)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var reply struct {
				Result struct {
					SessionID string `json:"session_id"`
				} `json:"result"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&reply); resp.StatusCode != http.StatusOK || err != nil {
				t.Fatalf("%s: %d %v", method, resp.StatusCode, err)
			}
			return reply.Result.SessionID, resp.Header.Get("X-Seahaven-Replica")
		}
		session, home := post(1, "openenv/session/create", "{}")
		if session == "" || !strings.HasPrefix(session, home+"-") {
			t.Fatalf("openenv/session/create: session %q from replica %q", session, home)
		}
		calls := []struct{ method, params string }{
			{"tools/list", `{"session_id":"` + session + `"}`},
			{"tools/call", `{"name":"echo","arguments":{"message":"hi"},"session_id":"` + session + `"}`},
		}
		if cookies {
			calls = append(calls, struct{ method, params string }{"tools/call", `{"name":"echo","arguments":{"message":"` + large + `"},"session_id":"` + session + `"}`})
		}
		calls = append(calls, struct{ method, params string }{"openenv/session/close", `{"session_id":"` + session + `"}`})
		for j, c := range calls {
			if _, replica := post(j+2, c.method, c.params); replica != home {
				t.Errorf("%s of %s (%d bytes of params, cookies kept: %t, chunked: %t) went to replica %q, not %s", c.method, session, len(c.params), cookies, chunked, replica, home)
			}
		}
		other := map[string]string{"a": "b", "b": "a"}[home]
		if n := replicas[other].count("POST /mcp " + session); n != 0 {
			t.Errorf("replica %s got %d requests of %s, which %s holds", other, n, session, home)
		}
		if n := replicas[home].count("POST /mcp " + session); n != len(calls) {
			t.Errorf("replica %s got %d requests of %s, want %d", home, n, session, len(calls))
		}
	}
}
