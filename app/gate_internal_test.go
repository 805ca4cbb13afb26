package app

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
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
	t.Run("Defaults", func(t *testing.T) {
		if g := newGate(0); cap(g) != DefaultMaxActive {
			t.Errorf("newGate(0) has %d slots, want %d", cap(g), DefaultMaxActive)
		}
		g := newGate(-1)
		for range 3 {
			if _, err := g.enter(context.Background()); err != nil {
				t.Fatalf("an unbounded gate refused: %v", err)
			}
		}
	})
}
