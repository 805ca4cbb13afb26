package bench_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seahaven/seahaven/internal/argschema"
	"github.com/seahaven/seahaven/internal/bench"
)

func TestParseToolMix(t *testing.T) {
	tests := []struct {
		in     string           // the flag value
		want   []bench.MixEntry // the parsed mix
		errMsg string           // a substring of the error, "" for none
	}{
		{"invoice", []bench.MixEntry{{"invoice", 1}}, ""},
		{"invoice:3, list_staff:1", []bench.MixEntry{{"invoice", 3}, {"list_staff", 1}}, ""},
		{"", nil, ""},
		{" , ", nil, ""},
		{"invoice:0", nil, "must be a positive integer"},
		{"invoice:x", nil, "must be a positive integer"},
		{":2", nil, "has no tool name"},
		{"a,a", nil, "a is listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := bench.ParseToolMix(tt.in)
			if tt.errMsg != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errMsg) {
					t.Fatalf("err = %v, want one containing %q", err, tt.errMsg)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseToolMix = %v, %v; want %v", got, err, tt.want)
			}
			if len(got) > 0 {
				again, err := bench.ParseToolMix(bench.FormatToolMix(got))
				if err != nil || !reflect.DeepEqual(again, got) {
					t.Errorf("round trip through FormatToolMix = %v, %v", again, err)
				}
			}
		})
	}
}

func TestExampleArgs(t *testing.T) {
	tests := []struct {
		name   string // what the schema shows
		schema string // the input schema
		want   string // the arguments
	}{
		{"Empty", ``, `{}`},
		{"NoRequired", `{"type":"object","properties":{"a":{"type":"integer"}}}`, `{}`},
		{"Integer", `{"type":"object","properties":{"amount":{"type":"integer","minimum":1}},"required":["amount"]}`, `{"amount":1}`},
		{"Minimum", `{"type":"object","properties":{"n":{"type":"integer","minimum":5}},"required":["n"]}`, `{"n":5}`},
		{"ExclusiveMinimum", `{"type":"object","properties":{"n":{"type":"number","exclusiveMinimum":3}},"required":["n"]}`, `{"n":4}`},
		{"String", `{"type":"object","properties":{"s":{"type":"string","minLength":7}},"required":["s"]}`, `{"s":"benchxx"}`},
		{"EnumAndDefault", `{"type":"object","properties":{"e":{"enum":["b","a"]},"d":{"type":"string","default":"x"}},"required":["e","d"]}`, `{"d":"x","e":"b"}`},
		{"Maximum", `{"type":"object","properties":{"n":{"type":"integer","minimum":-9,"maximum":-2},"f":{"type":"number","maximum":0.5}},"required":["n","f"]}`, `{"f":0.5,"n":-2}`},
		{"MaxLength", `{"type":"object","properties":{"s":{"type":"string","maxLength":2}},"required":["s"]}`, `{"s":"be"}`},
		{"DateTime", `{"type":"object","properties":{"t":{"type":["string","null"],"format":"date-time"}},"required":["t"]}`, `{"t":"2026-01-01T00:00:00Z"}`},
		{"Base64", `{"type":"object","properties":{"b":{"type":"string","contentEncoding":"base64"}},"required":["b"]}`, `{"b":"YmVuY2g="}`},
		{"Nested", `{"type":"object","properties":{"o":{"type":"object","properties":{"f":{"type":"boolean"}},"required":["f"]},"l":{"type":"array"}},"required":["o","l"]}`, `{"l":[],"o":{"f":false}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := bench.ExampleArgs(json.RawMessage(tt.schema))
			if err != nil || string(got) != tt.want {
				t.Fatalf("ExampleArgs = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
	if _, err := bench.ExampleArgs(json.RawMessage(`{`)); err == nil {
		t.Error("ExampleArgs of a broken schema: no error")
	}
}

// TestExampleArgs_Accepted: the arguments made for a Go tool's input schema
// are accepted by the tool, whatever its fields' types and tags: a
// date-time, base64, a maxlen under five or a max under one got "bench" or
// 1, which every call refused as invalid_args.
func TestExampleArgs_Accepted(t *testing.T) {
	type inner struct {
		Code string `json:"code" maxlen:"2"`
		Neg  int    `json:"neg" min:"-10" max:"-3"`
	}
	type args struct {
		When  time.Time `json:"when"`
		Blob  []byte    `json:"blob"`
		Short string    `json:"short" maxlen:"3"`
		Ratio float64   `json:"ratio" min:"0" max:"0.25"`
		Small uint8     `json:"small"`
		Level int       `json:"level" enum:"3,4"`
		Inner inner     `json:"inner"`
		List  []inner   `json:"list"`
		Maybe *string   `json:"maybe"`
	}
	schema, err := argschema.Schema(reflect.TypeFor[args]())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := bench.ExampleArgs(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := argschema.Decode(reflect.TypeFor[args](), raw); err != nil {
		t.Errorf("ExampleArgs = %s, refused: %v", raw, err)
	}
}
