package composition

import (
	"fmt"
	"sync"
	"time"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/rfc3339"
	"github.com/seahaven/seahaven/internal/runecut"
)

// DefaultNow is the instant a genesis instance starts at when the caller
// names none: a fixed instant, so that runs replay.
var DefaultNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// maxTime is env.MaxTime, which advance_clock may not pass.
var maxTime, _ = time.Parse(time.RFC3339, env.MaxTime)

// DefaultStepTick is how far a step-mode clock advances per agent call.
const DefaultStepTick = time.Second

// clock is an instance's one clock. Every node's connections and every
// ctx.Now read it. Safe for concurrent use (the inspection connection may
// read it while a call runs).
type clock struct {
	mode string
	tick time.Duration

	mu    sync.Mutex // guards base and start
	base  time.Time  // the clock's time (at start, in wall mode)
	start time.Time  // wall mode: when base was last set
}

func newClock(mode string, now time.Time, tick time.Duration) (*clock, error) {
	switch mode {
	case env.ClockFrozen, env.ClockStep, env.ClockWall:
	default:
		return nil, fmt.Errorf("composition: unknown clock mode %q (want frozen, step or wall)", mode)
	}
	if tick <= 0 {
		tick = DefaultStepTick
	}
	return &clock{mode: mode, tick: tick, base: now.UTC(), start: time.Now()}, nil
}

// Now returns the clock's time.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked()
}

// nowLocked is Now; c.mu must be held. A wall clock that has run past
// maxTime shows maxTime, as a step clock stops there (stepped): an instant
// outside the clock's range could not be restored or frozen.
func (c *clock) nowLocked() time.Time {
	t := c.base
	if c.mode == env.ClockWall {
		t = t.Add(time.Since(c.start))
	}
	if t.After(maxTime) {
		t = maxTime
	}
	return t.UTC()
}

// advanceWithin moves the clock forward by d unless that would take it
// past limit; it returns the time the clock would show and whether it
// moved.
func (c *clock) advanceWithin(d time.Duration, limit time.Time) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.nowLocked().Add(d)
	if t.After(limit) {
		return t, false
	}
	c.base = c.base.Add(d)
	return t, true
}

// set moves the clock to t.
func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.base, c.start = t.UTC(), time.Now()
	c.mu.Unlock()
}

// stepped is called after each agent call: in step mode it moves the clock
// forward by a tick, up to maxTime, where it stays (a checkpoint or a
// fixture of an instant past it could not be opened again). The clock is a
// time.Time, not a sum of durations, so no number of steps overflows it.
func (c *clock) stepped() {
	if c.mode == env.ClockStep {
		c.mu.Lock()
		if c.base = c.base.Add(c.tick); c.base.After(maxTime) {
			c.base = maxTime
		}
		c.mu.Unlock()
	}
}

// ParseTime parses an instant in RFC 3339 (UTC or with an offset) that an
// instance clock can show: one between env.MinTime and env.MaxTime. Its
// errors repeat at most runecut.MaxEcho bytes of s, a client's text
// (set_clock's now).
func ParseTime(s string) (time.Time, error) {
	t, err := rfc3339.Parse(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("composition: now %q is not an RFC 3339 time such as 2026-06-01T09:00:00.000Z", runecut.Echo(s))
	}
	if !env.InClockRange(t) {
		return time.Time{}, fmt.Errorf("composition: now %q is outside the clock's range, %s to %s", runecut.Echo(s), env.MinTime, env.MaxTime)
	}
	return t.UTC(), nil
}
