package openenv

import (
	"encoding/json"
	"fmt"
	"time"
)

// Idempotent steps: a step that carries a request_id its episode has
// answered gets the recorded reply, and runs nothing (docs/protocol.md).

// maxReplays is how many step replies a session keeps by request_id: the
// episode's newest.
const maxReplays = 1024

// maxReplayBytes bounds the bytes of the step replies a session keeps by
// request_id, each counted as its action's key (its arguments) and its
// encoded observation: past it the oldest are forgotten, but the newest is
// always kept, whatever its size. Without it a session kept maxReplays
// actions and observations of up to MaxMessageBytes and MaxReplyBytes
// each, gigabytes.
const maxReplayBytes = 16 << 20

// replayed is a step reply kept under its request_id.
type replayed struct {
	key   string // the action it answered (action.key)
	step  int    // the step it was
	reply stepReply
	// ungraded marks a step that ran but whose grading failed: reply has
	// its observation only, and a retry grades it again.
	ungraded bool
	// failed is the message of a step that ran but failed on the host (an
	// infrastructure error that is a step, such as a call that could not
	// be recorded): its reply is lost, and a retry is told so.
	failed string
	// size is what it counts against maxReplayBytes.
	size int
}

// replayLocked answers a step whose request_id the episode has seen: ok
// with the recorded reply when the action is the same, a validation error
// when it is not. The slot must be held.
func (ss *session) replayLocked(a action, timeout time.Duration) (stepReply, bool, *protoError) {
	if a.RequestID == nil {
		return stepReply{}, false, nil
	}
	rec, seen := ss.replays[string(*a.RequestID)]
	if !seen {
		return stepReply{}, false, nil
	}
	if rec.key != a.key() {
		id, _ := json.Marshal(string(*a.RequestID))
		return stepReply{}, false, invalid([]fieldError{{Type: "value_error", Loc: a.idLoc, Input: id,
			Msg: fmt.Sprintf("Value error, request_id %s answered another action at step %d of this episode; a new action needs a new request_id", id, rec.step)}})
	}
	if rec.failed != "" {
		return stepReply{}, false, newError(codeExecution, "request_id %q: its step ran as step %d but failed on the host (%s), so its reply is lost; the step is not run again", string(*a.RequestID), rec.step, rec.failed)
	}
	if rec.ungraded {
		return ss.regradeLocked(string(*a.RequestID), rec, timeout)
	}
	if !rec.reply.Done {
		// A step before the one that ended the episode: its reply said
		// done was false, which never comes back once the task graded
		// the episode done.
		if perr := ss.overLocked(resetAnew); perr != nil {
			return stepReply{}, false, perr
		}
	}
	ss.srv.metrics.replayed.Inc()
	return rec.reply, true, nil
}

// regradeLocked answers the retry of a step that ran but whose grading
// failed: it grades the episode again, as long as no step has run since,
// and keeps the reply once grading succeeds. The step does not run again.
// The slot must be held.
func (ss *session) regradeLocked(id string, rec replayed, timeout time.Duration) (stepReply, bool, *protoError) {
	ss.mu.Lock()
	since := ss.steps - rec.step
	ss.mu.Unlock()
	if since > 0 {
		return stepReply{}, false, newError(codeExecution, "request_id %q: its step ran as step %d but grading it failed, and %d later steps have run, so its reward can no longer be given; the step is not run again", id, rec.step, since)
	}
	reply, perr := ss.gradeReplyLocked(rec.reply, timeout)
	if perr != nil {
		return stepReply{}, false, perr
	}
	rec.reply, rec.ungraded = reply, false
	ss.replays[id] = rec
	ss.srv.metrics.replayed.Inc()
	return reply, true, nil
}

// rememberLocked keeps r, a step's reply (or, with failed set, the failure
// on the host of a step that ran, so that a retry does not run it again),
// under a's request_id as the step it was. The slot must be held.
func (ss *session) rememberLocked(a action, r replayed) {
	if a.RequestID == nil {
		return
	}
	ss.mu.Lock()
	r.step = ss.steps
	ss.mu.Unlock()
	r.key = a.key()
	if r.failed == "" {
		// Kept encoded, as a checkpoint restores it: one compact copy of
		// the observation, whose size is then known.
		if obs, err := encode(r.reply.Observation); err == nil {
			r.reply.Observation = json.RawMessage(obs)
		}
	}
	ss.keepLocked(string(*a.RequestID), r)
}

// keepLocked keeps a step reply under its request_id, forgetting the
// oldest past maxReplays and maxReplayBytes. The slot must be held.
func (ss *session) keepLocked(id string, r replayed) {
	if ss.replays == nil {
		ss.replays = map[string]replayed{}
	}
	r.size = len(r.key) + len(r.failed)
	if obs, ok := r.reply.Observation.(json.RawMessage); ok {
		r.size += len(obs)
	}
	for len(ss.ids) > 0 && (len(ss.ids) == maxReplays || ss.replayBytes+r.size > maxReplayBytes) {
		ss.replayBytes -= ss.replays[ss.ids[0]].size
		delete(ss.replays, ss.ids[0])
		ss.ids = ss.ids[1:]
	}
	ss.replays[id] = r
	ss.ids = append(ss.ids, id)
	ss.replayBytes += r.size
}
