package openenv

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/seahaven/seahaven/env"
)

// A reset replaces a session's episode: it opens an instance from the
// reset's options (or restores a checkpoint, restoreLocked) and installs it
// in place of the old one.

// reset replaces the session's instance with a new one opened from req.
// When opening fails, the previous instance stays.
func (ss *session) reset(ctx context.Context, req resetData) *protoError {
	defer ss.begin()()
	if errs := checkRestore(req); len(errs) > 0 {
		return invalid(errs)
	}
	if req.ControlTools != nil && *req.ControlTools && FromAgentListener(ctx) {
		return invalid([]fieldError{(&OptionError{Option: "control_tools", Value: true,
			Message: "Value error, control_tools: seahaven_control, which sets the episode's clock, is the trainer's; the agent listener does not serve it"}).field(req.loc)})
	}
	if req.EpisodeID != nil && FromAgentListener(ctx) {
		// Checkpoints are filed under the episode's id: an agent naming
		// the trainer's episode would make its own world that episode's
		// newest checkpoint, which a failover restores.
		return invalid([]fieldError{(&OptionError{Option: "episode_id", Value: *req.EpisodeID,
			Message: "Value error, episode_id: an episode's id, under which its checkpoints are filed, is the trainer's; the agent listener names every episode it starts itself"}).field(req.loc)})
	}
	var opts OpenOptions
	if req.Checkpoint == nil {
		var perr *protoError
		if opts, perr = ss.srv.options(req); perr != nil {
			return perr
		}
	} else if FromAgentListener(ctx) {
		return invalid([]fieldError{(&OptionError{Option: "checkpoint", Value: *req.Checkpoint,
			Message: "Value error, checkpoint: restores are the trainer's; the agent listener does not serve them"}).field(req.loc)})
	}
	ctx, leave, perr := ss.enter(ctx, false) // already active
	if perr != nil {
		return perr
	}
	defer leave()
	if req.Checkpoint != nil {
		return ss.closedDuring(ctx, ss.restoreLocked(ctx, req))
	}
	return ss.closedDuring(ctx, ss.openLocked(ctx, opts, false, req.loc))
}

// resetReply resets ss and returns the reply: the reset observation, and,
// for a restored episode its task had already graded done, done with that
// grading's reward, as the next step would be refused.
func (ss *session) resetReply(ctx context.Context, req resetData) (stepReply, *protoError) {
	if perr := ss.reset(ctx, req); perr != nil {
		return stepReply{}, perr
	}
	reply := stepReply{Observation: resetObservation}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.over {
		reply.Done = true
		if ss.graded {
			reply.Reward = new(ss.lastReward)
		}
	}
	return reply, nil
}

// options turns a reset request into OpenOptions, filling the defaults.
func (s *Server) options(req resetData) (OpenOptions, *protoError) {
	info, perr := s.info()
	if perr != nil {
		return OpenOptions{}, perr
	}
	opts := OpenOptions{Fixture: info.DefaultFixture, EpisodeID: uuid.NewString()}
	if req.Task != nil && *req.Task != "" {
		// A task names its own fixture: the world's default does not apply.
		opts.Task, opts.Fixture = *req.Task, ""
	}
	setIf(&opts.Startup, (*map[string]any)(req.Startup))
	setIf(&opts.ControlTools, req.ControlTools)
	setIf(&opts.Seed, (*int64)(req.Seed))
	setIf(&opts.EpisodeID, (*string)(req.EpisodeID))
	setIf(&opts.Fixture, req.Fixture)
	setIf(&opts.Now, (*string)(req.Now))
	setIf(&opts.ClockMode, (*string)(req.ClockMode))
	return opts, nil
}

// setIf sets *dst to the value v points to, when a key gave one.
func setIf[T any](dst, v *T) {
	if v != nil {
		*dst = *v
	}
}

// openLocked opens an instance with opts (see open) and installs it
// (installLocked). The slot must be held.
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

// installLocked makes inst the session's instance, for the episode rec
// describes (a new one: its task and episode id alone; or a restored one,
// as its checkpoint recorded it), run by attempt; the old instance closes
// in the background (endInstanceLater). The slot must be held.
func (ss *session) installLocked(inst Instance, rec sessionRecord, attempt string) {
	s := ss.srv
	old := ss.inst
	ss.inst = inst
	ss.replays, ss.ids, ss.replayBytes, ss.wrapped = nil, nil, 0, nil
	for _, r := range rec.Replays {
		ss.keepLocked(r.ID, replayed{key: r.Key, step: r.Step, reply: stepReply{Observation: r.Observation, Reward: r.Reward, Done: r.Done}, ungraded: r.Ungraded, failed: r.Failed})
	}
	ss.mu.Lock()
	if old != nil {
		ss.endEpisodeLocked()
	}
	ss.steps = rec.Steps
	ss.over, ss.doneAt = rec.Over, rec.DoneAt
	ss.task, ss.graded, ss.lastReward, ss.episodeEnded = rec.Task, rec.Graded, rec.LastReward, false
	ss.episodeID, ss.attempt, ss.exposed, ss.superseded = rec.EpisodeID, attempt, false, ""
	ss.timeline = rec.Timeline[max(0, len(rec.Timeline)-maxTimeline):]
	ss.mu.Unlock()
	s.metrics.episodesStarted.WithLabelValues(taskLabel(rec.Task)).Inc()
	if old != nil {
		// The reply need not wait for the old instance's files to go.
		s.endInstanceLater(s.closeInstance, old)
	}
}

// discardUnused ends a session whose first reset failed, unless a request
// has given it an episode meanwhile, and reports whether it ended it.
func (ss *session) discardUnused() bool {
	if took, _ := ss.take(nil, 0); !took {
		return false // a call past its deadline runs on its episode
	}
	unused := ss.inst == nil && !ss.ended
	<-ss.slot
	if unused {
		ss.stop(websocket.StatusNormalClosure, "its first reset failed")
		ss.end()
	}
	return unused
}

// open opens an instance with opts, bounded by StepTimeout: an Open that
// ignores its context fails a lateGrace past it, and what it opens later
// is discarded (openedLate). implicit marks a default reset the caller did
// not ask for; a failure is reported as openFailure says.
func (s *Server) open(ctx context.Context, opts OpenOptions, implicit bool, loc []any) (Instance, *protoError) {
	octx, cancel := withTimeout(ctx, s.cfg.StepTimeout)
	defer cancel()
	var inst Instance
	var err error
	var perr *protoError
	start := time.Now()
	var o struct { // Open's outcome, which a late Open sets after open returned
		inst Instance
		err  error
		perr *protoError
	}
	returned, _, ok := s.within(octx, func() {
		o.perr = s.guardCtx(ctx, "Backend.Open", func() { o.inst, o.err = s.backend.Open(octx, opts) })
	})
	if ok {
		inst, err, perr = o.inst, o.err, o.perr
	} else {
		err = s.openedLate(ctx, octx, "reset", returned, func() Instance { return o.inst })
	}
	if err == nil && inst == nil && perr == nil {
		err = errors.New("the backend opened no instance")
	}
	s.observeOpen(octx, start, opts, err, perr)
	err = s.openTimeout(ctx, octx, "reset", err)
	if perr := s.openFailure(ctx, err, perr, implicit, loc); perr != nil {
		return nil, perr
	}
	return inst, nil
}

// openTimeout is err, the failure of a reset or restore (what) whose
// deadline, the server's step timeout, passed while it ran (octx), saying
// so: the backend's own error says no more than "context deadline
// exceeded". Any other failure is returned as it is.
func (s *Server) openTimeout(ctx, octx context.Context, what string, err error) error {
	if err == nil || ctx.Err() != nil || !errors.Is(octx.Err(), context.DeadlineExceeded) ||
		errors.As(err, new(*env.InfraError)) || errors.As(err, new(*OptionError)) {
		return err
	}
	return fmt.Errorf("the %s ran past its deadline (the server's step timeout, %s) and opened no instance: %w", what, s.cfg.StepTimeout, err)
}

// openFailure is the protocol error of a Backend.Open or Restorer.Restore
// that returned err or panicked (perr); nil when neither. A failure of the
// host is an infrastructure error; an *OptionError a VALIDATION_ERROR at loc
// plus the option, unless implicit; any other failure a FACTORY_ERROR when
// implicit, else an EXECUTION_ERROR.
func (s *Server) openFailure(ctx context.Context, err error, perr *protoError, implicit bool, loc []any) *protoError {
	if perr != nil || err == nil {
		return perr
	}
	if perr := s.infraFailure(ctx, opReset, err); perr != nil {
		return perr
	}
	var oe *OptionError
	switch {
	case implicit:
		info, _ := s.info()
		return &protoError{code: codeFactory, message: err.Error(), extra: errorExtra{FactoryName: info.Name}}
	case errors.As(err, &oe):
		return invalid([]fieldError{oe.field(loc)})
	}
	return newError(codeExecution, "%s", err.Error())
}

// closeInstance closes inst, logging a failure.
func (s *Server) closeInstance(inst Instance) { s.endInstance("Close", "closing", inst.Close) }

// endInstance ends an instance with end, its method named method (Close,
// Discard), logging a failure as the doing of it.
func (s *Server) endInstance(method, doing string, end func() error) {
	defer s.metrics.instances.Dec()
	var err error
	if perr := s.guard("Instance."+method, func() { err = end() }); perr == nil && err != nil {
		s.log.Warn("openenv: "+doing+" an instance failed", "err", err)
	}
}

// discardInstance ends inst, which served no request: discarded when it
// is a Discarder, else closed.
func (s *Server) discardInstance(inst Instance) {
	if d, ok := inst.(Discarder); ok {
		s.endInstance("Discard", "discarding", d.Discard)
	} else {
		s.closeInstance(inst)
	}
}

// endInstanceLater ends inst with end (closeInstance, discardInstance) in
// the background, at most maxBackgroundCloses at a time (it waits for a
// slot when they are all taken); Shutdown waits for every such end.
func (s *Server) endInstanceLater(end func(Instance), inst Instance) {
	s.closers.Go(func() error {
		end(inst)
		return nil
	})
}
