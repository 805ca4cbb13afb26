package openenv

import "testing"

// The timeline keeps the newest maxTimeline steps, oldest first, and the
// newest is the one a grading updates.
func TestTimeline_Ring(t *testing.T) {
	ss := &session{}
	ss.gradeStepLocked(1, true) // nothing to grade
	if len(ss.timeline) != 0 {
		t.Fatal("an empty timeline has steps")
	}
	const n = maxTimeline + 50
	for i := 1; i <= n; i++ {
		ss.steps = i
		ss.recordStepLocked("tool", nil, toolOutcome{result: []byte("1")}, -1)
		ss.gradeStepLocked(float64(i), i == n)
		last := ss.timeline[len(ss.timeline)-1]
		if last.Step != i || last.Reward == nil || *last.Reward != float64(i) || last.Done != (i == n) {
			t.Fatalf("after step %d the newest is %+v", i, last)
		}
	}
	if len(ss.timeline) != maxTimeline {
		t.Fatalf("%d steps kept, want %d", len(ss.timeline), maxTimeline)
	}
	for k, st := range ss.timeline {
		if want := n - maxTimeline + 1 + k; st.Step != want {
			t.Fatalf("step %d of the list is %d, want %d", k, st.Step, want)
		}
	}
}
