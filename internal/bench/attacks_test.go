package bench_test

import (
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/internal/bench"
)

func TestParseAttacks(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
		err  string
	}{
		{in: "", want: nil},
		{in: "  ", want: nil},
		{in: "inspect_huge_rows", want: []string{"inspect_huge_rows"}},
		{in: "oversized_frame, hire_huge_strings", want: []string{"oversized_frame", "hire_huge_strings"}},
		{in: "inspect_huge_rows,nope", err: `unknown attack "nope": want one of inspect_huge_rows, `},
	} {
		got, err := bench.ParseAttacks(tt.in)
		if tt.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
				t.Errorf("ParseAttacks(%q) = %v, %v; want error %q…", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseAttacks(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// TestAttacksBuiltWhenChosen checks that the attacks' messages, tens of
// megabytes, are not held by every process linking the package: the server
// links it too, and once held 59 MB of them from its start.
func TestAttacksBuiltWhenChosen(t *testing.T) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc > 8<<20 {
		t.Errorf("heap after a collection is %d MiB before any attack is chosen; want under 8 MiB", ms.HeapAlloc>>20)
	}
}
