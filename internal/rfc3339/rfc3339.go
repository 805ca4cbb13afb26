// Package rfc3339 parses the RFC 3339 instants clients send: a reset's and
// a task's now, set_clock's now, and tools' date-time arguments.
package rfc3339

import "time"

// Parse parses s as an RFC 3339 instant, with or without fractional
// seconds. It also takes the lower-case "t" and "z" that RFC 3339 §5.6
// allows, which time.Parse refuses; nothing else of the syntax changes.
// The error is time.Parse's, naming s as it was given.
func Parse(s string) (time.Time, error) {
	v := s
	if len(v) > 10 && v[10] == 't' {
		v = v[:10] + "T" + v[11:]
	}
	if n := len(v); n > 0 && v[n-1] == 'z' {
		v = v[:n-1] + "Z"
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if pe, ok := err.(*time.ParseError); ok {
		pe.Value = s
	}
	return t, err
}
