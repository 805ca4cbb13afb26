package openenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/seahaven/seahaven/internal/runecut"
)

// reservedNames are the orchestration verbs, never tools (OpenEnv RFC 001).
var reservedNames = map[string]bool{"reset": true, "step": true, "state": true, "close": true}

// session is one episode slot: a /ws connection, a /mcp session or an HTTP
// session. It holds at most one Instance at a time and serialises every use
// of it. A session is safe for concurrent use.
type session struct {
	srv       *Server
	id        string
	ref       string
	transport string
	created   time.Time
	// agent marks a session started through the agent listener: only that
	// listener's requests reach it there, and no other session is reached
	// from there.
	agent bool
	// mcpVersion is the MCP protocol version a standard client's
	// initialize negotiated for the session; "" for any other session.
	mcpVersion string

	ctx    context.Context // cancelled when the session stops
	cancel context.CancelFunc
	// tagged is ctx carrying the session's tag: what bind returns for ctx
	// itself, the context of every message of a /ws session.
	tagged context.Context
	// ws is the socket of a /ws session, set before Shutdown can see the
	// session; nil for the other transports. Its own goroutine closes it,
	// but for a session Shutdown cuts off (see Server.cutOff).
	ws *websocket.Conn

	// slot serialises the use of inst: a call holds the one token for its
	// whole length. It is a channel, not a mutex, so a waiter can give up
	// when its context ends.
	slot  chan struct{}
	inst  Instance // guarded by slot; nil before the first reset
	ended bool     // guarded by slot; inst is closed and the session is gone
	// replays are the episode's step replies by request_id, and ids their
	// ids oldest first (at most maxReplays, of replayBytes together, at
	// most maxReplayBytes but for the newest); guarded by slot.
	replays     map[string]replayed
	ids         []string
	replayBytes int
	// wrapped holds the names of inst's tools whose structured content is
	// {"result": <result>}, read once per instance; guarded by slot.
	wrapped map[string]bool

	mu           sync.Mutex // guards the fields below
	lastActivity time.Time
	busy         int            // calls in progress; the reaper spares a busy session
	steps        int            // tool calls since the last reset
	over         bool           // the task graded the episode done: later steps are refused
	doneAt       int            // the step count when it did
	task         string         // the episode's task; "" for none
	graded       bool           // the episode has been graded
	lastReward   float64        // its latest grading's reward
	episodeEnded bool           // the episode's end is observed (it finished, or the instance went)
	episodeID    string         // "" before the first reset
	attempt      string         // this session's attempt at the episode: new at every reset and restore
	exposed      bool           // a checkpoint of the episode, or the fence of the restore that started it, names attempt, so a restore may fence it
	superseded   string         // what superseded attempt, once a request saw its fence; "" before
	timeline     []timelineStep // the episode's newest maxTimeline tool calls, oldest first, for the inspector
	stopped      bool           // stop was called; closeCode and closeReason are set
	closeCode    websocket.StatusCode
	closeReason  string
	// late is the call past its deadline that holds the slot until it
	// returns (see lateCall); nil when none. lateNews is closed, and
	// replaced, when a call comes to hold the slot so and when it lets it
	// go: it wakes the requests waiting for the slot (take).
	late     *lateCall
	lateNews chan struct{}
	// requests cancel a standard MCP client's tools/call and tools/list
	// requests in progress, by their id (compacted JSON), so its
	// notifications/cancelled can stop one (track, cancelRequest); a
	// pointer tells a request from a newer one reusing its id.
	requests map[string]*context.CancelCauseFunc

	endOnce sync.Once
	done    chan struct{} // closed once the instance is closed and the slot freed
}

// refOf is the non-secret digest of a session id shown in listings and logs.
func refOf(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:6])
}

// uuidPattern matches the ids a text for the logs may carry: checkpoint
// and attempt ids, in a close reason or a fencing's description.
var uuidPattern = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)

// digested returns text for the logs: each id in it, a capability, is
// replaced by its digest (refOf).
func digested(text string) string { return uuidPattern.ReplaceAllStringFunc(text, refOf) }

// shuttingDown is the error a new session gets once Shutdown has begun.
func shuttingDown() *protoError {
	return newError(codeShuttingDown, "Server is shutting down. Cannot accept new sessions.")
}

// newSessionLocked registers a session; s.mu must be held. An empty id gets
// a new UUID.
func (s *Server) newSessionLocked(transport, id string) (*session, *protoError) {
	if s.shutdown {
		return nil, shuttingDown()
	}
	if len(s.sessions) >= s.cfg.MaxSessions {
		s.metrics.rejections.WithLabelValues(transport).Inc()
		return nil, capacityError("Server at capacity: %d/%d sessions active. Cannot accept new connections.", len(s.sessions), s.cfg.MaxSessions)
	}
	if id == "" {
		id = uuid.NewString()
	}
	now := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	ss := &session{
		srv: s, id: id, ref: refOf(id), transport: transport, created: now,
		ctx: ctx, cancel: cancel,
		slot:         make(chan struct{}, 1),
		lastActivity: now,
		lateNews:     make(chan struct{}),
		done:         make(chan struct{}),
	}
	ss.tagged = withSession(ctx, ss)
	s.sessions[id] = ss
	if !s.reaping && (s.cfg.IdleTimeout > 0 || s.cfg.AgentIdleTimeout > 0) {
		s.reaping = true
		s.reaper.Go(s.reap)
	}
	s.metrics.sessionsOpened.WithLabelValues(transport).Inc()
	s.log.Info("openenv: session opened", "session", ss.ref, "transport", transport, "active", len(s.sessions))
	return ss, nil
}

// newMCPSession registers a session with a new id for an MCP request,
// marked as the agent's and counted against AgentMaxSessions when the
// request came through the agent listener. version is the MCP protocol
// version a standard client's initialize negotiated, "" for OpenEnv's
// dialect.
func (s *Server) newMCPSession(ctx context.Context, version string) (*session, *protoError) {
	agent := FromAgentListener(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if perr := s.agentCapacityLocked(agent); perr != nil {
		return nil, perr
	}
	ss, perr := s.newSessionLocked(TransportMCP, "")
	if perr == nil {
		ss.mcpVersion = version // set before any lookup can find the session
		if agent {
			ss.agent = true
			s.agentSessions++
		}
	}
	return ss, perr
}

// agentCapacityLocked refuses one more instance of the agent listener
// (agent true) when AgentMaxSessions of them are live. s.mu must be held.
func (s *Server) agentCapacityLocked(agent bool) *protoError {
	if !agent || s.agentSessions < s.cfg.AgentMaxSessions || s.shutdown {
		return nil
	}
	s.metrics.rejections.WithLabelValues(TransportMCP).Inc()
	return capacityError("Agent sessions at capacity: %d/%d sessions started through the agent listener are live (the server's agent-max-sessions). End one (DELETE /mcp or openenv/session/close) before starting another.",
		s.agentSessions, s.cfg.AgentMaxSessions)
}

// reachable reports whether a request with ctx may use ss: on the agent
// listener only the agent's own sessions are reachable, elsewhere all.
func reachable(ctx context.Context, ss *session) bool {
	return ss != nil && (ss.agent || !FromAgentListener(ctx))
}

// lookup returns the live session with id, or nil.
func (s *Server) lookup(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// remove frees ss's slot.
func (s *Server) remove(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[ss.id] == ss {
		delete(s.sessions, ss.id)
		if ss.agent {
			s.agentSessions--
		}
	}
	if s.defaultHTTP == ss {
		s.defaultHTTP = nil
	}
}

// unknownSession is the error of a request with ctx naming no live session
// here: when a draining server checkpointed that session
// (Restorer.DrainedTo), it says so and carries the checkpoint id to
// restore, except on the agent listener, where a checkpoint id is never
// named (it is the trainer's capability).
func (s *Server) unknownSession(ctx context.Context, id string) *protoError {
	if info, ok := s.drainedTo(ctx, id); ok {
		perr := newError(codeUnknownSession, "Session %s was checkpointed and closed when its server drained: restore checkpoint %s (reset data {\"checkpoint\": %q}) to continue its episode at step %d.", id, info.ID, info.ID, info.Revision)
		perr.extra.CheckpointID = info.ID
		return perr
	}
	return newError(codeUnknownSession, "Unknown session_id: %s", runecut.Echo(id))
}

// closedDuring returns perr, the failure of a request with ctx on the
// session, unless the session was stopped while the request ran (closed by
// another request, reaped, or its server shutting down): then the error
// every later request gets, saying so, since the failure of the work the
// stop interrupted ("context canceled", or a query's error naming the
// instance's files) says nothing true about the request.
func (ss *session) closedDuring(ctx context.Context, perr *protoError) *protoError {
	if perr == nil || ss.ctx.Err() == nil {
		return perr
	}
	if _, drained := ss.srv.drainedTo(ctx, ss.id); drained {
		return ss.srv.unknownSession(ctx, ss.id)
	}
	why := ""
	if _, reason := ss.closeStatus(); reason != "" {
		why = " (" + reason + ")"
	}
	return newError(codeUnknownSession, "Session %s was closed while the request ran%s: it no longer exists", ss.id, why)
}

// drainedTo returns the checkpoint a session was drained to, if the
// backend restores checkpoints and knows of one, and ctx is not a request
// of the agent listener.
func (s *Server) drainedTo(ctx context.Context, id string) (CheckpointInfo, bool) {
	if r, ok := s.backend.(Restorer); ok && id != "" && !FromAgentListener(ctx) {
		return r.DrainedTo(id)
	}
	return CheckpointInfo{}, false
}

// info describes ss for monitoring.
func (ss *session) info() SessionInfo {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return SessionInfo{
		ID: ss.id, Ref: ss.ref, Transport: ss.transport, Created: ss.created,
		LastActivity: ss.lastActivity, StepCount: ss.steps, EpisodeID: ss.episodeID,
	}
}

// stop cancels the session's work and records how its socket should close;
// the first call's code and reason win, and it alone reports first. The
// session ends when its owner (the WebSocket handler) or the caller then
// calls end.
func (ss *session) stop(code websocket.StatusCode, reason string) (first bool) {
	ss.mu.Lock()
	if first = !ss.stopped; first {
		ss.stopped = true
		ss.closeCode, ss.closeReason = code, reason
	}
	ss.mu.Unlock()
	ss.cancel()
	return first
}

// closeStatus returns the code and reason recorded by stop.
func (ss *session) closeStatus() (websocket.StatusCode, string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.closeCode, ss.closeReason
}

// end stops the session, waits for the call in progress, closes the
// instance and frees the slot. Only the first call does anything; every
// exit path of every transport comes through here. A call past its
// deadline that still runs (lateCall) is not waited for: the session ends
// in the background once it returns.
func (ss *session) end() {
	ss.endOnce.Do(func() {
		ss.stop(websocket.StatusNormalClosure, "")
		if took, late := ss.take(nil, 0); !took {
			ss.srv.warnLate("openenv: the session ends once its "+late.kind+" "+late.past()+" returns", late)
			go func() {
				ss.slot <- struct{}{}
				ss.finish()
			}()
			return
		}
		ss.finish()
	})
}

// finish ends the session (see end) with the slot held.
func (ss *session) finish() {
	ss.ended = true
	inst := ss.inst
	ss.inst = nil
	if inst != nil {
		ss.mu.Lock()
		ss.endEpisodeLocked()
		ss.mu.Unlock()
	}
	<-ss.slot
	if inst != nil {
		ss.srv.closeInstance(inst)
	}
	ss.srv.remove(ss)
	ss.mu.Lock()
	reason, steps := ss.closeReason, ss.steps
	ss.mu.Unlock()
	// Logged before done is closed: Shutdown returns once every done is,
	// and the process may exit right after.
	ss.srv.log.Info("openenv: session closed", "session", ss.ref, "transport", ss.transport,
		durationMS(time.Since(ss.created)), "reason", digested(reason), "steps", steps)
	close(ss.done)
}

// acquire takes the call slot. It fails when ctx ends first or the session
// has ended; a request its client cancelled (notifications/cancelled) is
// told so, not that its session is unknown. Behind a call past its
// deadline (lateCall) a request waits at most its own deadline as a step:
// the step's timeout (patienceKey), else StepTimeout (without bound when
// negative), and is then told what holds the session.
func (ss *session) acquire(ctx context.Context) *protoError {
	patience, ok := ctx.Value(patienceKey{}).(time.Duration)
	if !ok {
		patience = ss.srv.cfg.StepTimeout
	}
	took, late := ss.take(ctx.Done(), patience)
	switch {
	case took:
		if !ss.ended {
			return nil
		}
		<-ss.slot
	case ss.ctx.Err() != nil:
		if late := ss.lateCall(); late != nil {
			return late.closing(ss.id)
		}
	case late != nil:
		return late.refusal()
	case errors.Is(context.Cause(ctx), errRequestCancelled):
		return newError(codeSession, "The client cancelled the request (notifications/cancelled) while it waited for the session's call in progress")
	}
	return ss.srv.unknownSession(ctx, ss.id)
}

// patienceKey is the context key of how long a request waits behind a
// call past its deadline (acquire): a step's timeout, which POST /step's
// timeout_s may shorten (session.step).
type patienceKey struct{}

// take takes the call slot, waiting for the call in progress, and reports
// true. It gives up when done is closed, or once a call past its deadline
// (lateCall) has held the slot for patience (negative: never), and then
// returns that call (nil for done). The wait behind such a call starts
// anew when another holds the slot, and ends when none does.
func (ss *session) take(done <-chan struct{}, patience time.Duration) (bool, *lateCall) {
	var holder *lateCall
	var timer *time.Timer
	var expired <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		ss.mu.Lock()
		late, news := ss.late, ss.lateNews
		ss.mu.Unlock()
		if late != holder {
			holder = late
			if timer != nil {
				timer.Stop()
				timer, expired = nil, nil
			}
			if late != nil && patience >= 0 {
				timer = time.NewTimer(patience)
				expired = timer.C
			}
		}
		select {
		case ss.slot <- struct{}{}:
			return true, nil
		case <-news:
		case <-expired:
			return false, holder
		case <-done:
			return false, nil
		}
	}
}

// holdLocked records that late, the call that holds the slot, runs on
// past its deadline: the slot stays taken until it returns (release), and
// the requests waiting for it are woken to tell. The slot must be held.
func (ss *session) holdLocked(late *lateCall) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.setLateLocked(late)
}

// setLateLocked sets the call past its deadline that holds the slot (nil:
// none) and wakes the requests waiting for the slot (take). ss.mu must be
// held.
func (ss *session) setLateLocked(late *lateCall) {
	ss.late = late
	close(ss.lateNews)
	ss.lateNews = make(chan struct{})
}

// lateCall returns the call past its deadline that holds the slot, or nil.
func (ss *session) lateCall() *lateCall {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.late
}

// release gives the call slot back; when a call past its deadline holds
// it, once that call returns.
func (ss *session) release() {
	late := ss.lateCall()
	if late == nil {
		<-ss.slot
		return
	}
	go func() {
		ss.srv.awaitLate(late)
		if late.settle != nil {
			late.settle()
		}
		ss.mu.Lock()
		ss.setLateLocked(nil) // its waiters wait for the slot as for any call
		ss.mu.Unlock()
		<-ss.slot
	}()
}

// enter starts an operation on the session: it marks activity (when active;
// see begin), binds ctx to the session and takes the call slot. On success
// the caller must call leave, which undoes all three.
func (ss *session) enter(ctx context.Context, active bool) (_ context.Context, leave func(), perr *protoError) {
	end := func() {}
	if active {
		end = ss.begin()
	}
	ctx, cancel := ss.bind(ctx)
	if perr := ss.acquire(ctx); perr != nil {
		cancel()
		end()
		return nil, nil, perr
	}
	return ctx, func() {
		ss.release()
		cancel()
		end()
	}, nil
}

// bind returns ctx also cancelled when the session stops. The session's
// own context, and values added to it (which end when it does), need
// nothing more than its tag.
func (ss *session) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	switch {
	case ctx == ss.ctx:
		return ss.tagged, func() {}
	case ctx.Done() == ss.ctx.Done():
		return withSession(ctx, ss), func() {}
	}
	ctx, cancel := context.WithCancel(withSession(ctx, ss))
	stop := context.AfterFunc(ss.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// begin marks the start of an activity (reset, step, MCP tools/call or
// tools/list, inspect, grade, checkpoint); the returned func marks its
// end. Both refresh the idle clock.
func (ss *session) begin() func() {
	ss.mu.Lock()
	ss.busy++
	ss.lastActivity = time.Now()
	ss.mu.Unlock()
	return func() {
		ss.mu.Lock()
		ss.busy--
		ss.lastActivity = time.Now()
		ss.mu.Unlock()
	}
}

// idle reports whether the session, not yet stopped, has been idle for at
// least d at now.
func (ss *session) idle(now time.Time, d time.Duration) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return !ss.stopped && ss.busy == 0 && now.Sub(ss.lastActivity) >= d
}

// reap closes idle sessions until Shutdown.
func (s *Server) reap() {
	shortest := s.cfg.IdleTimeout
	if shortest <= 0 || s.cfg.AgentIdleTimeout > 0 && s.cfg.AgentIdleTimeout < shortest {
		shortest = s.cfg.AgentIdleTimeout
	}
	every := min(max(shortest/4, 10*time.Millisecond), time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.ended.Done():
			return
		case now := <-t.C:
			s.reapIdle(now)
		}
	}
}

// reapIdle stops every session idle for its idle timeout at now:
// AgentIdleTimeout for an agent's session, IdleTimeout for the others.
func (s *Server) reapIdle(now time.Time) {
	for _, ss := range s.snapshot() {
		limit := s.cfg.IdleTimeout
		if ss.agent {
			limit = s.cfg.AgentIdleTimeout
		}
		if limit <= 0 || !ss.idle(now, limit) {
			continue
		}
		reason := fmt.Sprintf("session idle for more than %s", limit)
		s.log.Info("openenv: closing an idle session", "session", ss.ref, "transport", ss.transport)
		s.metrics.reaps.WithLabelValues(ss.transport).Inc()
		ss.expire(reason)
	}
}

// expire ends the session from outside (idle reaping, shutdown): it stops
// the session with a going-away close; a WebSocket session's own goroutine
// then ends it, any other session is ended here, in the background.
func (ss *session) expire(reason string) {
	ss.stop(websocket.StatusGoingAway, reason)
	if ss.transport != TransportWS {
		go ss.end()
	}
}

// endEpisodeLocked observes the end of the current episode once: when its
// task grades it done, or when its instance is replaced or closed. ss.mu
// must be held.
func (ss *session) endEpisodeLocked() {
	if ss.episodeEnded {
		return
	}
	ss.episodeEnded = true
	ss.srv.observeEpisodeEnded(ss.task, ss.steps, ss.graded, ss.lastReward)
}
