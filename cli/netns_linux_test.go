//go:build linux

package cli

import (
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seahaven/seahaven/internal/testfs"
	"golang.org/x/sys/unix"
)

// The cluster of TestCluster: network namespaces, the replicas and HAProxy
// in them, and a client that dials from its own.

// The cluster test's addresses: replica k at 10.213.k.2, the proxy at
// 10.213.k.1 facing it and 10.213.9.1 facing the client at 10.213.9.2.
const (
	clusterReplicas = 3
	clusterProxy    = "10.213.9.1:8000"
	clusterPort     = 8000
)

// clusterToken is the replicas' bearer token.
const clusterToken = "cluster-test-token"

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// cluster is three seahaven replicas, HAProxy and a client, each in a
// network namespace of its own.
type cluster struct {
	t        *testing.T
	bin      string
	prefix   string   // of the namespaces' names
	args     []string // the replicas' flags
	replicas []*served
	retired  [][]*served // replica k's earlier processes, of which replicas[k] is a restart
	haproxy  *exec.Cmd
	proxyCfg string         // the configuration HAProxy runs
	proxyOut *testfs.Buffer // HAProxy's log, of every process
	stats    string         // HAProxy's stats socket (added to the configuration)
	client   *http.Client   // dials from the client's namespace
}

// ns names a namespace of the cluster: r1..r3, px, cl.
func (c *cluster) ns(name string) string { return c.prefix + "-" + name }

func (c *cluster) replicaAddr(k int) string { return fmt.Sprintf("10.213.%d.2:%d", k, clusterPort) }

// ip runs an ip command, failing the test when it fails.
func (c *cluster) ip(args ...string) {
	c.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		c.t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// newCluster makes the namespaces and links, starts the replicas and
// HAProxy with the project's configuration, its servers replaced by the
// replicas. It skips the test where namespaces cannot be made, unless CI
// is set: CI runs it.
func newCluster(t *testing.T, args ...string) *cluster {
	skip := t.Skipf
	if os.Getenv("CI") != "" {
		skip = t.Fatalf
	}
	if os.Geteuid() != 0 {
		skip("the cluster test makes network namespaces, which needs root (CI runs as root)")
	}
	if _, err := exec.LookPath("haproxy"); err != nil {
		skip("the cluster test needs HAProxy (Debian package haproxy; .ci/run installs it)")
	}
	c := &cluster{t: t, prefix: fmt.Sprintf("shc%d", os.Getpid()%100000)}
	if out, err := exec.Command("ip", "netns", "add", c.ns("px")).CombinedOutput(); err != nil {
		skip("cannot make a network namespace here: %v: %s", err, out)
	}
	names := []string{"px", "cl"}
	for k := 1; k <= clusterReplicas; k++ {
		names = append(names, fmt.Sprintf("r%d", k))
	}
	t.Cleanup(func() {
		for _, n := range names {
			exec.Command("ip", "netns", "del", c.ns(n)).Run()
		}
	})
	for _, n := range names[1:] {
		c.ip("netns", "add", c.ns(n))
	}
	for _, n := range names {
		c.ip("-n", c.ns(n), "link", "set", "lo", "up")
	}
	link := func(ns string, subnet int) {
		a, b := fmt.Sprintf("shv%da", subnet), fmt.Sprintf("shv%db", subnet)
		c.ip("link", "add", a, "netns", c.ns(ns), "type", "veth", "peer", "name", b, "netns", c.ns("px"))
		c.ip("-n", c.ns(ns), "addr", "add", fmt.Sprintf("10.213.%d.2/24", subnet), "dev", a)
		c.ip("-n", c.ns("px"), "addr", "add", fmt.Sprintf("10.213.%d.1/24", subnet), "dev", b)
		c.ip("-n", c.ns(ns), "link", "set", a, "up")
		c.ip("-n", c.ns("px"), "link", "set", b, "up")
		c.ip("-n", c.ns(ns), "route", "add", "default", "via", fmt.Sprintf("10.213.%d.1", subnet))
	}
	for k := 1; k <= clusterReplicas; k++ {
		link(fmt.Sprintf("r%d", k), k)
	}
	link("cl", 9)
	c.client = &http.Client{Timeout: 30 * time.Second, Transport: bearer{clusterToken, &http.Transport{DialContext: c.dialIn(c.ns("cl")), MaxIdleConnsPerHost: 256}}}

	c.bin = buildSeahaven(t)
	ckdir := t.TempDir()
	c.args = []string{"--world", "company", "--token", clusterToken, "--checkpoints", ckdir, "--checkpoint-every", "5", "--max-sessions", "1024",
		"--shutdown-timeout", "30s", "--log-level", "info"}
	c.args = append(c.args, args...) // the test's own, which win
	c.replicas = make([]*served, clusterReplicas+1)
	for k := 1; k <= clusterReplicas; k++ {
		c.start(k)
	}
	c.startHAProxy()
	return c
}

// drainedReplica is the replica TestCluster drains.
const drainedReplica = 2

// cpus returns the taskset prefix that pins replica k (0: HAProxy): the
// drained replica on the last CPU, every other process on the rest, as
// if the drained replica had a host of its own; nothing on one CPU.
func cpus(k int) []string {
	n := runtime.NumCPU()
	if n < 2 {
		return nil
	}
	if k == drainedReplica {
		return []string{"taskset", "-c", fmt.Sprint(n - 1)}
	}
	return []string{"taskset", "-c", fmt.Sprintf("0-%d", n-2)}
}

// start starts replica k (again).
func (c *cluster) start(k int) {
	c.t.Helper()
	args := append(slices.Clone(c.args), "--addr", c.replicaAddr(k), "--replica", fmt.Sprintf("r%d", k), "--instances", c.t.TempDir())
	wrap := append([]string{"ip", "netns", "exec", c.ns(fmt.Sprintf("r%d", k))}, cpus(k)...)
	if c.retired == nil {
		c.retired = make([][]*served, clusterReplicas+1)
	}
	if c.replicas[k] != nil {
		c.retired[k] = append(c.retired[k], c.replicas[k])
	}
	c.replicas[k] = startServeCmd(c.t, "", wrap, c.bin, args...)
}

// startHAProxy runs deploy/compose/haproxy.cfg in the proxy's namespace,
// with the client-facing address and the replicas as its servers.
func (c *cluster) startHAProxy() {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "compose", "haproxy.cfg"))
	if err != nil {
		c.t.Fatal(err)
	}
	var servers []string
	for k := 1; k <= clusterReplicas; k++ {
		servers = append(servers, fmt.Sprintf("    server r%d %s check", k, c.replicaAddr(k)))
	}
	cfg := string(b)
	cfg = regexp.MustCompile(`(?m)^resolvers docker\n(    .*\n)*`).ReplaceAllString(cfg, "")
	cfg = regexp.MustCompile(`(?m)^    server-template .*$`).ReplaceAllString(cfg, strings.Join(servers, "\n"))
	cfg = strings.Replace(cfg, "bind :8000", "bind "+clusterProxy, 1)
	c.stats = filepath.Join(c.t.TempDir(), "haproxy.sock")
	cfg = strings.Replace(cfg, "\nglobal\n", "\nglobal\n    stats socket "+c.stats+" level operator\n", 1)
	if regexp.MustCompile(`(?m)^\s*(server-template|resolvers)`).MatchString(cfg) || !strings.Contains(cfg, "bind "+clusterProxy) || !strings.Contains(cfg, "stats socket") {
		c.t.Fatalf("the HAProxy configuration did not take the cluster's servers:\n%s", cfg)
	}
	c.proxyCfg = filepath.Join(c.t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(c.proxyCfg, []byte(cfg), 0o644); err != nil {
		c.t.Fatal(err)
	}
	c.proxyOut = new(testfs.Buffer)
	out := c.proxyOut
	c.haproxy = c.runHAProxy()
	c.t.Cleanup(func() {
		c.haproxy.Process.Kill()
		c.haproxy.Wait()
		if c.t.Failed() {
			lines := strings.Split(out.String(), "\n")
			c.t.Logf("HAProxy's log, its last lines:\n%s", strings.Join(lines[max(0, len(lines)-300):], "\n"))
			for k, r := range c.replicas {
				if r != nil {
					lines := strings.Split(r.log(), "\n")
					c.t.Logf("r%d's log, its last lines:\n%s", k, strings.Join(lines[max(0, len(lines)-40):], "\n"))
				}
			}
		}
	})
	c.waitHAProxy()
}

// runHAProxy starts an HAProxy process in the proxy's namespace with the
// cluster's configuration and the extra arguments.
func (c *cluster) runHAProxy(extra ...string) *exec.Cmd {
	c.t.Helper()
	argv := append(append([]string{"ip", "netns", "exec", c.ns("px")}, cpus(0)...), "haproxy", "-db", "-f", c.proxyCfg)
	cmd := exec.Command(argv[0], append(argv[1:], extra...)...)
	cmd.Stdout, cmd.Stderr = c.proxyOut, c.proxyOut
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	return cmd
}

// reloadHAProxy reloads HAProxy as an operator applying a change does: a
// new process takes over from the running one (-sf), which finishes its
// connections and exits. It returns once the old process has exited.
func (c *cluster) reloadHAProxy() {
	c.t.Helper()
	// A process hands its tables over (peers) only once its own start-up
	// resync, from the process it replaced if any, is over: its resync
	// timeout has passed, a few seconds after it started.
	deadline := time.Now().Add(crashWait)
	for peers := c.admin("show peers"); strings.TrimSpace(peers) != "" && !strings.Contains(peers, "resync_timeout=<PAST>"); peers = c.admin("show peers") {
		if time.Now().After(deadline) {
			c.t.Fatalf("HAProxy's peers did not end their start-up resync within %s:\n%s", crashWait, c.admin("show peers"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	old := c.haproxy
	// ip netns exec and taskset exec HAProxy: the command's process is it.
	c.haproxy = c.runHAProxy("-sf", strconv.Itoa(old.Process.Pid))
	c.client.CloseIdleConnections()
	old.Wait()
	c.waitHAProxy()
}

// waitHAProxy waits for HAProxy to answer /health.
func (c *cluster) waitHAProxy() {
	c.t.Helper()
	deadline := time.Now().Add(crashWait)
	for {
		resp, err := c.client.Get("http://" + clusterProxy + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("HAProxy did not answer within %s: %v\n%s", crashWait, err, c.proxyOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// admin sends a command to HAProxy's stats socket and returns its answer.
func (c *cluster) admin(command string) string {
	c.t.Helper()
	conn, err := net.Dial("unix", c.stats)
	if err != nil {
		c.t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, command+"\n"); err != nil {
		c.t.Fatal(err)
	}
	out, err := io.ReadAll(conn)
	if err != nil {
		c.t.Fatalf("HAProxy's %s: %v", command, err)
	}
	return string(out)
}

// sessions returns how many connections HAProxy holds to server in
// backend (the scur of its stats).
func (c *cluster) sessions(backend, server string) int {
	c.t.Helper()
	scur := c.stat(backend, server, 4)
	n, err := strconv.Atoi(scur)
	if err != nil {
		c.t.Fatalf("HAProxy's stats: %s/%s scur %q", backend, server, scur)
	}
	return n
}

// stat returns field i of server's row in backend in HAProxy's stats (#
// pxname,svname,qcur,qmax,scur,…; 17 is its status: UP, DOWN, …).
func (c *cluster) stat(backend, server string, i int) string {
	c.t.Helper()
	r := csv.NewReader(strings.NewReader(c.admin("show stat")))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		c.t.Fatalf("HAProxy's stats: %v", err)
	}
	for _, row := range rows {
		if len(row) > i && row[0] == backend && row[1] == server {
			return row[i]
		}
	}
	c.t.Fatalf("HAProxy's stats have no field %d of %s/%s", i, backend, server)
	return ""
}

// dialIn returns a dial function whose sockets are made in the network
// namespace name: the dialling goroutine's thread joins it for the
// socket's creation, then returns to its own.
func (c *cluster) dialIn(name string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		runtime.LockOSThread()
		self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			return nil, err
		}
		defer unix.Close(self)
		target, err := unix.Open("/run/netns/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			return nil, err
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			return nil, err
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, addr)
		if unix.Setns(self, unix.CLONE_NEWNET) != nil {
			// The thread stays in the namespace: it ends with the
			// goroutine (locked, never unlocked).
			return conn, err
		}
		runtime.UnlockOSThread()
		return conn, err
	}
}

// history describes w and the connections it continues: when each was
// opened, on which replica, from which client address, and what HAProxy
// and the replica logged of it (a restored session's lines are found
// through its restore's checkpoint), whether that replica's process still
// runs, then what the replicas logged of sessions that ended otherwise
// than by their clients, and the first lines each wrote other than its
// log (a panic, a race report).
func (c *cluster) history(w *wsSession) string {
	var b strings.Builder
	proxyLog := strings.Split(c.proxyOut.String(), "\n")
	for ; w != nil; w = w.prev {
		fmt.Fprintf(&b, "connection from %s to %s, opened at %s", w.local, w.replica, w.dialed.Format("15:04:05.000"))
		if w.restored != "" {
			fmt.Fprintf(&b, ", restoring checkpoint %s", w.restored)
		}
		b.WriteString(":\n")
		for _, l := range proxyLog {
			if w.local != "" && strings.HasPrefix(l, w.local+" ") {
				fmt.Fprintf(&b, "  HAProxy: %s\n", l)
			}
		}
		var k int
		if _, err := fmt.Sscanf(w.replica, "r%d", &k); err != nil || k < 1 || k > clusterReplicas || c.replicas[k] == nil {
			continue
		}
		select {
		case err := <-c.replicas[k].done:
			c.replicas[k].done <- err
			fmt.Fprintf(&b, "  %s (its latest process) exited: %v\n", w.replica, err)
		default:
		}
		if w.restored == "" {
			continue
		}
		sum := sha256.Sum256([]byte(w.restored))
		ck := fmt.Sprintf(`"checkpoint":"%s"`, hex.EncodeToString(sum[:6]))
		for _, r := range append(slices.Clone(c.retired[k]), c.replicas[k]) {
			lines := strings.Split(r.log(), "\n")
			for _, l := range lines {
				var m struct{ Msg, Session string }
				if !strings.Contains(l, ck) || json.Unmarshal([]byte(l), &m) != nil || m.Msg != "openenv: restore" || m.Session == "" {
					continue
				}
				for _, l := range lines {
					if strings.Contains(l, `"session":"`+m.Session+`"`) {
						fmt.Fprintf(&b, "  %s: %s\n", w.replica, l)
					}
				}
			}
		}
	}
	for k, r := range c.replicas {
		if r == nil {
			continue
		}
		for _, r := range append(slices.Clone(c.retired[k]), r) {
			plain := 0 // lines not logged as JSON: a panic, a race report
			for _, l := range strings.Split(r.log(), "\n") {
				var m struct {
					Msg, Reason string
					Steps       int
				}
				if json.Unmarshal([]byte(l), &m) != nil {
					if plain++; l != "" && plain <= 40 {
						fmt.Fprintf(&b, "r%d: %s\n", k, l)
					}
					continue
				}
				// Sessions closed by their clients are left out, but for
				// those that had stepped (not a probe of which replica a
				// new session reaches).
				if strings.Contains(m.Msg, "websocket") || strings.Contains(m.Msg, "idle") ||
					m.Msg == "openenv: session closed" && m.Reason != "" && !strings.HasPrefix(m.Reason, "checkpoint ") && (m.Reason != "connection closed by peer" || m.Steps > 0) {
					fmt.Fprintf(&b, "r%d: %s\n", k, l)
				}
			}
		}
	}
	return b.String()
}
