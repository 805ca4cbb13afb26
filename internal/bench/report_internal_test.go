package bench

import (
	"testing"
	"time"
)

func TestRound(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0"},
		{-time.Second, "0"},
		{500 * time.Nanosecond, "500ns"},
		{time.Microsecond, "1µs"},
		{12345 * time.Nanosecond, "12.3µs"},
		{999400 * time.Nanosecond, "999µs"},
		{999600 * time.Nanosecond, "1ms"}, // not "1e+03µs"
		{1460 * time.Microsecond, "1.46ms"},
		{999600 * time.Microsecond, "1s"},
		{3050 * time.Millisecond, "3.05s"},
		{1500 * time.Second, "1500s"},
	} {
		if got := round(tc.d); got != tc.want {
			t.Errorf("round(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
