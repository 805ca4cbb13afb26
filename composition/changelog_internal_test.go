package composition

import (
	"math"
	"reflect"
	"testing"

	"github.com/seahaven/seahaven/sqlitestore"
)

// TestChangeLog_BoundDropsOnlyPastIt: a log whose records add up to its
// bound exactly keeps them all; one more record drops the oldest.
func TestChangeLog_BoundDropsOnlyPastIt(t *testing.T) {
	r := logRecord{call: 1, tool: "t", world: "main", row: sqlitestore.RowChange{Table: "t", Op: "insert",
		KeyNames: []string{"id"}, KeyValues: []any{int64(1)}, Names: []string{"id", "body"}, After: []any{int64(1), "text"}}}
	l := changeLog{max: 2 * r.size()}
	l.add(r)
	l.add(r)
	if l.dropped != 0 || l.n != 2 {
		t.Fatalf("at its bound: %d kept, %d dropped; want 2 kept", l.n, l.dropped)
	}
	l.add(r)
	if l.dropped != 1 || l.n != 2 {
		t.Fatalf("past its bound: %d kept, %d dropped; want 2 kept, 1 dropped", l.n, l.dropped)
	}
}

// TestPackedRecord_RoundTrip packs records holding every kind of value a
// capture returns and checks that unpacking gives them back exactly, with
// nil images kept nil and blobs copied.
func TestPackedRecord_RoundTrip(t *testing.T) {
	blob := []byte{0, 1, 0xff}
	tests := []struct {
		name               string
		key, before, after []any
	}{
		{"insert", []any{int64(1)}, nil, []any{int64(1), "Ada", nil}},
		{"delete", []any{"k"}, []any{"k", 2.5}, nil},
		{"update", []any{int64(-1), "x"}, []any{int64(-1), "x", "old"}, []any{int64(-1), "x", "new"}},
		{"integers", []any{int64(math.MinInt64)}, []any{int64(0), int64(127), int64(128)}, []any{int64(math.MaxInt64), int64(-300), int64(1 << 40)}},
		{"floats", []any{0.0}, []any{math.Copysign(0, -1), math.Inf(1), math.Inf(-1)}, []any{math.SmallestNonzeroFloat64, math.MaxFloat64, 1e-300}},
		{"text and blobs", []any{""}, []any{"", "héllo\x00wörld", []byte{}}, []any{blob, string(make([]byte, 300)), nil}},
		{"empty images", []any{}, []any{}, []any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := logRecord{call: 3, tool: "t", internal: true, world: "w", row: sqlitestore.RowChange{
				Table: "tab", Op: sqlitestore.OpUpdate, KeyNames: []string{"k"}, KeyValues: tt.key,
				Names: []string{"a", "b", "c"}, Before: tt.before, After: tt.after,
			}}
			p := in.pack()
			if p.bytes != in.size() {
				t.Errorf("packed size %d, want %d", p.bytes, in.size())
			}
			out := p.unpack()
			if !reflect.DeepEqual(out, in) {
				t.Fatalf("unpacked %#v\nwant %#v", out, in)
			}
			for i, v := range out.row.Before {
				if math.Signbit(asFloat(v)) != math.Signbit(asFloat(tt.before[i])) {
					t.Errorf("Before[%d] = %v lost its sign", i, v)
				}
			}
		})
	}
	in := logRecord{row: sqlitestore.RowChange{KeyValues: []any{blob}}}
	p := in.pack()
	out := p.unpack()
	out.row.KeyValues[0].([]byte)[0] = 9
	if again := p.unpack(); again.row.KeyValues[0].([]byte)[0] != 0 {
		t.Error("a caller changing an unpacked blob changed the log")
	}
}

func asFloat(v any) float64 {
	f, _ := v.(float64)
	return f
}
