package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/seahaven/seahaven/env"
)

// DefaultMaxActive is Config.MaxActive when it is zero.
const DefaultMaxActive = 64

// gate admits a bounded number of resets, tool calls and inspect queries
// into the engine at once; the others wait their turn in arrival order.
// Under overload this keeps the connections that running calls pin (and
// the memory and file descriptors they cost) bounded, instead of every
// session's call opening its stores at the same time. A gate is safe for
// concurrent use; a nil gate admits everything.
type gate chan struct{}

func newGate(n int) gate {
	if n < 0 {
		return nil
	}
	return make(gate, cmp.Or(n, DefaultMaxActive))
}

// enter waits for a turn or for ctx to end. Call the returned func to leave.
func (g gate) enter(ctx context.Context) (leave func(), err error) {
	if g == nil {
		return func() {}, nil
	}
	select {
	case g <- struct{}{}:
		return func() { <-g }, nil
	default:
	}
	select {
	case g <- struct{}{}:
		return func() { <-g }, nil
	case <-ctx.Done():
		until := "it was cancelled"
		if pastDeadline(ctx) {
			until = "the deadline"
		}
		return nil, fmt.Errorf("app: waited for one of %d engine slots until %s: %w", cap(g), until, ctx.Err())
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
	return &env.ToolError{
		Kind:    kind,
		Message: fmt.Sprintf("%s %s for one of the server's %d engine slots (max-active); %s", subject, waited, cap(g), outcome),
		Err:     fmt.Errorf("%w: %w", env.ErrNoStep, err),
	}
}

// pastDeadline reports whether ctx ended because time ran out: its
// deadline passed, or it was cancelled with context.DeadlineExceeded as its
// cause, as a server enforcing its step timeout does.
func pastDeadline(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), context.DeadlineExceeded)
}
