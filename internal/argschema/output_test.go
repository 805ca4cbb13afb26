package argschema_test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/seahaven/seahaven/internal/argschema"
	"github.com/seahaven/seahaven/schemas/schematest"
)

type outLine struct {
	SKU   string  `json:"sku" doc:"Stock keeping unit."`
	Qty   int     `json:"qty"`
	Price float64 `json:"price"`
}

type outBase struct {
	ID      int64 `json:"id"`
	Created time.Time
}

type outExtra struct {
	Tag string `json:"tag"`
}

type outOrder struct {
	outBase
	*outExtra
	Lines    []outLine         `json:"lines"`
	Meta     map[string]string `json:"meta"`
	Note     *string           `json:"note"`
	Coupon   string            `json:"coupon,omitempty"`
	Raw      json.RawMessage   `json:"raw"`
	Any      any               `json:"any"`
	Blob     []byte            `json:"blob"`
	Addr     netip.Addr        `json:"addr"`
	Count    int               `json:"count,string"`
	Fixed    [2]bool           `json:"fixed"`
	Parent   *outOrder         `json:"parent"`
	internal int               //lint:ignore U1000 an unexported field is no member
	Skipped  int               `json:"-"`
}

// TestOutputOf pins the output schema and wrapping of each kind of result.
func TestOutputOf(t *testing.T) {
	for _, tc := range []struct {
		typ     reflect.Type
		wrapped bool
		schema  string
	}{
		{reflect.TypeFor[outLine](), false,
			`{"type":"object","properties":{"sku":{"type":"string","description":"Stock keeping unit."},"qty":{"type":"integer"},"price":{"type":"number"}},"required":["sku","qty","price"],"additionalProperties":false}`},
		{reflect.TypeFor[*outLine](), true,
			`{"type":"object","properties":{"result":{"type":["object","null"],"properties":{"sku":{"type":"string","description":"Stock keeping unit."},"qty":{"type":"integer"},"price":{"type":"number"}},"required":["sku","qty","price"],"additionalProperties":false}},"required":["result"]}`},
		{reflect.TypeFor[[]string](), true,
			`{"type":"object","properties":{"result":{"type":["array","null"],"items":{"type":"string"}}},"required":["result"]}`},
		{reflect.TypeFor[map[string]int](), true,
			`{"type":"object","properties":{"result":{"type":["object","null"],"additionalProperties":{"type":"integer"}}},"required":["result"]}`},
		{reflect.TypeFor[int](), true,
			`{"type":"object","properties":{"result":{"type":"integer"}},"required":["result"]}`},
		{reflect.TypeFor[any](), true,
			`{"type":"object","properties":{"result":true},"required":["result"]}`},
		{reflect.TypeFor[time.Time](), true,
			`{"type":"object","properties":{"result":{"type":"string","format":"date-time"}},"required":["result"]}`},
		{reflect.TypeFor[struct{}](), false,
			`{"type":"object","properties":{},"additionalProperties":false}`},
		{reflect.TypeFor[outEmbedMap](), false,
			`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`},
	} {
		t.Run(tc.typ.String(), func(t *testing.T) {
			o := argschema.OutputOf(tc.typ)
			if o.Wrapped != tc.wrapped || string(o.Schema) != tc.schema {
				t.Errorf("OutputOf(%v) = wrapped %v, %s\nwant wrapped %v, %s", tc.typ, o.Wrapped, o.Schema, tc.wrapped, tc.schema)
			}
		})
	}
}

// Fields with json v2's embed option, whose members json v2 writes into
// the object that holds the field: a map, a jsontext.Value and a struct.
type outEmbedMap struct {
	ID   int            `json:"id"`
	Rest map[string]any `json:",embed"`
}

type outEmbedValue struct {
	ID   int            `json:"id"`
	Rest jsontext.Value `json:",embed"`
}

type outEmbedStruct struct {
	ID   int     `json:"id"`
	Line outLine `json:",embed"`
}

// outNotEmbedded has the option names json v2 no longer reads (it spells
// both embed now): each field is a member of its own, named by Go.
type outNotEmbedded struct {
	ID   int            `json:"id"`
	Rest map[string]any `json:",inline"`
	More jsontext.Value `json:",unknown"`
}

// TestOutputOf_Validates encodes results as the server does (json v2, nil
// slices and maps as null) and checks each against its output schema with
// an independent validator: zero values, nil pointers, embedded pointers
// left nil, and full values.
func TestOutputOf_Validates(t *testing.T) {
	note := "n"
	full := outOrder{
		outBase: outBase{ID: 7, Created: time.Unix(0, 0).UTC()}, outExtra: &outExtra{Tag: "t"},
		Lines: []outLine{{"a", 1, 2.5}}, Meta: map[string]string{"k": "v"}, Note: &note, Coupon: "c",
		Raw: json.RawMessage(`[1,{"x":null}]`), Any: map[string]any{"y": []int{1}}, Blob: []byte("hi"),
		Addr: netip.MustParseAddr("10.0.0.1"), Count: 3, Fixed: [2]bool{true, false},
		Parent: &outOrder{Lines: []outLine{}},
	}
	for _, v := range []any{
		outOrder{}, full, &full, (*outOrder)(nil), []outLine(nil), []outLine{{}}, map[string]outLine(nil),
		map[string]*outLine{"a": nil}, 3, "text", true, 2.5, []byte(nil), struct{}{},
		outEmbedMap{ID: 1, Rest: map[string]any{"extra": true}}, outEmbedMap{},
		outEmbedValue{ID: 1, Rest: jsontext.Value(`{"extra":[1]}`)}, outEmbedValue{},
		outEmbedStruct{ID: 1, Line: outLine{SKU: "a", Qty: 2}},
		outNotEmbedded{ID: 1, Rest: map[string]any{"extra": true}, More: jsontext.Value(`{"more":1}`)}, outNotEmbedded{},
	} {
		typ := reflect.TypeOf(v)
		o := argschema.OutputOf(typ)
		raw, err := jsonv2.Marshal(v, jsonv2.FormatNilSliceAsNull(true), jsonv2.FormatNilMapAsNull(true))
		if err != nil {
			t.Fatalf("%v: %v", typ, err)
		}
		if o.Wrapped {
			raw = []byte(`{"result":` + string(raw) + `}`)
		}
		schema, err := schematest.Compile(o.Schema)
		if err != nil {
			t.Fatalf("%v: %v", typ, err)
		}
		if err := schema.Validate(raw); err != nil {
			t.Errorf("%v: %s does not match its output schema %s: %v", typ, raw, o.Schema, err)
		}
	}
}

// outMisspelt has an option json v2 knows, mis-spelt in case.
type outMisspelt struct {
	ID int `json:"id"`
	//lint:ignore SA5008 the mis-spelt option is what this case tests
	Note string `json:"note,omitEmpty"`
}

// outOwnJSON is written by its own MarshalJSON, so its tags are never read.
type outOwnJSON struct {
	//lint:ignore SA5008 the mis-spelt option is what this case tests
	Note string `json:"note,omitEmpty"`
}

func (outOwnJSON) MarshalJSON() ([]byte, error) { return []byte(`{}`), nil }

// outOwnText is written as text by its own MarshalText.
type outOwnText struct {
	//lint:ignore SA5008 the mis-spelt option is what this case tests
	Note string `json:"note,OmitZero"`
}

func (outOwnText) MarshalText() ([]byte, error) { return []byte("t"), nil }

// outTree reaches a mis-spelt option only through itself.
type outTree struct {
	Kids []outTree `json:"kids"`
	Leaf *struct {
		//lint:ignore SA5008 the mis-spelt option is what this case tests
		At string `json:"at,omit_zero"`
	} `json:"leaf"`
}

// TestRefusedTag refuses a result type a field of which, however deep,
// mis-spells a json v2 option, in json v2's words, and in the shape Schema
// refuses the same struct as arguments with.
func TestRefusedTag(t *testing.T) {
	_, argErr := argschema.Schema(reflect.TypeFor[outMisspelt]())
	if argErr == nil {
		t.Fatal("Schema(outMisspelt) accepted it")
	}
	if err := argschema.RefusedTag(reflect.TypeFor[outMisspelt]()); err == nil || err.Error() != argErr.Error() {
		t.Errorf("RefusedTag(outMisspelt) = %v, want Schema's %q", err, argErr)
	}
	type embedded struct {
		outMisspelt
		Tag string `json:"tag"`
	}
	type named struct {
		Rest outMisspelt `json:",embed"`
	}
	type format struct {
		//lint:ignore SA5008 the mis-spelt option is what this case tests
		At time.Time `json:"at,Format:RFC3339"`
	}
	for _, tc := range []struct {
		typ  reflect.Type
		want string // the error, or "" for none
	}{
		{reflect.TypeFor[[]outMisspelt](), "argschema: []argschema_test.outMisspelt: Go struct field Note has invalid appearance of `omitEmpty` tag option; specify `omitempty` instead (tag `json:\"note,omitEmpty\"`)"},
		{reflect.TypeFor[map[string]*outMisspelt](), "argschema: map[string]*argschema_test.outMisspelt: Go struct field Note has invalid appearance of `omitEmpty` tag option; specify `omitempty` instead (tag `json:\"note,omitEmpty\"`)"},
		{reflect.TypeFor[embedded](), "argschema: argschema_test.embedded field outMisspelt: Go struct field Note has invalid appearance of `omitEmpty` tag option; specify `omitempty` instead (tag `json:\"note,omitEmpty\"`)"},
		{reflect.TypeFor[named](), "argschema: argschema_test.named field Rest: Go struct field Note has invalid appearance of `omitEmpty` tag option; specify `omitempty` instead (tag `json:\"note,omitEmpty\"`)"},
		{reflect.TypeFor[outTree](), "argschema: argschema_test.outTree field Leaf: Go struct field At has invalid appearance of `omit_zero` tag option; specify `omitzero` instead (tag `json:\"at,omit_zero\"`)"},
		{reflect.TypeFor[format](), "argschema: argschema_test.format: Go struct field At has invalid appearance of `Format` tag option; specify `format` instead (tag `json:\"at,Format:RFC3339\"`)"},
		{reflect.TypeFor[outOrder](), ""},
		{reflect.TypeFor[outNotEmbedded](), ""},
		{reflect.TypeFor[outOwnJSON](), ""},
		{reflect.TypeFor[[]outOwnText](), ""},
		{reflect.TypeFor[int](), ""},
		{reflect.TypeFor[any](), ""},
		{reflect.TypeFor[map[string]any](), ""},
	} {
		err := argschema.RefusedTag(tc.typ)
		if got := fmt.Sprint(err); tc.want == "" && err != nil || tc.want != "" && got != tc.want {
			t.Errorf("RefusedTag(%v) = %v, want %q", tc.typ, err, tc.want)
		}
	}
}
