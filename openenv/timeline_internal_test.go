package openenv

import "testing"

// The timeline keeps the newest maxTimeline steps, oldest first, and the
// newest is the one a grading updates.
func TestTimeline_Ring(t *testing.T) {
	var tl timeline
	if tl.newest() != nil || len(tl.list()) != 0 {
		t.Fatal("an empty timeline has steps")
	}
	const n = maxTimeline + 50
	for i := 1; i <= n; i++ {
		tl.add(timelineStep{Step: i})
		if got := tl.newest().Step; got != i {
			t.Fatalf("after step %d the newest is %d", i, got)
		}
	}
	list := tl.list()
	if len(list) != maxTimeline {
		t.Fatalf("%d steps kept, want %d", len(list), maxTimeline)
	}
	for k, st := range list {
		if want := n - maxTimeline + 1 + k; st.Step != want {
			t.Fatalf("step %d of the list is %d, want %d", k, st.Step, want)
		}
	}
}
