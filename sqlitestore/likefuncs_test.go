package sqlitestore_test

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestInspector_LikeMatchesSQLite compares the inspection connection's
// LIKE, LIKE … ESCAPE and GLOB with SQLite's own, on a store's connection,
// over patterns and texts drawn from the characters that tell the cases
// apart: wildcards, sets, ranges, escapes, letters of either case, a
// two-byte character and its lone bytes, NUL, as text, blobs, numbers and
// NULL.
func TestInspector_LikeMatchesSQLite(t *testing.T) {
	ctx := context.Background()
	root, _, in := inspectorFixture(t)
	pieces := []string{"a", "A", "b", "%", "_", "[", "]", "^", "-", "*", "?", `\`, "é", "É", "\xc3", "\x80", "\x00", "z", "1"}
	rng := rand.New(rand.NewPCG(3, 4))
	text := func(n int) string {
		var b strings.Builder
		for range rng.IntN(n) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	arg := func(n int) any {
		switch rng.IntN(12) {
		case 0:
			return nil
		case 1:
			return []byte(text(n))
		case 2:
			return int64(rng.IntN(30))
		}
		return text(n)
	}
	escapes := []any{`\`, "%", "_", "a", "", "ab", nil, "é", "[", "\xc3"}
	for _, sql := range []string{
		"SELECT ? LIKE ?", "SELECT ? GLOB ?", "SELECT ? LIKE ? ESCAPE ?",
		"SELECT like(?, ?)", "SELECT glob(?, ?)",
	} {
		for range 20000 {
			args := []any{arg(8), arg(6)}
			if strings.Contains(sql, "ESCAPE") {
				args = append(args, escapes[rng.IntN(len(escapes))])
			}
			want, werr := root.Query(ctx, sql, args...)
			got, gerr := in.Query(ctx, sql, args...)
			if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() || werr == nil && !reflect.DeepEqual(got.Values, want.Values) {
				t.Fatalf("%s %q = %v, %v; SQLite's gives %v, %v", sql, args, got, gerr, want, werr)
			}
		}
	}
	t.Run("RowsOfOneStatement", func(t *testing.T) {
		// The pattern read once is kept while it stays the same, and
		// read again when the next row's differs.
		const sql = `SELECT value ->> 0 LIKE value ->> 1, value ->> 0 GLOB value ->> 1, value ->> 0 LIKE 'a%b' FROM json_each(?)`
		pairs := `[["ab","a%"],["ab","a%"],["AB","a_"],["ab","A*"],["a%b","a\\%b"],["axb","a%b"],["axb","a%b"],["b","[a-c]"],["b","[a-c]"]]`
		want, werr := root.Query(ctx, sql, pairs)
		got, gerr := in.Query(ctx, sql, pairs)
		if werr != nil || gerr != nil || !reflect.DeepEqual(got.Values, want.Values) {
			t.Errorf("%v, %v; SQLite's gives %v, %v", got, gerr, want, werr)
		}
	})
	t.Run("PatternTooComplex", func(t *testing.T) {
		for _, sql := range []string{"SELECT 'a' LIKE ?", "SELECT 'a' GLOB ?"} {
			_, werr := root.Query(ctx, sql, strings.Repeat("%", 50001))
			_, gerr := in.Query(ctx, sql, strings.Repeat("%", 50001))
			if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
				t.Errorf("%s: %v; SQLite's gives %v", sql, gerr, werr)
			}
		}
	})
}

// TestInspector_QuadraticLike runs the LIKE and GLOB that made SQLite's
// compare billions of times in one call, uninterrupted, past any timeout:
// each answers at once, or, when a piece between wildcards is tried at
// millions of places, fails saying so.
func TestInspector_QuadraticLike(t *testing.T) {
	_, _, in := inspectorFixture(t)
	const refused = " comparisons, more than one call may make on the inspection connection"
	for _, tt := range []struct {
		sql, want string // the statement, and its value or the end of its error
	}{
		{`SELECT printf('%.*c', 8000000, 'a') LIKE '%' || printf('%.*c', 49998, 'a') || 'b'`, "0"},
		{`SELECT printf('%.*c', 8000000, 'a') GLOB '*' || printf('%.*c', 49998, 'a') || 'b'`, "0"},
		{`SELECT printf('%.*c', 8000000, 'a') LIKE '%' || printf('%.*c', 49997, 'a') || 'b%'`, refused},
		{`SELECT printf('%.*c', 8000000, 'a') GLOB '*' || printf('%.*c', 49997, 'a') || 'b*'`, refused},
	} {
		// A minute is far more than the calls take; SQLite's took half an hour.
		if got := firstValue(in, tt.sql); !strings.HasSuffix(got, tt.want) {
			t.Errorf("%.60s…: %s, want %s", tt.sql, got, tt.want)
		}
	}
}
