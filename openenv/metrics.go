package openenv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/runecut"
)

// InstanceDirCounter is implemented by a Backend that keeps one directory
// on disk per open instance. The server exports the count as the
// seahaven_instance_dirs gauge, so a leak of directories (instances closed
// without their files being removed) shows on a dashboard. InstanceDirs
// must be safe for concurrent use; the server calls it on every scrape.
type InstanceDirCounter interface {
	InstanceDirs() (int, error)
}

// Outcomes of a reset, as the outcome label of seahaven_resets_total says them.
const (
	outcomeOK      = "ok"
	outcomeError   = "error"
	outcomeTimeout = "timeout"
	outcomePanic   = "panic"
	outcomeInfra   = "infrastructure_error"
	// outcomeCancelled: the client went away, or its session was closed,
	// before the operation changed anything.
	outcomeCancelled = "cancelled"
)

// unknownTool is the tool label of a call to a tool that does not exist.
// Tool names come from clients, so labelling them as sent would let a
// client grow the series without bound.
const unknownTool = "_unknown"

// resetBuckets and callBuckets are the latency histogram buckets, in
// seconds: a reset copies a fixture and a step runs a few SQL statements,
// and both are bounded by StepTimeout.
var (
	resetBuckets = prometheus.ExponentialBuckets(0.0005, 2.5, 12) // 0.5 ms … 12 s
	callBuckets  = prometheus.ExponentialBuckets(0.0001, 2.5, 14) // 0.1 ms … 15 s
)

// serverMetrics holds a Server's Prometheus series, on the server's own registry
// so that servers in one process (tests) do not share counters.
type serverMetrics struct {
	registry *prometheus.Registry
	// process holds the process collector alone, for GET /debug/runtime's
	// footprint; the collector is registered on registry too.
	process *prometheus.Registry

	sessionsOpened *prometheus.CounterVec // transport
	rejections     *prometheus.CounterVec // transport
	reaps          *prometheus.CounterVec // transport
	resets         *prometheus.CounterVec // outcome
	resetSeconds   prometheus.Histogram
	calls          *prometheus.CounterVec   // tool, outcome
	callSeconds    *prometheus.HistogramVec // tool
	inspects       *prometheus.CounterVec   // outcome
	instances      prometheus.Gauge
	wsMessages     *prometheus.CounterVec // type
	authFailures   prometheus.Counter
	infraErrors    *prometheus.CounterVec // fault, op

	// Episodes, by task ("none" for an episode without one). Task ids come
	// from the backend's list, so the label's values are few.
	episodesStarted  *prometheus.CounterVec   // task
	episodesFinished *prometheus.CounterVec   // task: graded done
	episodeReward    *prometheus.HistogramVec // task: the last grading's reward when the episode ends
	episodeSteps     *prometheus.HistogramVec // task: steps when the episode ends
	gradingFailures  *prometheus.CounterVec   // task
	refusedAfterDone *prometheus.CounterVec   // task
	replayed         prometheus.Counter       // steps answered from their request_id
	checkpoints      *prometheus.CounterVec   // op (checkpoint, restore), outcome
	checkpointSecs   *prometheus.HistogramVec // op
	fencedSteps      prometheus.Counter       // steps refused to a superseded attempt
	lateCalls        prometheus.Counter       // tool calls answered at their deadline while they ran on
}

// newMetrics makes the series of s and registers them, with the Go runtime
// and process collectors, on a new registry.
func newMetrics(s *Server) *serverMetrics {
	m := &serverMetrics{registry: prometheus.NewRegistry(), process: prometheus.NewRegistry()}
	f := promauto.With(m.registry)
	counters := func(name, help string, labels ...string) *prometheus.CounterVec {
		return f.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	histograms := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return f.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	}
	m.sessionsOpened = counters("seahaven_sessions_opened_total",
		"Sessions opened, by transport (ws, mcp, http).", "transport")
	m.rejections = counters("seahaven_capacity_rejections_total",
		"Sessions refused because the server was at MaxSessions, by transport.", "transport")
	m.reaps = counters("seahaven_idle_reaps_total",
		"Sessions closed by the idle reaper, by transport.", "transport")
	m.resets = counters("seahaven_resets_total",
		"Instances opened (explicit resets, the implicit reset of a first step, MCP sessions and sessionless tools/call), by outcome (ok, error, timeout, panic, infrastructure_error).", "outcome")
	m.resetSeconds = f.NewHistogram(prometheus.HistogramOpts{Name: "seahaven_reset_duration_seconds",
		Help: "Time to open an instance, successful or not.", Buckets: resetBuckets})
	m.calls = counters("seahaven_tool_calls_total",
		"Tool calls, by tool and outcome (ok, or the error_type: execution_error, invalid_args, tool_not_found, timeout; or panic, or infrastructure_error for a call the host failed). Calls to unknown tools have tool=\"_unknown\".", "tool", "outcome")
	m.callSeconds = histograms("seahaven_tool_call_duration_seconds",
		"Tool call latency, by tool.", callBuckets, "tool")
	m.inspects = counters("seahaven_inspect_queries_total",
		"Inspect queries, by outcome (ok, error).", "outcome")
	m.instances = f.NewGauge(prometheus.GaugeOpts{Name: "seahaven_instances_open",
		Help: "Instances open now, in sessions or serving a sessionless call."})
	m.wsMessages = counters("seahaven_ws_messages_total",
		"WebSocket messages received, by type (reset, step, state, close, mcp, inspect, grade, checkpoint, or invalid for one that is not JSON or names no known type).", "type")
	m.authFailures = f.NewCounter(prometheus.CounterOpts{Name: "seahaven_auth_failures_total",
		Help: "Requests refused with 401 for a missing or wrong bearer token."})
	m.infraErrors = counters("seahaven_infrastructure_errors_total",
		"Operations the host failed (reported to the client as an infrastructure error, never as a tool result), by fault (disk_full, too_many_open_files, storage_error) and op (reset, call, inspect, grade, checkpoint, fence).", "fault", "op")
	m.episodesStarted = counters("seahaven_episodes_started_total",
		"Episodes begun (an instance opened for a session), by task (none for an episode without one).", "task")
	m.episodesFinished = counters("seahaven_episodes_finished_total",
		"Episodes their task graded done, by task.", "task")
	m.episodeReward = histograms("seahaven_episode_reward",
		"The reward of each graded task episode when it ends (done, a reset or the session's end), by task.", []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99, 1}, "task")
	m.episodeSteps = histograms("seahaven_episode_steps",
		"Steps (tool calls) of each episode when it ends, by task.", prometheus.ExponentialBuckets(1, 2, 11), "task")
	m.gradingFailures = counters("seahaven_grading_failures_total",
		"Gradings a grader's error failed, by task. A grading that ran nothing, having waited for an engine slot (max-active) until its deadline or cancellation, is not counted: it says nothing of the task.", "task")
	m.refusedAfterDone = counters("seahaven_steps_refused_after_done_total",
		"Steps refused because the episode's task had graded it done, by task.", "task")
	m.replayed = f.NewCounter(prometheus.CounterOpts{Name: "seahaven_steps_replayed_total",
		Help: "Steps retried under a request_id the episode had answered: the recorded reply was sent, nothing ran."})
	m.checkpoints = counters("seahaven_checkpoints_total",
		"Checkpoints taken (op=checkpoint) and restored (op=restore), by outcome (ok, error, timeout, panic, infrastructure_error).", "op", "outcome")
	m.checkpointSecs = histograms("seahaven_checkpoint_duration_seconds",
		"Time to take (op=checkpoint) or restore (op=restore) a checkpoint, successful or not.", resetBuckets, "op")
	m.fencedSteps = f.NewCounter(prometheus.CounterOpts{Name: "seahaven_steps_refused_superseded_total",
		Help: "Requests refused because the session's attempt was superseded by a restore that named it (replaces)."})
	m.lateCalls = f.NewCounter(prometheus.CounterOpts{Name: "seahaven_tool_calls_late_total",
		Help: "Tool calls that ran on past their deadline, ignoring their context: each was answered as timed out and held its session until it returned."})
	info := s.backend.Info()
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "seahaven_build_info",
		Help:        "Always 1: the server's version and the world it serves.",
		ConstLabels: prometheus.Labels{"version": buildVersion(), "world": info.Name, "world_version": info.Version},
	}, func() float64 { return 1 })
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "seahaven_sessions_max",
		Help: "The capacity: the most live sessions (MaxSessions).",
	}, func() float64 { return float64(s.cfg.MaxSessions) })
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "seahaven_ws_read_ahead_bytes",
		Help: "Bytes of WebSocket messages read and not yet answered, held in the server's read-ahead budget (MaxPendingTotal).",
	}, func() float64 { return float64(s.pendingBytes.Load()) })
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "seahaven_ws_readers_waiting",
		Help: "WebSocket readers waiting for room in their session's or the server's read-ahead budget.",
	}, func() float64 { return float64(s.aheadWaiting.Load()) })
	process := collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})
	m.process.MustRegister(process)
	m.registry.MustRegister(collectors.NewGoCollector(), process)
	for _, t := range append([]TaskInfo{{}}, info.Tasks...) {
		l := taskLabel(t.ID)
		m.episodesStarted.WithLabelValues(l)
		m.episodesFinished.WithLabelValues(l)
		m.gradingFailures.WithLabelValues(l)
		m.refusedAfterDone.WithLabelValues(l)
	}
	// Every labelled series the server can produce exists from the start, at
	// zero, so that rate() and alerts see the first event.
	for _, t := range []string{TransportWS, TransportMCP, TransportHTTP} {
		f.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "seahaven_sessions",
			Help:        "Live sessions, by transport. Their sum is what MaxSessions caps.",
			ConstLabels: prometheus.Labels{"transport": t},
		}, func() float64 { return float64(s.countSessions(t)) })
		m.sessionsOpened.WithLabelValues(t)
		m.rejections.WithLabelValues(t)
		m.reaps.WithLabelValues(t)
	}
	if dc, ok := s.backend.(InstanceDirCounter); ok {
		f.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "seahaven_instance_dirs",
			Help: "Instance directories on disk under the backend's instance directory.",
		}, func() float64 {
			n, err := dc.InstanceDirs()
			if err != nil {
				s.log.Warn("openenv: counting instance directories failed", "err", err)
				return -1
			}
			return float64(n)
		})
	}
	for _, o := range []string{outcomeOK, outcomeError, outcomeTimeout, outcomePanic, outcomeCancelled} {
		m.resets.WithLabelValues(o)
	}
	m.inspects.WithLabelValues(outcomeOK)
	m.inspects.WithLabelValues(outcomeError)
	return m
}

// Registry returns the server's Prometheus registry, served at /metrics. It
// holds the seahaven_* series (see the package documentation) and the Go
// runtime and process collectors; a caller may register more collectors on
// it. Each Server has its own registry, never the global default one.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.registry }

// serveMetrics serves GET /metrics in the Prometheus text format. The
// failures of one scrape are logged once, when it ends: at debug level
// when its client went away or stopped reading (promhttp, which goes on
// with the next metric family, meets one failed write per family), else
// at warn.
func (s *Server) serveMetrics() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var errs scrapeErrors
		promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{
			ErrorLog:      &errs,
			ErrorHandling: promhttp.ContinueOnError,
		}).ServeHTTP(w, r)
		if errs.n == 0 {
			return
		}
		level := slog.LevelWarn
		if errs.clientOnly {
			level = slog.LevelDebug
		}
		s.log.Log(r.Context(), level, "openenv: a /metrics scrape failed", "err", errs.first, "errors", errs.n, "remote", r.RemoteAddr)
	})
}

// scrapeErrors is the promhttp.Logger of one scrape: it keeps the first
// failure it is told of and counts them. It is not safe for concurrent
// use; promhttp calls it from the scrape's own goroutine.
type scrapeErrors struct {
	first      string // the first failure, as promhttp says it
	n          int    // failures
	clientOnly bool   // each failure was the client's going away or not reading
}

func (e *scrapeErrors) Println(v ...any) {
	client := slices.ContainsFunc(v, func(x any) bool { err, ok := x.(error); return ok && clientWriteFailure(err) })
	if e.n == 0 {
		e.first, e.clientOnly = strings.TrimSpace(fmt.Sprintln(v...)), true
	}
	e.n++
	e.clientOnly = e.clientOnly && client
}

// clientWriteFailure reports whether err, from a write of a reply, says
// that its client closed the connection or did not read within the write
// timeout, rather than a fault of the server.
func clientWriteFailure(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, context.Canceled)
}

// countSessions returns the live sessions of one transport.
func (s *Server) countSessions(transport string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ss := range s.sessions {
		if ss.transport == transport {
			n++
		}
	}
	return n
}

// sessionKey is the context key of the session work is done for.
type sessionKey struct{}

// sessionTag names, in logs, the session work is done for.
type sessionTag struct{ ref, transport string }

// withSession returns ctx carrying ss, so that the logs of the work done
// under ctx name the session.
func withSession(ctx context.Context, ss *session) context.Context {
	return context.WithValue(ctx, sessionKey{}, sessionTag{ss.ref, ss.transport})
}

// sessionAttrs returns the log attributes of the session ctx carries:
// session (its ref) and transport, both "" when ctx names none.
func sessionAttrs(ctx context.Context) []any {
	tag, _ := ctx.Value(sessionKey{}).(sessionTag)
	return []any{"session", tag.ref, "transport", tag.transport}
}

// durationMS is a duration as the duration_ms log attribute.
func durationMS(d time.Duration) slog.Attr {
	return slog.Float64("duration_ms", float64(d.Microseconds())/1000)
}

// backendOutcome is the outcome label of a call into the Backend or an
// Instance that returned err, or panicked (perr, which guard has logged
// with the stack); an infrastructure error is logged by infraFailure. ctx
// must be the context the call was given, the one the server's deadline
// bounds: a call past it is a timeout whatever error it returned.
func backendOutcome(ctx context.Context, err error, perr *protoError) string {
	switch {
	case perr != nil:
		return outcomePanic
	case errors.As(err, new(*env.InfraError)):
		return outcomeInfra
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded)):
		return outcomeTimeout
	case errors.Is(err, context.Canceled):
		return outcomeCancelled
	case err != nil:
		return outcomeError
	}
	return outcomeOK
}

// observeOpen records one Backend.Open that started at start: its latency,
// its outcome and, when it failed, one log line. err is Open's error, perr
// a recovered panic.
func (s *Server) observeOpen(ctx context.Context, start time.Time, opts OpenOptions, err error, perr *protoError) {
	d := time.Since(start)
	s.metrics.resetSeconds.Observe(d.Seconds())
	outcome := backendOutcome(ctx, err, perr)
	s.metrics.resets.WithLabelValues(outcome).Inc()
	if outcome == outcomeOK {
		s.metrics.instances.Inc()
		return
	}
	if perr == nil && outcome != outcomeInfra && outcome != outcomeCancelled {
		s.log.Warn("openenv: reset failed", append(sessionAttrs(ctx), durationMS(d),
			"fixture", clip(opts.Fixture, 128), "seed", opts.Seed, "outcome", outcome, "err", clip(err.Error(), maxLogText))...)
	}
}

// observeInfra counts one failure of the host and logs it at error level
// with its cause, which names the files involved.
func (s *Server) observeInfra(ctx context.Context, op string, ie *env.InfraError) {
	s.metrics.infraErrors.WithLabelValues(ie.Kind, op).Inc()
	s.log.Error("openenv: infrastructure error", append(sessionAttrs(ctx), "op", op, "fault", ie.Kind, "err", ie.Error())...)
}

// observeCall records one tool call that started at start: its latency and
// outcome, and one log line when it failed. A failure the agent caused (a
// ToolError: wrong arguments, an unknown tool, a refusal by the world) is
// logged at debug level; a timeout at warn level; a panic has been logged
// by guard. The tool label is the name only when the name is a tool of
// inst: a call that failed before its backend told an unknown name apart
// (a panic, an infrastructure failure, a cancellation) is labelled
// unknownTool unless inst lists it.
func (s *Server) observeCall(ctx context.Context, start time.Time, inst Instance, name string, out toolOutcome, perr *protoError) {
	d := time.Since(start)
	outcome := outcomeOK
	switch {
	case perr != nil && perr.code == codeInfrastructure:
		outcome = outcomeInfra // infraFailure has logged it
	case out.cancelled || perr != nil && perr.noStep:
		outcome = outcomeCancelled
	case perr != nil:
		outcome = outcomePanic
	case out.err != nil:
		outcome = out.err.Kind
	}
	tool := name
	if outcome == env.KindNotFound || perr != nil && !s.lists(inst, name) {
		tool = unknownTool
	}
	s.metrics.calls.WithLabelValues(tool, outcome).Inc()
	s.metrics.callSeconds.WithLabelValues(tool).Observe(d.Seconds())
	if out.err == nil {
		return
	}
	level := slog.LevelDebug
	if outcome == env.KindTimeout {
		level = slog.LevelWarn
	}
	attrs := append(sessionAttrs(ctx), durationMS(d),
		"tool", clip(name, 128), "error_type", out.err.Kind, "err", clip(out.err.Message, maxLogText))
	if out.cause != nil {
		attrs = append(attrs, "cause", clip(out.cause.Error(), maxLogText))
	}
	s.log.Log(ctx, level, "openenv: tool call failed", attrs...)
}

// observeInspect records one inspect query that started at start, and
// logs its failure (err) unless guard or infraFailure has (perr).
func (s *Server) observeInspect(ctx context.Context, start time.Time, err error, perr *protoError) {
	if err == nil && perr == nil {
		s.metrics.inspects.WithLabelValues(outcomeOK).Inc()
		return
	}
	s.metrics.inspects.WithLabelValues(outcomeError).Inc()
	if perr == nil {
		s.log.Info("openenv: inspect query failed", append(sessionAttrs(ctx), durationMS(time.Since(start)), "err", clip(err.Error(), maxLogText))...)
	}
}

// maxLogText is the most bytes of an error a log line carries when the
// error may repeat what a client sent: SQLite's "unrecognized token" and
// "no such column" repeat a query's token whole, an unknown tool's error
// its name, an unknown task's error the task, each up to a message's size,
// for every request.
const maxLogText = 1 << 10

// clip cuts a client's string to at most n bytes for a log line, at a
// character boundary.
func clip(v string, n int) string {
	if len(v) <= n {
		return v
	}
	return runecut.Prefix(v, n) + "..."
}

// taskLabel is the task label of an episode's series.
func taskLabel(task string) string { return cmp.Or(task, "none") }

// buildVersion is the main module's version, or "devel" for a build from
// a checkout.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// observeEpisodeEnded records an episode's steps, and its last reward when
// it was graded.
func (s *Server) observeEpisodeEnded(task string, steps int, graded bool, reward float64) {
	t := taskLabel(task)
	s.metrics.episodeSteps.WithLabelValues(t).Observe(float64(steps))
	if graded {
		s.metrics.episodeReward.WithLabelValues(t).Observe(reward)
	}
}

// observeCheckpoint counts and times one checkpoint or restore (op), and
// logs it: at info level when it succeeded, at warning level when it
// failed other than through the host (infraFailure logs those) or a panic
// (guard logs those).
func (s *Server) observeCheckpoint(ctx context.Context, op string, start time.Time, id string, err error, perr *protoError) {
	d := time.Since(start)
	s.metrics.checkpointSecs.WithLabelValues(op).Observe(d.Seconds())
	outcome := backendOutcome(ctx, err, perr)
	s.metrics.checkpoints.WithLabelValues(op, outcome).Inc()
	switch outcome {
	case outcomeOK:
		s.log.Info("openenv: "+op, append(sessionAttrs(ctx), durationMS(d), "checkpoint", refOf(id))...)
	case outcomeError, outcomeTimeout:
		s.log.Warn("openenv: "+op+" failed", append(sessionAttrs(ctx), durationMS(d), "checkpoint", refOf(id), "outcome", outcome, "err", digested(err.Error()))...)
	}
}
