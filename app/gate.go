package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/openenv"
)

// DefaultMaxActive is Config.MaxActive when it is zero.
const DefaultMaxActive = 64

// gate admits a bounded number of resets, tool calls and inspect queries
// into the engine at once; the others wait their turn in arrival order.
// Under overload this keeps the connections that running calls pin (and
// the memory and file descriptors they cost) bounded, instead of every
// session's call opening its stores at the same time. Work of the agent
// listener (openenv.FromAgentListener) takes one of the agents' share of
// the slots first, when the gate has one (newAgentGate), so agents hold
// at most that share and the main listener always has the rest. The
// share counts the listener a request came through, not the session its
// work runs on: agents reach only the agent listener, and a trainer's
// request on a session an agent started is the trainer's, which must not
// wait behind the agents' calls. A gate is safe for concurrent use; the
// zero gate admits everything.
type gate struct {
	slots  chan struct{} // nil: no bound
	agents chan struct{} // the agent listener's share of slots; nil: none
}

func newGate(n int) gate {
	if n < 0 {
		return gate{}
	}
	return gate{slots: make(chan struct{}, cmp.Or(n, DefaultMaxActive))}
}

// newAgentGate is newGate(n) whose agent listener's work holds at most
// three quarters of its slots, at least one. With one slot that is the
// slot itself, shared with the main listener in arrival order: a share of
// none would run no agent call at all.
func newAgentGate(n int) gate {
	g := newGate(n)
	if g.slots != nil {
		g.agents = make(chan struct{}, max(1, cap(g.slots)*3/4))
	}
	return g
}

// agent reports whether work with ctx takes one of the agents' share.
func (g gate) agent(ctx context.Context) bool {
	return g.agents != nil && openenv.FromAgentListener(ctx)
}

// enter waits for a turn or for ctx to end. Call the returned func to leave.
func (g gate) enter(ctx context.Context) (leave func(), err error) {
	if g.slots == nil {
		return func() {}, nil
	}
	if !g.agent(ctx) {
		return g.take(ctx, g.slots)
	}
	leaveShare, err := g.take(ctx, g.agents)
	if err != nil {
		return nil, err
	}
	leaveSlot, err := g.take(ctx, g.slots)
	if err != nil {
		leaveShare()
		return nil, err
	}
	return func() { leaveSlot(); leaveShare() }, nil
}

// take waits for a place in ch (g.slots or g.agents) or for ctx to end.
func (g gate) take(ctx context.Context, ch chan struct{}) (leave func(), err error) {
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	default:
	}
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		until := "it was cancelled"
		if pastDeadline(ctx) {
			until = "the deadline"
		}
		slots := fmt.Sprintf("%d engine slots", cap(g.slots))
		if g.agent(ctx) {
			slots = fmt.Sprintf("the agent listener's %d of %s", cap(g.agents), slots)
		}
		return nil, fmt.Errorf("app: waited for one of %s until %s: %w", slots, until, ctx.Err())
	}
}

// waitedInVain returns the error of work (its subject, "the call") that
// waited for one of g's slots until ctx ended, err enter's error: a tool
// error of a cancellation or a timeout that says so and what did not
// happen (outcome, "nothing ran"), and is no step (env.ErrNoStep).
func (g gate) waitedInVain(ctx context.Context, err error, subject, outcome string) *env.ToolError {
	kind, waited := env.KindExecution, "was cancelled while it waited"
	if pastDeadline(ctx) {
		kind, waited = env.KindTimeout, "waited past its deadline"
	}
	slots := fmt.Sprintf("the server's %d engine slots (max-active)", cap(g.slots))
	if g.agent(ctx) {
		slots = fmt.Sprintf("the agent listener's %d of %s", cap(g.agents), slots)
	}
	return &env.ToolError{
		Kind:    kind,
		Message: fmt.Sprintf("%s %s for one of %s; %s", subject, waited, slots, outcome),
		Err:     fmt.Errorf("%w: %w", env.ErrNoStep, err),
	}
}

// pastDeadline reports whether ctx ended because time ran out: its
// deadline passed, or it was cancelled with context.DeadlineExceeded as its
// cause, as a server enforcing its step timeout does.
func pastDeadline(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), context.DeadlineExceeded)
}
