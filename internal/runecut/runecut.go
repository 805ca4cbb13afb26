// Package runecut cuts strings to a byte budget without splitting a UTF-8
// sequence, for the messages and log lines that repeat a client's text.
package runecut

import (
	"strconv"
	"unicode/utf8"
)

// Prefix returns the longest prefix of s of at most n bytes that does not
// end inside a UTF-8 sequence: s itself when it is at most n bytes long.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// MaxEcho is the most bytes of a client's text a reply, an error or a
// message repeats in one place: a megabyte sent where a name or a number
// belongs is not sent back.
const MaxEcho = 1 << 10

// Echo returns s as a message repeats a client's text: its first MaxEcho
// bytes, cut as Clip cuts them, noted "not echoed".
func Echo(s string) string { return Clip(s, MaxEcho, "not echoed") }

// Clip returns s when it is at most n bytes long; otherwise its Prefix of n
// bytes followed by "… (L bytes, note)", L being the length of s, so the
// reader learns that it was cut and by how much.
func Clip(s string, n int, note string) string {
	if len(s) <= n {
		return s
	}
	return Prefix(s, n) + "… (" + strconv.Itoa(len(s)) + " bytes, " + note + ")"
}
