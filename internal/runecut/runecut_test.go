package runecut_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/seahaven/seahaven/internal/runecut"
)

func TestPrefix(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"", 0, ""},
		{"abc", 5, "abc"},
		{"abc", 3, "abc"},
		{"abc", 2, "ab"},
		{"abc", 0, ""},
		{"aé", 2, "a"}, // é is two bytes: cut before it
		{"aé", 3, "aé"},
		{"€uro", 1, ""}, // € is three bytes
		{"€uro", 2, ""},
		{"€uro", 3, "€"},
		{"a\xffb", 2, "a\xff"}, // a stray byte is a boundary of its own
	} {
		got := runecut.Prefix(c.s, c.n)
		if got != c.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
		if utf8.ValidString(c.s) && !utf8.ValidString(got) {
			t.Errorf("Prefix(%q, %d) = %q splits a character", c.s, c.n, got)
		}
	}
}

func ExamplePrefix() {
	fmt.Println(runecut.Prefix("naïve", 3))
	fmt.Println(runecut.Prefix("naïve", 4))
	// Output:
	// na
	// naï
}

func ExampleClip() {
	fmt.Println(runecut.Clip("short", 8, "not echoed"))
	fmt.Println(runecut.Clip("héllo, world", 2, "not echoed"))
	// Output:
	// short
	// h… (13 bytes, not echoed)
}

func ExampleEcho() {
	fmt.Println(runecut.Echo("short"))
	long := runecut.Echo(strings.Repeat("x", 2000))
	fmt.Println(long[runecut.MaxEcho:])
	// Output:
	// short
	// … (2000 bytes, not echoed)
}
