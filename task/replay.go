package task

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
)

// Replay is the outcome of replaying a trajectory.
type Replay struct {
	// Calls is the number of calls replayed.
	Calls int
	// Result is the task's grading after the last call; nil for a
	// trajectory without a task, or when the grading failed.
	Result *Result
	// GradeError is why the task's grading after the last call failed,
	// such as a change log truncated to the recorded bound
	// (Header.MaxChangeLogBytes) losing records a check needs; "" when it
	// did not fail. A recording whose end line holds no grading says the
	// server's failed too; a replay whose grading fails or succeeds
	// otherwise than that is a mismatch.
	GradeError string
	// StateSHA256 is StateHash after the last call.
	StateSHA256 map[string]string
	// Mismatches lists every way the replay differed from the recording:
	// a call whose result or error differs, a final state hash or reward
	// that differs from the end line. None means the episode is
	// deterministic as far as the recording shows.
	Mismatches []string
	// Warnings are differences that do not make the replay wrong, such as a
	// world version or a definition of the task (Header.TaskSHA256) other
	// than the recorded one, or a call cut off by its deadline after it
	// had committed part of its work, which the recording does not hold;
	// every difference after such a call is a warning too.
	Warnings []string
}

// ErrResumed is returned (wrapped) by ReplayTrajectory for a trajectory
// whose header names a checkpoint: its episode starts from that
// checkpoint, not from the fixture, and ReplayResumed replays it.
var ErrResumed = errors.New("task: the trajectory continues a checkpoint")

// ReplayTrajectory opens the instance a trajectory was recorded on (the
// same world, task, fixture, now, seed, startup keywords, clock mode,
// control tools and change-log bound), makes its calls again in order, grades the result and
// compares everything the recording holds with what the replay produced.
// A call recorded as cut off by its deadline (or cancelled by its caller)
// is made again cut off before it began, as replayIn says, not run to its
// end with no deadline. A call whose result JSON cannot encode fails and
// rolls back, as a server that recorded it made it fail (encodes).
// tasks are the world's tasks (ForWorld); opts supplies what a header does
// not say (FixturesDir, Dir). An error means the replay could not run: a
// trajectory of another world, an unknown task, an instance that does not
// open, or a trajectory of a restored episode (ErrResumed); a grading
// that fails is Replay.GradeError.
func ReplayTrajectory(ctx context.Context, w *env.World, tasks []env.Task, tr *Trajectory, opts composition.Options) (*Replay, error) {
	h := tr.Header
	if h.Checkpoint != "" {
		return nil, fmt.Errorf("%w %s", ErrResumed, h.Checkpoint)
	}
	rep, t, err := replayTask(w, tasks, h)
	if err != nil {
		return nil, err
	}
	if h.Task != "" {
		// The header says what the instance was opened with, overrides
		// included: it wins over the task's own values.
		t.Fixture, t.Now, t.Startup = h.Fixture, h.Now, maps.Clone(h.Startup)
		t.Seed = new(h.Seed)
	}
	opts.Fixture, opts.Now, opts.Seed, opts.Startup = h.Fixture, h.Now, h.Seed, maps.Clone(h.Startup)
	opts.ClockMode, opts.ControlTools, opts.EpisodeID = h.ClockMode, h.ControlTools, h.EpisodeID
	opts.MaxChangeLogBytes = h.MaxChangeLogBytes
	ep, err := Open(ctx, w, t, opts)
	if err != nil {
		return nil, err
	}
	if err := sameFixture(h, ep.Instance().State().Fixture); err != nil {
		ep.Close()
		return nil, err
	}
	return replayIn(ctx, ep, tr, rep)
}

// sameFixture refuses to replay a recording made on other files than the
// fixture f the replay opened under the same id: its calls would differ for
// that reason alone.
func sameFixture(h Header, f *env.FixtureRef) error {
	if h.FixtureSHA256 == nil || f == nil {
		return nil
	}
	for _, path := range slices.Sorted(maps.Keys(h.FixtureSHA256)) {
		if got, want := f.FileSHA256[path], h.FixtureSHA256[path]; got != want {
			return fmt.Errorf("task: fixture %q is not the one the episode was recorded on: the file of its node %s has SHA-256 %.12s…, the recording's %.12s… (the fixture was built again since); replay against the fixtures the episode ran on", h.Fixture, path, cmp.Or(got, "(none)"), want)
		}
	}
	return nil
}

// replayIn makes a trajectory's calls again in ep, grades it, records in
// rep what differed from the recording, and closes ep.
//
// A call the recording says its context ended (see cutOff) is made with a
// context already past its deadline: it runs nothing, and is a step as the
// recorded one was. One that had changed nothing then leaves the instance
// as the recorded one did, and fails the same way; one that had committed
// part of its work before it ended leaves what the recording does not hold,
// so from it on rep.Warnings, not rep.Mismatches, says what differs.
func replayIn(ctx context.Context, ep *Episode, tr *Trajectory, rep *Replay) (*Replay, error) {
	defer ep.Close()
	unknown := false // a call left effects the recording does not hold
	differs := func(diff string) {
		if unknown {
			rep.Warnings = append(rep.Warnings, diff)
		} else {
			rep.Mismatches = append(rep.Mismatches, diff)
		}
	}
	for i, c := range tr.Calls {
		callCtx, cancel := ctx, context.CancelFunc(func() {})
		exact, cut := cutOff(c)
		if cut {
			callCtx, cancel = context.WithDeadline(ctx, time.Time{})
		}
		out, callErr := ep.CallJSON(callCtx, c.Tool, c.arguments()) // checks its result as the server did
		cancel()
		got, err := NewCallLine(c.Tool, c.arguments(), out, callErr)
		if err != nil {
			return nil, err
		}
		rep.Calls++
		if cut && !exact {
			unknown = true
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("call %d (%s) ended early in the recording (%s) after committing part of its work, which the recording does not hold: the replay cut it off before it began, and reports what differs from here on as warnings", i+1, c.Tool, errText(c.Error)))
			continue
		}
		if diff := diffCall(c, got); diff != "" {
			differs(fmt.Sprintf("call %d (%s): %s", i+1, c.Tool, diff))
		}
		if i > 0 && tr.Calls[i-1].Done != nil && *tr.Calls[i-1].Done {
			differs(fmt.Sprintf("call %d (%s) follows the step its grading said done, after which a server runs no step", i+1, c.Tool))
		}
		if c.Reward != nil || c.Done != nil {
			// Graded as the server graded the step, and compared.
			if diff := diffGrade(ctx, ep, c); diff != "" {
				differs(fmt.Sprintf("call %d (%s): %s", i+1, c.Tool, diff))
			}
		}
	}
	var err error
	if rep.StateSHA256, err = StateHash(ctx, ep.Instance()); err != nil {
		return nil, err
	}
	if tr.Header.Task != "" {
		if res, err := ep.Grade(ctx); err != nil {
			rep.GradeError = err.Error()
		} else {
			rep.Result = &res
		}
	}
	if tr.End == nil {
		rep.Warnings = append(rep.Warnings, "the recording has no end line: its episode did not close cleanly (its server stopped, or the recording failed, first), so the final state and grade it ended with are not recorded, and the replay's are compared with nothing")
		return rep, nil
	}
	for _, diff := range diffEnd(*tr.End, rep, tr.Header.Task != "") {
		differs(diff)
	}
	return rep, nil
}

// cutOff reports whether a recorded call failed because its context ended
// once it ran (composition.MsgTimedOut, MsgTimedOutKept, MsgCancelled):
// where that happened is chance, which a replay cannot repeat. exact is
// true when the call changed nothing, so that the same call cut off before
// it began leaves the instance as it did.
func cutOff(c CallLine) (exact, ok bool) {
	if c.Error == nil {
		return false, false
	}
	switch *c.Error {
	case CallError{Type: env.KindTimeout, Message: composition.MsgTimedOut}:
		return true, true
	case CallError{Type: env.KindTimeout, Message: composition.MsgTimedOutKept}, CallError{Type: env.KindExecution, Message: composition.MsgCancelled}:
		return false, true
	}
	return false, false
}

// ReplayResumed is ReplayTrajectory for the trajectory of a restored
// episode (its header names the checkpoint): the episode resumes from cp
// and saved, the checkpoint's instance and episode as the server kept
// them, and the trajectory's calls are made again from there. It refuses
// a checkpoint of another episode or task than the trajectory's.
func ReplayResumed(ctx context.Context, w *env.World, tasks []env.Task, tr *Trajectory, cp *composition.Checkpoint, saved Saved, opts composition.Options) (*Replay, error) {
	h := tr.Header
	if h.Checkpoint == "" {
		return nil, errors.New("task: the trajectory names no checkpoint: it starts from its fixture")
	}
	if saved.Header.EpisodeID != h.EpisodeID || saved.Task != h.Task {
		return nil, fmt.Errorf("task: checkpoint %s is of episode %q (task %q), the trajectory of episode %q (task %q)", h.Checkpoint, saved.Header.EpisodeID, saved.Task, h.EpisodeID, h.Task)
	}
	rep, t, err := replayTask(w, tasks, h)
	if err != nil {
		return nil, err
	}
	opts.Checkpoint, opts.MaxChangeLogBytes = cp, h.MaxChangeLogBytes
	ep, err := Resume(ctx, w, t, saved, opts, nil, h.Checkpoint)
	if err != nil {
		return nil, err
	}
	return replayIn(ctx, ep, tr, rep)
}

// replayTask checks a trajectory's world, and finds its task among tasks.
func replayTask(w *env.World, tasks []env.Task, h Header) (*Replay, env.Task, error) {
	if h.World != w.Name() {
		return nil, env.Task{}, fmt.Errorf("task: the trajectory is of world %q, not %q", h.World, w.Name())
	}
	rep := &Replay{}
	if h.WorldVersion != w.Version() {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("recorded with %s %s, replayed with %s", h.World, h.WorldVersion, w.Version()))
	}
	var t env.Task
	if h.Task != "" {
		var ok bool
		if t, ok = Find(tasks, h.Task); !ok {
			return nil, env.Task{}, fmt.Errorf("task: the trajectory's task %q is not a task of %s", h.Task, w.Name())
		}
		if hash := DefinitionHash(t); h.TaskSHA256 != "" && h.TaskSHA256 != hash {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("recorded under task %q of definition sha256 %.12s…, replayed under another definition of it, %.12s… (the task was edited since, or the recording is another server's)", h.Task, h.TaskSHA256, hash))
		}
	}
	return rep, t, nil
}

// diffGrade grades ep after the replay of call c, whose step the server
// graded, and compares that grading with the reward and done c records.
func diffGrade(ctx context.Context, ep *Episode, c CallLine) string {
	res, err := ep.Grade(ctx)
	recorded := fmt.Sprintf("recorded reward %s (done %s)", optText(c.Reward), optText(c.Done))
	switch {
	case err != nil:
		return recorded + ", replay grading failed: " + err.Error()
	case c.Reward == nil || c.Done == nil || *c.Reward != res.Reward || *c.Done != res.Done:
		return fmt.Sprintf("%s, replay reward %.4g (done %t)", recorded, res.Reward, res.Done)
	}
	return ""
}

// optText is *p as text, or "none" for nil.
func optText[T any](p *T) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

// diffCall compares a recorded call with its replay.
func diffCall(rec, got CallLine) string {
	switch {
	case rec.Error != nil && got.Error != nil:
		if *rec.Error != *got.Error {
			return fmt.Sprintf("recorded error %s, replay error %s", errText(rec.Error), errText(got.Error))
		}
	case rec.Error != nil:
		return fmt.Sprintf("recorded error %s, replay returned %s", errText(rec.Error), got.Result)
	case got.Error != nil:
		return fmt.Sprintf("recorded result %s, replay failed with %s", compactJSON(rec.Result), errText(got.Error))
	default:
		a, errA := normalizeText(string(rec.Result))
		b, errB := normalizeText(string(got.Result))
		if errA != nil || errB != nil || !jsonEqual(a, b) {
			return fmt.Sprintf("recorded result %s, replay returned %s", compactJSON(rec.Result), got.Result)
		}
	}
	return ""
}

func errText(e *CallError) string {
	if e.Type == "" {
		return fmt.Sprintf("%q", e.Message)
	}
	return fmt.Sprintf("%s %q", e.Type, e.Message)
}

// diffEnd compares a recording's end line with the replay's final state
// and, when the trajectory runs a task, its final grading: an end line
// without a result says the recording's grading failed.
func diffEnd(end EndLine, rep *Replay, hasTask bool) []string {
	var out []string
	if end.Calls != rep.Calls {
		out = append(out, fmt.Sprintf("the end line counts %d calls, the trajectory holds %d", end.Calls, rep.Calls))
	}
	if end.StateSHA256 != nil {
		// Every path of either side, sorted, so the message is the same on
		// every run.
		paths := slices.AppendSeq(slices.Collect(maps.Keys(end.StateSHA256)), maps.Keys(rep.StateSHA256))
		slices.Sort(paths)
		var diff []string
		for _, p := range slices.Compact(paths) {
			if end.StateSHA256[p] != rep.StateSHA256[p] {
				diff = append(diff, p)
			}
		}
		if len(diff) > 0 {
			out = append(out, fmt.Sprintf("final state differs from the recording in %s", strings.Join(diff, ", ")))
		}
	}
	switch {
	case !hasTask:
	case end.Result != nil && rep.Result != nil:
		if end.Result.Reward != rep.Result.Reward || end.Result.Done != rep.Result.Done {
			out = append(out, fmt.Sprintf("recorded reward %.4g (done %t), replay reward %.4g (done %t)", end.Result.Reward, end.Result.Done, rep.Result.Reward, rep.Result.Done))
		}
	case end.Result != nil:
		out = append(out, fmt.Sprintf("recorded reward %.4g (done %t), replay grading failed: %s", end.Result.Reward, end.Result.Done, rep.GradeError))
	case rep.Result != nil:
		out = append(out, fmt.Sprintf("recorded grading failed (the end line holds no result), replay reward %.4g (done %t)", rep.Result.Reward, rep.Result.Done))
	}
	return out
}
