package rfc3339_test

import (
	"testing"
	"time"

	"github.com/seahaven/seahaven/internal/rfc3339"
)

func TestParse(t *testing.T) {
	want := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	for _, s := range []string{
		"2026-06-01T09:00:00Z",
		"2026-06-01t09:00:00z",
		"2026-06-01t09:00:00Z",
		"2026-06-01T09:00:00.000z",
		"2026-06-01t11:00:00+02:00",
	} {
		got, err := rfc3339.Parse(s)
		if err != nil || !got.Equal(want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{
		"",
		"z",
		"2026-06-01 09:00:00Z",
		"2026-06-01x09:00:00Z",
		"2026-06-01T09:00:00",
		"2026-06-01T09:00:00y",
		"2026-06-01T09:00:00+02:00z",
		"2026-6-1t09:00:00z",
	} {
		if got, err := rfc3339.Parse(s); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", s, got)
		} else if pe, ok := err.(*time.ParseError); ok && pe.Value != s {
			t.Errorf("Parse(%q): the error names %q", s, pe.Value)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("2026-06-01t09:00:00.5z")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := rfc3339.Parse(s)
		if want, werr := time.Parse(time.RFC3339Nano, s); werr == nil && (err != nil || !got.Equal(want)) {
			t.Fatalf("Parse(%q) = %v, %v; time.Parse takes it as %v", s, got, err, want)
		}
	})
}
