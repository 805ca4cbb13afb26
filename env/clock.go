package env

import "time"

// Bounds of an instance clock, in TimeFormat. SQLite's date functions work
// from 0000-01-01 to 9999-12-31 and return NULL outside; the clock keeps a
// thousand years inside that range, so a world's date arithmetic
// ('+30 days', '-10 years') from any instant it shows still lands in it.
// A given now (a reset's, set_clock's, a fixture's) outside them is
// refused, and advance_clock may not move the clock past MaxTime; a step
// clock's ticks stop at MaxTime, and a wall clock past it shows it.
const (
	MinTime = "1000-01-01T00:00:00.000Z"
	MaxTime = "9000-01-01T00:00:00.000Z"
)

// MaxAdvance bounds one advance_clock of the control tool: 100 years of
// 365 days (3,153,600,000 seconds).
const MaxAdvance = 100 * 365 * 24 * time.Hour

var minTime, maxTime = mustTime(MinTime), mustTime(MaxTime)

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// InClockRange reports whether t lies within MinTime and MaxTime,
// inclusive.
func InClockRange(t time.Time) bool {
	return !t.Before(minTime) && !t.After(maxTime)
}
