package openenv

import (
	"encoding/json"
	"fmt"
)

// Idempotent steps: a step that carries a request_id its episode has
// answered gets the recorded reply, and runs nothing (docs/protocol.md).

// maxReplays is how many step replies a session keeps by request_id: the
// episode's newest.
const maxReplays = 1024

// replayed is a step reply kept under its request_id.
type replayed struct {
	key   string // the action it answered (action.key)
	step  int    // the step it was
	reply stepReply
}

// replayLocked answers a step whose request_id the episode has seen: ok
// with the recorded reply when the action is the same, a validation error
// when it is not. The slot must be held.
func (ss *session) replayLocked(a action) (stepReply, bool, *protoError) {
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
	ss.srv.metrics.replayed.Inc()
	return rec.reply, true, nil
}

// rememberLocked keeps a step's reply under its request_id, forgetting
// the oldest past maxReplays. The slot must be held.
func (ss *session) rememberLocked(a action, reply stepReply) {
	if a.RequestID == nil {
		return
	}
	ss.mu.Lock()
	step := ss.steps
	ss.mu.Unlock()
	ss.keepLocked(string(*a.RequestID), replayed{key: a.key(), step: step, reply: reply})
}

// keepLocked keeps a step reply under its request_id, forgetting the
// oldest past maxReplays. The slot must be held.
func (ss *session) keepLocked(id string, r replayed) {
	if ss.replays == nil {
		ss.replays = map[string]replayed{}
	}
	if len(ss.ids) == maxReplays {
		delete(ss.replays, ss.ids[0])
		ss.ids = ss.ids[1:]
	}
	ss.replays[id] = r
	ss.ids = append(ss.ids, id)
}
