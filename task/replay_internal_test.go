package task

import (
	"fmt"
	"strings"
	"testing"
)

// TestDiffEnd_PathsSorted has the recording and the replay disagree on
// paths of both and on paths only the replay has: the mismatch names them
// all in sorted order, the same on every run.
func TestDiffEnd_PathsSorted(t *testing.T) {
	end := EndLine{StateSHA256: map[string]string{"m": "1", "c": "1", "x": "1"}}
	rep := &Replay{StateSHA256: map[string]string{"m": "2", "c": "1"}}
	var want []string
	for i := range 20 {
		p := fmt.Sprintf("p%02d", i)
		rep.StateSHA256[p] = "1"
		want = append(want, p)
	}
	want = append([]string{"m"}, want...)
	want = append(want, "x")
	msg := "final state differs from the recording in " + strings.Join(want, ", ")
	for range 10 {
		if got := diffEnd(end, rep, false); len(got) != 1 || got[0] != msg {
			t.Fatalf("diffEnd = %q, want [%q]", got, msg)
		}
	}
}
