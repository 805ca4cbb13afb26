package bench

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Latency summarises the round trips of one kind, as seen by the client.
type Latency struct {
	// Count is the number of round trips.
	Count int `json:"count"`
	// P50, P90, P99 and Max are in nanoseconds.
	P50 time.Duration `json:"p50_ns"`
	P90 time.Duration `json:"p90_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

// summarise sorts d and summarises it.
func summarise(d []time.Duration) Latency {
	if len(d) == 0 {
		return Latency{}
	}
	slices.Sort(d)
	return Latency{Count: len(d), P50: percentile(d, 50), P90: percentile(d, 90), P99: percentile(d, 99), Max: d[len(d)-1]}
}

// percentile returns the p-th percentile (nearest rank) of d, sorting it.
func percentile(d []time.Duration, p int) time.Duration {
	if !slices.IsSorted(d) {
		slices.Sort(d)
	}
	i := (len(d)*p + 99) / 100
	return d[min(max(i-1, 0), len(d)-1)]
}

// Settings records what a run was asked to do, as Config said it, and
// where it ran.
type Settings struct {
	// URL is the server measured, "" for a subprocess server.
	URL string `json:"url,omitempty"`
	// World is the world the server serves, and Fixture the fixture each
	// reset starts from: Config.Fixture, else the server's default.
	World   string `json:"world"`
	Fixture string `json:"fixture"`
	// NoFloors is Config.SkipFloors: the floors were not measured.
	NoFloors bool `json:"no_floors,omitempty"`
	// Sessions, Duration (seconds), Calls, ToolMix (FormatToolMix), Think
	// (seconds), NoSpread, ResetLoop and Ramp are the Config fields.
	Sessions  int     `json:"sessions"`
	Duration  float64 `json:"duration_seconds,omitempty"`
	Calls     int64   `json:"calls,omitempty"`
	ToolMix   string  `json:"tool_mix"`
	Think     float64 `json:"think_seconds"`
	NoSpread  bool    `json:"no_spread"`
	ResetLoop bool    `json:"reset_loop"`
	Ramp      float64 `json:"ramp_sessions_per_second"`
	// Attackers is Config.Attackers: hostile sessions beside Sessions.
	Attackers int `json:"attackers,omitempty"`
	// CPUs and GoVersion describe the load generator's machine.
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go_version"`
}

// Footprint is the server's footprint at the phases of a run.
type Footprint struct {
	// Before is sampled after the server starts, before any session.
	Before Sample `json:"before"`
	// During is sampled at the end of the hold phase, every session live.
	During Sample `json:"during"`
	// Peak holds the largest value of each field over the run.
	Peak Sample `json:"peak"`
	// After is sampled once every session has closed and the server has
	// settled (or the settle wait ran out).
	After Sample `json:"after"`
}

// Baseline says, per resource, whether the server returned to its idle
// baseline after the run.
type Baseline struct {
	// OK is true when every resource did.
	OK bool `json:"ok"`
	// Goroutines allows baselineSlack more goroutines than before (the idle
	// reaper and the stats connection's).
	Goroutines bool `json:"goroutines"`
	// OpenFDs allows baselineSlack more descriptors (the stats connection).
	OpenFDs bool `json:"open_fds"`
	// Sessions, OpenConnections, ParkedConnections and InstanceDirs must be
	// back to no more than before.
	Sessions          bool `json:"sessions"`
	OpenConnections   bool `json:"open_sqlite_connections"`
	ParkedConnections bool `json:"parked_sqlite_connections"`
	InstanceDirs      bool `json:"instance_dirs"`
	// Heap allows heapSlack more live heap than before, both measured
	// after a garbage collection (caches filled by the run stay).
	Heap bool `json:"heap"`
}

// heapSlack is how much more live heap than the baseline the server may
// hold after a run: caches such as per-tool metrics and pooled buffers.
const heapSlack = 32 << 20

// baselineSlack is how many goroutines and descriptors above the baseline
// still count as back to it: the server's idle reaper starts with its first
// session and lives until shutdown, and the stats client holds a
// keep-alive connection.
const baselineSlack = 4

// baseline compares after to before.
func baseline(before, after Sample) Baseline {
	b := Baseline{
		Goroutines:        after.Goroutines <= before.Goroutines+baselineSlack,
		OpenFDs:           after.OpenFDs <= before.OpenFDs+baselineSlack,
		Sessions:          after.Sessions <= before.Sessions,
		OpenConnections:   after.OpenConnections <= before.OpenConnections,
		ParkedConnections: after.ParkedConnections <= before.ParkedConnections,
		InstanceDirs:      after.InstanceDirs <= before.InstanceDirs,
		Heap:              after.HeapAlloc <= before.HeapAlloc+heapSlack,
	}
	b.OK = b.Goroutines && b.OpenFDs && b.Sessions && b.OpenConnections && b.ParkedConnections && b.InstanceDirs && b.Heap
	return b
}

// FloorRatio compares a tool's median call to its floor.
type FloorRatio struct {
	// Tool is the tool compared (the first of the mix).
	Tool string `json:"tool"`
	// Txns is the raw insert transactions the floor counts for the tool.
	Txns int `json:"txns"`
	// P50 is the tool's median call_tool round trip.
	P50 time.Duration `json:"p50_ns"`
	// Floor is Floors.Echo() + Txns × RawInsertTxn.
	Floor time.Duration `json:"floor_ns"`
	// Ratio is P50 / Floor.
	Ratio float64 `json:"ratio"`
	// KeyedFloor is Floors.Echo() + Txns × RawKeyedInsertTxn: the floor
	// with inserts of the rows the example worlds write.
	KeyedFloor time.Duration `json:"keyed_floor_ns"`
	// KeyedRatio is P50 / KeyedFloor.
	KeyedRatio float64 `json:"keyed_ratio"`
	// GrownFloor is Floors.Echo() + Txns × RawKeyedGrownTxn: the floor with
	// the keyed inserts made at the table sizes the run's calls made them,
	// the raw cost of the same work. Zero when not measured.
	GrownFloor time.Duration `json:"grown_floor_ns,omitempty"`
	// GrownRatio is P50 / GrownFloor.
	GrownRatio float64 `json:"grown_ratio,omitempty"`
}

// floorRatio compares p50, the median call of tool, to the floors of txns
// insert transactions.
func floorRatio(tool string, txns int, p50 time.Duration, f Floors) *FloorRatio {
	n := time.Duration(txns)
	fr := &FloorRatio{Tool: tool, Txns: txns, P50: p50,
		Floor: f.Echo() + n*f.RawInsertTxn, KeyedFloor: f.Echo() + n*f.RawKeyedInsertTxn}
	fr.Ratio = float64(p50) / float64(fr.Floor)
	fr.KeyedRatio = float64(p50) / float64(fr.KeyedFloor)
	if f.RawKeyedGrownTxn > 0 {
		fr.GrownFloor = f.Echo() + n*f.RawKeyedGrownTxn
		fr.GrownRatio = float64(p50) / float64(fr.GrownFloor)
	}
	return fr
}

// Report is the outcome of a Run. Durations are in nanoseconds.
type Report struct {
	Settings Settings `json:"settings"`
	// Ramp is how long connecting every session took; Hold is the length of
	// the measured phase that followed.
	Ramp time.Duration `json:"ramp_ns"`
	Hold time.Duration `json:"hold_ns"`
	// Latency has one entry per kind: reset, list_tools, call_tool, and
	// call_tool:<tool> per tool of the mix.
	Latency map[string]Latency `json:"latency"`
	// Resets, ListTools and Calls count the round trips of the whole run;
	// CallsPerSecond and ResetsPerSecond are over the hold phase.
	Resets          int64   `json:"resets"`
	ListTools       int64   `json:"list_tools"`
	Calls           int64   `json:"calls"`
	CallsPerSecond  float64 `json:"calls_per_second"`
	ResetsPerSecond float64 `json:"resets_per_second"`
	// ServerCPUPerOp is the server's CPU time over the hold divided by the
	// calls and resets made in it; ServerCores is that CPU time over the
	// hold's length. Zero when the server's CPU time is unknown.
	ServerCPUPerOp time.Duration `json:"server_cpu_per_op_ns"`
	ServerCores    float64       `json:"server_cores"`
	// Errors counts failed round trips, failed tool calls and lost
	// connections; ErrorSamples keeps the first few messages.
	Errors       int64    `json:"errors"`
	ErrorSamples []string `json:"error_samples"`
	// LostSessions counts sessions that could not connect or whose
	// connection broke.
	LostSessions int64     `json:"lost_sessions"`
	Server       Footprint `json:"server"`
	// RSSPerSession is (During.RSSBytes − Before.RSSBytes) / Sessions: what
	// one session costs when the sessions are idle at the end of the hold
	// phase (a long --think).
	RSSPerSession int64    `json:"rss_per_session_bytes"`
	Baseline      Baseline `json:"baseline"`
	Floors        Floors   `json:"floors"`
	// FloorRatio is nil when the mix has no tool call.
	FloorRatio *FloorRatio `json:"floor_ratio"`
	// Hostile is nil without hostile sessions (Config.Attackers).
	Hostile *Hostile `json:"hostile,omitempty"`
}

// WriteTable prints the report as tables.
func (r *Report) WriteTable(w io.Writer) error {
	s := r.Settings
	var b strings.Builder
	target := s.URL
	if target == "" {
		target = "subprocess server"
	}
	mode := "tool mix " + s.ToolMix
	if s.ResetLoop {
		mode = "reset loop"
	} else if s.NoSpread {
		mode += " (first calls at once)"
	}
	fmt.Fprintf(&b, "seahaven bench: %s, world %s, fixture %s, %d sessions, %s, think %s; %d CPUs, %s\n",
		target, s.World, orDefault(s.Fixture), s.Sessions, mode, seconds(s.Think), s.CPUs, s.GoVersion)
	if s.Attackers > 0 {
		fmt.Fprintf(&b, "and %d hostile sessions\n", s.Attackers)
	}
	fmt.Fprintf(&b, "ramp %s, hold %s\n\n", round(r.Ramp), round(r.Hold))

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "latency\tcount\tp50\tp90\tp99\tmax\t")
	keys := make([]string, 0, len(r.Latency))
	for k := range r.Latency {
		keys = append(keys, k)
	}
	order := map[string]int{"reset": 0, "list_tools": 1, "call_tool": 2}
	sort.Slice(keys, func(i, j int) bool {
		oi, iok := order[keys[i]]
		oj, jok := order[keys[j]]
		switch {
		case iok && jok:
			return oi < oj
		case iok != jok:
			return iok
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		l := r.Latency[k]
		name := k
		if t, ok := strings.CutPrefix(k, "call_tool:"); ok {
			name = "  " + t
		}
		if l.Count == 0 {
			fmt.Fprintf(tw, "%s\t0\t-\t-\t-\t-\t\n", name)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t\n", name, l.Count, round(l.P50), round(l.P90), round(l.P99), round(l.Max))
	}
	tw.Flush()
	fmt.Fprintf(&b, "\nthroughput: %.0f calls/s, %.0f resets/s over the hold; %d calls, %d resets, %d list_tools in all\n",
		r.CallsPerSecond, r.ResetsPerSecond, r.Calls, r.Resets, r.ListTools)
	if r.ServerCPUPerOp > 0 {
		fmt.Fprintf(&b, "server CPU: %s per call or reset, %.2f cores over the hold\n", round(r.ServerCPUPerOp), r.ServerCores)
	}
	fmt.Fprintf(&b, "errors: %d (lost sessions %d)\n", r.Errors, r.LostSessions)
	for _, e := range r.ErrorSamples {
		fmt.Fprintf(&b, "  %s\n", e)
	}
	if r.Hostile != nil {
		r.Hostile.write(&b)
	}

	fmt.Fprintln(&b)
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "server\tbefore\tduring\tpeak\tafter\tback to baseline\t")
	f := r.Server
	row := func(name string, get func(Sample) string, ok string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", name, get(f.Before), get(f.During), get(f.Peak), get(f.After), ok)
	}
	// The runtime returns freed memory to the system over minutes, so RSS
	// after a run is reported and not checked.
	row("rss", func(s Sample) string { return bytesText(s.RSSBytes) }, "not checked")
	row("heap (live after)", func(s Sample) string { return bytesText(s.HeapAlloc) }, yesNo(r.Baseline.Heap))
	row("goroutines", func(s Sample) string { return count(s.Goroutines) }, yesNo(r.Baseline.Goroutines))
	row("open files", func(s Sample) string { return count(int64(s.OpenFDs)) }, yesNo(r.Baseline.OpenFDs))
	row("sessions", func(s Sample) string { return count(int64(s.Sessions)) }, yesNo(r.Baseline.Sessions))
	row("sqlite connections", func(s Sample) string { return count(int64(s.OpenConnections)) }, yesNo(r.Baseline.OpenConnections))
	row("parked connections", func(s Sample) string { return count(int64(s.ParkedConnections)) }, yesNo(r.Baseline.ParkedConnections))
	row("instance dirs", func(s Sample) string { return count(int64(s.InstanceDirs)) }, yesNo(r.Baseline.InstanceDirs))
	tw.Flush()
	if s.Sessions > 0 && r.RSSPerSession != 0 {
		fmt.Fprintf(&b, "rss per session: %s ((during - before) / %d sessions)\n", bytesText(r.RSSPerSession), s.Sessions)
	}

	if s.NoFloors {
		b.WriteString("\nfloors: not measured (--no-floors)\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	fl := r.Floors
	echo := "echo round trip " + round(fl.EchoRTT)
	if fl.EchoRTTProcess > 0 {
		echo = fmt.Sprintf("echo round trip %s in-process, %s to another process", round(fl.EchoRTT), round(fl.EchoRTTProcess))
	}
	if fl.EchoAfter > 0 {
		echo += fmt.Sprintf(" (%s after the load)", round(fl.EchoAfter))
	}
	fmt.Fprintf(&b, "\nfloors: %s, raw open %s, raw insert transaction %s (rowid), %s (keyed row)",
		echo, round(fl.RawOpen), round(fl.RawInsertTxn), round(fl.RawKeyedInsertTxn))
	if fl.RawKeyedGrownTxn > 0 {
		fmt.Fprintf(&b, ", %s (keyed row, median of %d as the table grows from empty)", round(fl.RawKeyedGrownTxn), fl.GrownRows)
	}
	b.WriteString("\n")
	if fr := r.FloorRatio; fr != nil {
		which := "echo"
		if fl.EchoRTTProcess > 0 {
			which = "cross-process echo"
		}
		if fl.EchoAfter > 0 {
			which += " (mean of before and after)"
		}
		fmt.Fprintf(&b, "%s p50 %s = %.2f x floor (%s + %d x rowid insert transaction = %s)\n", fr.Tool, round(fr.P50), fr.Ratio, which, fr.Txns, round(fr.Floor))
		fmt.Fprintf(&b, "%s p50 %s = %.2f x keyed floor (%s + %d x keyed-row insert transaction = %s)\n", fr.Tool, round(fr.P50), fr.KeyedRatio, which, fr.Txns, round(fr.KeyedFloor))
		if fr.GrownFloor > 0 {
			fmt.Fprintf(&b, "%s p50 %s = %.2f x grown floor (%s + %d x keyed-row insert transaction into tables growing to %d rows = %s)\n",
				fr.Tool, round(fr.P50), fr.GrownRatio, which, fr.Txns, fl.GrownRows, round(fr.GrownFloor))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDefault(s string) string {
	if s == "" {
		return "(server default)"
	}
	return s
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

func seconds(s float64) string { return round(time.Duration(s * float64(time.Second))) }

// round prints a duration with three significant digits, in the largest
// unit (µs, ms or s) under which it rounds to less than 1000.
func round(d time.Duration) string {
	if d <= 0 {
		return "0"
	}
	if d < time.Microsecond {
		return d.String()
	}
	units := []struct {
		size time.Duration
		name string
	}{{time.Microsecond, "µs"}, {time.Millisecond, "ms"}, {time.Second, "s"}}
	for i, u := range units {
		v := float64(d) / float64(u.size)
		s := strconv.FormatFloat(v, 'g', 3, 64)
		if r, _ := strconv.ParseFloat(s, 64); r < 1000 {
			return s + u.name
		}
		if i == len(units)-1 {
			return strconv.FormatFloat(v, 'f', 0, 64) + u.name
		}
	}
	panic("unreachable")
}

func count(n int64) string {
	if n < 0 {
		return "?"
	}
	return fmt.Sprint(n)
}

func bytesText(n int64) string {
	switch {
	case n < 0:
		return "?"
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
