package app

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/openenv"
)

func TestGate(t *testing.T) {
	t.Run("Bounded", func(t *testing.T) {
		g := newGate(2)
		var running, most atomic.Int32
		var wg sync.WaitGroup
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				leave, err := g.enter(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				n := running.Add(1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				running.Add(-1)
				leave()
			}()
		}
		wg.Wait()
		if m := most.Load(); m > 2 || m < 1 {
			t.Errorf("at most %d ran at once, want 1 or 2", m)
		}
	})
	t.Run("ErrDeadline", func(t *testing.T) {
		g := newGate(1)
		leave, err := g.enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := g.enter(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("enter of a full gate with a done context: err = %v", err)
		}
		leave()
		leave2, err := g.enter(ctx) // a free slot is taken even with a done context
		if err != nil {
			t.Fatalf("enter after leave: %v", err)
		}
		leave2()
	})
	t.Run("AgentShare", func(t *testing.T) {
		for _, tt := range []struct{ slots, share int }{{64, 48}, {4, 3}, {3, 2}, {2, 1}, {1, 1}} {
			if got := cap(newAgentGate(tt.slots).agents); got != tt.share {
				t.Errorf("newAgentGate(%d) gives the agent listener %d slots, want %d", tt.slots, got, tt.share)
			}
		}
		if g := newAgentGate(0); cap(g.agents) != DefaultMaxActive*3/4 {
			t.Errorf("newAgentGate(0) gives the agent listener %d slots, want %d", cap(g.agents), DefaultMaxActive*3/4)
		}
		if g := newAgentGate(-1); g.slots != nil || g.agents != nil {
			t.Error("newAgentGate(-1) is bounded")
		}
	})
	t.Run("Defaults", func(t *testing.T) {
		if g := newGate(0); cap(g.slots) != DefaultMaxActive {
			t.Errorf("newGate(0) has %d slots, want %d", cap(g.slots), DefaultMaxActive)
		}
		g := newGate(-1)
		for range 3 {
			if _, err := g.enter(context.Background()); err != nil {
				t.Fatalf("an unbounded gate refused: %v", err)
			}
		}
	})
}

// TestGrade_WaitedForASlot: a grading that waits for an engine slot until
// its context ends ran nothing, and says so (env.ErrNoStep), cancelled or
// past its deadline, as a call does; the server then tells its client
// that, not that the grading ran past its deadline.
func TestGrade_WaitedForASlot(t *testing.T) {
	b, err := New(company.World, Config{DefaultFixture: company.AcmeID, InstanceRoot: t.TempDir(), Checkpoints: t.TempDir(), MaxActive: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	inst, err := b.Open(ctx, openenv.OpenOptions{Task: "hire_liskov"})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	b.gate.slots <- struct{}{} // another session's call holds the only slot
	defer func() { <-b.gate.slots }()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	late, stop := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer stop()
	for _, tt := range []struct {
		ctx  context.Context
		kind string
		msg  string
	}{
		{cancelled, env.KindExecution, "it was cancelled while it waited for one of the server's 1 engine slots (max-active); nothing was graded"},
		{late, env.KindTimeout, "it waited past its deadline for one of the server's 1 engine slots (max-active); nothing was graded"},
	} {
		_, err := inst.(openenv.Grader).Grade(tt.ctx)
		te, ok := env.AsToolError(err)
		if !ok || te.Kind != tt.kind || te.Message != tt.msg || !errors.Is(err, env.ErrNoStep) || !errors.Is(err, tt.ctx.Err()) {
			t.Errorf("a grading that waited for the slot until %v: %#v, want an error of kind %s, %q, that ran nothing", tt.ctx.Err(), err, tt.kind, tt.msg)
		}
	}
}
