package sqlitestore

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ncruces/go-sqlite3"
)

// The inspection connection's instr, replace and two-argument trim, ltrim
// and rtrim.
//
// SQLite's own compare their arguments position by position: instr and
// replace the needle at every position of the text, trim every character
// of the set at every character trimmed. One call on texts of a few
// megabytes ('a' repeated, against 'a' repeated then 'b') makes trillions
// of comparisons, and nothing interrupts a function while it runs: a query
// ran for hours past its timeout, holding the instance's lock. These give
// SQLite's results exactly (the same types, the same handling of NUL
// bytes, blobs and invalid UTF-8), instr and replace in time proportional
// to their texts, trim by a set it indexes, within maxTrimWork.

// maxTrimWork bounds the characters of the set one trim, ltrim or rtrim
// call compares, weighed by their bytes: a call that would compare more
// fails with an error saying so. Trimming by a set of a few characters, or
// of many that do not match, never comes near it.
const maxTrimWork = 1 << 28

// installTextFuncs shadows instr, replace and the two-argument trim, ltrim
// and rtrim on c.
func installTextFuncs(c *sqlite3.Conn) error {
	const flags = sqlite3.DETERMINISTIC | sqlite3.INNOCUOUS
	for _, f := range []struct {
		name        string
		left, right bool
	}{{"trim", true, true}, {"ltrim", true, false}, {"rtrim", false, true}} {
		if err := c.CreateFunction(f.name, 2, flags, func(ctx sqlite3.Context, args ...sqlite3.Value) {
			defer resultNoMem(ctx)
			if args[0].Type() == sqlite3.NULL || args[1].Type() == sqlite3.NULL {
				ctx.ResultNull()
				return
			}
			x, set := args[0].RawText(), args[1].RawText()
			out, err := trimSet(f.name, x, set, f.left, f.right)
			if err != nil {
				ctx.ResultError(err)
				return
			}
			ctx.ResultText(string(out))
		}); err != nil {
			return err
		}
	}
	if err := c.CreateFunction("instr", 2, flags, func(ctx sqlite3.Context, args ...sqlite3.Value) {
		defer resultNoMem(ctx)
		ht, nt := args[0].Type(), args[1].Type()
		if ht == sqlite3.NULL || nt == sqlite3.NULL {
			ctx.ResultNull()
			return
		}
		if ht == sqlite3.BLOB && nt == sqlite3.BLOB {
			ctx.ResultInt64(instrBytes(args[0].RawBlob(), args[1].RawBlob(), false))
			return
		}
		ctx.ResultInt64(instrBytes(args[0].RawText(), args[1].RawText(), true))
	}); err != nil {
		return err
	}
	return c.CreateFunction("replace", 3, flags, func(ctx sqlite3.Context, args ...sqlite3.Value) {
		defer resultNoMem(ctx)
		if args[0].Type() == sqlite3.NULL || args[1].Type() == sqlite3.NULL {
			ctx.ResultNull()
			return
		}
		x, old := args[0].RawText(), args[1].RawText()
		if len(old) == 0 || old[0] == 0 { // SQLite reads the pattern as a C string here
			ctx.ResultText(string(x))
			return
		}
		if args[2].Type() == sqlite3.NULL {
			ctx.ResultNull()
			return
		}
		rep := args[2].RawText()
		if n := int64(len(x)) + int64(bytes.Count(x, old))*int64(len(rep)-len(old)); n > MaxLength {
			ctx.ResultError(sqlite3.TOOBIG)
			return
		}
		ctx.ResultText(string(bytes.ReplaceAll(x, old, rep)))
	})
}

// resultNoMem reports a result that did not fit in the connection's
// memory as SQLite would, without unwinding through SQLite. It is
// deferred by each function.
func resultNoMem(ctx sqlite3.Context) {
	if r := recover(); r != nil {
		if err, ok := r.(error); ok && strings.Contains(err.Error(), "out of memory") {
			ctx.ResultError(sqlite3.NOMEM)
			return
		}
		panic(r)
	}
}

// instrBytes is instr(h, n): one more than the characters (bytes, when
// !text) of h before the first n in it, 0 when there is none, and 1 for an
// empty n. In text SQLite steps from character to character, a lead byte
// and the continuation bytes after it, so n is found only where a
// character begins.
func instrBytes(h, n []byte, text bool) int64 {
	if len(n) == 0 {
		return 1
	}
	if !text {
		return int64(bytes.Index(h, n) + 1)
	}
	if !utf8.RuneStart(n[0]) { // only the first position is such a place
		if bytes.HasPrefix(h, n) {
			return 1
		}
		return 0
	}
	i := bytes.Index(h, n)
	if i < 0 {
		return 0
	}
	chars := int64(1)
	for _, b := range h[1 : i+1] {
		if utf8.RuneStart(b) {
			chars++
		}
	}
	return chars
}

// charEnd returns where the character of b at i ends, as SQLite steps
// over a text: a lead byte takes the continuation bytes after it, any
// other byte is a character of its own.
func charEnd(b []byte, i int) int {
	j := i + 1
	if b[i] >= 0xc0 {
		for j < len(b) && !utf8.RuneStart(b[j]) {
			j++
		}
	}
	return j
}

// trimSet removes from the start (left) and the end (right) of x the
// characters of set, as SQLite's trim(x, set) does: set's characters are
// read up to its first NUL, each a byte below 0xc0 or a lead byte with the
// continuation bytes after it, and at each step the first of them in set
// that x begins (ends) with is removed.
func trimSet(name string, x, set []byte, left, right bool) ([]byte, error) {
	set = cString(set)
	var (
		single [256]bool           // the one-byte characters of set
		lead   [256][][]byte       // the characters beginning with a lead byte, in set's order
		tail   [256][][]byte       // the characters ending with a continuation byte, by that byte, in set's order
		seen   = map[string]bool{} // a repeated character is never the first to match
		count  int
	)
	for z := 0; z < len(set); {
		s := z
		z = charEnd(set, s)
		c := set[s:z]
		count++
		if seen[string(c)] {
			continue
		}
		seen[string(c)] = true
		if len(c) == 1 {
			single[c[0]] = true
		}
		if c[0] >= 0xc0 {
			lead[c[0]] = append(lead[c[0]], c)
		}
		if last := c[len(c)-1]; !utf8.RuneStart(last) {
			tail[last] = append(tail[last], c)
		}
	}
	work := 0
	// first returns the length of the first of cands that s begins (with
	// suffix, ends) with; 0 when none does or the work is used up.
	first := func(cands [][]byte, s []byte, suffix bool) int {
		for _, c := range cands {
			if work += len(c); work > maxTrimWork {
				return 0
			}
			if !suffix && bytes.HasPrefix(s, c) || suffix && bytes.HasSuffix(s, c) {
				return len(c)
			}
		}
		return 0
	}
	p, q := 0, len(x)
	for left && p < q {
		n := 1
		if b := x[p]; b >= 0xc0 {
			n = first(lead[b], x[p:q], false)
		} else if !single[b] {
			n = 0
		}
		if n == 0 {
			break
		}
		p += n
	}
	for right && p < q {
		n := 1
		if b := x[q-1]; !utf8.RuneStart(b) {
			n = first(tail[b], x[p:q], true)
		} else if !single[b] { // only a character of one byte ends with b
			n = 0
		}
		if n == 0 {
			break
		}
		q -= n
	}
	if work > maxTrimWork {
		return nil, fmt.Errorf("%s(): trimming %d bytes by a set of %d characters takes more than %d comparisons, more than one call may make on the inspection connection",
			name, len(x), count, maxTrimWork)
	}
	return x[p:q], nil
}
