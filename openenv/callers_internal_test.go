package openenv

import (
	"sync"
	"testing"
	"time"
)

// TestCallers: every call handed to the callers runs, at once however many
// are in progress; idle callers take the next calls; and callers left idle
// exit.
func TestCallers(t *testing.T) {
	c := newCallers()
	const n = 50
	var started, release sync.WaitGroup
	started.Add(n)
	release.Add(1)
	var done sync.WaitGroup
	done.Add(n)
	for range n {
		c.do(func() {
			defer done.Done()
			started.Done()
			release.Wait() // all n run at once: none waits for a caller
		})
	}
	started.Wait()
	if got := c.running.Load(); got != n {
		t.Errorf("%d callers for %d calls in progress at once, want %d", got, n, n)
	}
	release.Done()
	done.Wait()
	time.Sleep(50 * time.Millisecond) // the n callers wait for more
	for range 3 * n {
		ran := make(chan struct{})
		c.do(func() { close(ran) })
		<-ran
	}
	if got := c.running.Load(); got != n {
		t.Errorf("%d callers after %d calls one after another, want the %d that were idle, reused", got, 3*n, n)
	}
	for deadline := time.Now().Add(10 * callerIdle); c.running.Load() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d callers still running %s after their last call, want none", c.running.Load(), 10*callerIdle)
		}
	}
}
