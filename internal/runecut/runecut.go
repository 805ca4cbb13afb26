// Package runecut cuts strings to a byte budget without splitting a UTF-8
// sequence, for the messages and log lines that repeat a client's text.
package runecut

import "unicode/utf8"

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
