package openenv

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"
)

// Defaults of the Config fields.
const (
	DefaultMaxSessions = 1024
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultAgentIdleTimeout is the idle timeout of agent sessions, unless
	// IdleTimeout is shorter.
	DefaultAgentIdleTimeout = 2 * time.Minute
	DefaultPingInterval     = 20 * time.Second
	DefaultPongTimeout      = 20 * time.Second
	DefaultMaxMessageBytes  = 16 << 20
	DefaultStepTimeout      = 30 * time.Second
	DefaultInspectRowLimit  = 1000
	DefaultInspectTimeout   = 5 * time.Second
	DefaultWriteTimeout     = 30 * time.Second
	DefaultMaxPending       = 16
	DefaultMaxReplyBytes    = 8 << 20
	// MinReplyBytes is the smallest MaxReplyBytes: a smaller one is raised
	// to it, so every error and envelope fits.
	MinReplyBytes          = 64 << 10
	DefaultMaxPendingBytes = 4 << 20
	DefaultMaxPendingTotal = 256 << 20
)

// MaxStepTimeoutS is the largest timeout_s a POST /step may give, in
// seconds: one day. A larger one is refused with a VALIDATION_ERROR (422)
// before it is converted to a time.Duration, which cannot hold every
// float. timeout_s only ever shortens StepTimeout.
const MaxStepTimeoutS = 86400

// Config configures a Server. A zero field means its Default value; a
// negative duration turns that mechanism off.
type Config struct {
	// MaxSessions caps the live sessions. WebSocket sessions, /mcp sessions
	// and HTTP sessions share the one pool. Default DefaultMaxSessions.
	MaxSessions int
	// AgentMaxSessions caps the live sessions started through the agent
	// listener (AgentHandler), within MaxSessions: agents cannot take the
	// rest, which stays for trainers. Default a quarter of MaxSessions, at
	// least one.
	AgentMaxSessions int
	// IdleTimeout closes a session that has had no reset, step, inspect,
	// grade, checkpoint, or MCP tools/call or tools/list for this long
	// (state, MCP ping and the WebSocket's pings do not count; a call in
	// progress keeps it alive), whatever its transport. A WebSocket is
	// closed with StatusGoingAway and a reason.
	// Default DefaultIdleTimeout; negative disables it.
	IdleTimeout time.Duration
	// AgentIdleTimeout is IdleTimeout for the sessions started through the
	// agent listener, so an agent that walks away frees its share soon.
	// Default DefaultAgentIdleTimeout, or IdleTimeout when that is shorter;
	// negative disables it.
	AgentIdleTimeout time.Duration
	// PingInterval is how often the server pings each WebSocket peer, and
	// PongTimeout how long it waits for the pong before closing the session
	// as dead. A reply written to the peer in that time counts as a pong, and
	// no ping is sent while a reply is being written (WriteTimeout bounds
	// it), so a slow reader that keeps reading is not dropped. Defaults
	// DefaultPingInterval and DefaultPongTimeout; a negative PingInterval
	// disables the pings.
	PingInterval, PongTimeout time.Duration
	// MaxMessageBytes caps an incoming WebSocket message or HTTP body. A
	// larger WebSocket message gets an error frame naming its size and the
	// limit, then a close with StatusMessageTooBig (1009); a larger HTTP body
	// gets 413. Default DefaultMaxMessageBytes.
	MaxMessageBytes int64
	// StepTimeout bounds each reset and each tool call. A call past it is
	// cancelled through its context, with context.DeadlineExceeded as the
	// cause (context.Cause), and reported with error_type "timeout"; one
	// that has not returned a second later is reported without it, and its
	// session's requests wait for it at most StepTimeout each.
	// Default DefaultStepTimeout; negative means no bound.
	StepTimeout time.Duration
	// InspectRowLimit caps the rows of an inspect reply; more are dropped and
	// the reply says truncated, and why. Default DefaultInspectRowLimit.
	InspectRowLimit int
	// MaxReplyBytes caps every message the server sends. An inspect reply
	// holds the rows that fit and says truncated, and why; a tool result
	// whose reply would not fit becomes an execution_error naming the
	// limit; any other reply past it (a state document, say) is replaced
	// by an error naming its size and the limit. An inspect query also
	// reads no more than this into memory. Default DefaultMaxReplyBytes, at
	// least MinReplyBytes.
	MaxReplyBytes int
	// InspectTimeout bounds each inspect query. Default DefaultInspectTimeout;
	// negative means no bound.
	InspectTimeout time.Duration
	// WriteTimeout bounds each WebSocket write. A peer that stops reading is
	// closed and its session freed when a write takes longer. Default
	// DefaultWriteTimeout; negative means no bound.
	WriteTimeout time.Duration
	// MaxPending caps the messages a WebSocket session reads ahead of the one
	// being processed. When it is full the server stops reading, so a client
	// that pipelines without reading replies is slowed by TCP backpressure
	// and the memory held per session stays bounded. Default DefaultMaxPending.
	MaxPending int
	// MaxPendingBytes caps the bytes of the messages a WebSocket session
	// reads ahead, and MaxPendingTotal the same bytes across every session
	// of the server. When a message does not fit, its reader waits before
	// reading on (TCP backpressure slows the client) until queued messages
	// are answered. A message larger than a cap is queued once nothing else
	// holds that cap. The message being processed and the one being read
	// are not counted: each is bounded by MaxMessageBytes. Defaults
	// DefaultMaxPendingBytes and DefaultMaxPendingTotal.
	MaxPendingBytes, MaxPendingTotal int64
	// LargeMessageRate bounds, in bytes per second across the server, how
	// fast the part of WebSocket messages and HTTP request bodies past
	// LargeMessageBytes is read;
	// a reader past it waits before reading on (TCP backpressure slows its
	// client). Handling a message is work in proportion to its size that
	// the Go scheduler cannot interleave finely with other sessions' small
	// messages, so without this a few clients flooding the server with
	// megabyte messages would take every CPU and stall everyone's calls.
	// Default DefaultLargeMessageRate; negative means no bound.
	LargeMessageRate int64
	// Logger receives the server's logs. Default slog.Default().
	Logger *slog.Logger
	// Token, when not empty, is the bearer token every route but /health,
	// /ready and /accepting requires (see [Server.RequireToken]).
	Token string
	// AllowedHosts are the host names (without port) the server answers to
	// besides IP literals and localhost; see [Server.Handler]. Empty: a
	// request that reaches the server on a loopback address (a loopback
	// listener's, or a wildcard listener's through 127.0.0.1) answers to no
	// other name, one that reaches it on any other address to every name.
	AllowedHosts []string
	// AllowedOrigins are the origins ("https://ui.example.com") of web pages
	// other than the server's own that may change state (reset, step,
	// inspect, /mcp, /ws).
	AllowedOrigins []string
	// AgentToken, when not empty, is the bearer token the agent listener
	// (AgentHandler) requires instead of Token, so an agent sandbox holds
	// a credential that opens only the agent routes; the main listener does
	// not accept it, and the agent listener then takes neither Token nor
	// the browser session cookie. Empty: the agent listener takes Token.
	AgentToken string
	// Replica names this server among the replicas behind one proxy: every
	// reply of the main listener carries it in the X-Seahaven-Replica
	// header. Empty: no header.
	Replica string
	// CheckpointEvery, when positive, checkpoints every session after
	// every CheckpointEvery-th step (a tool call) of its episode, so that
	// a replica killed outright loses at most that many steps of each: GET
	// /checkpoints/latest names an episode's newest checkpoint. Needs a
	// Backend that is a Restorer.
	CheckpointEvery int
	// DrainCheckpoints makes Shutdown checkpoint every live session before
	// closing it, once its step in progress is done: a /ws session is
	// closed with status 1012 (service restart) and the reason
	// "checkpoint <id>"; the next request of an HTTP or /mcp session, on
	// any server sharing the checkpoint store, gets its checkpoint id in
	// the unknown-session error. Needs a Backend that is a Restorer.
	DrainCheckpoints bool
	// Production removes the HTTP episode routes, as OpenEnv's production
	// mode does: POST /reset, POST /step, GET /state, POST /inspect, POST
	// /grade and POST /checkpoint answer 404 {"detail":"Not Found"} and
	// /openapi.json does not list them.
	// Episodes then run over /ws (infrastructure) and /mcp (agents) only.
	Production bool
}

// withDefaults returns c with zero fields replaced by their defaults.
func (c Config) withDefaults() Config {
	c.MaxSessions = positiveOr(c.MaxSessions, DefaultMaxSessions)
	c.AgentMaxSessions = min(positiveOr(c.AgentMaxSessions, max(c.MaxSessions/4, 1)), c.MaxSessions)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, DefaultIdleTimeout)
	if c.AgentIdleTimeout == 0 {
		c.AgentIdleTimeout = DefaultAgentIdleTimeout
		if c.IdleTimeout > 0 {
			c.AgentIdleTimeout = min(c.IdleTimeout, DefaultAgentIdleTimeout)
		}
	}
	c.PingInterval = cmp.Or(c.PingInterval, DefaultPingInterval)
	c.PongTimeout = cmp.Or(c.PongTimeout, DefaultPongTimeout)
	c.StepTimeout = cmp.Or(c.StepTimeout, DefaultStepTimeout)
	c.InspectTimeout = cmp.Or(c.InspectTimeout, DefaultInspectTimeout)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, DefaultWriteTimeout)
	c.MaxMessageBytes = positiveOr(c.MaxMessageBytes, DefaultMaxMessageBytes)
	c.InspectRowLimit = positiveOr(c.InspectRowLimit, DefaultInspectRowLimit)
	c.MaxReplyBytes = max(positiveOr(c.MaxReplyBytes, DefaultMaxReplyBytes), MinReplyBytes)
	c.MaxPending = positiveOr(c.MaxPending, DefaultMaxPending)
	c.MaxPendingBytes = positiveOr(c.MaxPendingBytes, DefaultMaxPendingBytes)
	c.MaxPendingTotal = positiveOr(c.MaxPendingTotal, DefaultMaxPendingTotal)
	c.LargeMessageRate = cmp.Or(c.LargeMessageRate, DefaultLargeMessageRate)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

// positiveOr returns v when it is positive, else def.
func positiveOr[T int | int64](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// LargeMessageBytes is the size past which a WebSocket message is large:
// the rest of it is read at most Config.LargeMessageRate. Honest messages
// are far smaller.
const LargeMessageBytes = 64 << 10

// DefaultLargeMessageRate is Config.LargeMessageRate when it is zero: a
// 16 MiB message is read in about half a second.
const DefaultLargeMessageRate = 32 << 20

// largeChunk is how much of a large message is read per wait.
const largeChunk = 64 << 10

// largeLimiter returns the limiter of Config.LargeMessageRate bytes per
// second, nil for a negative rate. Its burst lets one chunk of a large
// message through at a time.
func largeLimiter(bytesPerSecond int64) *rate.Limiter {
	if bytesPerSecond <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(bytesPerSecond), largeChunk)
}

// withTimeout bounds ctx by d, or only makes it cancellable when d <= 0.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}

// Transports of a session, as SessionInfo reports them.
const (
	// TransportWS is a /ws connection; the session lives as long as the socket.
	TransportWS = "ws"
	// TransportMCP is a session made by openenv/session/create on POST /mcp.
	TransportMCP = "mcp"
	// TransportHTTP is a session of the stateful HTTP routes.
	TransportHTTP = "http"
)

// SessionInfo describes one live session for monitoring.
type SessionInfo struct {
	// ID is the session id. It works as a capability (anyone who knows it can
	// call tools on the session), so it is never encoded: GET /sessions shows
	// Ref instead.
	ID string `json:"-"`
	// Ref is a short digest of ID, safe to show and to match against logs.
	Ref string `json:"ref"`
	// Transport is TransportWS, TransportMCP or TransportHTTP.
	Transport string `json:"transport"`
	// Created is when the session was made.
	Created time.Time `json:"created"`
	// LastActivity is the last activity that keeps the session alive
	// (Config.IdleTimeout), or Created.
	LastActivity time.Time `json:"last_activity"`
	// StepCount counts the tool calls since the last reset, as the state
	// document does: a call counts once it has returned, and not at all
	// when it failed on the host or was cancelled having changed nothing.
	StepCount int `json:"step_count"`
	// EpisodeID is the current episode, "" before the first reset.
	EpisodeID string `json:"episode_id"`
}

// Server serves one Backend over the OpenEnv protocol: WebSocket /ws,
// JSON-RPC /mcp and the HTTP routes (see the package documentation). A
// Server is safe for concurrent use. Every session it opens ends through
// one path that closes the session's instance exactly once and frees its slot.
type Server struct {
	backend   Backend
	cfg       Config
	log       *slog.Logger
	handler   http.Handler
	agent     http.Handler // AgentHandler
	metrics   *serverMetrics
	auth      secrets // derived from cfg.Token
	agentAuth secrets // derived from cfg.AgentToken

	mu          sync.Mutex // guards sessions, defaultHTTP, shutdown and reaping
	sessions    map[string]*session
	defaultHTTP *session // the session of HTTP requests without a session header
	shutdown    bool     // Shutdown has begun; no new sessions
	closing     bool     // Shutdown closes the sessions (after draining them): /ready fails
	reaping     bool     // the idle reaper goroutine is running
	// agentSessions counts the live sessions of the agent listener.
	agentSessions int

	reaper sync.WaitGroup // the idle reaper, once reaping
	// ended is cancelled when Shutdown begins: it stops the reaper and the
	// calls that belong to no session (callThrowaway), and throwaways
	// counts those.
	ended      context.Context
	endAll     context.CancelFunc
	throwaways sync.WaitGroup
	// callers run the tool calls, so that a call past its deadline can be
	// answered while it runs on (see Server.call).
	callers *callers

	pending      *semaphore.Weighted // MaxPendingTotal: the bytes WebSocket sessions read ahead
	pendingBytes atomic.Int64        // the bytes pending holds
	large        *rate.Limiter       // LargeMessageRate: the bytes of messages past LargeMessageBytes; nil: unbounded
	aheadWaiting atomic.Int64        // WebSocket readers waiting for read-ahead room

	// closers closes the instances resets replaced in the background, at
	// most maxBackgroundCloses at once: a reset waits for a free slot.
	closers errgroup.Group

	gcMu    sync.Mutex   // guards gcAt and gcStats; held during a forced collection
	gcAt    time.Time    // when GET /debug/runtime?gc=1 last forced a collection
	gcStats RuntimeStats // the statistics sampled right after it
}

// maxBackgroundCloses is how many replaced instances may close at once in
// the background; a reset beyond them waits for one to finish.
const maxBackgroundCloses = 64

// NewServer returns a Server for b configured by cfg. b must not be nil. The
// server starts no goroutine until its first session; call Shutdown to end
// the sessions and the idle reaper.
func NewServer(b Backend, cfg Config) *Server {
	if b == nil {
		panic("openenv: NewServer called with a nil Backend")
	}
	cfg = cfg.withDefaults()
	s := &Server{
		backend:   b,
		cfg:       cfg,
		log:       cfg.Logger,
		sessions:  map[string]*session{},
		auth:      newSecrets(cfg.Token),
		agentAuth: newSecrets(cfg.AgentToken),
		pending:   semaphore.NewWeighted(cfg.MaxPendingTotal),
		callers:   newCallers(),
	}
	s.ended, s.endAll = context.WithCancel(context.Background())
	s.closers.SetLimit(maxBackgroundCloses)
	s.large = largeLimiter(cfg.LargeMessageRate)
	s.metrics = newMetrics(s)
	s.handler = s.BrowserGuard(s.cors(s.RequireToken(s.limitBodies(s.routes()))))
	if h := s.handler; s.cfg.Replica != "" {
		s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(ReplicaHeader, s.cfg.Replica)
			h.ServeHTTP(w, r)
		})
	}
	s.agent = s.agentRoutes()
	return s
}

// Handler returns the HTTP handler serving every route (without the episode
// routes in production mode), behind the token when one is configured and
// with every request body capped at MaxMessageBytes. The same handler is
// returned on each call.
func (s *Server) Handler() http.Handler { return s.handler }

// ReplicaHeader names the replica that answered (Config.Replica).
const ReplicaHeader = "X-Seahaven-Replica"

// Sessions returns the live sessions, oldest first.
func (s *Server) Sessions() []SessionInfo {
	list := s.snapshot()
	out := make([]SessionInfo, len(list))
	for i, ss := range list {
		out[i] = ss.info()
	}
	slices.SortFunc(out, func(a, b SessionInfo) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.ID, b.ID))
	})
	return out
}

// Shutdown refuses new sessions, closes every WebSocket with StatusGoingAway
// ("server shutting down"), cancels calls in progress, closes every instance
// and stops the idle reaper. It waits until all that is done (nil), or
// until ctx ends, and then returns an error wrapping ctx's that says what
// was not done:
// how many sessions were still closing and, when it drains
// (Config.DrainCheckpoints), how many it checkpointed and how many not,
// and why (an error too when the drain's deadline cut it short, though
// the sessions closed in time). The sessions still finish closing in the
// background, but the WebSockets of those not ended are closed first, so
// that the process may exit: one with a call in progress (a call that runs
// on past its cancellation) with StatusGoingAway and a reason saying the
// call outlived the shutdown timeout. Shutdown waits at most 2 seconds for
// those closes. http.Server.Shutdown does not wait for WebSocket
// connections, so call this alongside it. Shutdown may be called more than
// once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutdown = true
	s.endAll()
	s.mu.Unlock()

	list := s.snapshot()
	var drained *drainTally
	if s.cfg.DrainCheckpoints {
		// The sessions are served until each is checkpointed: /ready
		// holds, so a proxy keeps sending their requests here.
		drained = s.drain(ctx, list)
	}
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	for _, ss := range list {
		ss.expire("server shutting down")
	}
	done := make(chan struct{})
	go func() {
		for _, ss := range list {
			<-ss.done
		}
		s.reaper.Wait()
		// Every session has ended, so no reset starts another close; no
		// sessionless call starts after shutdown began.
		s.closers.Wait()
		s.throwaways.Wait()
		close(done)
	}()
	select {
	case <-done:
		if drained == nil || drained[drainCut] == 0 {
			return nil
		}
		// Closed in time, but the drain was cut short: episodes were lost.
		return shutdownFailure(ctx, len(list), 0, drained)
	case <-ctx.Done():
		open := 0
		for _, ss := range list {
			select {
			case <-ss.done:
			default:
				open++
			}
		}
		s.cutOff(list)
		return shutdownFailure(ctx, len(list), open, drained)
	}
}

// shutdownFailure returns the error of a Shutdown of sessions sessions
// whose ctx ended with open of them still closing, after a drain that did
// what drained counts (nil: no drain).
func shutdownFailure(ctx context.Context, sessions, open int, drained *drainTally) error {
	var done []string
	if drained != nil {
		done = append(done, drained.String())
	}
	switch {
	case open > 0:
		done = append(done, fmt.Sprintf("%d still closing, which they go on doing in the background until the process exits (the recording of one it leaves open has no end)", open))
	case drained == nil:
		done = append(done, "every session closed, but not yet the instances resets replaced, the calls of no session or the resets past their deadline")
	}
	return fmt.Errorf("openenv: shutdown: %w before the sessions were done; of %d: %s", ctx.Err(), sessions, strings.Join(done, "; "))
}

// cutOffReason is the close reason of a /ws session whose call
// outlived Shutdown's context.
const cutOffReason = "server shutting down: the call in progress outlived the shutdown timeout"

// cutOff closes the sockets of the /ws sessions of list that have not
// ended when Shutdown's context did: the process exiting once Shutdown
// returns would end their connections with no close frame, which a client
// cannot tell from a network fault. A session with a call in progress (a
// tool that runs on past its cancellation holds its session's own close)
// closes with StatusGoingAway and cutOffReason, any other with the status
// its session stopped with, which its own goroutine was about to send. It
// waits for the close handshakes at most wsEndGrace, so a client that
// reads nothing holds Shutdown no longer than that. A session of any
// transport whose call past its deadline (lateCall) still runs is logged,
// with that call: its instance closes only when the call returns.
func (s *Server) cutOff(list []*session) {
	var closing sync.WaitGroup
	for _, ss := range list {
		select {
		case <-ss.done:
			continue
		default:
		}
		late := ss.lateCall()
		if late != nil {
			s.warnLate("openenv: shutdown: a "+late.kind+" "+late.past()+" still runs; its session has not ended", late)
		}
		if ss.ws == nil {
			continue
		}
		code, reason := ss.closeStatus()
		ss.mu.Lock()
		busy := ss.busy > 0
		ss.mu.Unlock()
		if busy {
			code, reason = websocket.StatusGoingAway, cutOffReason
			s.log.Warn("openenv: shutdown: the session's call outlived the shutdown timeout; its socket is closed", "session", ss.ref)
		}
		closing.Go(func() { closeWS(ss.ws, code, reason) })
	}
	closed := make(chan struct{})
	go func() {
		closing.Wait()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(wsEndGrace):
	}
}

// snapshot returns the live sessions.
func (s *Server) snapshot() []*session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Values(s.sessions))
}

// guard runs fn, which calls into the Backend or an Instance, and turns a
// panic into an EXECUTION_ERROR, logging the stack.
func (s *Server) guard(what string, fn func()) (perr *protoError) {
	return s.guardCtx(context.Background(), what, fn)
}

// guardCtx is guard for work done under ctx: the log line of a panic also
// names ctx's session and how long fn ran.
func (s *Server) guardCtx(ctx context.Context, what string, fn func()) (perr *protoError) {
	start := time.Now()
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("openenv: recovered a panic", append(sessionAttrs(ctx), durationMS(time.Since(start)),
				"in", what, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))...)
			perr = newError(codeExecution, "internal error: %s panicked: %v", what, v)
		}
	}()
	fn()
	return nil
}

// info returns the Backend's Info.
func (s *Server) info() (Info, *protoError) {
	var info Info
	perr := s.guard("Backend.Info", func() { info = s.backend.Info() })
	return info, perr
}
