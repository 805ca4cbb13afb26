package rfc3339_test

import (
	"strings"
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
		// What time.Parse takes and RFC 3339's grammar does not.
		"2026-06-01T09:00:00,5Z",
		"2026-06-01T9:00:00Z",
		"0000-01-01T0:00:00Z",
		"2026-06-01T09:00:00+24:00",
		"2026-06-01T09:00:00-01:60",
		// A leap second: Go's time has none.
		"2016-12-31T23:59:60Z",
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
	f.Add("2026-06-01T09:00:00,5+24:00")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := rfc3339.Parse(s)
		want, werr := time.Parse(time.RFC3339Nano, s)
		switch {
		case werr == nil && err == nil && !got.Equal(want):
			t.Fatalf("Parse(%q) = %v; time.Parse takes it as %v", s, got, want)
		case werr == nil && err != nil && !strings.Contains(err.Error(), "a comma before the fraction") && !strings.Contains(err.Error(), "an hour of one digit") && !strings.Contains(err.Error(), "is out of range (hours 00 to 23"):
			t.Fatalf("Parse(%q): %v; time.Parse takes it as %v, and RFC 3339 refuses it for no reason given", s, err, want)
		}
	})
}
