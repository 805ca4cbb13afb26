package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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

// pastDeadline reports whether ctx ended because time ran out: its
// deadline passed, or it was cancelled with context.DeadlineExceeded as its
// cause, as a server enforcing its step timeout does.
func pastDeadline(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), context.DeadlineExceeded)
}
