//go:build linux

package cli

import (
	"fmt"
	"net"
	"net/http"
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
// is answered 503 too. It counts the requests of each method, path and
// session.
type fakeReplica struct {
	name   string
	mu     sync.Mutex
	refuse map[string]bool // sessions whose resets and steps are answered 503
	seen   map[string]int  // requests by "METHOD /path session"
}

func (f *fakeReplica) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Seahaven-Replica", f.name)
	f.mu.Lock()
	f.seen[r.Method+" "+r.URL.Path+" "+r.Header.Get("X-Seahaven-Session")]++
	refused := f.refuse[r.Header.Get("X-Seahaven-Session")]
	f.mu.Unlock()
	switch r.URL.Path {
	case "/health", "/ready", "/accepting":
		fmt.Fprint(w, `{"status":"ok"}`)
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
// and b, on loopback, once it answers; do sends a request with an empty
// JSON body through it (with X-Seahaven-Session: session, unless "") and
// returns the status and the replica that answered.
func composeProxy(t *testing.T) (replicas map[string]*fakeReplica, do func(method, path, session string) (int, string)) {
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
	return replicas, do
}

// TestHAProxy_RetriesARefusedReset runs deploy/compose/haproxy.cfg over two
// fake replicas on loopback. The reset of an HTTP session the proxy knows
// (here: the restore of a session its draining replica checkpointed, sent
// back to that replica while it is still /ready) that its replica refuses
// with 503 is passed to the other replica, where before the client got the
// 503; a step its replica refuses is not sent again, so a step cannot run
// twice.
func TestHAProxy_RetriesARefusedReset(t *testing.T) {
	replicas, do := composeProxy(t)
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
	replicas, do := composeProxy(t)
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
