package openenv

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestWatchdog_FiresOnlyPastLimits(t *testing.T) {
	w := newWatchdog(16 * time.Millisecond) // 1 ms resolution
	var fired atomic.Int32
	late := &timeLimit{fire: func() { fired.Add(1) }}
	stopped := &timeLimit{fire: func() { t.Error("a stopped limit fired") }}
	start := time.Now()
	w.set(late, 20*time.Millisecond)
	w.set(stopped, 20*time.Millisecond)
	if !w.stop(stopped) {
		t.Fatal("stop of an armed limit reported it not armed")
	}
	for fired.Load() == 0 {
		if time.Since(start) > 5*time.Second {
			t.Fatal("the limit never fired")
		}
		time.Sleep(time.Millisecond)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("fired after %v, before its 20ms limit", d)
	}
	if w.stop(late) {
		t.Error("stop after the limit fired reported it armed")
	}
	time.Sleep(30 * time.Millisecond)
	if n := fired.Load(); n != 1 {
		t.Errorf("fired %d times, want once", n)
	}

	// A limit may be set again after firing.
	w.set(late, 20*time.Millisecond)
	for fired.Load() == 1 {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the limit set again never fired")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWatchdog_CancelsWithDeadlineCause(t *testing.T) {
	w := newWatchdog(16 * time.Millisecond)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	w.set(&timeLimit{cancel: cancel}, 5*time.Millisecond)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the context was never cancelled")
	}
	if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		t.Errorf("cause %v, want context.DeadlineExceeded", context.Cause(ctx))
	}
}

func TestWatchdog_LoopExitsWhenIdle(t *testing.T) {
	w := newWatchdog(16 * time.Millisecond)
	l := &timeLimit{fire: func() {}}
	w.set(l, time.Hour)
	w.stop(l)
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		running := w.running
		w.mu.Unlock()
		if !running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watchdog's goroutine still runs long after its last limit")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// It starts again for the next limit.
	var fired atomic.Bool
	w.set(&timeLimit{fire: func() { fired.Store(true) }}, time.Millisecond*16)
	for !fired.Load() {
		if time.Now().After(deadline) {
			t.Fatal("a limit set after the goroutine exited never fired")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWatchdog_Resolution(t *testing.T) {
	for _, tc := range []struct {
		shortest, res time.Duration
		covered       time.Duration
		uncovered     time.Duration
	}{
		{0, time.Millisecond, 16 * time.Millisecond, 15 * time.Millisecond},
		{30 * time.Second, 100 * time.Millisecond, 1600 * time.Millisecond, time.Second},
		{160 * time.Millisecond, 10 * time.Millisecond, 160 * time.Millisecond, 100 * time.Millisecond},
	} {
		w := newWatchdog(tc.shortest)
		if w.res != tc.res {
			t.Errorf("shortest %v: resolution %v, want %v", tc.shortest, w.res, tc.res)
		}
		if !w.covers(tc.covered) || w.covers(tc.uncovered) {
			t.Errorf("shortest %v: covers(%v)=%v covers(%v)=%v, want true, false", tc.shortest,
				tc.covered, w.covers(tc.covered), tc.uncovered, w.covers(tc.uncovered))
		}
	}
}

func TestShortestLimit(t *testing.T) {
	if got := shortestLimit(-1, 0, 30*time.Second, 2*time.Second); got != 2*time.Second {
		t.Errorf("got %v, want 2s", got)
	}
	if got := shortestLimit(-1, 0); got != 0 {
		t.Errorf("got %v, want 0", got)
	}
}

// BenchmarkWatchdog_SetStop is the cost of bounding one call or write.
func BenchmarkWatchdog_SetStop(b *testing.B) {
	w := newWatchdog(30 * time.Second)
	l := &timeLimit{fire: func() {}}
	for b.Loop() {
		w.set(l, 30*time.Second)
		w.stop(l)
	}
}

// BenchmarkTimeoutContext is what BenchmarkWatchdog_SetStop replaces.
func BenchmarkTimeoutContext(b *testing.B) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	for b.Loop() {
		_, c := context.WithTimeout(parent, 30*time.Second)
		c()
	}
}
