package openenv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/runecut"
)

// lateGrace is how long a call whose context has ended may take to
// return before it is answered without it (lateCall).
const lateGrace = time.Second

// within runs f on a caller and waits until it returns, or until
// lateGrace after cctx, f's context, ended, whichever comes first. Work
// returns soon after its context ends (its SQL is interrupted); work that
// does not, blocked on something else (a sleep, a network call without the
// context), is left to run on: within then reports false, with when cctx
// ended, and returned closes when f returns.
func (s *Server) within(cctx context.Context, f func()) (returned chan struct{}, ended time.Time, ok bool) {
	returned = make(chan struct{})
	s.callers.do(func() {
		defer close(returned)
		f()
	})
	select {
	case <-returned:
		return returned, ended, true
	case <-cctx.Done():
	}
	ended = time.Now()
	select {
	case <-returned:
		return returned, ended, true
	case <-time.After(lateGrace):
		return returned, ended, false
	}
}

// openedLate answers a reset or restore (what) whose Backend.Open or
// Restorer.Restore, under octx, ran on lateGrace past octx's end (within):
// it returns the error the reset fails with, and leaves a goroutine,
// counted for Shutdown, that waits for the work to return (returned) and
// discards the instance it opened, if any (opened, read once it returned).
// Nothing else waits for it: the session keeps its episode and serves on.
// The caller holds a session's slot, or a sessionless call's count of
// Shutdown's wait, so Shutdown has not begun that wait.
func (s *Server) openedLate(ctx, octx context.Context, what string, returned <-chan struct{}, opened func() Instance) error {
	attrs := append(sessionAttrs(ctx), "op", what)
	past := pastOf(byCancellation(octx))
	s.log.Warn("openenv: a "+what+" runs on "+past+", ignoring its context: it failed, and what it opens will be discarded", attrs...)
	s.throwaways.Add(1)
	go func() {
		defer s.throwaways.Done()
		<-returned
		if inst := opened(); inst != nil {
			s.metrics.instances.Inc() // discardInstance counts it closed
			s.discardInstance(inst)
		}
		s.log.Warn("openenv: a "+what+" "+past+" returned; what it opened was discarded", attrs...)
	}()
	return fmt.Errorf("it ignored its context and had not returned %s later; what it may yet open will be discarded: %w", lateGrace, context.Cause(octx))
}

// A lateCall is work on a session's instance (a tool call, a grading, a
// checkpoint) that ran on past its deadline (or its cancellation) for
// lateGrace, ignoring its context: it was answered as timed out (or
// failed) and left to run. Its instance is its until it returns: it holds
// its session's call slot until then, and what it returns is not kept (a
// backend commits nothing of a call whose context has ended, and keeps no
// grading returned after it).
type lateCall struct {
	what      string        // what runs: `call of tool "x"`, `grading of task "t"`, "checkpoint"
	kind      string        // its kind in the logs: "tool call", "grading", "checkpoint"
	attrs     []any         // the log attributes of its session, and its tool or task
	start     time.Time     // when it began
	ended     time.Time     // when its context ended
	cancelled bool          // its context ended by cancellation, not its deadline
	returned  chan struct{} // closed when it returns
	// returnedErr, of a tool call, is the error its instance returned
	// for it, read once it returned; settle, when set, runs then, with
	// the slot still held.
	returnedErr func() *env.ToolError
	settle      func()
}

// overran answers the call of name on inst, which started at start and
// whose context cctx ended at ended, without waiting for it to return
// (returned): as timed out, or cancelled, as it would have been had it
// returned, with late set. It logs a warning and counts the call.
func (s *Server) overran(ctx, cctx context.Context, start, ended time.Time, inst Instance, name string, timeout time.Duration, returned chan struct{}) toolOutcome {
	cancelled := byCancellation(cctx)
	late := &lateCall{what: fmt.Sprintf("call of tool %q", runecut.Echo(name)), kind: "tool call",
		attrs: append(sessionAttrs(ctx), "tool", clip(name, 128)), start: start, ended: ended, cancelled: cancelled, returned: returned}
	out := toolOutcome{err: toolError(cctx, context.Cause(cctx), name, timeout), late: late, cancelled: cancelled}
	s.observeCall(ctx, start, inst, name, out, nil)
	s.metrics.lateCalls.Inc()
	answered := "timed out"
	if cancelled {
		answered = "cancelled"
	}
	s.warnLate("openenv: a tool call runs on "+late.past()+", ignoring its context: answered as "+answered+", it holds its session until it returns", late)
	return out
}

// awaitLate waits for late to return, and logs that it did.
func (s *Server) awaitLate(late *lateCall) {
	<-late.returned
	s.warnLate("openenv: a "+late.kind+" "+late.past()+" returned; what it returned was discarded", late)
}

// past says what late ran on past: "past its deadline", or for one its
// client cancelled, "past its cancellation".
func (late *lateCall) past() string { return pastOf(late.cancelled) }

// pastOf is past for work whose context ended by cancellation or not.
func pastOf(cancelled bool) string {
	if cancelled {
		return "past its cancellation"
	}
	return "past its deadline"
}

// byCancellation reports whether ctx, which has ended, ended by
// cancellation (its client gone, its session closed), not by its
// deadline: a server enforcing its own time limit cancels with
// context.DeadlineExceeded as the cause.
func byCancellation(ctx context.Context) bool {
	return !errors.Is(context.Cause(ctx), context.DeadlineExceeded)
}

// warnLate logs msg about late: its session, its tool, how long it has
// run and how long past its deadline.
func (s *Server) warnLate(msg string, late *lateCall) {
	s.log.Warn(msg, slices.Concat(late.attrs, []any{durationMS(time.Since(late.start)),
		"past_deadline_ms", time.Since(late.ended).Milliseconds()})...)
}

// refusal is the error of a request that waited for its session's call
// slot, held by late, until its own deadline.
func (late *lateCall) refusal() *protoError {
	return newError(codeCallRunning, "A %s %s and has not returned yet (it ignores its context): it holds the session until it returns. Retry later, or close the session.",
		late.what, late.since())
}

// since says when late's context ended: "passed its deadline 2.1s ago", or
// for one its client cancelled, "was cancelled 2.1s ago".
func (late *lateCall) since() string {
	ended := "passed its deadline"
	if late.cancelled {
		ended = "was cancelled"
	}
	return fmt.Sprintf("%s %s ago", ended, time.Since(late.ended).Round(time.Millisecond))
}

// closing is the error of a request naming session id, closed while late
// held it: the session is gone, but its id stays taken until late returns.
func (late *lateCall) closing(id string) *protoError {
	return newError(codeCallRunning, "Session %s was closed, but its %s, which %s and ignores its context, has not returned yet: the id is taken until it does. Retry then, or use another id.",
		runecut.Echo(id), late.what, late.since())
}

// gradedLate answers a grading, under gctx, that ran on lateGrace past
// gctx's end (within), ignoring its context (a Go check blocked on
// something else): as failed, formatting failed (see gradeLocked). The
// grading holds the session until it returns (returned), as a late tool
// call does; what it returns then is not kept (a backend keeps no grading
// returned after its context ended). The slot must be held.
func (ss *session) gradedLate(ctx, gctx context.Context, start, ended time.Time, returned chan struct{}, failed string) *protoError {
	ss.mu.Lock()
	task := ss.task
	ss.mu.Unlock()
	late := ss.holdLate(gctx, &lateCall{what: fmt.Sprintf("grading of task %q", runecut.Echo(task)), kind: "grading",
		attrs: append(sessionAttrs(ctx), "task", clip(task, 128)), start: start, ended: ended, returned: returned})
	ss.srv.metrics.gradingFailures.WithLabelValues(taskLabel(task)).Inc()
	return newError(codeExecution, failed, "it ran "+late.past()+", ignoring its context, and holds the session until it returns")
}

// checkpointedLate answers a checkpoint, under cctx, that ran on lateGrace
// past cctx's end (within), ignoring its context (a checkpoint volume that
// does not answer): as failed. The checkpoint holds the session until it
// returns (returned), as a late tool call does; it may yet be stored. The
// slot must be held.
func (ss *session) checkpointedLate(ctx, cctx context.Context, start, ended time.Time, returned chan struct{}) *protoError {
	late := ss.holdLate(cctx, &lateCall{what: "checkpoint", kind: "checkpoint",
		attrs: sessionAttrs(ctx), start: start, ended: ended, returned: returned})
	ss.srv.observeCheckpoint(cctx, "checkpoint", start, "", context.Cause(cctx), nil)
	return newError(codeExecution, "the checkpoint could not be taken: it ran %s, ignoring its context, and holds the session until it returns (it may yet be stored)", late.past())
}

// holdLate makes late, work of the session under wctx that ran on
// lateGrace past wctx's end, hold the session until it returns, and logs
// it. The slot must be held.
func (ss *session) holdLate(wctx context.Context, late *lateCall) *lateCall {
	late.cancelled = byCancellation(wctx)
	ss.holdLocked(late)
	ss.srv.warnLate("openenv: a "+late.kind+" runs on "+late.past()+", ignoring its context: answered as failed, it holds its session until it returns", late)
	return late
}
