package openenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/seahaven/seahaven/internal/runecut"
)

// sessionRecord is the server's part of a checkpoint
// (CheckpointRequest.Session): what the session knows of its episode
// beyond the instance.
type sessionRecord struct {
	Steps      int            `json:"steps"`
	Over       bool           `json:"over"`
	DoneAt     int            `json:"done_at"`
	Task       string         `json:"task"`
	Graded     bool           `json:"graded"`
	LastReward float64        `json:"last_reward"`
	EpisodeID  string         `json:"episode_id"`
	Replays    []replayRecord `json:"replays"`
	// DrainedFrom is the id of the session a drain took the checkpoint
	// of, when a later request names that session (HTTP, MCP), else "":
	// the checkpoint's first restore ends the drain's record of it, so
	// that no server sends the session back to the checkpoint again.
	// Every record has it: one without it was written by a server of an
	// earlier version, which did not say (see DrainsForgetter).
	DrainedFrom *string `json:"drained_from"`
	// Timeline is the episode's newest tool calls as the inspector shows
	// them, so that a restored session's watch goes on from them.
	Timeline []timelineStep `json:"timeline,omitempty"`
}

// replayRecord is a step reply kept under its request_id, encoded.
type replayRecord struct {
	ID          string          `json:"id"`
	Key         string          `json:"key"`
	Step        int             `json:"step"`
	Observation json.RawMessage `json:"observation"`
	Reward      *float64        `json:"reward"`
	Done        bool            `json:"done"`
	Ungraded    bool            `json:"ungraded,omitempty"`
	Failed      string          `json:"failed,omitempty"`
}

// recordLocked returns the session's record of its episode, taken by a
// drain of the session named drainedFrom, if not "". The slot must be
// held.
func (ss *session) recordLocked(drainedFrom string) (json.RawMessage, error) {
	ss.mu.Lock()
	rec := sessionRecord{Steps: ss.steps, Over: ss.over, DoneAt: ss.doneAt, Task: ss.task, Graded: ss.graded, LastReward: ss.lastReward, EpisodeID: ss.episodeID, DrainedFrom: &drainedFrom,
		Timeline: slices.Clone(ss.timeline)}
	ss.mu.Unlock()
	for _, id := range ss.ids {
		r := ss.replays[id]
		obs, err := encode(r.reply.Observation)
		if err != nil {
			return nil, err
		}
		rec.Replays = append(rec.Replays, replayRecord{ID: id, Key: r.key, Step: r.step, Observation: obs, Reward: r.reply.Reward, Done: r.reply.Done, Ungraded: r.ungraded, Failed: r.failed})
	}
	return json.Marshal(rec)
}

// checkpoint answers a checkpoint request: the episode, as it stands
// between steps, kept as a checkpoint a reset can restore. It is not a
// step, and the episode goes on unchanged.
func (ss *session) checkpoint(ctx context.Context) (CheckpointInfo, *protoError) {
	return withInstance(ss, ctx, func(ctx context.Context) (CheckpointInfo, *protoError) {
		if perr := ss.fencedLocked(ctx); perr != nil {
			return CheckpointInfo{}, perr
		}
		return ss.checkpointLocked(ctx, false, "")
	})
}

// checkpointLocked checkpoints the session's instance, for a drain if
// drain, of the session named drainedFrom if not "" (see
// sessionRecord.DrainedFrom), bounded by StepTimeout: one that ignores
// its context fails a lateGrace past it and holds the session until it
// returns (checkpointedLate). The slot must be held and the session must
// have an instance.
func (ss *session) checkpointLocked(ctx context.Context, drain bool, drainedFrom string) (CheckpointInfo, *protoError) {
	c, ok := ss.inst.(Checkpointer)
	if !ok {
		return CheckpointInfo{}, newError(codeNoCheckpoints, "This server cannot checkpoint episodes: its backend keeps no checkpoints.")
	}
	s := ss.srv
	rec, err := ss.recordLocked(drainedFrom)
	if err != nil {
		return CheckpointInfo{}, newError(codeExecution, "the checkpoint could not be taken: %v", err)
	}
	ss.mu.Lock()
	req := CheckpointRequest{Revision: ss.steps, Attempt: ss.attempt, Session: rec, Drain: drain}
	ss.mu.Unlock()
	cctx, cancel := withTimeout(ctx, s.cfg.StepTimeout)
	defer cancel()
	start := time.Now()
	var o struct { // Checkpoint's outcome, which a late Checkpoint sets after checkpointLocked returned
		info CheckpointInfo
		err  error
		perr *protoError
	}
	returned, ended, ok := s.within(cctx, func() {
		o.perr = s.guardCtx(ctx, "Instance.Checkpoint", func() { o.info, o.err = c.Checkpoint(cctx, req) })
	})
	if !ok {
		return CheckpointInfo{}, ss.checkpointedLate(ctx, cctx, start, ended, returned)
	}
	info, err, perr := o.info, o.err, o.perr
	s.observeCheckpoint(cctx, "checkpoint", start, info.ID, err, perr)
	if perr != nil {
		return CheckpointInfo{}, perr
	}
	if perr := s.infraFailure(ctx, "checkpoint", err); perr != nil {
		return CheckpointInfo{}, perr
	}
	if err != nil {
		return CheckpointInfo{}, newError(codeExecution, "the checkpoint could not be taken: %v", err)
	}
	ss.mu.Lock()
	ss.exposed = true
	ss.mu.Unlock()
	return info, nil
}

// autoCheckpointLocked checkpoints the session after every
// Config.CheckpointEvery-th step, unless a call past its deadline holds
// its instance (lateCall) or a restore superseded its attempt (or its
// fence cannot be read) meanwhile; a failure is logged (and
// counted), and the step's reply goes out all the same. The checkpoint is bounded by the
// session's end, not by the end of the step's request (ctx), whose client
// may leave once its call ran (as a /ws step's checkpoint, whose request is
// its session); the checkpoint of a request of the agent listener is the
// agent's work (FromAgentListener), as the call was. The slot must be held.
func (ss *session) autoCheckpointLocked(ctx context.Context) {
	every := ss.srv.cfg.CheckpointEvery
	if every <= 0 {
		return
	}
	ss.mu.Lock()
	steps, late := ss.steps, ss.late
	ss.mu.Unlock()
	if steps == 0 || steps%every != 0 || late != nil {
		return
	}
	if _, ok := ss.srv.backend.(Restorer); !ok {
		return
	}
	if by, fenced, err := ss.supersededBy(); fenced || err != nil {
		// A restore fenced the attempt while its step ran: its episode
		// goes on in the session that restored it, whose checkpoints a
		// checkpoint of this one would follow as the episode's newest.
		ss.srv.log.Info("openenv: periodic checkpoint skipped: the session's attempt was superseded", "session", ss.ref, "steps", steps, "by", by, "err", err)
		return
	}
	cctx := ss.tagged
	if FromAgentListener(ctx) {
		cctx = context.WithValue(cctx, agentListenerKey{}, true)
	}
	if _, perr := ss.checkpointLocked(cctx, false, ""); perr != nil {
		ss.srv.log.Warn("openenv: periodic checkpoint failed", "session", ss.ref, "steps", steps, "err", perr.message)
	}
}

// serveLatest serves GET /checkpoints/latest?episode_id=…: the newest
// checkpoint of an episode on any server sharing the checkpoint store, so
// that a trainer whose replica died finds where to restore from.
func (s *Server) serveLatest(w http.ResponseWriter, r *http.Request) {
	q, qerr := url.ParseQuery(r.URL.RawQuery)
	id := q.Get("episode_id")
	rs, ok := s.backend.(Restorer)
	switch {
	case !ok:
		s.writeError(w, newError(codeNoCheckpoints, "This server keeps no checkpoints."))
	case qerr != nil:
		s.writeError(w, invalid([]fieldError{{Type: "url_parsing", Loc: []any{"query"}, Input: mustEncode(r.URL.RawQuery),
			Msg: fmt.Sprintf("The URL's query does not parse (%s): write it as key=value pairs joined by &, each percent-encoded", qerr)}}))
	case len(q["episode_id"]) > 1:
		s.writeError(w, invalid([]fieldError{{Type: "duplicate_key", Loc: []any{"query", "episode_id"}, Input: mustEncode(q["episode_id"]),
			Msg: fmt.Sprintf("The URL names episode_id %d times; name it once", len(q["episode_id"]))}}))
	case id == "":
		s.writeError(w, invalid([]fieldError{{Type: "missing", Loc: []any{"query", "episode_id"}, Msg: "Field required", Input: json.RawMessage(`null`)}}))
	default:
		info, found := rs.Latest(id)
		if !found {
			s.writeError(w, newError(codeNoCheckpoint, "Episode %s has no checkpoint in this server's checkpoint store.", runecut.Echo(id)))
			return
		}
		s.respond(w, http.StatusOK, info)
	}
}

// restoreLocked replaces the session's instance with one restored from
// the checkpoint req names, and fences the attempt it replaces, if any. A
// Restore that ignores its context fails a lateGrace past StepTimeout, and
// what it restores later is discarded (openedLate). The slot must be held.
func (ss *session) restoreLocked(ctx context.Context, req resetData) *protoError {
	s := ss.srv
	r, ok := s.backend.(Restorer)
	if !ok {
		return newError(codeNoCheckpoints, "This server cannot restore checkpoints: its backend keeps none.")
	}
	id := *req.Checkpoint
	octx, cancel := withTimeout(ctx, s.cfg.StepTimeout)
	defer cancel()
	var inst Instance
	var saved CheckpointRequest
	var err error
	var perr *protoError
	start := time.Now()
	var o struct { // Restore's outcome, which a late Restore sets after restoreLocked returned
		inst  Instance
		saved CheckpointRequest
		err   error
		perr  *protoError
	}
	returned, _, ok := s.within(octx, func() {
		o.perr = s.guardCtx(ctx, "Backend.Restore", func() { o.inst, o.saved, o.err = r.Restore(octx, id) })
	})
	if ok {
		inst, saved, err, perr = o.inst, o.saved, o.err, o.perr
	} else {
		err = s.openedLate(ctx, octx, "restore", returned, func() Instance { return o.inst })
	}
	var rec sessionRecord
	switch {
	case err != nil || perr != nil:
	case inst == nil:
		err = errors.New("the backend restored no instance")
	default:
		s.metrics.instances.Inc() // every way it leaves goes through closeInstance or discardInstance
		if json.Unmarshal(saved.Session, &rec) != nil {
			err = &OptionError{Option: "checkpoint", Value: id, Message: fmt.Sprintf("checkpoint %q is corrupt: the server's record of its session does not parse; nothing was restored", id)}
			s.endInstanceLater(s.discardInstance, inst)
		}
	}
	s.observeCheckpoint(octx, "restore", start, id, err, perr)
	err = s.openTimeout(ctx, octx, "restore", err)
	if perr := s.openFailure(ctx, err, perr, false, req.loc); perr != nil {
		return perr
	}
	finished := false
	if g := saved.Regraded; g != nil {
		// Graded anew under this server's definition of the task: the
		// checkpoint's reward is the old definition's.
		rec.Graded, rec.LastReward = true, g.Reward
		if g.Done && !rec.Over {
			rec.Over, rec.DoneAt, finished = true, rec.Steps, true
		}
	}
	attempt := uuid.NewString()
	if req.Replaces != nil {
		by := fmt.Sprintf("checkpoint %s"+restoredAs+"%s", id, attempt)
		if err := r.Fence(*req.Replaces, rec.EpisodeID, id, by); err != nil {
			// The session keeps its episode: nothing was restored.
			s.endInstanceLater(s.discardInstance, inst)
			if se := (*SupersededError)(nil); errors.As(err, &se) {
				return superseded(r, se, rec.EpisodeID, req.loc)
			}
			if oe := (*OptionError)(nil); errors.As(err, &oe) {
				return invalid([]fieldError{oe.field(req.loc)})
			}
			if perr := s.infraFailure(ctx, opReset, err); perr != nil {
				return perr
			}
			return newError(codeExecution, "the attempt %s could not be fenced, so nothing was restored: %v", *req.Replaces, err)
		}
		s.log.Info("openenv: attempt fenced", append(sessionAttrs(ctx), "attempt", refOf(*req.Replaces), "by", digested(by))...)
	}
	// The drained session's episode goes on here: its next request must
	// not be told to restore the checkpoint again, which would fork the
	// episode (an MCP client continues under a new session id, so nothing
	// else ends the record).
	var undrained error
	switch f, ok := r.(DrainsForgetter); {
	case rec.DrainedFrom != nil && *rec.DrainedFrom != "":
		undrained = r.Undrained(*rec.DrainedFrom)
	case rec.DrainedFrom == nil && ok:
		// A server of an earlier version took the checkpoint, and did
		// not say whether a drain did, or of which session.
		undrained = f.UndrainedTo(id)
	}
	if undrained != nil {
		s.log.Warn("openenv: the drained session's record could not be removed", append(sessionAttrs(ctx), "checkpoint", refOf(id), "err", undrained)...)
	}
	ss.installLocked(inst, rec, attempt)
	if req.Replaces != nil {
		// The fence names the attempt (a retried restore is told it, in
		// superseded_by), so a restore may replace it before it takes a
		// checkpoint.
		ss.mu.Lock()
		ss.exposed = true
		ss.mu.Unlock()
	}
	if finished {
		ss.mu.Lock()
		s.metrics.episodesFinished.WithLabelValues(taskLabel(rec.Task)).Inc()
		ss.endEpisodeLocked()
		ss.mu.Unlock()
	}
	return nil
}

// restoredAs separates, in what a fence records (Restorer.Fence's by),
// the checkpoint a restore continues from the attempt it started.
const restoredAs = ", restored as attempt "

// superseded is the refusal of a restore replacing an attempt a restore
// fenced already (se): a validation error at replaces that names the
// attempt that restore started (superseded_by) and, when the episode's
// newest checkpoint is one it took, that checkpoint (checkpoint_id), so
// a client whose restore reply was lost replaces that attempt in turn,
// from the checkpoint it was restoring or from that one.
func superseded(r Restorer, se *SupersededError, episodeID string, loc []any) *protoError {
	perr := invalid([]fieldError{(&OptionError{Option: "replaces", Value: se.Attempt, Message: se.Error()}).field(loc)})
	successor, ok := successorOf(se.By)
	if !ok {
		return perr
	}
	perr.extra.SupersededBy = successor
	if info, ok := r.Latest(episodeID); ok && info.Attempt == successor {
		perr.extra.CheckpointID = info.ID
	}
	return perr
}

// successorOf returns the attempt a restore started, from what its fence
// records (by); ok is false for a fence another kind of restore wrote.
func successorOf(by string) (attempt string, ok bool) {
	_, successor, ok := strings.Cut(by, restoredAs)
	if u, err := uuid.Parse(successor); !ok || err != nil || u.String() != successor {
		return "", false
	}
	return successor, true
}

// RestoredFrom returns the checkpoint a restore continued and the attempt
// it started, from what the fence of the attempt it replaced records
// (Restorer.Fence's by); ok is false for a fence another kind of restore
// wrote.
func RestoredFrom(by string) (checkpoint, attempt string, ok bool) {
	before, _, _ := strings.Cut(by, restoredAs)
	checkpoint, found := strings.CutPrefix(before, "checkpoint ")
	attempt, ok = successorOf(by)
	if !found || !ok || checkpoint == "" {
		return "", "", false
	}
	return checkpoint, attempt, true
}

// fencedLocked refuses a request of a session whose attempt a restore
// superseded, or whose fence cannot be read: the request might be one the
// fence refuses. Only an attempt a checkpoint reply named can be fenced,
// so only those sessions ask. The slot must be held.
func (ss *session) fencedLocked(ctx context.Context) *protoError {
	by, fenced, err := ss.supersededBy()
	if err != nil {
		if perr := ss.srv.infraFailure(ctx, opFence, err); perr != nil {
			return perr
		}
		return newError(codeExecution, "This session's attempt cannot be checked against the fences of superseded attempts, so the request was refused: %v", err)
	}
	if !fenced {
		return nil
	}
	ss.mu.Lock()
	attempt := ss.attempt
	ss.mu.Unlock()
	ss.srv.metrics.fencedSteps.Inc()
	perr := newError(codeSuperseded, "This session's attempt %s was superseded by %s: it can no longer step. Continue on the session that restored it.", attempt, by)
	perr.extra.SupersededBy, _ = successorOf(by)
	return perr
}

// supersededBy reports whether a restore fenced the session's attempt, and
// which. Only an attempt a checkpoint reply named can be fenced, so only
// those sessions ask. An attempt once seen fenced stays fenced, though
// retention removes its fence or the fence can no longer be read: a
// superseded attempt never steps again.
func (ss *session) supersededBy() (string, bool, error) {
	ss.mu.Lock()
	exposed, attempt, superseded := ss.exposed, ss.attempt, ss.superseded
	ss.mu.Unlock()
	if superseded != "" {
		return superseded, true, nil
	}
	if !exposed {
		return "", false, nil
	}
	r, ok := ss.srv.backend.(Restorer)
	if !ok {
		return "", false, nil
	}
	by, fenced, err := r.FencedBy(attempt)
	if err != nil || !fenced {
		return "", false, err
	}
	ss.mu.Lock()
	if ss.attempt == attempt {
		ss.superseded = by
	}
	ss.mu.Unlock()
	return by, true, nil
}

// checkRestore refuses reset data that names a checkpoint beside options
// a checkpoint fixes (every reset key but replaces), or replaces without a
// checkpoint.
func checkRestore(req resetData) []fieldError {
	var errs []fieldError
	refuse := func(key string, value any, msg string) {
		errs = append(errs, (&OptionError{Option: key, Value: value, Message: "Value error, " + msg}).field(req.loc))
	}
	if req.Replaces != nil {
		in, _ := json.Marshal(*req.Replaces)
		if req.Checkpoint == nil {
			refuse("replaces", *req.Replaces, "replaces names the attempt a restore supersedes: it needs checkpoint")
		} else if u, err := uuid.Parse(*req.Replaces); err != nil || u.String() != *req.Replaces {
			refuse("replaces", *req.Replaces, fmt.Sprintf("%s is not an attempt id (attempt ids are the lowercase UUIDs checkpoint replies carry)", in))
		}
	}
	if req.Checkpoint == nil {
		return errs
	}
	v := reflect.ValueOf(req)
	for i := range v.NumField() {
		key, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if f := v.Field(i); key != "" && key != "checkpoint" && key != "replaces" && !f.IsNil() {
			refuse(key, f.Interface(), key+" cannot be given with checkpoint: a restore continues the checkpointed episode as it was")
		}
	}
	return errs
}
