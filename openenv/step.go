package openenv

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/runecut"
)

// step runs one action and returns its step response: the observation, the
// reward and the done flag.
func (ss *session) step(ctx context.Context, a action, timeout time.Duration) (stepReply, *protoError) {
	return withInstance(ss, context.WithValue(ctx, patienceKey{}, timeout), func(ctx context.Context) (stepReply, *protoError) {
		if perr := ss.fencedLocked(ctx); perr != nil {
			return stepReply{}, perr
		}
		if reply, ok, perr := ss.replayLocked(a, timeout); ok || perr != nil {
			return reply, perr
		}
		if perr := ss.overLocked(resetAnew); perr != nil {
			return stepReply{}, perr
		}
		reply, perr := ss.stepLocked(ctx, a, timeout)
		if perr == nil {
			ss.rememberLocked(a, replayed{reply: reply})
			if a.Type != actionListTools {
				ss.autoCheckpointLocked(ctx)
			}
		}
		return reply, perr
	})
}

// stepLocked runs a step and returns its step response. When the instance
// runs a task (it is a Grader) the reward and done flag are the task's
// grading after the step; otherwise null and false. The slot must be held.
func (ss *session) stepLocked(ctx context.Context, a action, timeout time.Duration) (stepReply, *protoError) {
	var reply stepReply
	if a.Type == actionListTools {
		tools, perr := ss.srv.tools(ss.inst)
		if perr != nil {
			return stepReply{}, perr
		}
		reply.Observation = listTools(tools, func(t env.ToolInfo, input json.RawMessage) stepTool {
			return stepTool{Name: t.Name, Description: t.Description, InputSchema: input}
		})
	} else {
		out, perr := ss.callLocked(ctx, a.ToolName, json.RawMessage(a.Arguments), timeout)
		if perr != nil {
			if perr.code == codeInfrastructure && !perr.noStep {
				// The call ran and is a step: a retry under its request_id
				// must not run it again.
				ss.rememberLocked(a, replayed{failed: perr.message})
			}
			return stepReply{}, perr
		}
		reply.Observation = out.observation(a.ToolName)
		if out.late != nil {
			// The instance is the call's until it returns: the task is
			// graded after the next step.
			return reply, nil
		}
	}
	graded, perr := ss.gradeReplyLocked(reply, timeout)
	if perr != nil {
		// The step ran and stays: a retry under its request_id grades it
		// again rather than running it twice.
		ss.rememberLocked(a, replayed{reply: reply, ungraded: true})
	}
	return graded, perr
}

// gradeReplyLocked completes a step's reply with the task's grading after
// it, when the instance runs a task (it is a Grader); otherwise the reward
// stays null and done false. The step has run, and its grading latches
// done: it is bounded by timeout and the session's end, not by the end of
// the request, whose client may leave meanwhile (as a /ws step's grading,
// whose request is its session). The slot must be held.
func (ss *session) gradeReplyLocked(reply stepReply, timeout time.Duration) (stepReply, *protoError) {
	g, ok := ss.inst.(Grader)
	if !ok {
		return reply, nil
	}
	res, perr := ss.gradeLocked(ss.tagged, g, timeout, "the step ran, but grading its task failed: %s")
	if perr != nil {
		return stepReply{}, perr
	}
	ss.gradeStepLocked(res.Reward, res.Done)
	reply.Reward, reply.Done = &res.Reward, res.Done
	return reply, nil
}

// gradeLocked grades the session's task episode, bounded by timeout, and
// latches done: once a grading says done, later steps are refused
// (overLocked). failed formats a grader's error. A grading that ignores
// its context is answered a lateGrace past its deadline and holds the
// session until it returns (gradedLate). The slot must be held.
func (ss *session) gradeLocked(ctx context.Context, g Grader, timeout time.Duration, failed string) (Grading, *protoError) {
	gctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	var o struct { // Grade's outcome, which a late Grade sets after gradeLocked returned
		res  Grading
		err  error
		perr *protoError
	}
	returned, ended, ok := ss.srv.within(gctx, func() { o.perr = ss.srv.guardCtx(ctx, "Instance.Grade", func() { o.res, o.err = g.Grade(gctx) }) })
	if !ok {
		return Grading{}, ss.gradedLate(ctx, gctx, start, ended, returned, failed)
	}
	res, err := o.res, o.err
	if o.perr != nil {
		return Grading{}, o.perr
	}
	if perr := ss.srv.infraFailure(ctx, opGrade, err); perr != nil {
		return Grading{}, perr
	}
	if err != nil && gctx.Err() != nil && ctx.Err() == nil && !errors.Is(err, env.ErrNoStep) {
		// The deadline ended it, not the grader: say so, rather than what
		// the query it interrupted said (an interrupted opening of a
		// parked connection names the instance's file). A grading that
		// ran nothing (it waited for the backend's engine) says so itself.
		err = fmt.Errorf("it ran past its deadline of %s", timeout)
	}
	if err != nil {
		if !errors.Is(err, env.ErrNoStep) {
			// A grading that ran nothing (it waited for the backend's
			// engine in vain) is no failure of the task's grader.
			ss.mu.Lock()
			task := ss.task
			ss.mu.Unlock()
			ss.srv.metrics.gradingFailures.WithLabelValues(taskLabel(task)).Inc()
		}
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
		ss.srv.metrics.episodesFinished.WithLabelValues(taskLabel(ss.task)).Inc()
		ss.endEpisodeLocked()
	}
	// Done never returns to false within an episode: one its checkpoint's
	// grading had finished stays done under a definition restored since
	// whose grading says otherwise.
	res.Done = ss.over
	return res, nil
}

// grade answers a grade request: the task's grading of the episode now,
// with every check's result. It is not a step. A session whose episode
// runs no task is refused.
func (ss *session) grade(ctx context.Context) (Grading, *protoError) {
	return withInstance(ss, ctx, func(ctx context.Context) (Grading, *protoError) {
		g, ok := ss.inst.(Grader)
		if !ok {
			return Grading{}, newError(codeNoTask, "The episode runs no task, so there is nothing to grade: reset with a task (reset data \"task\": one of GET /tasks).")
		}
		return ss.gradeLocked(ctx, g, ss.srv.cfg.StepTimeout, "grading the task failed: %s")
	})
}

// overLocked refuses a step of an episode its task has graded done: done
// never returns to false within an episode, and whoever steps past it is
// told how to start a new one, anew (see newEpisode). The slot must be
// held.
func (ss *session) overLocked(anew string) *protoError {
	ss.mu.Lock()
	over, doneAt, task := ss.over, ss.doneAt, ss.task
	ss.mu.Unlock()
	if !over {
		return nil
	}
	ss.srv.metrics.refusedAfterDone.WithLabelValues(taskLabel(task)).Inc()
	calls := "1 tool call"
	if doneAt != 1 {
		calls = fmt.Sprintf("%d tool calls", doneAt)
	}
	return newError(codeEpisodeDone, "The episode is over: its task graded it done after %s. %s", calls, anew)
}

// resetAnew is how a client of /ws or the HTTP routes starts a new
// episode once its episode is over: it resets.
const resetAnew = "Reset to start a new episode."

// newEpisode says how the client of a tools/call on POST /mcp, which came
// as mode says, starts a new episode once the session's is over: an MCP
// client has no reset, but starts a new session, a standard client's with
// its initialize at the URL whose query set this episode up, or, speaking
// 2026-07-28, which starts none, is given the URL of another; a trainer,
// while the server serves the HTTP episode routes, may reset this session
// there.
func (s *Server) newEpisode(mode rpcMode) string {
	msg := "Create a new session (openenv/session/create) to start a new episode"
	switch mode {
	case rpcStandard:
		msg = "Initialize a new session (without Mcp-Session-Id) at this /mcp URL to start a new episode"
	case rpcModern:
		msg = "Name a new session in the /mcp URL's " + modernSessionKey + " (a trainer creates one with openenv/session/create) to start a new episode"
	}
	if !s.cfg.Production {
		msg += "; a trainer may reset this one: POST /reset with its id in " + SessionHeader
	}
	return msg + "."
}

// callLocked makes one tool call and counts it as a step, unless the
// instance's error says it is none: it failed on the host and changed
// nothing (env.InfraError.NoStep), ran nothing or was cancelled before it
// changed anything (env.ErrNoStep). The slot must be held.
func (ss *session) callLocked(ctx context.Context, name string, args json.RawMessage, timeout time.Duration) (toolOutcome, *protoError) {
	before := changeCount(ss.inst)
	out, perr := ss.srv.call(ctx, ss.inst, name, args, timeout)
	late := out.late
	if late != nil {
		// The call runs on, and the instance is its: nothing more is read
		// of it until it returns. What it returns then is not committed.
		ss.holdLocked(late)
	}
	if perr != nil && perr.noStep || out.noStep {
		return out, perr
	}
	ss.mu.Lock()
	ss.steps++
	step := ss.steps
	ss.mu.Unlock()
	if perr == nil {
		if out.err == nil {
			if ss.wrapped == nil {
				ss.wrapped = ss.srv.wrappedResults(ss.inst)
			}
			out.wrapped = ss.wrapped[name]
		}
		if late == nil {
			ss.recordStepLocked(name, args, out, before)
		} else {
			ss.recordStepLocked(name, args, out, -1)
			late.settle = func() { ss.settleStepLocked(step, before, late.returnedErr()) }
		}
	}
	return out, perr
}

// tools returns inst's tool listing.
func (s *Server) tools(inst Instance) ([]env.ToolInfo, *protoError) {
	var tools []env.ToolInfo
	perr := s.guard("Instance.Tools", func() { tools = inst.Tools() })
	return tools, perr
}

// lists reports whether inst's tool listing names name.
func (s *Server) lists(inst Instance, name string) bool {
	tools, _ := s.tools(inst)
	return slices.ContainsFunc(tools, func(t env.ToolInfo) bool { return t.Name == name })
}

// call makes one tool call on inst, bounded by timeout. Tool failures come
// back in the outcome; only a panic is a protoError.
func (s *Server) call(ctx context.Context, inst Instance, name string, args json.RawMessage, timeout time.Duration) (toolOutcome, *protoError) {
	start := time.Now()
	if out, refused := refusedCall(ctx, name); refused {
		s.observeCall(ctx, start, nil, name, out, nil)
		return out, nil
	}
	cctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	var out toolOutcome
	var perr *protoError
	returned, ended, ok := s.within(cctx, func() { out, perr = s.invoke(ctx, cctx, inst, name, args, timeout) })
	if !ok {
		// Blocked on something else than its context: answered now, as
		// timed out, and left to run on (lateCall).
		answer := s.overran(ctx, cctx, start, ended, inst, name, timeout, returned)
		// What the call returns, once it has (its instance's account of it).
		answer.late.returnedErr = func() *env.ToolError { return out.err }
		if ctx.Err() != nil {
			// Cancelled with its request or session: nobody waits for it
			// as a step, and if its session was closed, the request
			// learns that instead (closedDuring).
			perr := newError(codeSession, "The request ended while its call of %q ran on, ignoring its cancellation: what the call returns is rolled back.", runecut.Echo(name))
			perr.noStep = true
			return answer, perr
		}
		return answer, nil
	}
	if perr == nil && out.noStep && (ctx.Err() != nil || out.cancelled) {
		// Cancelled with its request or session (whose instance may see
		// the session closed before the request does), before it changed
		// anything: nobody is waiting for it as a step, and if its session
		// was closed, the request learns that instead (closedDuring).
		perr = newError(codeSession, "The request ended before its call of %q changed anything: the call was rolled back and is no step of the episode.", runecut.Echo(name))
		perr.noStep = true
	}
	s.observeCall(ctx, start, inst, name, out, perr)
	return out, perr
}

// invoke makes the call of name on inst for call, under cctx (ctx bounded
// by timeout); ctx names its session in the logs.
func (s *Server) invoke(ctx, cctx context.Context, inst Instance, name string, args json.RawMessage, timeout time.Duration) (toolOutcome, *protoError) {
	var out toolOutcome
	var infra *protoError
	// The engine encodes each layer's result before it commits, so a
	// result that cannot be sent rolls its call back; the last one it
	// encoded is the call's result.
	var raw []byte
	cctx = env.WithResultCheck(cctx, func(v any) (err error) {
		raw, err = encode(v)
		return err
	})
	perr := s.guardCtx(ctx, fmt.Sprintf("tool %q", runecut.Echo(name)), func() {
		res, err := inst.CallJSON(cctx, name, args)
		if infra = s.infraFailure(ctx, opCall, err); infra != nil {
			return
		}
		if err != nil {
			out.err, out.noStep = toolError(cctx, err, name, timeout), errors.Is(err, env.ErrNoStep)
			out.cause = hiddenCause(err, out.err.Message)
			out.cancelled = errors.Is(err, context.Canceled) && byCancellation(cctx)
			return
		}
		if raw == nil { // a backend that does not check results
			raw, err = encode(res)
		}
		if err != nil {
			out.err = &env.ToolError{Kind: env.KindExecution,
				Message: fmt.Sprintf("tool %q returned a result that cannot be encoded as JSON: %v", name, err)}
			return
		}
		if n := s.replyCarrying(raw); n > 0 {
			out.err = &env.ToolError{Kind: env.KindExecution,
				Message: fmt.Sprintf("tool %q returned a result too large to send: %d bytes of JSON, in a reply of up to %d bytes (its largest form, which every protocol is held to), "+
					"over the limit of %d bytes on a reply (the server's max-reply-bytes); the call ran, ask for less at a time",
					name, len(raw), n, s.cfg.MaxReplyBytes)}
			return
		}
		out.result = raw
	})
	return out, cmp.Or(infra, perr)
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

// refusedCall is the outcome of a call the server refuses without the
// instance, and whether it is one: an orchestration verb called as a tool
// (reservedNames), or the control tool on the agent listener, which is the
// trainer's even on a session a trainer's reset gave it to (an agent never
// sets the clock of the episode it is graded on). Either is a step that
// failed, as a call of a tool the world does not have is.
func refusedCall(ctx context.Context, name string) (toolOutcome, bool) {
	switch {
	case reservedNames[name]:
		return toolOutcome{err: &env.ToolError{Kind: env.KindNotFound, Message: fmt.Sprintf("unknown tool %q", name)}}, true
	case name == env.ControlTool && FromAgentListener(ctx):
		return toolOutcome{err: &env.ToolError{Kind: env.KindNotFound,
			Message: fmt.Sprintf("unknown tool %q: it is the trainer's, and the agent listener does not serve it", name)}}, true
	}
	return toolOutcome{}, false
}

// toolError classifies a failed call for the agent: a *env.ToolError keeps
// its kind and message, a deadline is a timeout, anything else an
// execution_error with the error's text.
func toolError(ctx context.Context, err error, name string, timeout time.Duration) *env.ToolError {
	var te *env.ToolError
	if errors.As(err, &te) {
		return &env.ToolError{Kind: cmp.Or(te.Kind, env.KindExecution), Message: te.Message}
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

// hiddenCause returns the cause an *env.ToolError in err's chain keeps
// from the agent (its Err), unless msg, the message the agent sees,
// already says it.
func hiddenCause(err error, msg string) error {
	te, ok := env.AsToolError(err)
	if !ok || te.Err == nil || strings.Contains(msg, te.Err.Error()) {
		return nil
	}
	return te.Err
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
	return ss.srv.fitState(stateDoc(doc, episodeID, steps), 0), nil
}

// inspect runs one read-only query and returns the encoded reply data,
// holding the rows that fit in InspectRowLimit and MaxReplyBytes.
func (ss *session) inspect(ctx context.Context, req inspectData) (json.RawMessage, *protoError) {
	return withInstance(ss, ctx, func(ctx context.Context) (json.RawMessage, *protoError) {
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
		perr := s.guardCtx(ctx, "Instance.Inspect", func() { res, err = ss.inst.Inspect(ictx, string(req.SQL), req.args, lim) })
		if perr == nil {
			perr = s.infraFailure(ctx, opInspect, err)
		}
		s.observeInspect(ctx, start, err, perr)
		if perr != nil {
			return nil, perr
		}
		if err != nil {
			if errors.Is(ictx.Err(), context.DeadlineExceeded) && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, newError(codeQuery, "inspect timed out after %s: %v", s.cfg.InspectTimeout, err)
			}
			return nil, newError(codeQuery, "%s", runecut.Echo(err.Error())) // SQLite repeats a bad token whole
		}
		return inspectReply(res, s.cfg.InspectRowLimit, s.cfg.MaxReplyBytes)
	})
}

// mcpTools returns the tool listing of tools/list on ss: its instance's,
// or the world's without a session or before its first reset (discovery
// needs no reset).
func (s *Server) mcpTools(ctx context.Context, ss *session) ([]env.ToolInfo, *protoError) {
	if ss != nil {
		_, leave, perr := ss.enter(ctx, true)
		if perr != nil {
			return nil, perr
		}
		defer leave()
		if ss.inst != nil {
			tools, perr := s.tools(ss.inst)
			if FromAgentListener(ctx) {
				tools = slices.DeleteFunc(slices.Clone(tools), func(t env.ToolInfo) bool { return t.Name == env.ControlTool })
			}
			return tools, perr
		}
	}
	info, perr := s.info()
	return info.Tools, perr
}

// mcpCall makes one tool call for JSON-RPC tools/call. It counts as a step:
// a superseded attempt's is refused, as is one after its episode is over,
// saying how to start a new one, anew; and it may be checkpointed after it
// (Config.CheckpointEvery).
func (ss *session) mcpCall(ctx context.Context, name string, args json.RawMessage, anew string) (toolOutcome, *protoError) {
	return withInstance(ss, ctx, func(ctx context.Context) (toolOutcome, *protoError) {
		if perr := ss.fencedLocked(ctx); perr != nil {
			return toolOutcome{}, perr
		}
		if perr := ss.overLocked(anew); perr != nil {
			return toolOutcome{}, perr
		}
		out, perr := ss.callLocked(ctx, name, args, ss.srv.cfg.StepTimeout)
		if st, ok := ss.inst.(Settler); ok && perr == nil {
			// No grading puts a reward on the call: it is recorded now.
			if err := st.Settle(); err != nil {
				if perr = ss.srv.infraFailure(ctx, opCall, err); perr == nil {
					ss.srv.log.Error("openenv: recording a call failed", append(sessionAttrs(ctx), "err", err)...)
				}
				return out, perr
			}
		}
		if perr == nil {
			ss.autoCheckpointLocked(ctx)
		}
		return out, perr
	})
}

// withInstance runs fn as an activity of the session, with its call slot
// held and its instance opened (ensureLocked). A failure because the
// session was closed meanwhile says so (closedDuring).
func withInstance[T any](ss *session, ctx context.Context, fn func(context.Context) (T, *protoError)) (T, *protoError) {
	var zero T
	ctx, leave, perr := ss.enter(ctx, true)
	if perr != nil {
		return zero, perr
	}
	defer leave()
	if perr := ss.ensureLocked(ctx); perr != nil {
		return zero, ss.closedDuring(ctx, perr)
	}
	res, perr := fn(ctx)
	if perr != nil {
		return zero, ss.closedDuring(ctx, perr)
	}
	return res, nil
}
