package cli

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/sqlitestore"
)

// What one session and one open SQLite connection cost in the budgets the
// operating system enforces, as measured (docs/scale.md).
const (
	// fdsPerSession is a session's socket.
	fdsPerSession = 1
	// fdsPerConn is an open store: its file (the journal is in memory).
	fdsPerConn = 1
	// fdsPerHTTPConn is an HTTP connection that is not a WebSocket session
	// (a probe, an HTTP episode call, a client kept alive or idle).
	fdsPerHTTPConn = 1
	// httpConnShare is the share of the file descriptors left after the
	// reserve that HTTP connections may take, at most
	// openenv.DefaultMaxConns: the rest stay for sessions' sockets and
	// SQLite files, so no flood of connections can starve them.
	httpConnShare = 8
	// mapsPerConn is an open or parked store: its reserved linear memory,
	// as counted in /proc/<pid>/maps.
	mapsPerConn = 2
	// mapsPerFileMap is a bound store's mapping of its file (made once the
	// store keeps working, dropped when it is parked).
	mapsPerFileMap = 1
	// fdReserve covers listeners, log files, fixture reads, the inspection
	// views of sessions being graded and the driver's helper connections.
	fdReserve = 256
	// mapReserve covers the binary, the Go runtime's heap and stacks, and
	// the helper connections.
	mapReserve = 4096
	// sessionMemory is the resident memory budget of one idle session.
	sessionMemory = 256 << 10
	// headroomPercent of each limit is left unplanned.
	headroomPercent = 10
)

// hostLimits are the operating system limits that bound a server's
// capacity. Zero means unknown.
type hostLimits struct {
	NoFile      uint64 // RLIMIT_NOFILE soft limit (after raising it)
	NoFileHard  uint64 // RLIMIT_NOFILE hard limit
	MaxMapCount uint64 // vm.max_map_count
	MemTotal    uint64 // MemTotal of /proc/meminfo, in bytes
}

// capacity is what a server plans to hold.
type capacity struct {
	MaxSessions int // live sessions
	MaxOpen     int // SQLite connections kept open by idle instances (the pool's cap)
	MaxConns    int // HTTP connections that are not WebSocket sessions (openenv.ConnLimit); negative: no bound
}

// usable returns limit less the headroom.
func usable(limit uint64) uint64 { return limit - limit*headroomPercent/100 }

// connsAtPeak is the connections open at the pool's cap plus the ones calls
// in flight pin above it.
func connsAtPeak(maxOpen int) uint64 { return uint64(maxOpen + maxOpen/8) }

// fdsNeeded is the file descriptors a capacity needs.
func fdsNeeded(c capacity) uint64 {
	return fdReserve + fdsPerSession*uint64(c.MaxSessions) + fdsPerConn*connsAtPeak(c.MaxOpen) + fdsPerHTTPConn*uint64(max(c.MaxConns, 0))
}

// mapsNeeded is the memory maps a capacity needs: open connections may map
// their files, and parked connections (sqlitestore.MaxParked) keep their
// linear memory.
func mapsNeeded(c capacity) uint64 {
	return mapReserve + (mapsPerConn+mapsPerFileMap)*connsAtPeak(c.MaxOpen) + mapsPerConn*uint64(sqlitestore.MaxParked(c.MaxOpen))
}

// deriveCapacity returns the default capacity for l: the pool's cap is
// composition.DefaultMaxOpen unless connections would take more than half
// the usable file descriptors or more than the usable memory maps; HTTP
// connections get an httpConnShare-th of the usable descriptors, at most
// openenv.DefaultMaxConns; sessions get the file descriptors left, and no
// more than half the memory at sessionMemory each.
func deriveCapacity(l hostLimits) capacity {
	c := capacity{MaxOpen: composition.DefaultMaxOpen, MaxConns: openenv.DefaultMaxConns}
	var fdAvail uint64
	if l.NoFile > 0 {
		fdAvail = usable(l.NoFile) - min(fdReserve, usable(l.NoFile))
		c.MaxOpen = min(c.MaxOpen, int(fdAvail/2*8/9/fdsPerConn))
		c.MaxConns = max(min(c.MaxConns, int(fdAvail/httpConnShare/fdsPerHTTPConn)), 1)
	}
	if l.MaxMapCount > 0 {
		mapAvail := usable(l.MaxMapCount) - min(mapReserve, usable(l.MaxMapCount))
		// Open at the cap and an eighth more pinned, each with its file
		// mapped; a quarter more parked.
		perEighth := 9*(mapsPerConn+mapsPerFileMap) + 2*mapsPerConn
		c.MaxOpen = min(c.MaxOpen, int(mapAvail*8/uint64(perEighth)))
	}
	c.MaxOpen = max(c.MaxOpen, 1)
	c.MaxSessions = noBound
	if l.NoFile > 0 {
		conns := fdsPerConn*connsAtPeak(c.MaxOpen) + fdsPerHTTPConn*uint64(c.MaxConns)
		c.MaxSessions = int((fdAvail - min(conns, fdAvail)) / fdsPerSession)
	}
	if l.MemTotal > 0 {
		c.MaxSessions = min(c.MaxSessions, int(l.MemTotal/2/sessionMemory))
	}
	c.MaxSessions = max(c.MaxSessions, 1)
	return c
}

// noBound stands for the session cap when no limit is known.
const noBound = 1<<31 - 1

// checkCapacity explains each limit that c exceeds and how to raise it
// for the program prog, or returns nil.
func checkCapacity(l hostLimits, c capacity, prog string) error {
	var problems []string
	if need := fdsNeeded(c); l.NoFile > 0 && need > usable(l.NoFile) {
		want := roundUp(need * 100 / (100 - headroomPercent))
		problems = append(problems, fmt.Sprintf(
			"%d sessions, %d open connections and %d HTTP connections need about %d file descriptors (%d per session, %d per open SQLite connection and an eighth more pinned by calls in flight, %d per HTTP connection, %d reserved), "+
				"but the open-file limit is %d (hard limit %d), of which %d are planned (%d%% is left as headroom). Raise it to %d: `ulimit -n %d` in the shell that starts %s "+
				"(above the hard limit as root, or in /etc/security/limits.conf), LimitNOFILE=%d in a systemd unit, or --ulimit nofile=%d:%d with docker",
			c.MaxSessions, c.MaxOpen, max(c.MaxConns, 0), need, fdsPerSession, fdsPerConn, fdsPerHTTPConn, fdReserve,
			l.NoFile, l.NoFileHard, usable(l.NoFile), headroomPercent, want, want, prog, want, want, want))
	}
	if need := mapsNeeded(c); l.MaxMapCount > 0 && need > usable(l.MaxMapCount) {
		want := roundUp(need * 100 / (100 - headroomPercent))
		problems = append(problems, fmt.Sprintf(
			"%d open connections need about %d memory maps (%d per open SQLite connection and an eighth more pinned by calls in flight, %d per parked one, %d reserved), "+
				"but vm.max_map_count is %d, of which %d are planned (%d%% is left as headroom). Raise it: `sudo sysctl -w vm.max_map_count=%d` (persist it in /etc/sysctl.d/), or lower --max-open",
			c.MaxOpen, need, mapsPerConn+mapsPerFileMap, mapsPerConn, mapReserve, l.MaxMapCount, usable(l.MaxMapCount), headroomPercent, want))
	}
	if len(problems) == 0 {
		return nil
	}
	fit := deriveCapacity(l)
	return fmt.Errorf("%s. These limits fit --max-sessions %d --max-open %d --max-conns %d; pass --force to start anyway",
		strings.Join(problems, ". "), fit.MaxSessions, fit.MaxOpen, fit.MaxConns)
}

// roundUp rounds n up to two significant digits, for a limit to suggest.
func roundUp(n uint64) uint64 {
	unit := uint64(1)
	for n/unit >= 100 {
		unit *= 10
	}
	return (n + unit - 1) / unit * unit
}

// readHostLimits raises the open-file soft limit to the hard limit and reads
// the limits of this host. A limit it cannot read stays zero (unknown).
func readHostLimits() (hostLimits, error) {
	var l hostLimits
	var err error
	if l.NoFile, l.NoFileHard, err = raiseOpenFileLimit(); err != nil {
		return l, fmt.Errorf("reading the open-file limit: %w", err)
	}
	if b, err := os.ReadFile("/proc/sys/vm/max_map_count"); err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
			l.MaxMapCount = n
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		l.MemTotal = parseMemTotal(b)
	}
	return l, nil
}

// parseMemTotal returns the MemTotal of a /proc/meminfo file in bytes, or 0.
func parseMemTotal(meminfo []byte) uint64 {
	for line := range strings.Lines(string(meminfo)) {
		rest, ok := strings.CutPrefix(line, "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || kb > math.MaxUint64>>10 {
			return 0
		}
		return kb << 10
	}
	return 0
}

// scaleFlags are serve's capacity, storage and profiling flags.
type scaleFlags struct {
	maxOpen     *int
	maxConns    *int
	idleRelease *time.Duration
	force       *bool
	pprof       *bool
	storage     *string
	maxActive   *int
	maxInspect  *int
	inspectCPU  *float64
}

// addScaleFlags registers the capacity and profiling flags on fs.
func addScaleFlags(fs *flag.FlagSet) *scaleFlags {
	return &scaleFlags{
		maxOpen:     fs.Int("max-open", 0, "the most SQLite connections idle instances keep open; 0 derives it from the file and memory-map limits (env SEAHAVEN_MAX_OPEN)"),
		maxConns:    fs.Int("max-conns", 0, "the most HTTP connections open at once across the listeners, WebSocket sessions not counted, the --agent-addr listener's at most a quarter of them; past it an idle keep-alive connection is closed, else the new one gets 503; 0 derives it from the file-descriptor limit (at most 1024); negative: no bound (env SEAHAVEN_MAX_CONNS)"),
		idleRelease: fs.Duration("idle-release", sqlitestore.DefaultIdleAfter, "close an instance's SQLite connections after this long without a call; negative keeps them (env SEAHAVEN_IDLE_RELEASE)"),
		force:       fs.Bool("force", false, "start even when --max-sessions or --max-open exceed the file-descriptor or memory-map limits"),
		pprof:       fs.Bool("pprof", false, "serve net/http/pprof at /debug/pprof/ on the main listener"),
		maxActive:   fs.Int("max-active", app.DefaultMaxActive, "the most resets and tool calls running at once, the --agent-addr listener's at most three quarters of them (at least 1); more wait their turn; negative: no cap (env SEAHAVEN_MAX_ACTIVE)"),
		maxInspect:  fs.Int("max-inspect", 0, "the most inspect queries running at once, apart from --max-active; more wait their turn; 0: a quarter of --max-active, at least 1; negative: no cap (env SEAHAVEN_MAX_INSPECT)"),
		inspectCPU:  fs.Float64("inspect-cpu", 0, "how many CPUs' worth of time inspect queries may use together; past it they pause while they run, leaving the rest to tool calls; 0: a quarter of GOMAXPROCS, at least 0.25; negative: unpaced (env SEAHAVEN_INSPECT_CPU)"),
		storage:     fs.String("storage", storageDisk, "where instance files live: disk, or memory (a tmpfs: /dev/shm, or --instances on one); fixtures stay on disk (env SEAHAVEN_STORAGE)"),
	}
}

// capacity raises the open-file limit, derives a zero maxSessions,
// --max-open and --max-conns from the host's limits, refuses a capacity the
// limits cannot hold (unless --force), sizes composition.DefaultPool, and
// returns the capacity to serve. prog names the program in the advice.
func (f *scaleFlags) capacity(log *slog.Logger, maxSessions int, prog string) (capacity, error) {
	l, err := readHostLimits()
	if err != nil {
		return capacity{}, err
	}
	if maxSessions < 0 || *f.maxOpen < 0 {
		return capacity{}, errors.New("--max-sessions and --max-open must not be negative")
	}
	c := deriveCapacity(l)
	if maxSessions > 0 {
		c.MaxSessions = maxSessions
	}
	if *f.maxOpen > 0 {
		c.MaxOpen = *f.maxOpen
	}
	if *f.maxConns != 0 {
		c.MaxConns = *f.maxConns
	}
	if err := checkCapacity(l, c, prog); err != nil {
		if !*f.force {
			return capacity{}, err
		}
		log.Warn("starting beyond the host's limits (--force)", "problem", err.Error())
	}
	if c.MaxSessions > 0 && l.MemTotal > 0 && uint64(c.MaxSessions)*sessionMemory > l.MemTotal {
		log.Warn("--max-sessions may not fit in memory", "max_sessions", c.MaxSessions,
			"idle_session_budget_kib", sessionMemory>>10, "mem_total_mib", l.MemTotal>>20)
	}
	composition.DefaultPool.SetLimits(c.MaxOpen, *f.idleRelease)
	log.Info("capacity", "max_sessions", c.MaxSessions, "max_open", c.MaxOpen, "max_conns", c.MaxConns, "idle_release", f.idleRelease.String(), "storage", *f.storage,
		"nofile", l.NoFile, "nofile_hard", l.NoFileHard, "max_map_count", l.MaxMapCount, "fds_needed", fdsNeeded(c), "maps_needed", mapsNeeded(c))
	return c, nil
}

// debug adds net/http/pprof at /debug/pprof/ in front of h when --pprof is
// set, behind guard (the server's token check); otherwise it returns h.
// Only pprof is wrapped: the server's handler h checks the token itself,
// after answering the CORS preflights of --allowed-origins, which carry no
// credentials.
func (f *scaleFlags) debug(guard func(http.Handler) http.Handler, h http.Handler) http.Handler {
	if !*f.pprof {
		return h
	}
	prof := http.NewServeMux()
	prof.HandleFunc("/debug/pprof/", pprof.Index)
	prof.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	prof.HandleFunc("/debug/pprof/profile", pprof.Profile)
	prof.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	prof.HandleFunc("/debug/pprof/trace", pprof.Trace)
	guarded := guard(prof)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/debug/pprof/") {
			guarded.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}
