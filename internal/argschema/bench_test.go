package argschema_test

import (
	"reflect"
	"testing"

	"github.com/seahaven/seahaven/internal/argschema"
)

// BenchmarkDecode measures the per-call cost of a typical three-field tool
// call, which every call pays before its tool runs.
func BenchmarkDecode(b *testing.B) {
	typ := reflect.TypeFor[ChargeArgs]()
	raw := []byte(`{"amount":500,"currency":"eur","memo":"coffee"}`)
	if _, err := argschema.Decode(typ, raw); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := argschema.Decode(typ, raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode_Nested measures a larger document with arrays of structs,
// a map and free-form JSON.
func BenchmarkDecode_Nested(b *testing.B) {
	typ := reflect.TypeFor[Args]()
	raw := []byte(`{"amount":1,"currency":"usd","items":[{"sku":"a","qty":1},{"sku":"b","qty":2},{"sku":"c","qty":3}],` +
		`"meta":{"x":1,"y":2},"any":{"k":[1,2,{"z":null}]},"raw":{"a":[true,false]},"when":"2026-06-01T09:00:00Z","nested":{"sku":"n","qty":9}}`)
	if _, err := argschema.Decode(typ, raw); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := argschema.Decode(typ, raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSchema measures Schema once the type's analysis is cached.
func BenchmarkSchema(b *testing.B) {
	typ := reflect.TypeFor[RichArgs]()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := argschema.Schema(typ); err != nil {
			b.Fatal(err)
		}
	}
}
