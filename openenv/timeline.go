package openenv

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/runecut"
)

// ChangeCounter is implemented by an Instance that can tell, cheaply, how
// many change records its episode has made so far (the Seq of the newest).
// The timeline then names the records each step made. It is called with
// the session's calls serialised, like every Instance method.
type ChangeCounter interface {
	ChangeCount() int
}

// maxTimeline is how many steps a session's timeline keeps: the newest.
const maxTimeline = 200

// maxTimelineJSON is the most bytes of a step's arguments or result the
// timeline keeps; a larger one is kept as a JSON string that says so.
const maxTimelineJSON = 4 << 10

// maxTimelineText is the most bytes of a step's tool name or error message
// the timeline keeps; the rest is cut and its length said. Both come from
// the client (an unknown tool's error repeats its name), and a session
// keeps maxTimeline steps.
const maxTimelineText = 1 << 10

// timelineStep is one tool call of an episode, as the inspector shows it.
type timelineStep struct {
	Step      int             `json:"step"`
	At        time.Time       `json:"at"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *toolErrorData  `json:"error,omitempty"`
	// Reward and Done are the task's grading after the step; null and false
	// without one (an MCP tools/call is not graded).
	Reward *float64 `json:"reward"`
	Done   bool     `json:"done"`
	// Changes is the Seq range [first, last] of the change records the call
	// made; null when the instance cannot tell, [n+1, n] for none.
	Changes *[2]int `json:"changes"`
}

// clipJSON returns raw, or a JSON string saying how long it was when it is
// longer than maxTimelineJSON.
func clipJSON(raw []byte) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	if len(raw) <= maxTimelineJSON {
		return json.RawMessage(raw)
	}
	b, _ := json.Marshal(fmt.Sprintf("(%d bytes, not kept)", len(raw)))
	return b
}

// clipText returns s, or its first maxTimelineText bytes (whole UTF-8
// sequences) followed by how long it was, copied so as not to keep s.
func clipText(s string) string {
	return strings.Clone(runecut.Clip(s, maxTimelineText, "not kept"))
}

// changeCount returns inst's change count, or -1.
func changeCount(inst Instance) int {
	if c, ok := inst.(ChangeCounter); ok {
		return c.ChangeCount()
	}
	return -1
}

// recordStepLocked appends a call to the timeline. before is the change
// count before it. The slot must be held.
func (ss *session) recordStepLocked(name string, args json.RawMessage, out toolOutcome, before int) {
	st := timelineStep{At: time.Now().UTC(), Tool: clipText(name), Arguments: clipJSON(args)}
	if out.err != nil {
		st.Error = &toolErrorData{out.err.Kind, clipText(out.err.Message)}
	} else {
		st.Result = clipJSON(out.result)
	}
	if before >= 0 {
		if after := changeCount(ss.inst); after >= before {
			st.Changes = &[2]int{before + 1, after}
		}
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	st.Step = ss.steps
	if len(ss.timeline) == maxTimeline {
		ss.timeline = ss.timeline[1:]
	}
	ss.timeline = append(ss.timeline, st)
}

// settleStepLocked completes the timeline's entry of step, a call that ran
// on past its deadline and has now returned: with the error its instance
// gave it (err, as the recording has it: its message says when it kept
// work it had committed before its deadline) and the change records it
// made (those of that work), counted from before. The slot must be held.
func (ss *session) settleStepLocked(step, before int, err *env.ToolError) {
	after := changeCount(ss.inst)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for i := len(ss.timeline) - 1; i >= 0; i-- {
		st := &ss.timeline[i]
		if st.Step != step {
			continue
		}
		if before >= 0 && after >= before {
			st.Changes = &[2]int{before + 1, after}
		}
		if err != nil {
			st.Error = &toolErrorData{err.Kind, clipText(err.Message)}
		}
		return
	}
}

// gradeStepLocked sets the newest step's reward and done.
func (ss *session) gradeStepLocked(reward float64, done bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if n := len(ss.timeline); n > 0 && ss.timeline[n-1].Step == ss.steps {
		ss.timeline[n-1].Reward, ss.timeline[n-1].Done = &reward, done
	}
}

// watchReply is the body of GET /sessions/{ref}/watch.
type watchReply struct {
	Session SessionInfo    `json:"session"`
	Steps   []timelineStep `json:"steps"`
	State   env.StateDoc   `json:"state"`
}

// serveWatch serves GET /sessions/{ref}/watch, an infrastructure route for
// the inspector: a live session's facts, its timeline (the newest
// maxTimeline steps) and its state document, read without touching the
// episode. A session is named by its ref, as GET /sessions lists it.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request) {
	ref := chi.URLParam(r, "ref")
	var ss *session
	for _, c := range s.snapshot() {
		if c.ref == ref {
			ss = c
		}
	}
	if ss == nil {
		s.writeError(w, newError(codeUnknownSession, "No live session has ref %q (GET /sessions lists the live ones)", runecut.Echo(ref)))
		return
	}
	state, perr := ss.state(r.Context())
	if perr != nil {
		if perr.code == codeUnknownSession {
			// The session ended while the watch waited for its call in
			// progress. The watcher knows it by its ref: its id, a
			// capability, and a checkpoint it was drained to are not
			// the watcher's to learn.
			perr = newError(codeUnknownSession, "Session %s ended while the watch waited for it (GET /sessions lists the live ones)", ref)
		}
		s.writeError(w, perr)
		return
	}
	ss.mu.Lock()
	steps := append([]timelineStep{}, ss.timeline...) // never null
	ss.mu.Unlock()
	reply := watchReply{Session: ss.info(), Steps: steps}
	if b, err := encode(reply); err == nil {
		// The state takes what the session and its timeline leave.
		state = s.fitState(state, len(b))
	}
	reply.State = state
	s.respond(w, http.StatusOK, reply)
}
