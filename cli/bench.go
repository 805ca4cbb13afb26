package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/seahaven/seahaven/internal/bench"
)

// BenchCommand runs the load benchmark (package internal/bench).
type BenchCommand struct {
	m *Main
}

// loadGeneratorGOGC is the GOGC a bench runs with unless GOGC is set. The
// load generator keeps little live heap and allocates for every reply, so
// at the default it collects tens of times a second, on the cores it shares
// with the server it measures.
const loadGeneratorGOGC = 400

// Run runs `seahaven bench`, or `seahaven bench echo`.
func (c *BenchCommand) Run(ctx context.Context, args []string) error {
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(loadGeneratorGOGC))
	}
	if len(args) > 0 && args[0] == "echo" {
		return c.echo(ctx, args[1:])
	}
	if len(args) > 0 && args[0] == "checkpoint" {
		return c.checkpoint(ctx, args[1:])
	}
	fs := newFlagSet(c.m, "bench")
	url := fs.String("url", "", "benchmark the server at this base URL (http://host:port) instead of starting one")
	instances := fs.String("instances", "", "with --url: the server's instance root, to count instance directories (default: trust its /debug/runtime)")
	sessions := fs.Int("sessions", bench.DefaultSessions, "concurrent sessions")
	duration := fs.Duration("duration", bench.DefaultDuration, "how long to hold the load once every session is connected")
	calls := fs.Int64("calls", 0, "stop after this many calls (resets with --reset-loop) instead of after --duration")
	worldName := fs.String("world", c.m.Default, "the world the started server serves: "+strings.Join(c.m.names(), ", "))
	fixtureID := fs.String("fixture", "", "the fixture each reset names (default: the server's default)")
	mix := fs.String("tool-mix", bench.DefaultToolMix, `tools to call with weights, e.g. "invoice:1,list_staff:1" ("list_tools" is the list action; "" makes no call: sessions reset once and idle); not given: the server's first tool when it lists no invoice`)
	toolArgs := map[string]json.RawMessage{}
	fs.Func("args", "arguments of a tool as tool=JSON, repeatable (default: the least its input schema accepts)", func(v string) error {
		tool, raw, ok := strings.Cut(v, "=")
		if !ok || tool == "" {
			return fmt.Errorf("want tool=JSON, got %q", v)
		}
		if !json.Valid([]byte(raw)) {
			return fmt.Errorf("arguments of %s are not JSON: %s", tool, raw)
		}
		toolArgs[tool] = json.RawMessage(raw)
		return nil
	})
	think := fs.Duration("think", 0, "pause between two calls (or resets) of one session, jittered ±50%")
	resetLoop := fs.Bool("reset-loop", false, "sessions reset in a loop instead of calling tools")
	spread := fs.Bool("spread", true, "spread the sessions' first calls over one --think; false: each calls at once after its reset (with a long --think: one call, then idle)")
	ramp := fs.Float64("ramp", 0, "sessions connected per second (0: as fast as possible)")
	jsonOut := fs.String("json", "", "also write the report as JSON to this file")
	floorTxns := fs.Int("floor-txns", bench.DefaultFloorTxns, "raw insert transactions in the floor of the first tool of the mix (2 for invoice)")
	noFloors := fs.Bool("no-floors", false, "skip the floor measurements")
	settle := fs.Duration("settle", bench.DefaultSettle, "after the run, how long to wait for the server to return to its baseline")
	serverArgs := fs.String("server-args", "", `more flags for the started server, e.g. "--idle-release 1s"`)
	force := fs.Bool("force", false, "pass --force to the started server (start beyond its limits)")
	storage := fs.String("storage", storageDisk, "the started server's --storage: disk, or memory (instance files on /dev/shm)")
	attackers := fs.Int("attackers", 0, "hostile sessions beside --sessions, sending the attacks of the hostile scenario in turn (docs/scale.md)")
	attackPause := fs.Duration("attack-pause", bench.DefaultAttackPause, "pause between two attacks of a hostile session, jittered ±50%")
	attackList := fs.String("attacks", "", "with --attackers: the attacks to send, comma-separated (default: all; see docs/scale.md)")
	compare := fs.Bool("compare", false, "with --attackers: first run the honest sessions alone, then with the attackers, and compare their p99")
	if err := parseNoArgs(c.m, fs, args); err != nil {
		return err
	}
	toolMix, err := bench.ParseToolMix(*mix)
	if err != nil {
		return err
	}
	if toolMix == nil {
		toolMix = []bench.MixEntry{}
	}
	mixGiven := false
	fs.Visit(func(f *flag.Flag) { mixGiven = mixGiven || f.Name == "tool-mix" })
	if !mixGiven {
		toolMix = nil // bench's default, which falls back to the server's first tool
	}
	// The load generator holds one socket per session.
	if l, err := readHostLimits(); err == nil && l.NoFile > 0 && uint64(*sessions)+fdReserve > l.NoFile {
		return fmt.Errorf("--sessions %d needs about %d file descriptors in this process but the open-file limit is %d: raise it with `ulimit -n %d`",
			*sessions, *sessions+fdReserve, l.NoFile, roundUp(uint64(*sessions+fdReserve)))
	}
	attacks, err := bench.ParseAttacks(*attackList)
	if err != nil {
		return fmt.Errorf("--attacks: %w", err)
	}
	cfg := bench.Config{
		URL: *url, InstanceRoot: *instances, World: *worldName, Fixture: *fixtureID,
		Sessions: *sessions, Duration: *duration, Calls: *calls, ToolMix: toolMix, Args: toolArgs,
		Think: *think, NoSpread: !*spread, ResetLoop: *resetLoop, Ramp: *ramp, FloorTxns: *floorTxns, SkipFloors: *noFloors,
		Settle: *settle, Progress: c.m.Stderr, Attackers: *attackers, AttackPause: *attackPause, Attacks: attacks,
	}
	if *calls > 0 {
		cfg.Duration = 0
	}
	if *url != "" && *instances != "" {
		cfg.FloorDir = filepath.Dir(*instances)
	}
	if *url == "" {
		sargs := []string{"--max-sessions", strconv.Itoa(*sessions + 16)}
		if *fixtureID != "" {
			sargs = append(sargs, "--fixture", *fixtureID)
		}
		if *force {
			sargs = append(sargs, "--force")
		}
		if cfg.Server, err = c.serverCommand(*worldName, *storage, append(sargs, strings.Fields(*serverArgs)...)...); err != nil {
			return err
		}
		if cfg.Server.ScratchParent != "" {
			cfg.FloorDir = cfg.Server.ScratchParent // the raw floors on the instances' file system
		}
	}
	if !*noFloors {
		// The server under test runs in its own process, so the echo floor
		// does too.
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding this executable to start the echo server: %w", err)
		}
		cfg.Echo = &bench.ServerCommand{Path: exe, Args: []string{"bench", "echo"}, Stderr: c.m.Stderr}
	}
	if *attackers < 0 {
		return fmt.Errorf("--attackers must be 0 or more, got %d", *attackers)
	}
	if *compare && *attackers == 0 {
		return errors.New("--compare needs --attackers")
	}
	var without *bench.Report
	if *compare {
		calm := cfg
		calm.Attackers = 0
		fmt.Fprintln(c.m.Stderr, "bench: the run without attackers, to compare with")
		if without, err = bench.Run(ctx, calm); err != nil {
			return fmt.Errorf("the run without attackers: %w", err)
		}
		if werr := without.WriteTable(c.m.Stdout); werr != nil {
			return werr
		}
		fmt.Fprintln(c.m.Stdout)
		fmt.Fprintln(c.m.Stderr, "bench: the run with attackers")
	}
	rep, err := bench.Run(ctx, cfg)
	if rep == nil {
		return err
	}
	if without != nil {
		rep.CompareHostile(without)
	}
	return errors.Join(err, rep.WriteTable(c.m.Stdout), writeJSONReport(*jsonOut, rep))
}

// echo runs `seahaven bench echo --addr ADDR`: a bare WebSocket echo server,
// the cross-process floor of the benchmark, until ctx ends.
func (c *BenchCommand) echo(ctx context.Context, args []string) error {
	fs := newFlagSet(c.m, "bench echo")
	addr := fs.String("addr", "127.0.0.1:8001", "the address to listen on")
	if err := parseNoArgs(c.m, fs, args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: bench.EchoHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// checkpoint runs `seahaven bench checkpoint`: checkpoints and restores
// against resets (bench.RunCheckpoints).
func (c *BenchCommand) checkpoint(ctx context.Context, args []string) error {
	fs := newFlagSet(c.m, "bench checkpoint")
	url := fs.String("url", "", "measure the server at this base URL (http://host:port) instead of starting one")
	instances := fs.String("instances", "", "with --url: the server's instance root, for the forks' disk use")
	worldName := fs.String("world", c.m.Default, "the world the started server serves: "+strings.Join(c.m.names(), ", "))
	calls := fs.Int("calls", 50, "calls before each checkpoint")
	rounds := fs.Int("rounds", 200, "resets, checkpoints and restores measured")
	fork := fs.Int("fork", 16, "sessions one checkpoint is restored into")
	tool := fs.String("tool", "invoice", "the tool each call calls")
	toolArgs := fs.String("args", "", `its JSON arguments (default: {"amount":1} for invoice, else {})`)
	storage := fs.String("storage", storageDisk, "the started server's --storage: disk, or memory")
	jsonOut := fs.String("json", "", "also write the report as JSON to this file")
	if err := parseNoArgs(c.m, fs, args); err != nil {
		return err
	}
	raw := json.RawMessage(*toolArgs)
	if *toolArgs == "" {
		raw = json.RawMessage(`{}`)
		if *tool == "invoice" {
			raw = json.RawMessage(`{"amount":1}`)
		}
	} else if !json.Valid(raw) {
		return fmt.Errorf("--args is not JSON: %s", *toolArgs)
	}
	step, err := json.Marshal(map[string]any{"type": "step", "data": map[string]any{"type": "call_tool", "tool_name": *tool, "arguments": raw}})
	if err != nil {
		return err
	}
	cfg := bench.CheckpointConfig{URL: *url, InstanceRoot: *instances, Step: step, Calls: *calls, Rounds: *rounds, Fork: *fork, Progress: c.m.Stderr}
	if *url == "" {
		if cfg.Server, err = c.serverCommand(*worldName, *storage); err != nil {
			return err
		}
	}
	rep, err := bench.RunCheckpoints(ctx, cfg)
	if err != nil {
		return err
	}
	rep.Print(c.m.Stdout)
	return writeJSONReport(*jsonOut, rep)
}

// serverCommand is the `seahaven serve` a bench starts: this executable,
// serving world with storage (its instances on a scratch directory made
// under the command's ScratchParent), quiet, with more flags.
func (c *BenchCommand) serverCommand(world, storage string, more ...string) (*bench.ServerCommand, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this executable to start the server: %w", err)
	}
	scratch, err := instanceRoot(storage, "")
	if err != nil {
		return nil, err
	}
	if scratch != "" {
		scratch = filepath.Dir(scratch)
	}
	args := append([]string{"serve", "--world", world, "--log-level", "warn", "--log-format", "text", "--storage", storage}, more...)
	return &bench.ServerCommand{Path: exe, Args: args, Stderr: c.m.Stderr, ScratchParent: scratch}, nil
}

// writeJSONReport writes a report as indented JSON to path (--json); it
// does nothing when path is "".
func writeJSONReport(path string, rep any) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err == nil {
		err = os.WriteFile(path, append(b, '\n'), 0o644)
	}
	if err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	return nil
}
