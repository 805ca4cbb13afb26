package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ServerCommand says how to start the server under test as a subprocess, so
// that its memory and open files are measured apart from the load
// generator's.
type ServerCommand struct {
	// Path is the executable, typically the seahaven binary itself.
	Path string
	// Args are its arguments up to the listen address, such as
	// ["serve", "--world", "company"]. Run appends --addr 127.0.0.1:<port>
	// and --instances <dir>.
	Args []string
	// Env is the subprocess's environment; nil inherits this process's.
	Env []string
	// Stderr receives the server's logs; nil discards them.
	Stderr io.Writer
	// ScratchParent is where Run makes the server's instance root (and
	// removes it afterwards); "" is the OS temp dir. Put it on a memory file
	// system for a server with --storage memory.
	ScratchParent string
}

// server is the server under test: a subprocess Run started, or one at a URL.
type server struct {
	base      string        // http://host:port
	cmd       *exec.Cmd     // nil for --url
	exited    chan struct{} // closed when cmd has exited
	waitErr   error         // cmd's exit status, set before exited closes
	instances string        // the instance root to count, or ""
	scratch   string        // a directory Run made and removes, or ""
	client    *http.Client  // for /debug/runtime and /health

	stopOnce sync.Once
	stopErr  error
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startServer starts sc on a free loopback port with a fresh instance root
// and waits until it answers /health.
func startServer(ctx context.Context, sc *ServerCommand) (*server, error) {
	scratch, err := os.MkdirTemp(sc.ScratchParent, "seahaven-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	instances := filepath.Join(scratch, "instances")
	cmd, addr, err := startProcess(sc, "the server", "--instances", instances)
	if err != nil {
		os.RemoveAll(scratch)
		return nil, err
	}
	s := &server{base: "http://" + addr, cmd: cmd, exited: make(chan struct{}), instances: instances, scratch: scratch, client: statsClient()}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitHealthy(ctx, 60*time.Second); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// startProcess starts sc on a free loopback port: its arguments, then
// --addr 127.0.0.1:<port>, then more. what names it in errors.
func startProcess(sc *ServerCommand, what string, more ...string) (*exec.Cmd, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", fmt.Errorf("bench: finding a free port for %s: %w", what, err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command(sc.Path, append(append(append([]string{}, sc.Args...), "--addr", addr), more...)...)
	cmd.Env = sc.Env
	cmd.Stdout, cmd.Stderr = sc.Stderr, sc.Stderr
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("bench: starting %s: %w", what, err)
	}
	return cmd, addr, nil
}

// openServer returns the server at url, or starts sc when url is "".
func openServer(ctx context.Context, url, instances string, sc *ServerCommand, progressTo io.Writer) (*server, error) {
	if url != "" {
		return remoteServer(ctx, strings.TrimRight(url, "/"), instances)
	}
	progress(progressTo, "starting the server: %s %s", sc.Path, strings.Join(sc.Args, " "))
	return startServer(ctx, sc)
}

// remoteServer is a server already running at base.
func remoteServer(ctx context.Context, base, instances string) (*server, error) {
	s := &server{base: base, instances: instances, client: statsClient()}
	if err := s.waitHealthy(ctx, 2*time.Second); err != nil {
		return nil, err
	}
	return s, nil
}

func statsClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}
}

// waitHealthy polls /health until it answers 200, the subprocess exits, or
// the wait runs out.
func (s *server) waitHealthy(ctx context.Context, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	var last error
	for time.Now().Before(deadline) {
		if s.cmd != nil {
			select {
			case <-s.exited:
				return fmt.Errorf("bench: the server exited before answering /health: %v", s.waitErr)
			default:
			}
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/health", nil)
		res, err := s.client.Do(req)
		if err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", res.Status)
		}
		last = err
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("bench: %s/health did not answer in %s: %v", s.base, wait, last)
}

// stop ends the subprocess (SIGTERM, then SIGKILL after a grace period) and
// removes the scratch directory. Only the first call does anything.
func (s *server) stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stopNow() })
	return s.stopErr
}

func (s *server) stopNow() error {
	var err error
	if s.cmd != nil {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
			err = errors.New("bench: the server did not stop within 30s of SIGTERM and was killed")
		}
	}
	if s.scratch != "" {
		os.RemoveAll(s.scratch)
	}
	return err
}

// Sample is one reading of the server's footprint. A value that could not
// be read is -1.
type Sample struct {
	// RSSBytes is the server's resident memory (VmRSS).
	RSSBytes int64 `json:"rss_bytes"`
	// Goroutines is the server's live goroutines.
	Goroutines int64 `json:"goroutines"`
	// HeapAlloc is the server's live Go heap.
	HeapAlloc int64 `json:"heap_alloc"`
	// OpenFDs is the server's open file descriptors.
	OpenFDs int `json:"open_fds"`
	// Sessions is the server's live sessions.
	Sessions int `json:"sessions"`
	// OpenConnections is the SQLite connections the server's instances hold.
	OpenConnections int `json:"open_sqlite_connections"`
	// ParkedConnections is the SQLite connections the server keeps open for
	// reuse, held by no instance (-1 when the server does not say).
	ParkedConnections int `json:"parked_sqlite_connections"`
	// InstanceDirs is the instance directories on disk.
	InstanceDirs int `json:"instance_dirs"`
	// CPUNanos is the CPU time the server has used (-1 when unknown).
	CPUNanos int64 `json:"cpu_ns"`
}

// runtimeStats is the subset of GET /debug/runtime the bench reads.
type runtimeStats struct {
	PID             int    `json:"pid"`
	Goroutines      int64  `json:"goroutines"`
	HeapAlloc       int64  `json:"heap_alloc"`
	Sessions        int    `json:"sessions"`
	OpenConnections int    `json:"open_sqlite_connections"`
	Parked          *int   `json:"parked_sqlite_connections"`
	InstanceDirs    int    `json:"instance_dirs"`
	RSSBytes        int64  `json:"rss_bytes"`
	OpenFDs         int    `json:"open_fds"`
	CPUNanos        *int64 `json:"cpu_ns"`
}

// sample reads the server's footprint: GET /debug/runtime (after a garbage
// collection when gc is set, so the heap is live objects only), then its
// instance directories from the instance root.
func (s *server) sample(ctx context.Context, gc bool) (Sample, error) {
	path := "/debug/runtime"
	if gc {
		path += "?gc=1"
	}
	var rs runtimeStats
	if err := s.getJSON(ctx, path, &rs); err != nil {
		return Sample{}, err
	}
	out := Sample{
		RSSBytes: rs.RSSBytes, Goroutines: rs.Goroutines, HeapAlloc: rs.HeapAlloc, OpenFDs: rs.OpenFDs,
		Sessions: rs.Sessions, OpenConnections: rs.OpenConnections, ParkedConnections: -1, InstanceDirs: rs.InstanceDirs,
	}
	if rs.Parked != nil { // a server older than parked connections omits it
		out.ParkedConnections = *rs.Parked
	}
	out.CPUNanos = -1
	if rs.CPUNanos != nil {
		out.CPUNanos = *rs.CPUNanos
	}
	if s.instances != "" {
		if n, err := countInstanceDirs(s.instances); err == nil {
			out.InstanceDirs = n
		}
	}
	return out, nil
}

// getJSON decodes the JSON body of GET path into v.
func (s *server) getJSON(ctx context.Context, path string, v any) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
	res, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("bench: GET %s: %w", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("bench: GET %s: %s", path, res.Status)
	}
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		return fmt.Errorf("bench: GET %s: %w", path, err)
	}
	return nil
}

// describe returns the world the server serves (GET /metadata) and the
// fixture a reset naming none starts from (GET /fixtures; "" for genesis).
func (s *server) describe(ctx context.Context) (world, fixture string, err error) {
	var meta struct{ Name string }
	if err := s.getJSON(ctx, "/metadata", &meta); err != nil {
		return "", "", err
	}
	var fixtures []struct {
		ID      string
		Default bool
	}
	if err := s.getJSON(ctx, "/fixtures", &fixtures); err != nil {
		return "", "", err
	}
	for _, f := range fixtures {
		if f.Default {
			fixture = f.ID
		}
	}
	return meta.Name, fixture, nil
}

// countInstanceDirs counts the instance directories under an instance root:
// the directories inside each server process's own directory.
func countInstanceDirs(root string) (int, error) {
	procs, err := os.ReadDir(root)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range procs {
		if !p.IsDir() {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(root, p.Name()))
		if err != nil {
			return 0, err
		}
		for _, e := range ents {
			if e.IsDir() {
				n++
			}
		}
	}
	return n, nil
}
