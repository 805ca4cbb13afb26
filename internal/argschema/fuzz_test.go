package argschema_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seahaven/seahaven/internal/argschema"
	"github.com/seahaven/seahaven/schemas/schematest"
)

type FuzzNote struct {
	Note string `json:"note,omitempty" maxlen:"8"`
}

type FuzzItem struct {
	SKU   string   `json:"sku" maxlen:"16"`
	Qty   int8     `json:"qty" min:"1" max:"100"`
	Price *float32 `json:"price"`
}

// FuzzArgs is shaped so that every accepted value re-encodes with
// encoding/json to input that decodes to the same value: slices and maps
// that may be empty use omitzero, and defaults sit on fields encoding/json
// always writes.
type FuzzArgs struct {
	FuzzNote
	Amount   int64             `json:"amount"`
	Currency string            `json:"currency,omitempty" enum:"usd,eur"`
	Count    uint16            `json:"count" default:"3"`
	Ratio    float64           `json:"ratio,omitempty"`
	Flag     *bool             `json:"flag"`
	When     time.Time         `json:"when,omitzero"`
	Blob     []byte            `json:"blob,omitzero"`
	Items    []FuzzItem        `json:"items,omitzero"`
	Meta     map[string]uint64 `json:"meta,omitzero"`
	Any      any               `json:"any,omitempty"`
	Raw      json.RawMessage   `json:"raw,omitempty"`
	Nested   *FuzzItem         `json:"nested"`
	Level    *int              `json:"level" enum:"1,2,3"`
}

func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		``,
		`null`,
		`{"amount":1}`,
		`{"amount":-5,"currency":"eur","count":0,"ratio":-0.0,"flag":false,"note":"n"}`,
		`{"amount":1e3,"when":"2026-06-01T09:00:00.123+02:00","blob":"aGk=","level":2}`,
		`{"amount":2,"items":[{"sku":"a","qty":1,"price":1.5},{"sku":"b","qty":100,"price":null}],"nested":{"sku":"c","qty":7}}`,
		`{"amount":3,"meta":{"a":18446744073709551615,"":0},"any":{"x":[1,"y",null,true,{}]},"raw":[1, {"b" : "<&>"}]}`,
		`{"amount":4,"any":"\u00e9\ud83d\ude00","raw":null,"items":[],"meta":{}}`,
		`{"amount":1,"amount":2}`,
		`{"amount":1.5}`,
		`{"amount":9223372036854775808}`,
		`{"amount":0e9227000000000000000}`,
		`{"amount":0e99999999999}`,
		`{"amout":1}`,
		`{"amount":1,"any":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
		"{\"amount\":1,\"note\":\"\xff\"}",
		`[1,2]`,
		`{"amount":1} trailing`,
	} {
		f.Add([]byte(seed))
	}
	typ := reflect.TypeFor[FuzzArgs]()
	published := compileSchema(f, typ)
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, err := argschema.Decode(typ, raw)
		if err != nil {
			var e *argschema.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is %T, not *argschema.Error", err, err)
			}
			if !strings.HasPrefix(err.Error(), "invalid arguments: ") {
				t.Fatalf("message %q", err)
			}
			return
		}
		// What Decode accepts, the published schema allows, as an
		// independent validator reads it. (Only the kind ranges, date-times
		// and base64 that Decode also checks go beyond the schema.)
		if json.Valid(raw) && len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
			if err := published.Validate(raw); err != nil {
				t.Fatalf("Decode accepted %q, which the published schema refuses: %v", raw, err)
			}
		}
		first := v.Interface().(FuzzArgs)
		enc, err := json.Marshal(first)
		if err != nil {
			t.Fatalf("re-encoding %#v: %v", first, err)
		}
		v2, err := argschema.Decode(typ, enc)
		if err != nil {
			t.Fatalf("re-encoded value %s refused: %v (input %q)", enc, err, raw)
		}
		if second := v2.Interface().(FuzzArgs); !reflect.DeepEqual(first, second) {
			t.Fatalf("round trip differs\ninput  %q\nfirst  %#v\nsecond %#v", raw, first, second)
		}
	})
}

// compileSchema compiles the published schema of typ with an independent
// validator.
func compileSchema(tb testing.TB, typ reflect.Type) *schematest.Schema {
	tb.Helper()
	raw, err := argschema.Schema(typ)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := schematest.Compile(raw)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
