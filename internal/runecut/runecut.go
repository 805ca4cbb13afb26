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

// Clip returns s when it is at most n bytes long; otherwise its Prefix of n
// bytes followed by "… (L bytes, note)", L being the length of s, so the
// reader learns that it was cut and by how much.
func Clip(s string, n int, note string) string {
	if len(s) <= n {
		return s
	}
	return Prefix(s, n) + "… (" + strconv.Itoa(len(s)) + " bytes, " + note + ")"
}
