package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/seahaven/seahaven/openenv"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/sqlitestore"
	"github.com/seahaven/seahaven/task"
)

// The instances the backend opens: an episode, with or without a task,
// adapted to openenv.Instance.

// worldInstance adapts a task episode (perhaps without a task) to Instance;
// its calls go through the backend's gate, its queries through its inspect
// gate.
type worldInstance struct {
	ep *task.Episode
	b  *Backend
	// closed tells b the instance is closed, once (Backend.closedInstance).
	closed func()
}

// Checkpoint captures the episode and writes it to the checkpoint store
// (see openenv.Checkpointer). A drain's checkpoint takes no engine slot:
// the drain bounds its checkpoints itself (openenv.CheckpointRequest.Drain).
func (w worldInstance) Checkpoint(ctx context.Context, req openenv.CheckpointRequest) (openenv.CheckpointInfo, error) {
	if !req.Drain {
		leave, err := w.b.gate.enter(ctx)
		if err != nil {
			return openenv.CheckpointInfo{}, err
		}
		defer leave()
	}
	cp, saved, err := w.ep.Checkpoint(ctx)
	if err != nil {
		if bug, ok := errors.AsType[*env.WorldBug](err); ok {
			return openenv.CheckpointInfo{}, &openenv.OptionError{Option: "checkpoint", Message: bug.Message}
		}
		return openenv.CheckpointInfo{}, err
	}
	info, err := w.b.checkpoints.save(cp, saved, req)
	if err != nil {
		return openenv.CheckpointInfo{}, faultOr(err, "no checkpoint was written", fmt.Errorf("app: checkpoint: %w", err))
	}
	return info, nil
}

func (w worldInstance) Tools() []env.ToolInfo { return w.ep.Tools() }

func (w worldInstance) State() env.StateDoc { return w.ep.State() }

func (w worldInstance) ChangeCount() int { return w.ep.Instance().ChangeCount() }

func (w worldInstance) Close() error {
	defer w.closed()
	return w.ep.Close()
}

// Discard closes the episode leaving no recording of it (see
// openenv.Discarder).
func (w worldInstance) Discard() error {
	defer w.closed()
	return w.ep.Discard()
}

// Settle writes the recorded line of the latest call (see openenv.Settler).
func (w worldInstance) Settle() error { return w.ep.Settle() }

func (w worldInstance) CallJSON(ctx context.Context, name string, args json.RawMessage) (any, error) {
	leave, err := w.b.gate.enter(ctx)
	if err != nil {
		// Nothing ran: no step of the episode, as a call the engine
		// cancels while it waits for the instance's previous call.
		return nil, w.b.gate.waitedInVain(ctx, err, "the call", "nothing ran")
	}
	defer leave()
	return w.ep.CallJSON(ctx, name, args)
}

func (w worldInstance) Inspect(ctx context.Context, sql string, args []any, lim openenv.InspectLimit) (openenv.InspectRows, error) {
	leave, err := w.b.inspectGate.enter(ctx)
	if err != nil {
		return openenv.InspectRows{}, err
	}
	defer leave()
	rows, err := w.ep.Instance().Inspect().QueryLimit(ctx, sqlitestore.ReadLimit{MaxRows: lim.MaxRows, MaxBytes: lim.MaxBytes, Pacer: w.b.inspectPacer}, sql, args...)
	if err != nil {
		return openenv.InspectRows{}, err
	}
	// openenv names the limits with sqlitestore's words ("rows", "bytes").
	return openenv.InspectRows{Columns: rows.Columns, Rows: rows.Values, Truncated: rows.Truncated}, nil
}

// taskInstance is the episode of a task: a Grader.
type taskInstance struct{ worldInstance }

// Grade grades the episode (see openenv.Grader). One that waits for an
// engine slot until ctx ends ran nothing, and says so (env.ErrNoStep).
func (t taskInstance) Grade(ctx context.Context) (openenv.Grading, error) {
	leave, err := t.b.gate.enter(ctx)
	if err != nil {
		return openenv.Grading{}, t.b.gate.waitedInVain(ctx, err, "it", "nothing was graded")
	}
	defer leave()
	res, err := t.ep.Grade(ctx)
	if err != nil {
		return openenv.Grading{}, err
	}
	return openenv.Grading{Reward: res.Reward, Done: res.Done, Checks: res.Checks, Idle: res.Idle}, nil
}

// faultOr returns err as the infrastructure fault it is (see
// composition.Fault), or else other.
func faultOr(err error, what string, other error) error {
	if ie := composition.Fault(err, what); ie != nil {
		return ie
	}
	return other
}
