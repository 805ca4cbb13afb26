package cli

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/examples/worlds/company"
)

// crashWait bounds every wait of the crash test; reaching it is a failure.
const crashWait = 60 * time.Second

// buildFlags are the flags of go build for the binary under test: the race
// detector's when the tests run with it, so the build reuses their
// compiled packages.
var buildFlags []string

// buildSeahaven builds the seahaven command (cmd/seahaven, this package's
// Main over the example worlds) into a temporary directory.
func buildSeahaven(tb testing.TB) string {
	tb.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		tb.Skip("no go command on PATH")
	}
	bin := filepath.Join(tb.TempDir(), "seahaven")
	out, err := exec.Command(goTool, append(append([]string{"build"}, buildFlags...), "-o", bin, "../cmd/seahaven")...).CombinedOutput()
	if err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// served is a `seahaven serve` process.
type served struct {
	cmd  *exec.Cmd
	addr string
	done chan error // receives Wait's result

	mu   sync.Mutex // guards logs
	logs []string
}

// log returns what the process has logged so far.
func (s *served) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.logs, "\n")
}

// childEnv is the environment of a child process: this one's, without the
// SEAHAVEN_ settings, so only the flags configure it.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEAHAVEN_") {
			env = append(env, kv)
		}
	}
	return env
}

// startServe runs `seahaven serve` on a free port and waits until it
// listens. The process is killed at cleanup if it is still running.
func startServe(tb testing.TB, bin string, args ...string) *served {
	tb.Helper()
	return startServeIn(tb, "", bin, args...)
}

// startServeIn is startServe with the process working in dir ("" is this
// process's directory).
func startServeIn(tb testing.TB, dir, bin string, args ...string) *served {
	tb.Helper()
	return startServeCmd(tb, dir, nil, bin, args...)
}

// startServeCmd is startServeIn with the command run through wrap (such
// as "ip netns exec NAME"), which must exec it.
func startServeCmd(tb testing.TB, dir string, wrap []string, bin string, args ...string) *served {
	tb.Helper()
	argv := append(append(append([]string{}, wrap...), bin, "serve", "--addr", "127.0.0.1:0", "--log-format", "json"), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = childEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	s := &served{cmd: cmd, done: make(chan error, 1)}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.logs = append(s.logs, line)
			s.mu.Unlock()
			var m struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &m) == nil && m.Msg == "serving" && m.Addr != "" {
				select {
				case addrc <- m.Addr:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
		s.done <- cmd.Wait()
	}()
	tb.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-s.done
		}
	})
	select {
	case s.addr = <-addrc:
	case err := <-s.done:
		s.done <- err
		tb.Fatalf("seahaven serve exited before listening: %v\n%s", err, s.log())
	case <-time.After(crashWait):
		tb.Fatalf("seahaven serve did not listen within %s\n%s", crashWait, s.log())
	}
	return s
}

// wait waits for the process to exit and returns its error.
func (s *served) wait(tb testing.TB) error {
	tb.Helper()
	select {
	case err := <-s.done:
		return err
	case <-time.After(crashWait):
		tb.Fatalf("seahaven serve did not exit within %s\n%s", crashWait, s.log())
		return nil
	}
}

// hashDir returns the SHA-256 of every file in dir by name.
func hashDir(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		sum := sha256.Sum256(b)
		out[e.Name()] = hex.EncodeToString(sum[:])
	}
	return out
}

// processDirs returns the instance directories under root made by pid, and
// the lock files beside them.
func processDirs(tb testing.TB, root string, pid int) []string {
	tb.Helper()
	found, err := filepath.Glob(filepath.Join(root, strconv.Itoa(pid)+"-*"))
	if err != nil {
		tb.Fatal(err)
	}
	return found
}

// loadSession resets a session and calls tools on it until it has made
// limit calls (no limit when 0), ctx ends or the server goes away, counting
// the calls that succeeded.
func loadSession(ctx context.Context, addr string, seed, limit int, calls *atomic.Int64) error {
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", nil)
	if err != nil {
		return err
	}
	defer c.CloseNow()
	exchange := func(msg string) (string, error) {
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			return "", err
		}
		_, b, err := c.Read(ctx)
		return string(b), err
	}
	if reply, err := exchange(fmt.Sprintf(`{"type":"reset","data":{"seed":%d}}`, seed)); err != nil {
		return err
	} else if !strings.Contains(reply, `"observation"`) {
		return fmt.Errorf("reset: %s", reply)
	}
	for i := 0; limit == 0 || i < limit; i++ {
		msg := fmt.Sprintf(`{"type":"step","data":{"tool_name":"invoice","arguments":{"amount":%d}}}`, i+1)
		if i%2 == 1 {
			msg = `{"type":"step","data":{"tool_name":"chat_send_message","arguments":{"channel":"load","text":"busy"}}}`
		}
		reply, err := exchange(msg)
		if err != nil {
			return err
		}
		if !strings.Contains(reply, `"error":null`) {
			return fmt.Errorf("call: %.300s", reply)
		}
		calls.Add(1)
	}
	return nil
}

// TestServe_KillAndRestart builds the real binary, puts load on it (several
// WebSocket sessions resetting and calling), kills it with SIGKILL, and
// starts it again on the same instance root. The dead process's instance
// directory is left behind by the kill and removed by the restart; the
// fixtures it served from are intact (`seahaven fixtures verify` checks
// their hashes, and their bytes are unchanged); the new server serves; and
// a graceful stop leaves the instance root empty.
func TestServe_KillAndRestart(t *testing.T) {
	bin := buildSeahaven(t)
	root := t.TempDir()
	fixtures := copyAcme(t)
	acme := filepath.Join(fixtures, company.AcmeID)
	before := hashDir(t, acme)
	args := []string{"--world", "company", "--instances", root, "--fixtures", fixtures, "--log-level", "info"}

	first := startServe(t, bin, args...)
	pid := first.cmd.Process.Pid
	ctx, stopLoad := context.WithCancel(context.Background())
	var calls atomic.Int64
	var wg sync.WaitGroup
	const sessions = 4
	loadErrs := make(chan error, sessions)
	for k := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loadErrs <- loadSession(ctx, first.addr, k, 0, &calls)
		}()
	}
	deadline := time.Now().Add(crashWait)
	for calls.Load() < 10*sessions {
		if time.Now().After(deadline) {
			stopLoad()
			wg.Wait()
			close(loadErrs)
			for err := range loadErrs {
				t.Log(err)
			}
			t.Fatalf("the load made %d calls in %s\n%s", calls.Load(), crashWait, first.log())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Kill it mid-load: calls are in flight on every session.
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := first.wait(t)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the server ended with %v, want killed by SIGKILL", err)
	}
	stopLoad()
	wg.Wait()
	t.Logf("killed pid %d after %d calls", pid, calls.Load())

	left := processDirs(t, root, pid)
	var stale string
	for _, p := range left {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			stale = p
		}
	}
	if stale == "" {
		t.Fatalf("the killed server left no instance directory in %s (found %v): nothing to clean", root, left)
	}
	if ents, err := os.ReadDir(stale); err != nil || len(ents) == 0 {
		t.Fatalf("the killed server's directory %s holds %d instances (%v), want the load's", stale, len(ents), err)
	}

	second := startServe(t, bin, args...)
	if left := processDirs(t, root, pid); len(left) != 0 {
		t.Errorf("after the restart, the killed server's files are still there: %v\n%s", left, second.log())
	}
	var served atomic.Int64
	sctx, cancel := context.WithTimeout(context.Background(), crashWait)
	err = loadSession(sctx, second.addr, 9, 6, &served)
	cancel()
	if err != nil || served.Load() != 6 {
		t.Errorf("the restarted server served no call: %v\n%s", err, second.log())
	}

	verify := exec.Command(bin, "fixtures", "verify", "--world", "company", "--dir", fixtures)
	verify.Env = childEnv()
	out, err := verify.CombinedOutput()
	if err != nil || !strings.Contains(string(out), company.AcmeID) || !strings.Contains(string(out), " ok ") {
		t.Errorf("seahaven fixtures verify: %v\n%s", err, out)
	}
	after := hashDir(t, acme)
	for name, h := range before {
		if after[name] != h {
			t.Errorf("fixture file %s changed: %s, was %s", name, after[name], h)
		}
	}
	if len(after) != len(before) {
		t.Errorf("fixture files %v, were %v", after, before)
	}

	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.wait(t); err != nil {
		t.Errorf("graceful stop: %v\n%s", err, second.log())
	}
	if ents, err := os.ReadDir(root); err != nil || len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("instance root after a graceful stop holds %v (%v), want nothing", names, err)
	}
}

// TestServe_SecondSignal: a second SIGTERM ends a server whose shutdown is
// waiting (here on a request whose body never comes) at once, as a second
// Ctrl-C is expected to; before, the signal was swallowed and the process
// waited for the whole --shutdown-timeout.
func TestServe_SecondSignal(t *testing.T) {
	bin := buildSeahaven(t)
	s := startServe(t, bin, "--world", "company", "--instances", t.TempDir(), "--shutdown-timeout", "10m", "--read-timeout", "10m")
	conn, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The 100 Continue says the handler is reading the body: the request
	// is under way, and the shutdown waits for it.
	fmt.Fprintf(conn, "POST /reset HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n", s.addr)
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.Contains(line, "100 Continue") {
		t.Fatalf("first reply line %q (%v), want 100 Continue", line, err)
	}
	fmt.Fprint(conn, "{")
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !strings.Contains(s.log(), `"shutting down"`); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no shutdown a minute after SIGTERM: %s", s.log())
		}
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		s.done <- err
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
			t.Errorf("the server ended with %v, want killed by the second SIGTERM", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the server still runs a minute after the second SIGTERM")
	}
}
