package openenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/seahaven/seahaven/env"
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

	ctx    context.Context // cancelled when the session stops
	cancel context.CancelFunc
	// tagged is ctx carrying the session's tag: what bind returns for ctx
	// itself, the context of every message of a /ws session.
	tagged context.Context

	// slot serialises the use of inst: a call holds the one token for its
	// whole length. It is a channel, not a mutex, so a waiter can give up
	// when its context ends.
	slot  chan struct{}
	inst  Instance // guarded by slot; nil before the first reset
	ended bool     // guarded by slot; inst is closed and the session is gone
	// replays are the episode's step replies by request_id, and ids their
	// ids oldest first (at most maxReplays); guarded by slot.
	replays map[string]replayed
	ids     []string
	// wrapped holds the names of inst's tools whose structured content is
	// {"result": <result>}, read once per instance; guarded by slot.
	wrapped map[string]bool

	mu           sync.Mutex // guards the fields below
	lastActivity time.Time
	busy         int      // calls in progress; the reaper spares a busy session
	steps        int      // tool calls since the last reset
	over         bool     // the task graded the episode done: later steps are refused
	doneAt       int      // the step count when it did
	task         string   // the episode's task; "" for none
	graded       bool     // the episode has been graded
	lastReward   float64  // its latest grading's reward
	episodeEnded bool     // the episode's end is observed (it finished, or the instance went)
	episodeID    string   // "" before the first reset
	attempt      string   // this session's attempt at the episode: new at every reset and restore
	exposed      bool     // a checkpoint of the episode names attempt, so a restore may fence it
	timeline     timeline // the episode's newest tool calls, for the inspector
	stopped      bool     // stop was called; closeCode and closeReason are set
	closeCode    websocket.StatusCode
	closeReason  string

	endOnce sync.Once
	done    chan struct{} // closed once the instance is closed and the slot freed
}

// refOf is the non-secret digest of a session id shown in listings and logs.
func refOf(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:6])
}

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
		s.observeRejected(transport)
		return nil, capacityError(len(s.sessions), s.cfg.MaxSessions)
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
		done:         make(chan struct{}),
	}
	ss.tagged = withSession(ctx, ss)
	s.sessions[id] = ss
	if !s.reaping && (s.cfg.IdleTimeout > 0 || s.cfg.AgentIdleTimeout > 0) {
		s.reaping = true
		go s.reap()
	}
	s.observeSessionOpened(transport)
	s.log.Info("openenv: session opened", "session", ss.ref, "transport", transport, "active", len(s.sessions))
	return ss, nil
}

// newMCPSession registers a session with a new id for an MCP request,
// marked as the agent's and counted against AgentMaxSessions when the
// request came through the agent listener.
func (s *Server) newMCPSession(ctx context.Context) (*session, *protoError) {
	agent := onAgentListener(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if agent && s.agentSessions >= s.cfg.AgentMaxSessions && !s.shutdown {
		s.observeRejected(TransportMCP)
		return nil, &protoError{
			code: codeCapacity,
			message: fmt.Sprintf("Agent sessions at capacity: %d/%d sessions started through the agent listener are live (the server's agent-max-sessions). End one (DELETE /mcp or openenv/session/close) before starting another.",
				s.agentSessions, s.cfg.AgentMaxSessions),
			extra: errorExtra{ActiveSessions: s.agentSessions, MaxSessions: s.cfg.AgentMaxSessions},
		}
	}
	ss, perr := s.newSessionLocked(TransportMCP, "")
	if perr == nil && agent {
		ss.agent = true
		s.agentSessions++
	}
	return ss, perr
}

// reachable reports whether a request with ctx may use ss: on the agent
// listener only the agent's own sessions are reachable, elsewhere all.
func reachable(ctx context.Context, ss *session) bool {
	return ss != nil && (ss.agent || !onAgentListener(ctx))
}

// newSession registers a session with a new id.
func (s *Server) newSession(transport string) (*session, *protoError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newSessionLocked(transport, "")
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

// unknownSession is the error of a request naming no live session here:
// when a draining server checkpointed that session (Restorer.DrainedTo),
// it says so and carries the checkpoint id to restore.
func (s *Server) unknownSession(id string) *protoError {
	if r, ok := s.backend.(Restorer); ok && id != "" {
		if info, ok := r.DrainedTo(id); ok {
			perr := newError(codeUnknownSession, "Session %s was checkpointed and closed when its server drained: restore checkpoint %s (reset data {\"checkpoint\": %q}) to continue its episode at step %d.", id, info.ID, info.ID, info.Revision)
			perr.extra.CheckpointID = info.ID
			return perr
		}
	}
	return newError(codeUnknownSession, "Unknown session_id: %s", id)
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
// the first call's code and reason win. The session ends when its owner (the
// WebSocket handler) or the caller then calls end.
func (ss *session) stop(code websocket.StatusCode, reason string) {
	ss.mu.Lock()
	if !ss.stopped {
		ss.stopped = true
		ss.closeCode, ss.closeReason = code, reason
	}
	ss.mu.Unlock()
	ss.cancel()
}

// closeStatus returns the code and reason recorded by stop.
func (ss *session) closeStatus() (websocket.StatusCode, string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.closeCode, ss.closeReason
}

// isStopped reports whether stop has been called.
func (ss *session) isStopped() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.stopped
}

// end stops the session, waits for the call in progress, closes the
// instance and frees the slot. Only the first call does anything; every
// exit path of every transport comes through here.
func (ss *session) end() {
	ss.endOnce.Do(func() {
		ss.stop(websocket.StatusNormalClosure, "")
		ss.slot <- struct{}{}
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
		_, reason := ss.closeStatus()
		ss.mu.Lock()
		steps := ss.steps
		ss.mu.Unlock()
		// Logged before done is closed: Shutdown returns once every done is,
		// and the process may exit right after.
		ss.srv.log.Info("openenv: session closed", "session", ss.ref, "transport", ss.transport,
			durationMS(time.Since(ss.created)), "reason", reason, "steps", steps)
		close(ss.done)
	})
}

// closeInstance closes inst, logging a failure.
func (s *Server) closeInstance(inst Instance) {
	defer s.observeInstanceClosed()
	var err error
	if perr := s.guard("Instance.Close", func() { err = inst.Close() }); perr != nil {
		return
	}
	if err != nil {
		s.log.Warn("openenv: closing an instance failed", "err", err)
	}
}

// open opens an instance with opts, bounded by StepTimeout. A failure of
// the host (an *env.InfraError) is an infrastructure error; an option naming
// nothing (an *OptionError) a VALIDATION_ERROR at loc plus the option, unless
// implicit; any other failure a FACTORY_ERROR when implicit (a default reset
// the caller did not ask for), else an EXECUTION_ERROR; a panic is a
// protoError too.
func (s *Server) open(ctx context.Context, opts OpenOptions, implicit bool, loc []any) (Instance, *protoError) {
	octx, cancel := withTimeout(ctx, s.cfg.StepTimeout)
	defer cancel()
	var inst Instance
	var err error
	start := time.Now()
	perr := s.guardCtx(ctx, "Backend.Open", func() { inst, err = s.backend.Open(octx, opts) })
	if err == nil && inst == nil && perr == nil {
		err = errors.New("the backend opened no instance")
	}
	s.observeOpen(octx, start, opts, err, perr)
	if perr != nil {
		return nil, perr
	}
	if perr := s.infraFailure(ctx, opReset, err); perr != nil {
		return nil, perr
	}
	var oe *OptionError
	if err != nil && !implicit && errors.As(err, &oe) {
		return nil, invalid([]fieldError{oe.field(loc)})
	}
	if err != nil {
		if implicit {
			info, _ := s.info()
			return nil, &protoError{code: codeFactory, message: err.Error(), extra: errorExtra{FactoryName: info.Name}}
		}
		return nil, newError(codeExecution, "%s", err.Error())
	}
	return inst, nil
}

// closeInstanceLater closes inst in the background, at most
// maxBackgroundCloses at a time (it waits for a slot when they are all
// taken); Shutdown waits for every such close.
func (s *Server) closeInstanceLater(inst Instance) {
	s.closeSlots <- struct{}{}
	s.closers.Add(1)
	go func() {
		defer func() {
			<-s.closeSlots
			s.closers.Done()
		}()
		s.closeInstance(inst)
	}()
}

// acquire takes the call slot. It fails when ctx ends first or the session
// has ended.
func (ss *session) acquire(ctx context.Context) *protoError {
	select {
	case ss.slot <- struct{}{}:
	case <-ctx.Done():
		return ss.srv.unknownSession(ss.id)
	}
	if ss.ended {
		<-ss.slot
		return ss.srv.unknownSession(ss.id)
	}
	return nil
}

// release gives the call slot back.
func (ss *session) release() { <-ss.slot }

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
// own context needs nothing more than its tag.
func (ss *session) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == ss.ctx {
		return ss.tagged, func() {}
	}
	ctx, cancel := context.WithCancel(withSession(ctx, ss))
	stop := context.AfterFunc(ss.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// begin marks the start of an activity (reset, step, mcp, inspect); the
// returned func marks its end. Both refresh the idle clock.
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

// idle reports whether the session has been idle for at least d at now.
func (ss *session) idle(now time.Time, d time.Duration) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.busy == 0 && now.Sub(ss.lastActivity) >= d
}

// options turns a reset request into OpenOptions, filling the defaults.
func (s *Server) options(req resetData) (OpenOptions, *protoError) {
	info, perr := s.info()
	if perr != nil {
		return OpenOptions{}, perr
	}
	opts := OpenOptions{Fixture: info.DefaultFixture, EpisodeID: uuid.NewString()}
	if req.Startup != nil {
		opts.Startup = *req.Startup
	}
	if req.ControlTools != nil {
		opts.ControlTools = *req.ControlTools
	}
	if req.Task != nil && *req.Task != "" {
		// A task names its own fixture: the world's default does not apply.
		opts.Task, opts.Fixture = *req.Task, ""
	}
	if req.Seed != nil {
		opts.Seed = int64(*req.Seed)
	}
	if req.EpisodeID != nil {
		opts.EpisodeID = string(*req.EpisodeID)
	}
	if req.Fixture != nil {
		opts.Fixture = *req.Fixture
	}
	if req.Now != nil {
		opts.Now = string(*req.Now)
	}
	if req.ClockMode != nil {
		opts.ClockMode = string(*req.ClockMode)
	}
	return opts, nil
}

// reset replaces the session's instance with a new one opened from req.
// When opening fails, the previous instance stays.
func (ss *session) reset(ctx context.Context, req resetData) *protoError {
	defer ss.begin()()
	if errs := checkRestore(req); len(errs) > 0 {
		return invalid(errs)
	}
	if req.Checkpoint != nil {
		if onAgentListener(ctx) {
			in, _ := json.Marshal(*req.Checkpoint)
			return invalid([]fieldError{{Type: "value_error", Loc: at(req.loc, "checkpoint"), Input: in,
				Msg: "Value error, checkpoint: restores are the trainer's; the agent listener does not serve them"}})
		}
		ctx, leave, perr := ss.enter(ctx, false)
		if perr != nil {
			return perr
		}
		defer leave()
		return ss.restoreLocked(ctx, req)
	}
	opts, perr := ss.srv.options(req)
	if perr != nil {
		return perr
	}
	ctx, leave, perr := ss.enter(ctx, false) // already active
	if perr != nil {
		return perr
	}
	defer leave()
	return ss.openLocked(ctx, opts, false, req.loc)
}

// openLocked opens an instance and makes it current; the old one closes in
// the background (closeInstanceLater).
// implicit marks the default reset a first step performs; its failure is a
// FACTORY_ERROR rather than an EXECUTION_ERROR. loc locates the reset's
// data in its message. The slot must be held.
func (ss *session) openLocked(ctx context.Context, opts OpenOptions, implicit bool, loc []any) *protoError {
	s := ss.srv
	inst, perr := s.open(ctx, opts, implicit, loc)
	if perr != nil {
		return perr
	}
	ss.installLocked(inst, sessionRecord{Task: opts.Task, EpisodeID: opts.EpisodeID}, uuid.NewString())
	s.log.Debug("openenv: instance opened", "session", ss.ref, "fixture", opts.Fixture, "seed", opts.Seed)
	return nil
}

// installLocked makes inst the session's instance, for the episode rec
// describes (a new one: its task and episode id alone; or a restored one,
// as its checkpoint recorded it), run by attempt; the old instance closes
// in the background (closeInstanceLater). The slot must be held.
func (ss *session) installLocked(inst Instance, rec sessionRecord, attempt string) {
	s := ss.srv
	old := ss.inst
	ss.inst = inst
	ss.replays, ss.ids, ss.wrapped = nil, nil, nil
	for _, r := range rec.Replays {
		ss.keepLocked(r.ID, replayed{key: r.Key, step: r.Step, reply: stepReply{Observation: r.Observation, Reward: r.Reward, Done: r.Done}})
	}
	ss.mu.Lock()
	if old != nil {
		ss.endEpisodeLocked()
	}
	ss.steps = rec.Steps
	ss.over, ss.doneAt = rec.Over, rec.DoneAt
	ss.task, ss.graded, ss.lastReward, ss.episodeEnded = rec.Task, rec.Graded, rec.LastReward, false
	ss.episodeID, ss.attempt, ss.exposed = rec.EpisodeID, attempt, false
	ss.timeline = timeline{}
	ss.mu.Unlock()
	s.observeEpisodeStarted(rec.Task)
	if old != nil {
		// The reply need not wait for the old instance's files to go.
		s.closeInstanceLater(old)
	}
}

// ensureLocked performs the implicit default reset of a session that has no
// instance yet: OpenEnv environments exist from connect, so a first step
// needs no reset. The slot must be held.
func (ss *session) ensureLocked(ctx context.Context) *protoError {
	if ss.inst != nil {
		return nil
	}
	opts, perr := ss.srv.options(resetData{})
	if perr != nil {
		return perr
	}
	return ss.openLocked(ctx, opts, true, nil)
}

// step runs one action and returns its step response: the observation, the
// reward and the done flag.
func (ss *session) step(ctx context.Context, a action, timeout time.Duration) (stepReply, *protoError) {
	ctx, leave, perr := ss.enter(ctx, true)
	if perr != nil {
		return stepReply{}, perr
	}
	defer leave()
	if perr := ss.ensureLocked(ctx); perr != nil {
		return stepReply{}, perr
	}
	if perr := ss.fencedLocked(); perr != nil {
		return stepReply{}, perr
	}
	if reply, ok, perr := ss.replayLocked(a); ok || perr != nil {
		return reply, perr
	}
	if perr := ss.overLocked(); perr != nil {
		return stepReply{}, perr
	}
	reply, perr := ss.stepLocked(ctx, a, timeout)
	if perr == nil {
		ss.rememberLocked(a, reply)
		if a.Type != actionListTools {
			ss.autoCheckpointLocked(ctx)
		}
	}
	return reply, perr
}

// stepLocked runs a step. The slot must be held.
func (ss *session) stepLocked(ctx context.Context, a action, timeout time.Duration) (stepReply, *protoError) {
	var obs any
	if a.Type == actionListTools {
		tools, perr := ss.srv.tools(ss.inst)
		if perr != nil {
			return stepReply{}, perr
		}
		obs = listToolsObservation(tools)
	} else {
		out, perr := ss.callLocked(ctx, a.ToolName, json.RawMessage(a.Arguments), timeout)
		if perr != nil {
			return stepReply{}, perr
		}
		obs = out.observation(a.ToolName)
	}
	return ss.respondLocked(ctx, obs, timeout)
}

// respondLocked wraps a step's observation in the step response. When the
// instance runs a task (it is a Grader) the reward and done flag are the
// task's grading after the step; otherwise null and false. The slot must
// be held.
func (ss *session) respondLocked(ctx context.Context, obs any, timeout time.Duration) (stepReply, *protoError) {
	g, ok := ss.inst.(Grader)
	if !ok {
		return stepReply{Observation: obs}, nil
	}
	res, perr := ss.gradeLocked(ctx, g, timeout, "the step ran, but grading its task failed: %s")
	if perr != nil {
		return stepReply{}, perr
	}
	ss.gradeStepLocked(res.Reward, res.Done)
	return stepReply{Observation: obs, Reward: &res.Reward, Done: res.Done}, nil
}

// gradeLocked grades the session's task episode, bounded by timeout, and
// latches done: once a grading says done, later steps are refused
// (overLocked). failed formats a grader's error. The slot must be held.
func (ss *session) gradeLocked(ctx context.Context, g Grader, timeout time.Duration, failed string) (Grading, *protoError) {
	gctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	var res Grading
	var err error
	if perr := ss.srv.guardCtx(ctx, "Instance.Grade", func() { res, err = g.Grade(gctx) }); perr != nil {
		return Grading{}, perr
	}
	if perr := ss.srv.infraFailure(ctx, opGrade, err); perr != nil {
		return Grading{}, perr
	}
	if err != nil {
		ss.mu.Lock()
		task := ss.task
		ss.mu.Unlock()
		ss.srv.observeGradingFailure(task)
		return Grading{}, newError(codeExecution, failed, err.Error())
	}
	if res.Checks == nil {
		res.Checks = []env.CheckResult{}
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.graded, ss.lastReward = true, res.Reward
	if res.Done && !ss.over {
		ss.over, ss.doneAt = true, ss.steps
		ss.srv.observeEpisodeFinished(ss.task)
		ss.endEpisodeLocked()
	}
	return res, nil
}

// grade answers a grade request: the task's grading of the episode now,
// with every check's result. It is not a step. A session whose episode
// runs no task is refused.
func (ss *session) grade(ctx context.Context) (Grading, *protoError) {
	ctx, leave, perr := ss.enter(ctx, true)
	if perr != nil {
		return Grading{}, perr
	}
	defer leave()
	if perr := ss.ensureLocked(ctx); perr != nil {
		return Grading{}, perr
	}
	g, ok := ss.inst.(Grader)
	if !ok {
		return Grading{}, newError(codeNoTask, "The episode runs no task, so there is nothing to grade: reset with a task (reset data \"task\": one of GET /tasks).")
	}
	return ss.gradeLocked(ctx, g, ss.srv.cfg.StepTimeout, "grading the task failed: %s")
}

// overLocked refuses a step of an episode its task has graded done: done
// never returns to false within an episode, and a trainer that steps past
// it is told to reset. The slot must be held.
func (ss *session) overLocked() *protoError {
	ss.mu.Lock()
	over, doneAt, task := ss.over, ss.doneAt, ss.task
	ss.mu.Unlock()
	if !over {
		return nil
	}
	ss.srv.observeRefusedAfterDone(task)
	return newError(codeEpisodeDone, "The episode is over: its task graded it done after step %d. Reset to start a new episode.", doneAt)
}

// callLocked counts and makes one tool call. The slot must be held.
func (ss *session) callLocked(ctx context.Context, name string, args json.RawMessage, timeout time.Duration) (toolOutcome, *protoError) {
	ss.mu.Lock()
	ss.steps++
	ss.mu.Unlock()
	before := changeCount(ss.inst)
	out, perr := ss.srv.call(ctx, ss.inst, name, args, timeout)
	if perr == nil {
		if out.err == nil {
			if ss.wrapped == nil {
				ss.wrapped = ss.srv.wrappedResults(ss.inst)
			}
			out.wrapped = ss.wrapped[name]
		}
		ss.recordStepLocked(name, args, out, before)
	}
	return out, perr
}

// tools returns inst's tool listing.
func (s *Server) tools(inst Instance) ([]env.ToolInfo, *protoError) {
	var tools []env.ToolInfo
	perr := s.guard("Instance.Tools", func() { tools = inst.Tools() })
	return tools, perr
}

// call makes one tool call on inst, bounded by timeout. Tool failures come
// back in the outcome; only a panic is a protoError.
func (s *Server) call(ctx context.Context, inst Instance, name string, args json.RawMessage, timeout time.Duration) (toolOutcome, *protoError) {
	start := time.Now()
	if reservedNames[name] {
		out := reservedCall(name)
		s.observeCall(ctx, start, name, out, nil)
		return out, nil
	}
	cctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	var out toolOutcome
	var infra *protoError
	perr := s.guardTool(ctx, name, func() {
		res, err := inst.CallJSON(cctx, name, args)
		if infra = s.infraFailure(ctx, opCall, err); infra != nil {
			return
		}
		if err != nil {
			out.err = toolError(cctx, err, name, timeout)
			return
		}
		raw, err := encode(res)
		if err != nil {
			out.err = &env.ToolError{Kind: env.KindExecution,
				Message: fmt.Sprintf("tool %q returned a result that cannot be encoded as JSON: %v", name, err)}
			return
		}
		if n := s.replyCarrying(raw); n > 0 {
			out.err = &env.ToolError{Kind: env.KindExecution,
				Message: fmt.Sprintf("tool %q returned a result too large to send: %d bytes of JSON, in a reply of %d bytes, "+
					"over the limit of %d bytes on a reply (the server's max-reply-bytes); the call ran, ask for less at a time",
					name, len(raw), n, s.cfg.MaxReplyBytes)}
			return
		}
		out.result = raw
	})
	if infra != nil {
		s.observeCall(ctx, start, name, out, infra)
		return out, infra
	}
	s.observeCall(ctx, start, name, out, perr)
	return out, perr
}

// wrappedResults returns the names of inst's tools whose structured
// content is {"result": <result>} (none when listing the tools panics:
// their results are then shaped by value).
func (s *Server) wrappedResults(inst Instance) map[string]bool {
	tools, _ := s.tools(inst)
	wrapped := make(map[string]bool, len(tools))
	for _, t := range tools {
		wrapped[t.Name] = t.ResultWrapped
	}
	return wrapped
}

// maxResultCopies is the most times a reply carries a tool's result: as
// text (escaped, at most twice as long), as structured content, as data,
// and as MCP's structuredContent.
const maxResultCopies = 5

// replyCarrying returns the size of the largest reply that carries the
// tool result raw (a JSON-RPC tools/call result) when it is more than
// MaxReplyBytes allows, and 0 when it fits. Only a result within a
// maxResultCopies-th of the limit of fitting is encoded to tell.
func (s *Server) replyCarrying(raw []byte) int {
	limit := s.cfg.MaxReplyBytes - replyReserve
	if len(raw) <= limit/maxResultCopies {
		return 0
	}
	b, err := encode(toolOutcome{result: raw}.mcpResult())
	if err != nil || len(b) <= limit {
		return 0
	}
	return len(b)
}

// reservedCall is the outcome of calling an orchestration verb as a tool.
func reservedCall(name string) toolOutcome {
	return toolOutcome{err: &env.ToolError{Kind: env.KindNotFound, Message: "Unknown tool: " + name}}
}

// toolError classifies a failed call for the agent: a *env.ToolError keeps
// its kind and message, a deadline is a timeout, anything else an
// execution_error with the error's text.
func toolError(ctx context.Context, err error, name string, timeout time.Duration) *env.ToolError {
	var te *env.ToolError
	if errors.As(err, &te) {
		kind := te.Kind
		if kind == "" {
			kind = env.KindExecution
		}
		return &env.ToolError{Kind: kind, Message: te.Message}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		msg := fmt.Sprintf("tool %q timed out", name)
		if timeout > 0 {
			msg += " after " + timeout.String()
		}
		return &env.ToolError{Kind: env.KindTimeout, Message: msg}
	}
	return &env.ToolError{Kind: env.KindExecution, Message: err.Error()}
}

// state returns the session's state document. It does not count as activity.
func (ss *session) state(ctx context.Context) (env.StateDoc, *protoError) {
	_, leave, perr := ss.enter(ctx, false)
	if perr != nil {
		return env.StateDoc{}, perr
	}
	defer leave()
	var doc env.StateDoc
	if ss.inst == nil {
		info, perr := ss.srv.info()
		if perr != nil {
			return env.StateDoc{}, perr
		}
		doc = env.StateDoc{StateFormat: env.StateFormat, World: info.Name, WorldVersion: info.Version}
	} else if perr := ss.srv.guard("Instance.State", func() { doc = ss.inst.State() }); perr != nil {
		return env.StateDoc{}, perr
	}
	ss.mu.Lock()
	episodeID, steps := ss.episodeID, ss.steps
	ss.mu.Unlock()
	return stateDoc(doc, episodeID, steps), nil
}

// inspect runs one read-only query and returns the encoded reply data,
// holding the rows that fit in InspectRowLimit and MaxReplyBytes.
func (ss *session) inspect(ctx context.Context, req inspectData) (json.RawMessage, *protoError) {
	ctx, leave, perr := ss.enter(ctx, true)
	if perr != nil {
		return nil, perr
	}
	defer leave()
	if perr := ss.ensureLocked(ctx); perr != nil {
		return nil, perr
	}
	s := ss.srv
	// ictx bounds the query and the copy of its rows (each row is read as
	// SQLite steps, which a done context interrupts); lim bounds the copy's
	// memory and, with MaxReplyBytes, the encoding.
	ictx, icancel := withTimeout(ctx, s.cfg.InspectTimeout)
	defer icancel()
	lim := InspectLimit{MaxRows: s.cfg.InspectRowLimit, MaxBytes: int64(s.cfg.MaxReplyBytes)}
	var res InspectRows
	var err error
	start := time.Now()
	if perr := s.guardCtx(ctx, "Instance.Inspect", func() { res, err = ss.inst.Inspect(ictx, string(req.SQL), req.args(), lim) }); perr != nil {
		s.observeInspect(ctx, start, perr, true)
		return nil, perr
	}
	if perr := s.infraFailure(ctx, opInspect, err); perr != nil {
		s.observeInspect(ctx, start, err, true)
		return nil, perr
	}
	s.observeInspect(ctx, start, err, false)
	if err != nil {
		if errors.Is(ictx.Err(), context.DeadlineExceeded) && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, newError(codeQuery, "inspect timed out after %s: %v", s.cfg.InspectTimeout, err)
		}
		return nil, newError(codeQuery, "%s", err.Error())
	}
	return inspectReply(res, s.cfg.InspectRowLimit, s.cfg.MaxReplyBytes)
}

// mcpTools returns the session's tool listing: its instance's, or the
// world's before the first reset (discovery needs no reset).
func (ss *session) mcpTools(ctx context.Context) ([]env.ToolInfo, *protoError) {
	_, leave, perr := ss.enter(ctx, true)
	if perr != nil {
		return nil, perr
	}
	defer leave()
	if ss.inst == nil {
		info, perr := ss.srv.info()
		return info.Tools, perr
	}
	return ss.srv.tools(ss.inst)
}

// mcpCall makes one tool call for JSON-RPC tools/call. It counts as a step.
func (ss *session) mcpCall(ctx context.Context, name string, args json.RawMessage) (toolOutcome, *protoError) {
	ctx, leave, perr := ss.enter(ctx, true)
	if perr != nil {
		return toolOutcome{}, perr
	}
	defer leave()
	if perr := ss.ensureLocked(ctx); perr != nil {
		return toolOutcome{}, perr
	}
	if perr := ss.overLocked(); perr != nil {
		return toolOutcome{}, perr
	}
	return ss.callLocked(ctx, name, args, ss.srv.cfg.StepTimeout)
}

// reap closes idle sessions until Shutdown.
func (s *Server) reap() {
	defer close(s.reaperDone)
	shortest := s.cfg.IdleTimeout
	if shortest <= 0 || s.cfg.AgentIdleTimeout > 0 && s.cfg.AgentIdleTimeout < shortest {
		shortest = s.cfg.AgentIdleTimeout
	}
	every := min(max(shortest/4, 10*time.Millisecond), time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
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
		if limit <= 0 || !ss.idle(now, limit) || ss.isStopped() {
			continue
		}
		reason := fmt.Sprintf("session idle for more than %s", limit)
		s.log.Info("openenv: closing an idle session", "session", ss.ref, "transport", ss.transport)
		s.observeReaped(ss.transport)
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
