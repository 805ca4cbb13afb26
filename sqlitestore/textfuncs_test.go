package sqlitestore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestInspector_TextFuncsMatchSQLite compares the inspection connection's
// instr, replace, trim, ltrim and rtrim with SQLite's own, on a store's
// connection, over arguments drawn from bytes that make the cases apart:
// NUL, continuation and lead bytes, a two-byte character, as text, blobs,
// numbers and NULL.
func TestInspector_TextFuncsMatchSQLite(t *testing.T) {
	ctx := context.Background()
	root, _, in := inspectorFixture(t)
	pieces := []string{"a", "b", " ", "\x00", "\x80", "\xa9", "\xc3", "\xc3\xa9", "\xe2\x82\xac", "\xff", "ab", "x"}
	rng := rand.New(rand.NewPCG(1, 2))
	arg := func() any {
		var b strings.Builder
		for range rng.IntN(7) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		switch rng.IntN(10) {
		case 0:
			return nil
		case 1:
			return []byte(b.String())
		case 2:
			return int64(rng.IntN(200) - 50)
		case 3:
			return float64(rng.IntN(100)) / 4
		}
		return b.String()
	}
	for _, f := range []struct {
		name string
		n    int
	}{{"instr", 2}, {"replace", 3}, {"trim", 2}, {"ltrim", 2}, {"rtrim", 2}} {
		sql := fmt.Sprintf("SELECT %s(%s), typeof(%[1]s(%[2]s))", f.name, strings.TrimSuffix(strings.Repeat("?,", f.n), ","))
		for range 3000 {
			args := make([]any, 2*f.n)
			for i := range f.n {
				args[i] = arg()
				args[f.n+i] = args[i]
			}
			want, werr := root.Query(ctx, sql, args...)
			got, gerr := in.Query(ctx, sql, args...)
			if (werr != nil) != (gerr != nil) || werr == nil && !reflect.DeepEqual(got.Values, want.Values) {
				t.Fatalf("%s(%q) = %q, %v; SQLite's gives %q, %v", f.name, args[:f.n], got, gerr, want, werr)
			}
		}
	}
}

// TestInspector_QuadraticTextFuncs runs the calls that made SQLite's
// instr, replace and trim compare trillions of times, uninterrupted, past
// any timeout: each answers at once, or, for trim by a huge set that
// matches at every step, fails saying so.
func TestInspector_QuadraticTextFuncs(t *testing.T) {
	_, _, in := inspectorFixture(t)
	for _, tt := range []struct {
		sql, want string // the statement, and its value or error
	}{
		{`SELECT instr(printf('%.*c', 8000000, 'a'), printf('%.*c', 4000000, 'a') || 'b')`, "0"},
		{`SELECT length(replace(printf('%.*c', 8000000, 'a'), printf('%.*c', 4000000, 'a') || 'b', ''))`, "8000000"},
		{`SELECT length(ltrim(printf('%.*c', 8000000, 'a'), printf('%.*c', 4000000, 'b') || 'a'))`, "0"},
		{`SELECT length(rtrim(printf('%.*c', 8000000, 'a'), printf('%.*c', 4000000, 'b') || 'a'))`, "0"},
		{`SELECT length(trim(printf('%.*c', 8000000, 'a'), 'xyz'))`, "8000000"},
		{`SELECT length(rtrim(?, ?))`, "sqlitestore: rtrim(): trimming 400000 bytes by a set of 200001 characters takes more than 268435456 comparisons, more than one call may make on the inspection connection"},
		{`SELECT length(ltrim(?, ?))`, "sqlitestore: ltrim(): trimming 400000 bytes by a set of 200001 characters takes more than 268435456 comparisons, more than one call may make on the inspection connection"},
	} {
		// 200,000 characters of four bytes, none of them x's but the last:
		// each step compares them all.
		x := strings.Repeat("\U0001F600", 100000)
		var set strings.Builder
		for r := rune(0x10000); set.Len() < 800000; r++ {
			if r != 0x1F600 {
				set.WriteRune(r)
			}
		}
		set.WriteRune(0x1F600)
		var args []any
		if strings.Contains(tt.sql, "?") {
			args = []any{x, set.String()}
		}
		// A minute is far more than the calls take; SQLite's took hours.
		if got := firstValue(in, tt.sql, args...); got != tt.want {
			t.Errorf("%.60s…: %s, want %s", tt.sql, got, tt.want)
		}
	}
	if _, err := in.Query(context.Background(), `SELECT count(*) FROM staff`); err != nil {
		t.Fatal(err)
	}
}
