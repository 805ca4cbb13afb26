package bench_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/internal/bench"
	"github.com/seahaven/seahaven/openenv"
)

// serverEnv makes the test binary serve the company world instead of
// running tests: the subprocess server of TestRun_Subprocess.
const serverEnv = "SEAHAVEN_BENCH_TEST_SERVER"

// echoEnv makes the test binary serve a bare WebSocket echo on --addr: the
// cross-process echo floor of TestRun_Subprocess.
const echoEnv = "SEAHAVEN_BENCH_TEST_ECHO"

func TestMain(m *testing.M) {
	if os.Getenv(echoEnv) == "1" {
		fs := flag.NewFlagSet("echo", flag.ExitOnError)
		addr := fs.String("addr", "", "")
		fs.Parse(os.Args[1:])
		ln, err := net.Listen("tcp", *addr)
		if err == nil {
			err = http.Serve(ln, bench.EchoHandler())
		}
		fmt.Fprintln(os.Stderr, "test echo server:", err)
		os.Exit(1)
	}
	if os.Getenv(serverEnv) == "1" {
		if err := serve(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serve is a minimal `seahaven serve`: --addr and --instances, until SIGTERM.
func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "", "")
	instances := fs.String("instances", "", "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	srv, backend, err := newServer(company.World, app.Config{InstanceRoot: *instances, DefaultFixture: company.AcmeID})
	if err != nil {
		return err
	}
	defer backend.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	return hs.Shutdown(sctx)
}

// newServer makes a server of w, logging nothing.
func newServer(w *env.World, cfg app.Config) (*openenv.Server, *app.Backend, error) {
	backend, err := app.New(w, cfg)
	if err != nil {
		return nil, nil, err
	}
	return openenv.NewServer(backend, openenv.Config{Logger: slog.New(slog.DiscardHandler)}), backend, nil
}

// serveWorld serves w in this process for one test, its instances in a
// directory of the test's own, and returns its base URL.
func serveWorld(t *testing.T, w *env.World, cfg app.Config) string {
	t.Helper()
	cfg.InstanceRoot = t.TempDir()
	srv, backend, err := newServer(w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		srv.Shutdown(context.Background())
		backend.Close()
	})
	return ts.URL
}

// startServer serves the company world in this process for one test.
func startServer(t *testing.T) string {
	return serveWorld(t, company.World, app.Config{DefaultFixture: company.AcmeID})
}

// checkSane checks what every report must satisfy.
func checkSane(t *testing.T, rep *bench.Report, sessions int) {
	t.Helper()
	if rep.Calls == 0 || rep.Errors != 0 || rep.LostSessions != 0 {
		t.Errorf("calls %d, errors %d (%v), lost %d: want calls and no error", rep.Calls, rep.Errors, rep.ErrorSamples, rep.LostSessions)
	}
	if rep.Resets != int64(sessions) {
		t.Errorf("resets = %d, want one per session (%d)", rep.Resets, sessions)
	}
	for _, kind := range []string{"reset", "call_tool", "call_tool:invoice"} {
		l, ok := rep.Latency[kind]
		if !ok || l.Count == 0 {
			t.Errorf("no %s latencies", kind)
			continue
		}
		if !(0 < l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max) {
			t.Errorf("%s percentiles out of order: %+v", kind, l)
		}
	}
	if c := rep.Latency["call_tool"].Count; int64(c) != rep.Calls {
		t.Errorf("%d call latencies for %d calls", c, rep.Calls)
	}
	f := rep.Server
	if f.During.Sessions != sessions || f.During.InstanceDirs != sessions {
		t.Errorf("during the run: %d sessions, %d instance dirs; want %d of each", f.During.Sessions, f.During.InstanceDirs, sessions)
	}
	if f.Before.RSSBytes <= 0 || f.Before.Goroutines <= 0 || f.Peak.Sessions < sessions {
		t.Errorf("footprint not sampled: %+v", f)
	}
	if runtime.GOOS == "linux" && (f.During.CPUNanos <= 0 || rep.ServerCPUPerOp <= 0 || rep.ServerCores <= 0) {
		t.Errorf("server CPU not measured: during %v ns, %v per op, %.2f cores", f.During.CPUNanos, rep.ServerCPUPerOp, rep.ServerCores)
	}
	if !rep.Baseline.OK {
		t.Errorf("the server did not return to its baseline: before %+v after %+v (%+v)", f.Before, f.After, rep.Baseline)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"latency", "reset", "call_tool", "invoice", "throughput:", "errors: 0", "server", "sqlite connections", "instance dirs"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table has no %q:\n%s", want, table.String())
		}
	}
}

func TestRun_Subprocess(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	rep, err := bench.Run(context.Background(), bench.Config{
		Server:   &bench.ServerCommand{Path: exe, Env: append(os.Environ(), serverEnv+"=1")},
		Echo:     &bench.ServerCommand{Path: exe, Env: append(os.Environ(), echoEnv+"=1")},
		World:    "company",
		Fixture:  company.AcmeID,
		Sessions: 5,
		Duration: 2 * time.Second,
		Progress: &progress,
		Settle:   10 * time.Second,
	})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	checkSane(t, rep, 5)
	if rep.Floors.EchoRTT <= 0 || rep.Floors.EchoRTTProcess <= 0 || rep.Floors.RawOpen <= 0 || rep.Floors.RawInsertTxn <= 0 || rep.Floors.RawKeyedInsertTxn <= 0 {
		t.Errorf("floors not measured: %+v", rep.Floors)
	}
	fl := rep.Floors
	if fl.EchoAfter <= 0 || fl.RawKeyedGrownTxn <= 0 || fl.GrownRows != max(int(rep.Latency["call_tool:invoice"].Count)/5, bench.MinGrownRows) {
		t.Errorf("floors after the load not measured: %+v (invoice calls %d)", fl, rep.Latency["call_tool:invoice"].Count)
	}
	echo := (fl.EchoRTTProcess + fl.EchoAfter) / 2
	if fr := rep.FloorRatio; fr == nil || fr.Tool != "invoice" || fr.Txns != 2 || fr.Ratio <= 0 ||
		fr.Floor != echo+2*fl.RawInsertTxn || fr.P50 != rep.Latency["call_tool:invoice"].P50 ||
		fr.KeyedFloor != echo+2*fl.RawKeyedInsertTxn || fr.KeyedRatio != float64(fr.P50)/float64(fr.KeyedFloor) ||
		fr.GrownFloor != echo+2*fl.RawKeyedGrownTxn || fr.GrownRatio != float64(fr.P50)/float64(fr.GrownFloor) {
		t.Errorf("floor ratio %+v does not follow the floors %+v", fr, fl)
	}
	if rep.RSSPerSession == 0 {
		t.Error("no RSS per session")
	}
	if !strings.Contains(progress.String(), "hold") {
		t.Errorf("no progress line:\n%s", progress.String())
	}
}

func TestRun_URL(t *testing.T) {
	// 400 calls keep the hold long enough for the server's CPU time, counted
	// in clock ticks, to move.
	url := startServer(t)
	mix, err := bench.ParseToolMix("invoice:3,list_tools:1")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := bench.Run(context.Background(), bench.Config{
		URL: url, Fixture: company.AcmeID, Sessions: 3, Calls: 400, ToolMix: mix, SkipFloors: true, Settle: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, rep, 3)
	if rep.Calls < 400 {
		t.Errorf("calls = %d, want at least the 400 asked for", rep.Calls)
	}
	if rep.ListTools == 0 || rep.Latency["list_tools"].Count == 0 {
		t.Errorf("no list_tools in a mix with list_tools: %d", rep.ListTools)
	}
	if rep.FloorRatio != nil {
		t.Errorf("a floor ratio without floors: %+v", rep.FloorRatio)
	}
}

func TestRun_ResetLoop(t *testing.T) {
	url := startServer(t)
	rep, err := bench.Run(context.Background(), bench.Config{
		URL: url, Sessions: 2, Calls: 20, ResetLoop: true, SkipFloors: true, Settle: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The report names what the server says it serves, and its floors as
	// not measured.
	if rep.Settings.World != "company" || rep.Settings.Fixture != company.AcmeID {
		t.Errorf("report of world %q, fixture %q; want the server's company and its default acme", rep.Settings.World, rep.Settings.Fixture)
	}
	var text strings.Builder
	if err := rep.WriteTable(&text); err != nil || !strings.Contains(text.String(), "floors: not measured (--no-floors)") {
		t.Errorf("report %s, %v: want the floors named as not measured", text.String(), err)
	}
	if rep.Resets < 20 || rep.Calls != 0 || rep.Errors != 0 {
		t.Errorf("resets %d, calls %d, errors %d: want at least 20 resets and nothing else", rep.Resets, rep.Calls, rep.Errors)
	}
	if l := rep.Latency["reset"]; l.Count != int(rep.Resets) || l.P50 <= 0 || l.P50 > l.Max {
		t.Errorf("reset latencies %+v for %d resets", l, rep.Resets)
	}
}

func TestRun_Errors(t *testing.T) {
	url := startServer(t)
	for _, tt := range []struct {
		name   string
		cfg    bench.Config
		errMsg string
	}{
		{"NoServer", bench.Config{}, "needs a URL or a Server command"},
		{"UnknownTool", bench.Config{URL: url, ToolMix: []bench.MixEntry{{Tool: "nope", Weight: 1}}, SkipFloors: true}, `names "nope", which the server does not list`},
		{"UnknownFixture", bench.Config{URL: url, Fixture: "nope", SkipFloors: true}, "the first reset failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bench.Run(context.Background(), tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.errMsg) {
				t.Fatalf("err = %v, want one containing %q", err, tt.errMsg)
			}
		})
	}
}

func TestRun_Hostile(t *testing.T) {
	url := startServer(t)
	rep, err := bench.Run(context.Background(), bench.Config{
		URL: url, Fixture: company.AcmeID, Sessions: 3, Duration: 4 * time.Second, Think: 20 * time.Millisecond,
		Attackers: 2, AttackPause: 10 * time.Millisecond, SkipFloors: true, Settle: 15 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The honest sessions lose nothing and the server settles.
	if rep.Calls == 0 || rep.Errors != 0 || rep.LostSessions != 0 {
		t.Errorf("calls %d, errors %d (%v), lost %d: want calls and no error", rep.Calls, rep.Errors, rep.ErrorSamples, rep.LostSessions)
	}
	if !rep.Baseline.OK {
		t.Errorf("the server did not return to its baseline: before %+v after %+v (%+v)", rep.Server.Before, rep.Server.After, rep.Baseline)
	}
	h := rep.Hostile
	if h == nil || h.Attackers != 2 {
		t.Fatalf("hostile report = %+v, want one for 2 attackers", h)
	}
	if n := h.Failures(); n != 0 {
		t.Errorf("%d attacks got no reply in time or an unreadable one: %+v", n, h.Attacks)
	}
	// Each attack was made, and met the bound it aims at.
	for _, tt := range []struct {
		attack string
		ok     func(c *bench.AttackCount) bool
		want   string
	}{
		{"inspect_huge_rows", func(c *bench.AttackCount) bool { return c.Dropped == 0 }, "a truncated reply or a refusal"},
		{"inspect_open_transaction", func(c *bench.AttackCount) bool { return c.Answered == 0 && c.Dropped == 0 && c.Refused > 0 }, "refused"},
		{"inspect_temp_shadow", func(c *bench.AttackCount) bool { return c.Answered == 0 && c.Dropped == 0 && c.Refused > 0 }, "refused"},
		{"inspect_temp_storage", func(c *bench.AttackCount) bool { return c.Dropped == 0 }, "an answer or a refusal"},
		{"hire_huge_strings", func(c *bench.AttackCount) bool { return c.Answered == 0 && c.Dropped == 0 && c.Refused > 0 }, "refused"},
		{"state_of_grown_log", func(c *bench.AttackCount) bool { return c.Dropped == 0 && c.Answered+c.Refused > 0 }, "an answer or a refusal"},
		{"duplicate_envelope_keys", func(c *bench.AttackCount) bool { return c.Answered == 0 && c.Dropped == 0 && c.Refused > 0 }, "refused"},
		{"oversized_frame", func(c *bench.AttackCount) bool { return c.Answered == 0 && c.Refused+c.Dropped > 0 }, "refused or dropped"},
	} {
		c := h.Attacks[tt.attack]
		if c == nil || c.Answered+c.Refused+c.Dropped+c.Failed == 0 {
			t.Errorf("%s: never made", tt.attack)
			continue
		}
		if !tt.ok(c) {
			t.Errorf("%s: %+v, want %s", tt.attack, *c, tt.want)
		}
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", table.String())
	if !strings.Contains(table.String(), "hostile sessions: 2") || !strings.Contains(table.String(), "inspect_open_transaction") {
		t.Errorf("the table has no hostile part:\n%s", table.String())
	}
}
