// Package rfc3339 parses the RFC 3339 instants clients send: a reset's and
// a task's now, set_clock's now, and tools' date-time arguments.
package rfc3339

import "time"

// Parse parses s as an RFC 3339 instant, with or without fractional
// seconds. It also takes the lower-case "t" and "z" that RFC 3339 §5.6
// allows, which time.Parse refuses, and refuses what time.Parse takes and
// RFC 3339's grammar does not: an hour of one digit, a comma before the
// fraction, and an offset of 24 hours or more or of 60 minutes or more. A
// leap second (23:59:60) is refused, as time.Parse refuses it: Go's time
// has none. The error is a *time.ParseError naming s as it was given.
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
	if err != nil {
		return t, err
	}
	n := len(v)
	switch {
	case v[13] != ':': // time.Parse took it, so v[13] follows a one-digit hour
		return time.Time{}, &time.ParseError{Layout: time.RFC3339Nano, Value: s, Message: ": an hour of one digit: RFC 3339 has two"}
	case v[19] == ',': // the seconds' two digits end at v[18]: a zone follows
		return time.Time{}, &time.ParseError{Layout: time.RFC3339Nano, Value: s, Message: ": a comma before the fraction of a second: RFC 3339 has a full stop"}
	case v[n-1] != 'Z' && (v[n-5:n-3] > "23" || v[n-2:] > "59"):
		return time.Time{}, &time.ParseError{Layout: time.RFC3339Nano, Value: s, Message: ": the offset " + v[n-6:] + " is out of range (hours 00 to 23, minutes 00 to 59)"}
	}
	return t, nil
}
