// Package bench is the load generator behind `seahaven bench`: it opens
// many OpenEnv WebSocket sessions against a Seahaven server (one it starts
// as a subprocess, or one at a URL), resets each from a fixture, makes tool
// calls (or resets in a loop) for a while, and reports client-side latency
// percentiles, throughput and errors, the server's footprint before, during
// and after the run (resident memory, goroutines, open files, SQLite
// connections, instance directories), and the floors under a call measured
// in the same run: a bare WebSocket echo round trip and raw SQLite work.
//
// docs/scale.md has the measurements it produced and how to rerun them.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the Config fields.
const (
	DefaultSessions = 64
	DefaultDuration = 10 * time.Second
	DefaultToolMix  = "invoice:1"
	// DefaultFloorTxns is the raw insert transactions the floor counts for
	// the compared tool: the company's invoice writes to two nodes.
	DefaultFloorTxns = 2
	// DefaultSeedBase keeps the sessions' seeds clear of the small seeds
	// fixtures are built with: an instance started from a fixture with the
	// seed the fixture was built with draws the same ids again, and its first
	// inserts collide with the frozen rows.
	DefaultSeedBase = 1000
	// DefaultSettle bounds the wait, after the sessions close, for the
	// server to return to its baseline (its idle release takes two seconds
	// by default).
	DefaultSettle = 20 * time.Second
	// DefaultRoundTripTimeout bounds each round trip.
	DefaultRoundTripTimeout = time.Minute
	// dialConcurrency caps the dials in flight when Ramp is zero.
	dialConcurrency = 64
)

// Config configures a Run. Zero fields take their defaults.
type Config struct {
	// URL is the base URL of a running server (http://host:port). When it is
	// empty, Run starts Server as a subprocess.
	URL string
	// Server starts the server under test when URL is empty.
	Server *ServerCommand
	// InstanceRoot, with URL, is the server's instance root, so that Run can
	// count instance directories itself; "" trusts /debug/runtime.
	InstanceRoot string
	// World and Fixture name what the server serves and the fixture each
	// reset names ("" lets the server use its default fixture). World is
	// the started server's --world; the report names the world and default
	// fixture the server itself describes.
	World, Fixture string
	// Sessions is the number of concurrent sessions. Default DefaultSessions.
	Sessions int
	// Duration is the length of the hold phase, after every session has
	// connected. Default DefaultDuration, unless Calls is set.
	Duration time.Duration
	// Calls, when positive, ends the run after this many calls (or resets,
	// with ResetLoop) instead of after Duration.
	Calls int64
	// ToolMix is what the sessions call, drawn by weight (ParseToolMix).
	// An empty mix makes no call: each session only resets. Default (nil)
	// DefaultToolMix when the server lists its tool, else the first tool
	// the server lists.
	ToolMix []MixEntry
	// Args are the arguments of each tool by name; a tool without an entry
	// gets ExampleArgs of its input schema.
	Args map[string]json.RawMessage
	// SeedBase is the seed of session 0's resets; session i uses
	// SeedBase + i. Default DefaultSeedBase.
	SeedBase int64
	// Think is the pause between two calls (or resets) of one session,
	// jittered by ±50%. The sessions' first calls are spread uniformly over
	// one think time after their resets, unless NoSpread.
	Think time.Duration
	// NoSpread makes each session's first call follow its reset at once.
	// With a long Think, the sessions then make one call each and stay
	// idle: the state an idle session's cost is measured in.
	NoSpread bool
	// ResetLoop makes the sessions reset in a loop instead of calling tools.
	ResetLoop bool
	// Ramp is how many sessions connect per second; zero connects them as
	// fast as dialConcurrency dials in flight allow.
	Ramp float64
	// FloorTxns is the insert transactions in the floor of the compared
	// tool (the first of the mix). Default DefaultFloorTxns.
	FloorTxns int
	// SkipFloors skips the floor measurements.
	SkipFloors bool
	// FloorDir is where the raw SQL floors make their scratch files: a
	// directory on the file system the server's instances live on. Default
	// the OS temp dir.
	FloorDir string
	// Echo, when set, starts a bare WebSocket echo server in its own process
	// for the cross-process echo floor (Floors.EchoRTTProcess); Run appends
	// --addr 127.0.0.1:<port> to its arguments and kills it afterwards.
	// `seahaven bench echo` is one.
	Echo *ServerCommand
	// Settle bounds the wait for the server to return to its baseline.
	// Default DefaultSettle.
	Settle time.Duration
	// RoundTripTimeout bounds each round trip. Default
	// DefaultRoundTripTimeout.
	RoundTripTimeout time.Duration
	// Progress, when set, receives a progress line every second.
	Progress io.Writer
	// Attackers is the number of hostile sessions run beside Sessions for
	// the hold phase: each sends the Attacks in turn, pausing AttackPause
	// (jittered by ±50%) between two, and reconnects when the server drops
	// it. The hold phase lasts until each attack has been made at least
	// once. Their round trips are counted in Report.Hostile, not in Latency,
	// Errors or LostSessions, which stay the honest sessions' own.
	Attackers int
	// AttackPause is the pause between two attacks of a hostile session.
	// Default DefaultAttackPause.
	AttackPause time.Duration
	// Attacks names the attacks the hostile sessions send (see Attacks);
	// empty means all of them. ParseAttacks checks a list of names.
	Attacks []string

	defaultMix bool // ToolMix was nil: prepare may pick the server's first tool
}

func (c Config) withDefaults() Config {
	if c.Sessions <= 0 {
		c.Sessions = DefaultSessions
	}
	if c.Duration <= 0 && c.Calls <= 0 {
		c.Duration = DefaultDuration
	}
	if c.ToolMix == nil {
		c.ToolMix, _ = ParseToolMix(DefaultToolMix)
		c.defaultMix = true
	}
	if c.SeedBase == 0 {
		c.SeedBase = DefaultSeedBase
	}
	if c.FloorTxns <= 0 {
		c.FloorTxns = DefaultFloorTxns
	}
	if c.Settle <= 0 {
		c.Settle = DefaultSettle
	}
	if c.RoundTripTimeout <= 0 {
		c.RoundTripTimeout = DefaultRoundTripTimeout
	}
	if c.AttackPause <= 0 {
		c.AttackPause = DefaultAttackPause
	}
	return c
}

// maxErrorSamples is how many distinct error messages a report keeps.
const maxErrorSamples = 10

// run is the state of one Run shared by its sessions.
type run struct {
	cfg    Config
	srv    *server
	wsURL  string
	picker *picker
	args   map[string][]byte // step messages by tool
	// hostile counts the attacks of the hostile sessions; nil without.
	hostile *hostile

	calls, resets, listTools, errs, lost, connected atomic.Int64

	mu      sync.Mutex // guards samples and errText
	samples []string
	errText map[string]bool
}

// Run runs one benchmark and returns its report. The run ends after
// cfg.Duration (or cfg.Calls), or early when ctx is cancelled; the report
// then covers what was done.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if cfg.URL == "" && cfg.Server == nil {
		return nil, errors.New("bench: Config needs a URL or a Server command")
	}
	rep := &Report{Latency: map[string]Latency{}, Settings: Settings{
		URL: cfg.URL, World: cfg.World, Fixture: cfg.Fixture, Sessions: cfg.Sessions,
		Duration: cfg.Duration.Seconds(), Calls: cfg.Calls, ToolMix: FormatToolMix(cfg.ToolMix),
		Think: cfg.Think.Seconds(), NoSpread: cfg.NoSpread, ResetLoop: cfg.ResetLoop, Ramp: cfg.Ramp, NoFloors: cfg.SkipFloors,
		CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
	}}
	if !cfg.SkipFloors {
		progress(cfg.Progress, "measuring the floors (echo round trip, raw SQLite)")
		f, err := measureFloors(ctx, cfg.Echo, cfg.FloorDir)
		if err != nil {
			return nil, err
		}
		rep.Floors = f
	}

	srv, err := openServer(ctx, cfg.URL, cfg.InstanceRoot, cfg.Server, cfg.Progress)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	// The report names what the server serves, as it says.
	world, fixture, err := srv.describe(ctx)
	if err != nil {
		return nil, err
	}
	rep.Settings.World = world
	if cfg.Fixture == "" {
		rep.Settings.Fixture = fixture
	}
	r := &run{cfg: cfg, srv: srv, wsURL: "ws" + strings.TrimPrefix(srv.base, "http") + "/ws",
		picker: newPicker(cfg.ToolMix), args: map[string][]byte{}, errText: map[string]bool{}}
	if cfg.Attackers > 0 {
		r.hostile = newHostile(cfg.AttackPause, cfg.Attacks)
		rep.Settings.Attackers = cfg.Attackers
	}
	// The baseline is the idle server, before prepare's session.
	if rep.Server.Before, err = srv.sample(ctx, true); err != nil {
		return nil, err
	}
	rep.Server.Peak = rep.Server.Before
	if err := r.prepare(ctx); err != nil {
		return nil, err
	}
	cfg.ToolMix, rep.Settings.ToolMix = r.cfg.ToolMix, FormatToolMix(r.cfg.ToolMix)
	if err := r.load(ctx, rep); err != nil {
		return nil, err
	}
	r.settle(ctx, rep)
	if cfg.Sessions > 0 && rep.Server.During.RSSBytes > 0 && rep.Server.Before.RSSBytes > 0 {
		rep.RSSPerSession = (rep.Server.During.RSSBytes - rep.Server.Before.RSSBytes) / int64(cfg.Sessions)
	}
	rep.Baseline = baseline(rep.Server.Before, rep.Server.After)
	if len(cfg.ToolMix) > 0 && !cfg.ResetLoop && !cfg.SkipFloors {
		tool := cfg.ToolMix[0].Tool
		key := "call_tool:" + tool
		if tool == ListTools {
			key = "list_tools"
		}
		if l := rep.Latency[key]; l.Count > 0 {
			progress(cfg.Progress, "measuring the floors again (echo round trip, raw SQLite as the tables grew)")
			rows := int(l.Count) / cfg.Sessions
			if err := measureFloorsAfter(ctx, &rep.Floors, cfg.Echo, cfg.FloorDir, rows); err != nil {
				return rep, err
			}
			rep.FloorRatio = floorRatio(tool, cfg.FloorTxns, l.P50, rep.Floors)
		}
	}
	if err := srv.stop(); err != nil {
		return rep, err
	}
	return rep, nil
}

// prepare lists the tools once, checks the mix against them, and builds
// each tool's step message.
func (r *run) prepare(ctx context.Context) error {
	if len(r.cfg.ToolMix) == 0 || r.cfg.ResetLoop {
		return nil
	}
	c, err := r.dial(ctx)
	if err != nil {
		return fmt.Errorf("bench: connecting to %s: %w", r.wsURL, err)
	}
	defer c.close()
	if _, _, err := c.roundTrip(ctx, r.resetMessage(0)); err != nil {
		return fmt.Errorf("bench: the first reset failed: %w", err)
	}
	reply, _, err := c.roundTrip(ctx, listToolsMessage)
	if err != nil {
		return fmt.Errorf("bench: list_tools failed: %w", err)
	}
	tools := map[string]json.RawMessage{}
	for _, t := range reply.Data.Observation.Tools {
		tools[t.Name] = t.InputSchema
	}
	// The default mix is the company world's; a server of another world
	// gets its first tool.
	if _, ok := tools[r.cfg.ToolMix[0].Tool]; !ok && r.cfg.defaultMix && len(reply.Data.Observation.Tools) > 0 {
		r.cfg.ToolMix = []MixEntry{{Tool: reply.Data.Observation.Tools[0].Name, Weight: 1}}
		r.picker = newPicker(r.cfg.ToolMix)
	}
	for _, e := range r.cfg.ToolMix {
		if e.Tool == ListTools {
			r.args[e.Tool] = listToolsMessage
			continue
		}
		schema, ok := tools[e.Tool]
		if !ok {
			names := make([]string, 0, len(tools))
			for n := range tools {
				names = append(names, n)
			}
			sort.Strings(names)
			return fmt.Errorf("bench: the tool mix names %q, which the server does not list (it has: %s)", e.Tool, strings.Join(names, ", "))
		}
		args, ok := r.cfg.Args[e.Tool]
		if !ok {
			if args, err = ExampleArgs(schema); err != nil {
				return fmt.Errorf("bench: arguments of %s: %w", e.Tool, err)
			}
		}
		msg, err := json.Marshal(map[string]any{"type": "step", "data": map[string]any{"type": "call_tool", "tool_name": e.Tool, "arguments": args}})
		if err != nil {
			return fmt.Errorf("bench: arguments of %s: %w", e.Tool, err)
		}
		r.args[e.Tool] = msg
	}
	return nil
}

var listToolsMessage = []byte(`{"type":"step","data":{"type":"list_tools"}}`)

// resetMessage is a reset naming the fixture, seeded per session: session i
// uses SeedBase + i.
func (r *run) resetMessage(i int) []byte {
	data := map[string]any{"seed": r.cfg.SeedBase + int64(i)}
	if r.cfg.Fixture != "" {
		data["fixture"] = r.cfg.Fixture
	}
	b, _ := json.Marshal(map[string]any{"type": "reset", "data": data})
	return b
}

// fail records an error.
func (r *run) fail(err error) {
	r.errs.Add(1)
	msg := err.Error()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.errText[msg] && len(r.samples) < maxErrorSamples {
		r.errText[msg] = true
		r.samples = append(r.samples, msg)
	}
}

// stats is one session's latencies.
type stats struct {
	reset, listTools, call []time.Duration
	byTool                 map[string][]time.Duration
}

// load ramps the sessions up, holds, stops them, and fills rep's latencies,
// counts and During and Peak samples.
func (r *run) load(ctx context.Context, rep *Report) error {
	cfg := r.cfg
	stop := make(chan struct{}) // closed to end the hold phase
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	all := make([]*stats, cfg.Sessions)
	sem := make(chan struct{}, dialConcurrency)
	start := time.Now()
	var holdFrom atomic.Int64 // when the hold began (UnixNano); zero during the ramp

	// Sampler and progress: every second.
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-runCtx.Done():
				return
			case <-t.C:
			}
			s, err := r.srv.sample(runCtx, false)
			if err == nil {
				rep.Server.Peak = peak(rep.Server.Peak, s)
			}
			phase, since := "ramp", start
			if t := holdFrom.Load(); t != 0 {
				phase, since = "hold", time.Unix(0, t)
			}
			line := fmt.Sprintf("%s %5.0fs  sessions %d/%d  resets %d  calls %d  errors %d",
				phase, time.Since(since).Seconds(), r.connected.Load(), cfg.Sessions, r.resets.Load(), r.calls.Load(), r.errs.Load())
			if err == nil {
				line += fmt.Sprintf("  server: rss %s, goroutines %d, sqlite conns %d (+%d parked), fds %d", bytesText(s.RSSBytes), s.Goroutines, s.OpenConnections, s.ParkedConnections, s.OpenFDs)
			}
			progress(cfg.Progress, "%s", line)
		}
	}()

	var ready sync.WaitGroup
	ready.Add(cfg.Sessions)
	for i := range cfg.Sessions {
		if cfg.Ramp > 0 {
			due := start.Add(time.Duration(float64(i) / cfg.Ramp * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				select {
				case <-time.After(d):
				case <-runCtx.Done():
				}
			}
		}
		st := &stats{byTool: map[string][]time.Duration{}}
		all[i] = st
		wg.Add(1)
		if cfg.Ramp <= 0 {
			sem <- struct{}{}
		}
		go func() {
			defer wg.Done()
			c := r.connect(runCtx, i, st, func() {
				if cfg.Ramp <= 0 {
					<-sem
				}
				ready.Done()
			})
			if c == nil {
				return
			}
			r.session(runCtx, i, c, st, stop)
		}()
	}
	ready.Wait()
	rep.Ramp = time.Since(start)
	calls0, resets0 := r.calls.Load(), r.resets.Load()
	cpu0 := int64(-1)
	if s, err := r.srv.sample(ctx, false); err == nil {
		cpu0 = s.CPUNanos
	}

	// The hostile sessions attack for the hold phase.
	var attackers sync.WaitGroup
	for i := range cfg.Attackers {
		attackers.Go(func() { r.attacker(runCtx, i, stop) })
	}

	// Hold until the duration ends, the calls are made, or ctx ends.
	holdT0 := time.Now()
	holdFrom.Store(holdT0.UnixNano())
	var deadline <-chan time.Time
	if cfg.Duration > 0 {
		deadline = time.After(cfg.Duration)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	for done := false; !done; {
		select {
		case <-deadline:
			// The hold lasts until every attack has been made once.
			done = r.hostile == nil || r.hostile.allMade()
			if !done {
				deadline = time.After(20 * time.Millisecond)
			}
		case <-ctx.Done():
			done = true
		case <-tick.C:
			if cfg.Calls > 0 && r.work() >= cfg.Calls {
				done = true
			}
		}
	}
	tick.Stop()
	rep.Hold = time.Since(holdT0)
	if secs := rep.Hold.Seconds(); secs > 0 {
		rep.CallsPerSecond = float64(r.calls.Load()-calls0) / secs
		rep.ResetsPerSecond = float64(r.resets.Load()-resets0) / secs
	}
	// Sampled before the sessions stop, while every one is live.
	during, err := r.srv.sample(ctx, false)
	if err != nil {
		during = unknownSample()
	}
	ops := r.calls.Load() - calls0 + r.resets.Load() - resets0
	if cpu0 >= 0 && during.CPUNanos >= cpu0 && rep.Hold > 0 {
		cpu := time.Duration(during.CPUNanos - cpu0)
		rep.ServerCores = cpu.Seconds() / rep.Hold.Seconds()
		if ops > 0 {
			rep.ServerCPUPerOp = cpu / time.Duration(ops)
		}
	}
	close(stop)
	<-samplerDone // the sampler has stopped writing rep.Server.Peak
	rep.Server.During = during
	rep.Server.Peak = peak(rep.Server.Peak, during)

	// Stop: each session finishes its round trip and closes its socket.
	wg.Wait()
	attackers.Wait()
	if r.hostile != nil {
		rep.Hostile = r.hostile.report(cfg.Attackers)
	}

	var reset, lt, call []time.Duration
	byTool := map[string][]time.Duration{}
	for _, st := range all {
		if st == nil {
			continue
		}
		reset = append(reset, st.reset...)
		lt = append(lt, st.listTools...)
		call = append(call, st.call...)
		for k, v := range st.byTool {
			byTool[k] = append(byTool[k], v...)
		}
	}
	rep.Latency["reset"] = summarise(reset)
	rep.Latency["list_tools"] = summarise(lt)
	rep.Latency["call_tool"] = summarise(call)
	for k, v := range byTool {
		rep.Latency["call_tool:"+k] = summarise(v)
	}
	rep.Resets, rep.ListTools, rep.Calls = r.resets.Load(), r.listTools.Load(), r.calls.Load()
	rep.Errors, rep.LostSessions = r.errs.Load(), r.lost.Load()
	r.mu.Lock()
	rep.ErrorSamples = append([]string{}, r.samples...)
	r.mu.Unlock()
	return nil
}

// work is the count that Calls bounds: calls, or resets in a reset loop.
func (r *run) work() int64 {
	if r.cfg.ResetLoop {
		return r.resets.Load()
	}
	return r.calls.Load()
}

// connect dials and resets session i; it calls ready once that is done or
// has failed, and returns nil on failure.
func (r *run) connect(ctx context.Context, i int, st *stats, ready func()) *wsClient {
	defer ready()
	c, err := r.dial(ctx)
	if err != nil {
		r.lost.Add(1)
		r.fail(fmt.Errorf("connect: %w", err))
		return nil
	}
	r.connected.Add(1)
	if err := r.reset(ctx, c, i, st); err != nil {
		r.lost.Add(1)
		c.close()
		return nil
	}
	return c
}

// reset makes one timed reset.
func (r *run) reset(ctx context.Context, c *wsClient, i int, st *stats) error {
	_, d, err := c.roundTrip(ctx, r.resetMessage(i))
	if err != nil {
		r.fail(fmt.Errorf("reset: %w", err))
		return err
	}
	st.reset = append(st.reset, d)
	r.resets.Add(1)
	return nil
}

// session runs session i until stop closes or its connection fails, then
// closes its connection.
func (r *run) session(ctx context.Context, i int, c *wsClient, st *stats, stop <-chan struct{}) {
	defer c.close()
	if len(r.cfg.ToolMix) == 0 && !r.cfg.ResetLoop {
		<-stop // reset once, then stay idle
		return
	}
	rng := rand.New(rand.NewPCG(uint64(i), 0x5eaa7e))
	// The sessions' first calls are spread over one think time, as if each
	// had been running for a while; without a think time the first call
	// follows the reset at once. The reset loop's first reset was the
	// session's own.
	if r.cfg.Think > 0 && !r.cfg.ResetLoop && !r.cfg.NoSpread && !r.sleep(time.Duration(rng.Float64()*float64(r.cfg.Think)), stop) {
		return
	}
	wait := r.cfg.ResetLoop
	for {
		if wait && !r.pause(rng, stop) {
			return
		}
		wait = true
		select {
		case <-stop:
			return
		default:
		}
		if r.cfg.Calls > 0 && r.work() >= r.cfg.Calls {
			<-stop
			return
		}
		if r.cfg.ResetLoop {
			if err := r.reset(ctx, c, i, st); err != nil {
				r.lost.Add(1)
				return
			}
			continue
		}
		tool := r.picker.pick(rng)
		reply, d, err := c.roundTrip(ctx, r.args[tool])
		if err != nil {
			if ctx.Err() == nil {
				r.fail(fmt.Errorf("%s: %w", tool, err))
				r.lost.Add(1)
			}
			return
		}
		if tool == ListTools {
			st.listTools = append(st.listTools, d)
			r.listTools.Add(1)
			continue
		}
		st.call = append(st.call, d)
		st.byTool[tool] = append(st.byTool[tool], d)
		r.calls.Add(1)
		if e := reply.Data.Observation.Error; len(e) > 0 && string(e) != "null" {
			r.fail(fmt.Errorf("%s: tool error %s", tool, e))
		}
	}
}

// pause waits for the think time, jittered by ±50%, or until stop. It
// returns false when stop closed.
func (r *run) pause(rng *rand.Rand, stop <-chan struct{}) bool {
	if r.cfg.Think <= 0 {
		select {
		case <-stop:
			return false
		default:
			return true
		}
	}
	return r.sleep(time.Duration(float64(r.cfg.Think)*(0.5+rng.Float64())), stop)
}

// sleep waits for d or until stop, and returns false when stop closed.
func (r *run) sleep(d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
		return false
	case <-t.C:
		return true
	}
}

// settle waits until the server is back to its baseline or cfg.Settle runs
// out, and takes the After sample.
func (r *run) settle(ctx context.Context, rep *Report) {
	deadline := time.Now().Add(r.cfg.Settle)
	progress(r.cfg.Progress, "sessions closed; waiting up to %s for the server to settle", r.cfg.Settle)
	for {
		// Collecting garbage every 250 ms while waiting costs the idle
		// server little, and an after-sample without it would count the
		// garbage of the run as heap.
		s, err := r.srv.sample(ctx, true)
		if err == nil {
			rep.Server.After = s
			if baseline(rep.Server.Before, s).OK {
				return
			}
		} else {
			rep.Server.After = unknownSample()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func unknownSample() Sample {
	return Sample{RSSBytes: -1, Goroutines: -1, HeapAlloc: -1, OpenFDs: -1, Sessions: -1, OpenConnections: -1, ParkedConnections: -1, InstanceDirs: -1, CPUNanos: -1}
}

// peak returns the field-wise maximum of two samples.
func peak(a, b Sample) Sample {
	return Sample{
		RSSBytes: max(a.RSSBytes, b.RSSBytes), Goroutines: max(a.Goroutines, b.Goroutines), HeapAlloc: max(a.HeapAlloc, b.HeapAlloc),
		OpenFDs: max(a.OpenFDs, b.OpenFDs), Sessions: max(a.Sessions, b.Sessions),
		OpenConnections: max(a.OpenConnections, b.OpenConnections), ParkedConnections: max(a.ParkedConnections, b.ParkedConnections),
		InstanceDirs: max(a.InstanceDirs, b.InstanceDirs), CPUNanos: max(a.CPUNanos, b.CPUNanos),
	}
}

// progress writes one line to w, when set.
func progress(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, "bench: "+format+"\n", args...)
	}
}
