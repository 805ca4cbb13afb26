package sqlitestore

import (
	"bytes"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/ncruces/go-sqlite3"
)

// The inspection connection's LIKE and GLOB (the like and glob functions).
//
// SQLite's match a pattern by trying it at each position after a % (or *):
// a text of megabytes against a pattern of thousands of characters made
// billions of comparisons in one call, which nothing interrupts. These give
// SQLite's results exactly (no match for a blob, its decoding of the texts
// up to their first NUL, its case folding of ASCII letters, its ESCAPE,
// its [...] sets and its errors) by matching the pattern's pieces between wildcards leftmost
// first, within maxLikeWork comparisons.

// maxLikeWork bounds the characters one LIKE or GLOB call compares: a call
// that would compare more fails with an error saying so. A pattern of a
// few words against any text never comes near it.
const maxLikeWork = 1 << 28

// likePatternLimit is SQLite's default SQLITE_LIMIT_LIKE_PATTERN_LENGTH,
// which its like and glob check.
const likePatternLimit = 50000

// Token kinds of a LIKE or GLOB pattern.
const (
	tokChar = iota // one character, compared as the operator compares
	tokOne         // _ or ?: any one character
	tokAll         // % or *: any characters
	tokSet         // [...]: one character of a set, or not of it
)

// likeTok is one token of a pattern.
type likeTok struct {
	kind   int
	c      uint32      // tokChar's character
	set    [][2]uint32 // tokSet's ranges, a character as a range of one
	invert bool        // tokSet: [^...]
}

// likePattern is a pattern read into tokens, kept as SQLite's auxiliary
// data of a pattern that stays the same from row to row.
type likePattern struct {
	text            string // the pattern
	all, one, other uint32 // what it was read with
	toks            []likeTok
	ok              bool
}

// installLikeFuncs shadows like (two and three arguments) and glob on c.
func installLikeFuncs(c *sqlite3.Conn) error {
	const flags = sqlite3.DETERMINISTIC | sqlite3.INNOCUOUS
	// The text's characters: the connection runs one statement at a
	// time, so its calls never overlap.
	var chars []uint32
	for _, n := range []int{2, 3} {
		if err := c.CreateFunction("like", n, flags, func(ctx sqlite3.Context, args ...sqlite3.Value) {
			likeFunc(ctx, "LIKE", args, &chars)
		}); err != nil {
			return err
		}
	}
	return c.CreateFunction("glob", 2, flags, func(ctx sqlite3.Context, args ...sqlite3.Value) {
		likeFunc(ctx, "GLOB", args, &chars)
	})
}

// likeFunc is like(pattern, text[, escape]) or glob(pattern, text); chars
// is a buffer for the text's characters.
func likeFunc(ctx sqlite3.Context, op string, args []sqlite3.Value, chars *[]uint32) {
	defer resultNoMem(ctx)
	if args[0].Type() == sqlite3.BLOB || args[1].Type() == sqlite3.BLOB {
		ctx.ResultInt64(0) // this SQLite is built with SQLITE_LIKE_DOESNT_MATCH_BLOBS
		return
	}
	pat, text := args[0].RawText(), args[1].RawText()
	if len(pat) > likePatternLimit {
		ctx.ResultError(fmt.Errorf("LIKE or GLOB pattern too complex"))
		return
	}
	all, one, other := uint32('%'), uint32('_'), uint32(0)
	if op == "GLOB" {
		all, one, other = '*', '?', '['
	}
	if len(args) == 3 {
		if args[2].Type() == sqlite3.NULL {
			ctx.ResultNull()
			return
		}
		esc := cString(args[2].RawText())
		if len(esc) == 0 || charEnd(esc, 0) != len(esc) { // not one character
			ctx.ResultError(fmt.Errorf("ESCAPE expression must be a single character"))
			return
		}
		other, _ = utf8Read(esc, 0)
		if other == all {
			all = 0
		}
		if other == one {
			one = 0
		}
	}
	if args[0].Type() == sqlite3.NULL || args[1].Type() == sqlite3.NULL {
		ctx.ResultNull()
		return
	}
	lp, _ := ctx.GetAuxData(0).(*likePattern)
	if lp == nil || lp.text != string(pat) || lp.all != all || lp.one != one || lp.other != other {
		lp = &likePattern{text: string(pat), all: all, one: one, other: other}
		lp.toks, lp.ok = likeTokens(cString(pat), all, one, other, op == "GLOB")
		ctx.SetAuxData(0, lp)
	}
	if !lp.ok {
		ctx.ResultInt64(0)
		return
	}
	s := (*chars)[:0]
	t := cString(text)
	for i := 0; i < len(t); {
		var c uint32
		c, i = utf8Read(t, i)
		s = append(s, c)
	}
	if cap(s) <= 1<<16 { // a buffer for a text of megabytes is not kept
		*chars = s
	}
	m := likeMatcher{toks: lp.toks, fold: op == "LIKE"}
	match, ok := m.match(s)
	if !ok {
		ctx.ResultError(fmt.Errorf("%s: matching a pattern of %d characters against %d takes more than %d comparisons, more than one call may make on the inspection connection",
			op, len(lp.toks), len(s), maxLikeWork))
		return
	}
	ctx.ResultBool(match)
}

// cString is b up to its first NUL, as SQLite reads a text there.
func cString(b []byte) []byte {
	b, _, _ = bytes.Cut(b, []byte{0})
	return b
}

// utf8Read decodes the character of b at i as SQLite does, and returns it
// and where the next begins: a lead byte takes every continuation byte
// after it, and a value that is not a character (overlong, a surrogate,
// U+FFFE or U+FFFF) is U+FFFD; any other byte is its own value.
func utf8Read(b []byte, i int) (uint32, int) {
	c := uint32(b[i])
	i++
	if c < 0xc0 {
		return c, i
	}
	switch {
	case c < 0xe0:
		c -= 0xc0
	case c < 0xf0:
		c -= 0xe0
	case c < 0xf8:
		c -= 0xf0
	case c < 0xfc:
		c -= 0xf8
	case c < 0xfe:
		c -= 0xfc
	default:
		c = 0
	}
	for i < len(b) && !utf8.RuneStart(b[i]) {
		c = c<<6 + uint32(b[i]&0x3f)
		i++
	}
	if c < 0x80 || c&0xfffff800 == 0xd800 || c&0xfffffffe == 0xfffe {
		c = 0xfffd
	}
	return c, i
}

// likeTokens reads a pattern into tokens. all, one and other are the
// wildcards and the escape (LIKE) or set opener (GLOB) character, 0 for
// none. It reports false for a pattern that matches nothing: one that ends
// with its escape character, or with a set never closed.
func likeTokens(p []byte, all, one, other uint32, glob bool) ([]likeTok, bool) {
	var toks []likeTok
	next := func(i int) (uint32, int) {
		if i >= len(p) {
			return 0, i
		}
		return utf8Read(p, i)
	}
	for i := 0; i < len(p); {
		var c uint32
		c, i = next(i)
		switch {
		case c == all:
			toks = append(toks, likeTok{kind: tokAll})
		case c == one:
			toks = append(toks, likeTok{kind: tokOne})
		case c == other && !glob:
			if c, i = next(i); c == 0 {
				return nil, false
			}
			toks = append(toks, likeTok{kind: tokChar, c: c})
		case c == other:
			t := likeTok{kind: tokSet}
			c2, j := next(i)
			if c2 == '^' {
				t.invert = true
				c2, j = next(j)
			}
			if c2 == ']' {
				t.set = append(t.set, [2]uint32{']', ']'})
				c2, j = next(j)
			}
			prior := uint32(0)
			for c2 != 0 && c2 != ']' {
				if c2 == '-' && j < len(p) && p[j] != ']' && prior > 0 {
					c2, j = next(j)
					t.set = append(t.set, [2]uint32{prior, c2})
					prior = 0
				} else {
					t.set = append(t.set, [2]uint32{c2, c2})
					prior = c2
				}
				c2, j = next(j)
			}
			if c2 == 0 {
				return nil, false
			}
			i = j
			toks = append(toks, t)
		default:
			toks = append(toks, likeTok{kind: tokChar, c: c})
		}
	}
	return toks, true
}

// likeMatcher matches tokens against a text's characters, counting its
// comparisons.
type likeMatcher struct {
	toks []likeTok
	fold bool // LIKE: ASCII letters match either case
	work int
}

// match reports whether the text s matches, and false for ok when that
// took more than maxLikeWork comparisons. Between wildcards the pieces of
// the pattern each match a fixed number of characters, so taking each
// where it first matches leaves the most room for the rest.
func (m *likeMatcher) match(s []uint32) (match, ok bool) {
	var pieces [][]likeTok
	start := 0
	for i, t := range m.toks {
		if t.kind == tokAll {
			pieces = append(pieces, m.toks[start:i])
			start = i + 1
		}
	}
	pieces = append(pieces, m.toks[start:])
	first, last := pieces[0], pieces[len(pieces)-1]
	if len(pieces) == 1 {
		return len(s) == len(first) && m.at(first, s, 0), m.work <= maxLikeWork
	}
	if len(s) < len(first) || !m.at(first, s, 0) {
		return false, true
	}
	pos := len(first)
	for _, piece := range pieces[1 : len(pieces)-1] {
		found := false
		for j := pos; j+len(piece) <= len(s); j++ {
			if m.work > maxLikeWork {
				return false, false
			}
			if m.at(piece, s, j) {
				pos, found = j+len(piece), true
				break
			}
		}
		if !found {
			return false, m.work <= maxLikeWork
		}
	}
	end := len(s) - len(last)
	return end >= pos && m.at(last, s, end), m.work <= maxLikeWork
}

// at reports whether piece matches s at i; s holds len(piece) characters
// there.
func (m *likeMatcher) at(piece []likeTok, s []uint32, i int) bool {
	for k, t := range piece {
		m.work++
		c := s[i+k]
		switch t.kind {
		case tokOne:
		case tokChar:
			if c != t.c && !(m.fold && c < 0x80 && t.c < 0x80 && lower(c) == lower(t.c)) {
				return false
			}
		case tokSet:
			in := slices.ContainsFunc(t.set, func(r [2]uint32) bool { return c >= r[0] && c <= r[1] })
			if in == t.invert {
				return false
			}
		}
	}
	return true
}

// lower folds an ASCII letter to lower case.
func lower(c uint32) uint32 {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
