package openenv

import (
	"context"
	"sync"
	"time"
)

// watchdog enforces the per-call and per-write time limits (StepTimeout,
// WriteTimeout) with one ticker goroutine for the whole server, in place of
// a runtime timer per call and per write: arming and stopping a timer on
// every round trip costs more than the rest of the bookkeeping, and can wake
// the network poller each time. A limit fires between its time and one
// resolution later. The goroutine runs while limits are being set and
// exits after a second without any. A watchdog is safe for concurrent use.
type watchdog struct {
	res   time.Duration
	epoch time.Time // limits count from here, on the monotonic clock

	mu      sync.Mutex // guards the fields below
	live    map[*timeLimit]struct{}
	adds    uint64 // limits set so far; the loop exits when it stops moving
	running bool
}

// timeLimit is one armed limit. When it passes before it is stopped, the
// watchdog's goroutine cancels cancel with context.DeadlineExceeded as the
// cause, or else runs fire. A timeLimit may be set again after it has been
// stopped or has fired.
type timeLimit struct {
	at     time.Duration // since the watchdog's epoch
	cancel context.CancelCauseFunc
	fire   func()
}

// idleTicks is how many ticks, and at least how long, the loop waits
// without any limit being set before it exits.
const (
	idleTicks = 10
	idleFor   = time.Second
)

// newWatchdog returns a watchdog with a resolution of a sixteenth of
// shortest, between 1 ms and 100 ms.
func newWatchdog(shortest time.Duration) *watchdog {
	res := min(max(shortest/16, time.Millisecond), 100*time.Millisecond)
	return &watchdog{res: res, epoch: time.Now(), live: map[*timeLimit]struct{}{}}
}

// covers reports whether the watchdog keeps a limit of d to within a
// sixteenth of it. A shorter limit needs a timer of its own.
func (w *watchdog) covers(d time.Duration) bool { return d >= 16*w.res }

// set arms l to fire after d; d should be covered. l must not be armed.
func (w *watchdog) set(l *timeLimit, d time.Duration) {
	at := time.Since(w.epoch) + d
	w.mu.Lock()
	l.at = at
	w.live[l] = struct{}{}
	w.adds++
	if !w.running {
		w.running = true
		go w.loop()
	}
	w.mu.Unlock()
}

// stop disarms l and reports whether it was still armed (false: it has
// fired, or its fire is running).
func (w *watchdog) stop(l *timeLimit) bool {
	w.mu.Lock()
	_, ok := w.live[l]
	delete(w.live, l)
	w.mu.Unlock()
	return ok
}

// loop fires the limits that have passed, once per resolution, until no
// limit has been set for idleTicks ticks and idleFor.
func (w *watchdog) loop() {
	t := time.NewTicker(w.res)
	defer t.Stop()
	var due []*timeLimit
	lastAdds, idle := ^uint64(0), 0
	for range t.C {
		now := time.Since(w.epoch)
		w.mu.Lock()
		for l := range w.live {
			if l.at <= now {
				due = append(due, l)
				delete(w.live, l)
			}
		}
		if w.adds != lastAdds || len(w.live) > 0 {
			lastAdds, idle = w.adds, 0
		} else if idle++; idle >= idleTicks && time.Duration(idle)*w.res >= idleFor {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		for i, l := range due {
			if l.cancel != nil {
				l.cancel(context.DeadlineExceeded)
			} else {
				l.fire()
			}
			due[i] = nil
		}
		due = due[:0]
	}
}
