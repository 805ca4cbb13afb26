package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestDeriveCapacity(t *testing.T) {
	tests := []struct {
		name   string
		limits hostLimits // the host's limits (zero: unknown)
		want   capacity   // the derived defaults
	}{
		{"ThisMachine", hostLimits{NoFile: 20000, NoFileHard: 20000, MaxMapCount: 65530}, capacity{MaxSessions: 14416, MaxOpen: 2048, MaxConns: 1024}},
		{"DefaultSoftLimit", hostLimits{NoFile: 1024, NoFileHard: 1024, MaxMapCount: 65530}, capacity{MaxSessions: 250, MaxOpen: 296, MaxConns: 83}},
		{"FewMapsManyFiles", hostLimits{NoFile: 1 << 20, NoFileHard: 1 << 20, MaxMapCount: 8192}, capacity{MaxSessions: 941489, MaxOpen: 845, MaxConns: 1024}},
		{"MemoryBound", hostLimits{NoFile: 1 << 20, NoFileHard: 1 << 20, MaxMapCount: 8192, MemTotal: 16 << 30}, capacity{MaxSessions: 32768, MaxOpen: 845, MaxConns: 1024}},
		{"Unknown", hostLimits{}, capacity{MaxSessions: noBound, MaxOpen: 2048, MaxConns: 1024}},
		{"Ulimit512", hostLimits{NoFile: 512, NoFileHard: 512, MaxMapCount: 65530}, capacity{MaxSessions: 79, MaxOpen: 90, MaxConns: 25}},
		{"Starved", hostLimits{NoFile: 100, NoFileHard: 100, MaxMapCount: 100}, capacity{MaxSessions: 1, MaxOpen: 1, MaxConns: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := deriveCapacity(tt.limits)
			if got != tt.want {
				t.Fatalf("deriveCapacity(%+v) = %+v, want %+v", tt.limits, got, tt.want)
			}
			if err := checkCapacity(tt.limits, got, DefaultName); err != nil && tt.name != "Starved" {
				t.Errorf("the derived capacity fails its own check: %v", err)
			}
		})
	}
}

func TestCheckCapacity(t *testing.T) {
	here := hostLimits{NoFile: 20000, NoFileHard: 20000, MaxMapCount: 65530}
	tests := []struct {
		name     string
		capacity capacity // what the flags ask for
		contains []string // substrings of the error; none means no error
	}{
		{"Fits", capacity{MaxSessions: 10000, MaxOpen: 2048, MaxConns: 1024}, nil},
		{"TooManySessions", capacity{MaxSessions: 16000, MaxOpen: 2048, MaxConns: 1024}, []string{
			"16000 sessions, 2048 open connections and 1024 HTTP connections need about 19584 file descriptors " +
				"(1 per session, 1 per open SQLite connection and an eighth more pinned by calls in flight, 1 per HTTP connection, 256 reserved), " +
				"but the open-file limit is 20000 (hard limit 20000), of which 18000 are planned (10% is left as headroom). Raise it to 22000",
			"`ulimit -n 22000`", "LimitNOFILE=22000", "--ulimit nofile=22000:22000",
			"These limits fit --max-sessions 14416 --max-open 2048 --max-conns 1024; pass --force to start anyway",
		}},
		{"TooManyConnections", capacity{MaxSessions: 100, MaxOpen: 30000, MaxConns: 1024}, []string{
			"need about 35130 file descriptors",
			"30000 open connections need about 120346 memory maps (3 per open SQLite connection and an eighth more pinned by calls in flight, 2 per parked one, 4096 reserved), " +
				"but vm.max_map_count is 65530, of which 58977 are planned (10% is left as headroom)", "`sudo sysctl -w vm.max_map_count=140000`",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkCapacity(here, tt.capacity, DefaultName)
			if len(tt.contains) == 0 {
				if err != nil {
					t.Fatalf("checkCapacity = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("checkCapacity = nil, want an error")
			}
			for _, s := range tt.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q\ndoes not contain %q", err, s)
				}
			}
		})
	}
}

func TestParseMemTotal(t *testing.T) {
	tests := []struct {
		name    string
		meminfo string // the /proc/meminfo text
		want    uint64 // bytes, 0 for unreadable
	}{
		{"OK", "MemTotal:       24576000 kB\nMemFree:  100 kB\n", 24576000 << 10},
		{"Missing", "MemFree:  100 kB\n", 0},
		{"Malformed", "MemTotal: lots kB\n", 0},
		{"OtherUnit", "MemTotal: 3 GB\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseMemTotal([]byte(tt.meminfo)); got != tt.want {
				t.Errorf("parseMemTotal = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestRoundUp(t *testing.T) {
	tests := []struct{ in, want uint64 }{
		{0, 0}, {7, 7}, {99, 99}, {100, 100}, {101, 110}, {20622, 21000}, {79551, 80000}, {104551, 110000}, {990001, 1000000},
	}
	for _, tt := range tests {
		if got := roundUp(tt.in); got != tt.want {
			t.Errorf("roundUp(%d) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// serveBriefly runs serve with args on a loopback port, calls fn with its
// base URL, then stops it. It returns serve's stderr and error.
func serveBriefly(t *testing.T, args []string, fn func(base string)) (stderr string, err error) {
	t.Helper()
	var errBuf bytes.Buffer
	m := exampleMain()
	m.Stdout, m.Stderr = io.Discard, &errBuf
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan string, 1)
	errc := make(chan error, 1)
	cmd := &ServeCommand{m: m, Listening: func(addr string) { addrc <- addr }}
	go func() {
		errc <- cmd.Run(ctx, append([]string{"--addr", "127.0.0.1:0", "--instances", t.TempDir(), "--log-level", "error"}, args...))
	}()
	select {
	case addr := <-addrc:
		fn("http://" + addr)
		cancel()
		err := <-errc
		return errBuf.String(), err
	case err := <-errc:
		return errBuf.String(), err
	}
}

func TestServeCommand_Limits(t *testing.T) {
	t.Run("Refused", func(t *testing.T) {
		_, err := serveBriefly(t, []string{"--max-sessions", "2000000000"}, func(string) { t.Error("serve started beyond the limits") })
		if err == nil || !strings.Contains(err.Error(), "ulimit -n") || !strings.Contains(err.Error(), "--force") {
			t.Fatalf("err = %v, want the file-descriptor explanation", err)
		}
	})
	t.Run("Forced", func(t *testing.T) {
		started := false
		_, err := serveBriefly(t, []string{"--max-sessions", "2000000000", "--force"}, func(string) { started = true })
		if err != nil || !started {
			t.Fatalf("serve --force: started %v, err %v", started, err)
		}
	})
	t.Run("NegativeRefused", func(t *testing.T) {
		_, err := serveBriefly(t, []string{"--max-open", "-1"}, func(string) { t.Error("serve started with --max-open -1") })
		if err == nil || !strings.Contains(err.Error(), "must not be negative") {
			t.Fatalf("err = %v, want a refusal", err)
		}
	})
}

func TestServeCommand_Pprof(t *testing.T) {
	for _, tt := range []struct {
		name   string
		args   []string // serve's flags
		status int      // of GET /debug/pprof/
	}{
		{"On", []string{"--pprof"}, http.StatusOK},
		{"Off", nil, http.StatusNotFound},
		{"BehindTheToken", []string{"--pprof", "--token", "s3cret", "--allowed-origins", "https://ui.example"}, http.StatusUnauthorized},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stderr, err := serveBriefly(t, tt.args, func(base string) {
				for path, want := range map[string]int{"/debug/pprof/": tt.status, "/health": http.StatusOK} {
					res, err := http.Get(base + path)
					if err != nil {
						t.Fatal(err)
					}
					res.Body.Close()
					if res.StatusCode != want {
						t.Errorf("GET %s = %d, want %d", path, res.StatusCode, want)
					}
				}
				// A page reaching the server by DNS rebinding (a Host it
				// does not answer to) gets nothing of pprof, token or not.
				req, _ := http.NewRequest(http.MethodGet, base+"/debug/pprof/", nil)
				req.Host = "rebind.example"
				req.Header.Set("Authorization", "Bearer s3cret")
				if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusForbidden {
					t.Errorf("GET /debug/pprof/ with Host rebind.example: %v %v, want 403", res, err)
				} else {
					res.Body.Close()
				}
				// Behind a token, a CORS preflight, which carries no
				// credentials, runs nothing of pprof.
				req, _ = http.NewRequest(http.MethodOptions, base+"/debug/pprof/", nil)
				req.Header.Set("Origin", "https://ui.example")
				req.Header.Set("Access-Control-Request-Method", "GET")
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if tt.status == http.StatusUnauthorized && (res.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), "goroutine")) {
					t.Errorf("OPTIONS /debug/pprof/ = %d %.100q", res.StatusCode, body)
				}
			})
			if err != nil {
				t.Fatalf("serve: %v\n%s", err, stderr)
			}
		})
	}
}
