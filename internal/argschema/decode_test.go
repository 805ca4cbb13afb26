package argschema_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seahaven/seahaven/internal/argschema"
)

func ptr[T any](v T) *T { return &v }

// decodeAs decodes raw as T and returns the value.
func decodeAs[T any](tb testing.TB, raw string) T {
	tb.Helper()
	v, err := argschema.Decode(reflect.TypeFor[T](), []byte(raw))
	if err != nil {
		tb.Fatalf("Decode(%s): %v", raw, err)
	}
	got, ok := v.Interface().(T)
	if !ok {
		tb.Fatalf("Decode returned %v, want %v", v.Type(), reflect.TypeFor[T]())
	}
	return got
}

func TestDecode_OK(t *testing.T) {
	for _, tt := range []struct {
		name string // what is decoded
		in   string // raw arguments
		want Args   // decoded value
	}{
		{"Minimal", `{"amount":5}`, Args{Amount: 5}},
		{"Whitespace", " \n\t{ \"amount\" : 5 }\r\n", Args{Amount: 5}},
		{"IntegralForms", `{"amount":1e3,"small":-1.0,"count":10.000,"temp":-0}`, Args{Amount: 1000, Small: -1, Count: 10}},
		{"Int64Bounds", `{"amount":-9223372036854775808}`, Args{Amount: -9223372036854775808}},
		{"Int64MaxWithExponent", `{"amount":9.223372036854775807e18}`, Args{Amount: 9223372036854775807}},
		{"Int8Bounds", `{"amount":0,"small":-128}`, Args{Small: -128}},
		{"MinusZeroUnsigned", `{"amount":0,"count":1,"small":-0}`, Args{Count: 1}},
		{"ZeroWithHugeExponent", `{"amount":0e999999999999999999}`, Args{}},
		{"Floats", `{"amount":1,"ratio":0.5,"temp":-273.15}`, Args{Amount: 1, Ratio: 0.5, Temp: -273.15}},
		{"FloatUnderflowIsZero", `{"amount":1,"temp":1e-400}`, Args{Amount: 1}},
		{"EnumAndBounds", `{"amount":1,"currency":"eur","count":10,"level":3}`, Args{Amount: 1, Currency: "eur", Count: 10, Level: ptr(3)}},
		{"MaxlenCountsCharacters", `{"amount":1,"memo":"héllo"}`, Args{Amount: 1, Memo: "héllo"}},
		{"NullPointer", `{"amount":1,"level":null,"nested":null}`, Args{Amount: 1}},
		{"NestedArrayOfStructs", `{"amount":1,"items":[{"sku":"a","qty":1},{"qty":2,"sku":"b"}],"nested":{"sku":"c","qty":3}}`,
			Args{Amount: 1, Items: []Item{{"a", 1}, {"b", 2}}, Nested: &Item{"c", 3}}},
		{"EmptyArrayIsNotNil", `{"amount":1,"items":[]}`, Args{Amount: 1, Items: []Item{}}},
		{"Map", `{"amount":1,"meta":{"a":1,"b c":2}}`, Args{Amount: 1, Meta: map[string]int{"a": 1, "b c": 2}}},
		{"Any", `{"amount":1,"any":{"n":1.50,"l":[true,null,"s"],"o":{}}}`, Args{Amount: 1, Any: map[string]any{
			"n": json.Number("1.50"), "l": []any{true, nil, "s"}, "o": map[string]any{}}}},
		{"AnyNull", `{"amount":1,"any":null}`, Args{Amount: 1}},
		{"RawIsCompacted", `{"amount":1,"raw": { "a" : [1, 2.50, "x\u003c"], "b":null } }`, Args{Amount: 1, Raw: json.RawMessage(`{"a":[1,2.50,"x<"],"b":null}`)}},
		{"RawWideObject", `{"amount":1,"raw":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10}}`,
			Args{Amount: 1, Raw: json.RawMessage(`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10}`)}},
		{"RawEscapes", `{"amount":1,"raw":["q\"\\\/\n\r\t\b\f\u0001\u2028\u2029<&>é"]}`, Args{Amount: 1, Raw: json.RawMessage(`["q\"\\/\n\r\t\b\f\u0001\u2028\u2029<&>é"]`)}},
		{"TimeInUTC", `{"amount":1,"when":"2026-06-01T10:00:00.5+01:00"}`, Args{Amount: 1, When: time.Date(2026, 6, 1, 9, 0, 0, 5e8, time.UTC)}},
		{"TimeLowerCase", `{"amount":1,"when":"2026-06-01t09:00:00z"}`, Args{Amount: 1, When: time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)}},
		{"Base64", `{"amount":1,"blob":"aGVsbG8="}`, Args{Amount: 1, Blob: []byte("hello")}},
		{"EscapedKey", `{"\u0061mount":1}`, Args{Amount: 1}},
		{"LoneSurrogateEscape", `{"amount":1,"memo":"\ud800"}`, Args{Amount: 1, Memo: "\ufffd"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := decodeAs[Args](t, tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestDecode_Empty(t *testing.T) {
	type Optional struct {
		N *int   `json:"n"`
		S string `json:"s,omitempty"`
		D int    `json:"d" default:"7"`
	}
	for _, in := range []string{"", "  \n", "null", " null ", "{}"} {
		if got := decodeAs[Optional](t, in); !reflect.DeepEqual(got, Optional{D: 7}) {
			t.Errorf("Decode(%q) = %#v", in, got)
		}
		if _, err := argschema.Decode(reflect.TypeFor[Args](), []byte(in)); err == nil || err.Error() != `invalid arguments: missing required field "amount"` {
			t.Errorf("Decode(%q) as Args: %v", in, err)
		}
	}
}

func TestDecode_Defaults(t *testing.T) {
	got := decodeAs[Defaults](t, `{}`)
	want := Defaults{
		Currency: "usd", Retries: 3, Ratio: 0.5, Capture: true,
		Due:  time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC),
		Tags: []string{"a", "b"}, Limit: ptr(10), Item: Item{SKU: "x", Qty: 1}, Blob: []byte("hi"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %#v\nwant %#v", got, want)
	}

	// Defaults never share memory between decoded values.
	got.Tags[0] = "changed"
	*got.Limit = 99
	got.Blob[0] = 'X'
	if again := decodeAs[Defaults](t, `{}`); !reflect.DeepEqual(again, want) {
		t.Errorf("a changed default leaked into the next decode: %#v", again)
	}

	// Given values win over defaults, including zero values.
	got = decodeAs[Defaults](t, `{"currency":"eur","retries":0,"capture":false,"tags":[],"limit":null}`)
	if got.Currency != "eur" || got.Retries != 0 || got.Capture || len(got.Tags) != 0 || got.Tags == nil || got.Limit != nil {
		t.Errorf("given values lost: %#v", got)
	}
}

// A json.RawMessage's default is a JSON literal, as an any's is and as its
// schema (any value) reads it; it was taken as raw text, like a []byte's,
// so the tool got and the schema listed a JSON string.
func TestDecode_RawMessageDefault(t *testing.T) {
	type Raw struct {
		Raw json.RawMessage `json:"raw" default:"{\"a\":[1,2]}"`
		Any any             `json:"any" default:"{\"a\":[1,2]}"`
	}
	got := decodeAs[Raw](t, `{}`)
	if string(got.Raw) != `{"a":[1,2]}` || !reflect.DeepEqual(got.Any, map[string]any{"a": []any{json.Number("1"), json.Number("2")}}) {
		t.Errorf("got raw %s, any %#v; want both the object {\"a\":[1,2]}", got.Raw, got.Any)
	}
	schema, err := argschema.Schema(reflect.TypeFor[Raw]())
	if err != nil {
		t.Fatal(err)
	}
	if want := `"raw":{"default":{"a":[1,2]}}`; !strings.Contains(string(schema), want) {
		t.Errorf("schema %s, want it to hold %s", schema, want)
	}
}

func TestDecode_Embedded(t *testing.T) {
	got := decodeAs[Embedded](t, `{"x":1,"y":2,"w":"top","v":4,"tagged":{"notify":true}}`)
	want := Embedded{A: A{X: 1}, B: &B{Y: 2}, Deeper: Deeper{Top: "top"}, Tagged: Options{Notify: true}}
	want.V = 4
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
	if _, err := argschema.Decode(reflect.TypeFor[Embedded](), []byte(`{"x":1,"y":2,"w":"top","v":4,"tagged":{},"name":"n"}`)); err == nil ||
		err.Error() != `invalid arguments: unknown field "name" (known fields: x, y, w, v, tagged)` {
		t.Errorf("ambiguous field: %v", err)
	}
}

func TestDecode_PointerType(t *testing.T) {
	for _, in := range []string{`{"amount":5}`, `null`} {
		v, err := argschema.Decode(reflect.TypeFor[*ChargeArgs](), []byte(in))
		if in == "null" {
			if err == nil || err.Error() != `invalid arguments: missing required field "amount"` {
				t.Errorf("Decode(null): %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got := v.Interface().(*ChargeArgs)
		if got == nil || got.Amount != 5 || got.Currency != "usd" || got.Memo != nil {
			t.Errorf("got %#v", got)
		}
	}
}

func TestDecode_Errors(t *testing.T) {
	deep := func(prefix string, n int) string {
		return prefix + strings.Repeat("[", n) + strings.Repeat("]", n) + "}"
	}
	for _, tt := range []struct {
		name  string // what is wrong
		in    string // raw arguments for Args
		field string // Error.Field
		want  string // complete message
	}{
		{"Array", `[]`, "", `invalid arguments: expected object, got array`},
		{"String", `"x"`, "", `invalid arguments: expected object, got string`},
		{"Number", `5`, "", `invalid arguments: expected object, got number`},
		{"Bool", `true`, "", `invalid arguments: expected object, got boolean`},
		{"UnknownField", `{"amout":1}`, "", `invalid arguments: unknown field "amout" (known fields: amount, currency, small, count, ratio, flag, memo, level, temp, items, meta, any, raw, when, blob, nested, names)`},
		{"UnknownFieldCase", `{"Amount":1}`, "", `invalid arguments: unknown field "Amount" (known fields: amount, currency, small, count, ratio, flag, memo, level, temp, items, meta, any, raw, when, blob, nested, names)`},
		{"MissingRequired", `{"currency":"usd"}`, "", `invalid arguments: missing required field "amount"`},
		{"DuplicateKey", `{"amount":1,"amount":2}`, "", `invalid arguments: duplicate field "amount"`},
		{"DuplicateEscapedKey", `{"amount":1,"\u0061mount":2}`, "", `invalid arguments: duplicate field "amount"`},
		{"IntGotString", `{"amount":"5"}`, "amount", `invalid arguments: field "amount": expected integer, got string`},
		{"IntGotNull", `{"amount":null}`, "amount", `invalid arguments: field "amount": expected integer, got null`},
		{"IntGotObject", `{"amount":{}}`, "amount", `invalid arguments: field "amount": expected integer, got object`},
		{"NonIntegral", `{"amount":1.5}`, "amount", `invalid arguments: field "amount": expected integer, got non-integral number 1.5`},
		{"NonIntegralTinyExponent", `{"amount":1e-999999999999}`, "amount", `invalid arguments: field "amount": expected integer, got non-integral number 1e-999999999999`},
		{"Int64Huge", `{"amount":1e30}`, "amount", `invalid arguments: field "amount": number 1e30 is out of range for int64`},
		{"Int64Overflow", `{"amount":9223372036854775808}`, "amount", `invalid arguments: field "amount": number 9223372036854775808 is out of range for int64`},
		{"Int64Underflow", `{"amount":-9223372036854775809}`, "amount", `invalid arguments: field "amount": number -9223372036854775809 is out of range for int64`},
		{"Int64OverflowFraction", `{"amount":9223372036854775808.0}`, "amount", `invalid arguments: field "amount": number 9223372036854775808.0 is out of range for int64`},
		{"Int64HugeExponent", `{"amount":1e999999999999999999}`, "amount", `invalid arguments: field "amount": number 1e999999999999999999 is out of range for int64`},
		{"ZeroExponentPastInt64", `{"amount":0e9227000000000000000}`, "amount", `invalid arguments: field "amount": number 0e9227000000000000000 has an exponent out of range`},
		{"NegativeZeroExponentPastInt64", `{"amount":-0.0e-9227000000000000000}`, "amount", `invalid arguments: field "amount": number -0.0e-9227000000000000000 has an exponent out of range`},
		{"Int8Overflow", `{"amount":1,"small":128}`, "small", `invalid arguments: field "small": number 128 is out of range for int8`},
		{"UintNegative", `{"amount":1,"count":-1}`, "count", `invalid arguments: field "count": number -1 is out of range for uint16`},
		{"UintNegativeExponent", `{"amount":1,"count":-1e2}`, "count", `invalid arguments: field "count": number -1e2 is out of range for uint16`},
		{"UintOverflow", `{"amount":1,"count":65536}`, "count", `invalid arguments: field "count": number 65536 is out of range for uint16`},
		{"BelowMinimum", `{"amount":1,"count":0}`, "count", `invalid arguments: field "count": value 0 is less than minimum 1`},
		{"AboveMaximum", `{"amount":1,"count":1.1e1}`, "count", `invalid arguments: field "count": value 1.1e1 is greater than maximum 10`},
		{"FloatBelowMinimum", `{"amount":1,"temp":-300}`, "temp", `invalid arguments: field "temp": value -300 is less than minimum -273.15`},
		{"Float32Overflow", `{"amount":1,"ratio":1e39}`, "ratio", `invalid arguments: field "ratio": number 1e39 is out of range for float32`},
		{"Float64Overflow", `{"amount":1,"temp":1e309}`, "temp", `invalid arguments: field "temp": number 1e309 is out of range for float64`},
		{"FloatGotString", `{"amount":1,"ratio":"0.5"}`, "ratio", `invalid arguments: field "ratio": expected number, got string`},
		{"BoolGotNumber", `{"amount":1,"flag":1}`, "flag", `invalid arguments: field "flag": expected boolean, got number`},
		{"BoolGotNull", `{"amount":1,"flag":null}`, "flag", `invalid arguments: field "flag": expected boolean, got null`},
		{"StringGotBool", `{"amount":1,"memo":false}`, "memo", `invalid arguments: field "memo": expected string, got boolean`},
		{"Maxlen", `{"amount":1,"memo":"héllo!"}`, "memo", `invalid arguments: field "memo": string length 6 exceeds maxLength 5`},
		{"EnumString", `{"amount":1,"currency":"gbp"}`, "currency", `invalid arguments: field "currency": value "gbp" is not one of "usd", "eur"`},
		{"EnumEmptyString", `{"amount":1,"currency":""}`, "currency", `invalid arguments: field "currency": value "" is not one of "usd", "eur"`},
		{"EnumNumber", `{"amount":1,"level":4}`, "level", `invalid arguments: field "level": value 4 is not one of 1, 2, 3`},
		{"ArrayGotObject", `{"amount":1,"items":{}}`, "items", `invalid arguments: field "items": expected array, got object`},
		{"ArrayGotNull", `{"amount":1,"items":null}`, "items", `invalid arguments: field "items": expected array, got null`},
		{"ObjectGotArray", `{"amount":1,"meta":[]}`, "meta", `invalid arguments: field "meta": expected object, got array`},
		{"StructGotString", `{"amount":1,"nested":"x"}`, "nested", `invalid arguments: field "nested": expected object, got string`},
		{"NestedMissing", `{"amount":1,"items":[{"sku":"a","qty":1},{"sku":"b"}]}`, "items[1]", `invalid arguments: field "items[1]": missing required field "qty"`},
		{"NestedUnknown", `{"amount":1,"items":[{"sku":"a","qty":1},{"sku":"b","qty":1,"skuu":1}]}`, "items[1]", `invalid arguments: field "items[1]": unknown field "skuu" (known fields: sku, qty)`},
		{"NestedWrongType", `{"amount":1,"items":[{"sku":5,"qty":1}]}`, "items[0].sku", `invalid arguments: field "items[0].sku": expected string, got number`},
		{"NestedDuplicate", `{"amount":1,"nested":{"sku":"a","sku":"b","qty":1}}`, "nested", `invalid arguments: field "nested": duplicate field "sku"`},
		{"MapDuplicate", `{"amount":1,"meta":{"a":1,"a":2}}`, "meta", `invalid arguments: field "meta": duplicate field "a"`},
		{"MapValueType", `{"amount":1,"meta":{"a b":"x"}}`, `meta["a b"]`, `invalid arguments: field "meta[\"a b\"]": expected integer, got string`},
		{"MapValueNull", `{"amount":1,"names":{"k":null}}`, `names.k`, `invalid arguments: field "names.k": expected string, got null`},
		{"AnyDuplicate", `{"amount":1,"any":{"x":1,"x":2}}`, "any", `invalid arguments: field "any": duplicate field "x"`},
		{"AnyNestedDuplicate", `{"amount":1,"any":[0,{"x":{"y":1,"y":1}}]}`, "any[1].x", `invalid arguments: field "any[1].x": duplicate field "y"`},
		{"RawDuplicate", `{"amount":1,"raw":{"x":1,"x":2}}`, "raw", `invalid arguments: field "raw": duplicate field "x"`},
		{"RawWideDuplicate", `{"amount":1,"raw":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"i":11}}`, "raw", `invalid arguments: field "raw": duplicate field "i"`},
		{"InvalidUTF8", "{\"amount\":1,\"memo\":\"\xff\"}", "memo", `invalid arguments: field "memo": invalid UTF-8`},
		{"InvalidUTF8Key", "{\"amount\":1,\"\xffa\":1}", "", `invalid arguments: invalid UTF-8 in field name`},
		{"InvalidUTF8Nested", "{\"amount\":1,\"items\":[{\"sku\":\"a\xc3b\",\"qty\":1}]}", "items[0].sku", `invalid arguments: field "items[0].sku": invalid UTF-8`},
		{"InvalidUTF8InAny", "{\"amount\":1,\"any\":{\"k\":[\"\xed\xa0\x80\"]}}", "any.k[0]", `invalid arguments: field "any.k[0]": invalid UTF-8`},
		{"InvalidUTF8InRaw", "{\"amount\":1,\"raw\":\"\xfe\"}", "raw", `invalid arguments: field "raw": invalid UTF-8`},
		{"InvalidUTF8OutsideString", "{\"amount\":\xff}", "amount", `invalid arguments: field "amount": invalid UTF-8`},
		{"BadTimeSeparator", `{"amount":1,"when":"2026-06-01 09:00:00Z"}`, "when", `invalid arguments: field "when": expected an RFC 3339 date-time, got "2026-06-01 09:00:00Z"`},
		{"BadTime", `{"amount":1,"when":"yesterday"}`, "when", `invalid arguments: field "when": expected an RFC 3339 date-time, got "yesterday"`},
		{"TimeOutOfRange", `{"amount":1,"when":"0000-01-01T00:00:00+01:00"}`, "when", `invalid arguments: field "when": date-time "0000-01-01T00:00:00+01:00" is outside the years 0000 to 9999 in UTC`},
		{"BadBase64", `{"amount":1,"blob":"!!"}`, "blob", `invalid arguments: field "blob": invalid base64: illegal base64 data at input byte 0`},
		// Go's base64 decoder skips line breaks; json v2 does not.
		{"Base64LineBreak", `{"amount":1,"blob":"AQID\n"}`, "blob", `invalid arguments: field "blob": invalid base64: a line break at byte 4`},
		{"Base64CRLF", `{"amount":1,"blob":"AQ\r\nID"}`, "blob", `invalid arguments: field "blob": invalid base64: a line break at byte 2`},
		{"Truncated", `{"amount":1`, "", `invalid arguments: malformed JSON: unexpected end of input`},
		{"TruncatedValue", `{"amount":`, "amount", `invalid arguments: field "amount": malformed JSON: unexpected end of input`},
		{"MissingColon", `{"amount" 1}`, "amount", `invalid arguments: field "amount": malformed JSON at byte 10: invalid character '1' after object name (expecting ':')`},
		{"TrailingComma", `{"amount":1,}`, "", `invalid arguments: malformed JSON at byte 11: invalid character ',' at start of value`},
		{"BadLiteral", `{"amount":1,"flag":tru}`, "flag", `invalid arguments: field "flag": malformed JSON at byte 22: invalid character '}' in literal true (expecting 'e')`},
		{"TrailingObject", `{"amount":1} {}`, "", `invalid arguments: unexpected data after the arguments object`},
		{"TrailingGarbage", `{"amount":1}x`, "", `invalid arguments: unexpected data after the arguments object`},
		{"TrailingAfterNull", `null null`, "", `invalid arguments: unexpected data after the arguments object`},
		{"Depth65", deep(`{"amount":1,"any":`, 64), "any" + strings.Repeat("[0]", 63), `invalid arguments: field "any` + strings.Repeat("[0]", 63) + `": nesting is deeper than 64 levels`},
		{"Depth65Raw", deep(`{"amount":1,"raw":`, 64), "raw" + strings.Repeat("[0]", 63), `invalid arguments: field "raw` + strings.Repeat("[0]", 63) + `": nesting is deeper than 64 levels`},
		{"LongKeyClipped", `{"` + strings.Repeat("k", 100) + `":1}`, "", `invalid arguments: unknown field "` + strings.Repeat("k", 64) + `..." (known fields: amount, currency, small, count, ratio, flag, memo, level, temp, items, meta, any, raw, when, blob, nested, names)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := argschema.Decode(reflect.TypeFor[Args](), []byte(tt.in))
			var e *argschema.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want *argschema.Error", err, err)
			}
			if e.Field != tt.field {
				t.Errorf("Field %q, want %q", e.Field, tt.field)
			}
			if err.Error() != tt.want {
				t.Errorf("message\ngot  %s\nwant %s", err, tt.want)
			}
		})
	}
}

// TestDecode_Depth64 checks that the deepest allowed nesting decodes.
func TestDecode_Depth64(t *testing.T) {
	in := `{"amount":1,"raw":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + "}"
	got := decodeAs[Args](t, in)
	if want := strings.Repeat("[", 63) + strings.Repeat("]", 63); string(got.Raw) != want {
		t.Errorf("raw %s", got.Raw)
	}
}

// TestDecode_DeepInput checks that very deep input is refused without
// reading it all or exhausting the stack.
func TestDecode_DeepInput(t *testing.T) {
	for _, tt := range []struct {
		name string // where the nesting is
		in   string // raw arguments
		want string // complete message
	}{
		{"TopLevel", strings.Repeat("[", 10000), `invalid arguments: expected object, got array`},
		{"InAny", `{"any":` + strings.Repeat("[", 10000), `nesting is deeper than 64 levels`},
		{"InObjects", `{"any":` + strings.Repeat(`{"a":`, 10000), `nesting is deeper than 64 levels`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := argschema.Decode(reflect.TypeFor[Args](), []byte(tt.in))
			if err == nil || !strings.HasSuffix(err.Error(), tt.want) {
				t.Errorf("error %v, want suffix %s", err, tt.want)
			}
		})
	}
}

func TestDecode_TooLarge(t *testing.T) {
	in := []byte(`{"amount":1,"memo":"` + strings.Repeat("x", argschema.MaxInputSize) + `"}`)
	_, err := argschema.Decode(reflect.TypeFor[Args](), in)
	want := fmt.Sprintf("invalid arguments: input is %d bytes, larger than the 8388608-byte (8 MiB) limit", len(in))
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	var e *argschema.Error
	if !errors.As(err, &e) || e.Field != "" {
		t.Errorf("error %#v, want *Error at the top level", err)
	}
}

// TestDecode_Concurrent decodes one type from many goroutines; run with
// -race it checks that the shared analysis is read-only.
func TestDecode_Concurrent(t *testing.T) {
	type Fresh struct {
		N    int      `json:"n" min:"0"`
		Tags []string `json:"tags" default:"[\"t\"]"`
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				v, err := argschema.Decode(reflect.TypeFor[Fresh](), []byte(`{"n":3}`))
				if err != nil {
					t.Error(err)
					return
				}
				got := v.Interface().(Fresh)
				got.Tags[0] = "mutated"
				if _, err := argschema.Schema(reflect.TypeFor[Fresh]()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestDecode_AgreesWithSchema checks that Decode accepts exactly what the
// published schema allows, as an independent validator reads the schema,
// for documents that stay within what the schema can say (no 64-bit kind
// ranges, date-times or base64).
func TestDecode_AgreesWithSchema(t *testing.T) {
	published := compileSchema(t, reflect.TypeFor[Args]())
	for _, doc := range []string{
		`{"amount":1}`,
		`{"amount":1.0,"count":1e1}`,
		`{"amount":1.5}`,
		`{"amount":"1"}`,
		`{"amount":null}`,
		`{}`,
		`{"amount":1,"extra":1}`,
		`{"amount":1,"currency":"eur"}`,
		`{"amount":1,"currency":"gbp"}`,
		`{"amount":1,"count":10}`,
		`{"amount":1,"count":11}`,
		`{"amount":1,"count":0}`,
		`{"amount":1,"temp":-273.15}`,
		`{"amount":1,"temp":-273.16}`,
		`{"amount":1,"memo":"héllo"}`,
		`{"amount":1,"memo":"héllo!"}`,
		`{"amount":1,"level":null}`,
		`{"amount":1,"level":3}`,
		`{"amount":1,"level":4}`,
		`{"amount":1,"items":[{"sku":"a","qty":1}]}`,
		`{"amount":1,"items":[{"sku":"a"}]}`,
		`{"amount":1,"items":null}`,
		`{"amount":1,"nested":null}`,
		`{"amount":1,"nested":{"sku":"a","qty":1,"x":1}}`,
		`{"amount":1,"meta":{"a":1}}`,
		`{"amount":1,"meta":{"a":"1"}}`,
		`{"amount":1,"names":{"a":null}}`,
		`{"amount":1,"any":[1,{"a":null}],"raw":{"b":[]}}`,
	} {
		t.Run(doc, func(t *testing.T) {
			_, derr := argschema.Decode(reflect.TypeFor[Args](), []byte(doc))
			verr := published.Validate([]byte(doc))
			if (derr == nil) != (verr == nil) {
				t.Errorf("Decode: %v\nschema: %v", derr, verr)
			}
		})
	}
}

// An unknown field's refusal lists the fields the object takes, at most
// twenty of them, so an agent can correct a misspelling from it alone.
func TestDecode_UnknownFieldNamesKnown(t *testing.T) {
	type Wide struct {
		F01, F02, F03, F04, F05, F06, F07, F08, F09, F10, F11 int `json:",omitempty"`
		F12, F13, F14, F15, F16, F17, F18, F19, F20, F21, F22 int `json:",omitempty"`
	}
	for _, tc := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[struct{}](), `invalid arguments: unknown field "x" (the object takes no fields)`},
		{reflect.TypeFor[Wide](), `invalid arguments: unknown field "x" (known fields: F01, F02, F03, F04, F05, F06, F07, F08, F09, F10, F11, F12, F13, F14, F15, F16, F17, F18, F19, F20 and 2 more)`},
	} {
		if _, err := argschema.Decode(tc.typ, []byte(`{"x":1}`)); err == nil || err.Error() != tc.want {
			t.Errorf("%v:\ngot  %v\nwant %s", tc.typ, err, tc.want)
		}
	}
}

// TestDecode_KindRangesInSchema: the published schema bounds an integer
// field by its Go kind where a JSON Schema bound says the range exactly,
// so a client validating against it refuses what Decode refuses; a uint8
// was published as any integer, and -1 and 256 passed the schema.
func TestDecode_KindRangesInSchema(t *testing.T) {
	type Kinds struct {
		Small uint8  `json:"small,omitempty"`
		Short int16  `json:"short,omitempty"`
		Word  uint32 `json:"word,omitempty"`
		Count uint   `json:"count,omitempty"`
		Level uint8  `json:"level,omitempty" enum:"1,2,3"`
		Pct   *uint8 `json:"pct" max:"100"`
	}
	published := compileSchema(t, reflect.TypeFor[Kinds]())
	for _, doc := range []string{
		`{"small":255}`, `{"small":256}`, `{"small":-1}`, `{"small":0}`,
		`{"short":-32768}`, `{"short":-32769}`, `{"short":32767}`, `{"short":32768}`,
		`{"word":4294967295}`, `{"word":4294967296}`, `{"word":-1}`,
		`{"count":-1}`, `{"count":0}`, `{"level":3}`, `{"level":4}`,
		`{"pct":100}`, `{"pct":101}`, `{"pct":-1}`, `{"pct":null}`,
	} {
		t.Run(doc, func(t *testing.T) {
			_, derr := argschema.Decode(reflect.TypeFor[Kinds](), []byte(doc))
			verr := published.Validate([]byte(doc))
			if (derr == nil) != (verr == nil) {
				t.Errorf("Decode: %v\nschema: %v", derr, verr)
			}
		})
	}
}

// TestDecode_BoundsPast2to53: min and max tags past 2^53 on an integer
// field are checked, and published, as the integers written, so a client
// validating against the schema refuses what Decode refuses; they were
// published as their float64s (9223372036854775807 as
// 9223372036854776000, which let 9223372036854775808 through) and compared
// as float64s (9007199254740993 passed a max of 9007199254740992).
func TestDecode_BoundsPast2to53(t *testing.T) {
	type Args struct {
		Whole int64  `json:"whole,omitempty" min:"-9223372036854775808" max:"9223372036854775807"`
		Near  int64  `json:"near,omitempty" min:"-9223372036854775807" max:"9007199254740992"`
		Big   uint64 `json:"big,omitempty" min:"9007199254740993" max:"18446744073709551614"`
	}
	published := compileSchema(t, reflect.TypeFor[Args]())
	for _, tc := range []struct{ in, problem string }{
		{`{"whole":9223372036854775807}`, ""},
		{`{"whole":9223372036854775808}`, `invalid arguments: field "whole": number 9223372036854775808 is out of range for int64`},
		{`{"whole":-9223372036854775808}`, ""},
		{`{"whole":-9223372036854775809}`, `invalid arguments: field "whole": number -9223372036854775809 is out of range for int64`},
		{`{"near":9007199254740992}`, ""},
		{`{"near":9007199254740993}`, `invalid arguments: field "near": value 9007199254740993 is greater than maximum 9007199254740992`},
		{`{"near":-9223372036854775807}`, ""},
		{`{"near":-9223372036854775808}`, `invalid arguments: field "near": value -9223372036854775808 is less than minimum -9223372036854775807`},
		{`{"big":9007199254740993}`, ""},
		{`{"big":9007199254740992}`, `invalid arguments: field "big": value 9007199254740992 is less than minimum 9007199254740993`},
		{`{"big":18446744073709551614}`, ""},
		{`{"big":18446744073709551615}`, `invalid arguments: field "big": value 18446744073709551615 is greater than maximum 18446744073709551614`},
	} {
		_, err := argschema.Decode(reflect.TypeFor[Args](), []byte(tc.in))
		if tc.problem == "" && err != nil || tc.problem != "" && (err == nil || err.Error() != tc.problem) {
			t.Errorf("%s: Decode says %v, want %q", tc.in, err, tc.problem)
		}
		if verr := published.Validate([]byte(tc.in)); (verr == nil) != (tc.problem == "") {
			t.Errorf("%s: the published schema says %v", tc.in, verr)
		}
	}
}

// TestDecode_JSONNumber: a json.Number takes a JSON number, kept as
// written, as encoding/json has it, and publishes a number; it was
// published as a string, refused 5 and took "abc".
func TestDecode_JSONNumber(t *testing.T) {
	type Args struct {
		N     json.Number  `json:"n"`
		Price *json.Number `json:"price,omitempty" min:"0"`
		Level json.Number  `json:"level,omitempty" enum:"1,2.5" default:"1"`
	}
	published := compileSchema(t, reflect.TypeFor[Args]())
	for _, tc := range []struct{ in, n, problem string }{
		{`{"n":5}`, "5", ""},
		{`{"n":12345678901234567890.125}`, "12345678901234567890.125", ""},
		{`{"n":-1e400}`, "-1e400", ""},
		{`{"n":"abc"}`, "", `invalid arguments: field "n": expected number, got string`},
		{`{"n":5,"price":-1}`, "", `invalid arguments: field "price": value -1 is less than minimum 0`},
		{`{"n":5,"level":3}`, "", `invalid arguments: field "level": value 3 is not one of 1, 2.5`},
	} {
		v, err := argschema.Decode(reflect.TypeFor[Args](), []byte(tc.in))
		if tc.problem != "" {
			if err == nil || err.Error() != tc.problem {
				t.Errorf("%s: %v, want %s", tc.in, err, tc.problem)
			}
		} else if err != nil || v.Interface().(Args).N != json.Number(tc.n) || v.Interface().(Args).Level != "1" {
			t.Errorf("%s: %v (%v), want n %s and level 1 (its default)", tc.in, v, err, tc.n)
		}
		if verr := published.Validate([]byte(tc.in)); (verr == nil) != (tc.problem == "") {
			t.Errorf("%s: the published schema says %v", tc.in, verr)
		}
	}
}

// Page and its embedders: Page's Name is hidden, in Go, by the Name of the
// struct embedding it, but its JSON name is its own, so json v2 (like
// encoding/json) makes it a member; and a field json skips ("-") hides
// nothing.
type Page struct {
	Limit int    `json:"limit" max:"100"`
	Name  string `json:"page_name,omitempty"`
}

type SearchArgs struct {
	Page
	Name string `json:"name"`
}

type SkippedLimit struct {
	Page
	Limit int `json:"-"`
}

// TestDecode_EmbeddedShadowedGoName: a field of an embedded struct whose
// Go name a shallower field shares, under a JSON name of its own, is a
// property of the schema, decodes, and is in the output schema, as json v2
// encodes it. Before, Go's field visibility hid it: the schema left it
// out, Decode refused it as unknown, and the result failed its own schema.
func TestDecode_EmbeddedShadowedGoName(t *testing.T) {
	got := decodeAs[SearchArgs](t, `{"name":"n","limit":10,"page_name":"p"}`)
	if want := (SearchArgs{Page: Page{Limit: 10, Name: "p"}, Name: "n"}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := decodeAs[SkippedLimit](t, `{"limit":10}`); got.Page.Limit != 10 || got.Limit != 0 {
		t.Errorf("got %+v, want Page.Limit 10", got)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[SearchArgs](), reflect.TypeFor[SkippedLimit]()} {
		in, err := argschema.Schema(typ)
		if err != nil {
			t.Fatal(err)
		}
		out := argschema.OutputOf(typ).Schema
		for _, s := range []json.RawMessage{in, out} {
			if !strings.Contains(string(s), `"limit":{`) || (typ == reflect.TypeFor[SearchArgs]() && !strings.Contains(string(s), `"page_name":{`)) {
				t.Errorf("%v: schema %s, want limit (and page_name) among its properties", typ, s)
			}
		}
	}
}

// TestDecode_Float32Bounds: a float32 field's bounds and enum are the
// numbers as written, in the schema and in the check alike, where the
// check compared the argument rounded to a float32 with the bound rounded
// too, and the schema published the rounded bound: 0.1 passed Decode and
// failed the schema's minimum of 0.10000000149011612.
func TestDecode_Float32Bounds(t *testing.T) {
	type args struct {
		G float32 `json:"g,omitempty" min:"0.1"`
		E float32 `json:"e,omitempty" enum:"0.1,0.2"`
	}
	typ := reflect.TypeFor[args]()
	schema, err := argschema.Schema(typ)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(schema), `"minimum":0.1}`) || !strings.Contains(string(schema), `"enum":[0.1,0.2]`) {
		t.Errorf("schema %s, want minimum 0.1 and enum [0.1,0.2] as written", schema)
	}
	for in, want := range map[string]string{
		`{"g":0.1}`:                 "",
		`{"g":0.099999999}`:         `invalid arguments: field "g": value 0.099999999 is less than minimum 0.1`,
		`{"e":0.2}`:                 "",
		`{"e":0.10000000149011612}`: `invalid arguments: field "e": value 0.10000000149011612 is not one of 0.1, 0.2`,
		`{"g":1e39}`:                `invalid arguments: field "g": number 1e39 is out of range for float32`,
	} {
		_, err := argschema.Decode(typ, []byte(in))
		if got := fmt.Sprint(err); want == "" && err != nil || want != "" && got != want {
			t.Errorf("Decode(%s): %v, want %q", in, err, want)
		}
	}
}
