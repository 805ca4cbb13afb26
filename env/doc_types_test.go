package env_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"

	"github.com/seahaven/seahaven/env"
)

func TestChangeRecord_MarshalJSON(t *testing.T) {
	t.Run("AsTagged", func(t *testing.T) {
		// Without an infinity, the record is written as encoding/json
		// writes its fields, HTML escaping left to the caller's encoder.
		type plain env.ChangeRecord
		r := env.ChangeRecord{Seq: 1, Call: 2, Tool: "t<&>", World: "main", Table: "x", Op: env.OpUpdate,
			Key: map[string]any{"id": int64(1)}, Before: map[string]any{"id": int64(1), "v": "<b>", "f": 1.5, "z": []byte{0}},
			After: map[string]any{"id": int64(1), "v": "a&b", "f": math.MaxFloat64, "z": nil}}
		for _, escape := range []bool{true, false} {
			var got, want bytes.Buffer
			for _, e := range []struct {
				buf *bytes.Buffer
				v   any
			}{{&got, r}, {&want, plain(r)}} {
				enc := json.NewEncoder(e.buf)
				enc.SetEscapeHTML(escape)
				if err := enc.Encode(e.v); err != nil {
					t.Fatal(err)
				}
			}
			if got.String() != want.String() {
				t.Errorf("escape %v:\n got %s\nwant %s", escape, got.String(), want.String())
			}
		}
	})
	t.Run("Infinity", func(t *testing.T) {
		r := env.ChangeRecord{Seq: 1, Call: 1, Tool: "t", World: "main", Table: "x", Op: env.OpUpdate,
			Key:    map[string]any{"k": math.Inf(-1)},
			Before: map[string]any{"k": math.Inf(-1), "v": math.Inf(1)},
			After:  map[string]any{"k": math.Inf(-1), "v": "Infinity"}}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		want := `{"seq":1,"call":1,"tool":"t","internal":false,"world":"main","table":"x","op":"update",` +
			`"key":{"k":-1e999},"before":{"k":-1e999,"v":1e999},"after":{"k":-1e999,"v":"Infinity"}}`
		if string(b) != want {
			t.Fatalf("Marshal = %s\nwant %s", b, want)
		}
		if !math.IsInf(r.Before["v"].(float64), 1) {
			t.Fatal("Marshal changed the record's map")
		}
		// Read back as numbers, they are the same infinities.
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var back struct{ Key, Before map[string]any }
		if err := dec.Decode(&back); err != nil {
			t.Fatal(err)
		}
		for _, v := range []struct {
			n    any
			sign int
		}{{back.Before["v"], 1}, {back.Key["k"], -1}} {
			f, err := strconv.ParseFloat(string(v.n.(json.Number)), 64)
			if !math.IsInf(f, v.sign) || err == nil {
				t.Errorf("ParseFloat(%v) = %v, %v; want an infinity of sign %d and a range error", v.n, f, err, v.sign)
			}
		}
	})
}
