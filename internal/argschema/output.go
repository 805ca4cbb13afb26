package argschema

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Output is the JSON Schema of what a tool returning values of type t puts
// in MCP's structuredContent, which must be an object: the result itself
// when t is a struct type (its JSON is always an object), else the result
// wrapped as {"result": <result>}, which Wrapped reports.
//
// The schema describes the result as the server encodes it (json v2, nil
// slices and maps as null): pointers, slices and maps are nullable, a field
// is required unless it is omitempty or omitzero or reached through an
// embedded pointer, and a type with its own JSON or text encoding, an
// interface or a type seen again inside itself is described as any value.
// Output never fails; it is safe for concurrent use, and the caller owns
// the returned slice.
type Output struct {
	Schema  json.RawMessage
	Wrapped bool
}

// OutputOf returns the output schema of results of type t.
func OutputOf(t reflect.Type) Output {
	var o Output
	s := outSchema(t, map[reflect.Type]bool{})
	if t.Kind() != reflect.Struct || s.Type != "object" {
		o.Wrapped = true
		s = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"result": s}, Required: []string{"result"}}
	}
	b, err := marshal(s)
	if err != nil { // a schema of plain values always encodes
		b = []byte(`{"type":"object"}`)
	}
	o.Schema = b
	return o
}

// outSchema describes values of type t as encoded; seen holds the struct
// types being described, so a recursive type ends in "any value".
func outSchema(t reflect.Type, seen map[reflect.Type]bool) *jsonschema.Schema {
	if t.Kind() == reflect.Pointer {
		return nullable(outSchema(t.Elem(), seen))
	}
	s := scalar(t)
	switch k := t.Kind(); {
	case t == timeType || t == rawType || k == reflect.Interface:
		return s
	case implements(t, jsonMarshaler):
		return &jsonschema.Schema{}
	case implements(t, textMarshaler):
		return &jsonschema.Schema{Type: "string"}
	case k == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return nullable(s)
	case s != nil:
		return s
	case k == reflect.Slice:
		return nullable(&jsonschema.Schema{Type: "array", Items: outSchema(t.Elem(), seen)})
	case k == reflect.Array:
		n := t.Len()
		return &jsonschema.Schema{Type: "array", Items: outSchema(t.Elem(), seen), MinItems: &n, MaxItems: &n}
	case k == reflect.Map:
		return nullable(&jsonschema.Schema{Type: "object", AdditionalProperties: outSchema(t.Elem(), seen)})
	case k == reflect.Struct && !seen[t]:
		seen[t] = true
		defer delete(seen, t)
		return outStruct(t, seen)
	}
	return &jsonschema.Schema{}
}

// outStruct describes a struct's JSON object: its fields by json v2's
// rules for names and embedding (see fields). A tag option other than
// omitempty and omitzero (string, embed, format) makes the field, or the
// object's other members, any value.
func outStruct(t reflect.Type, seen map[reflect.Type]bool) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	closed := true
	for _, f := range outFields(t) {
		var p *jsonschema.Schema
		switch {
		case f.inline:
			closed = false
			continue
		case f.other != "": // string or format
			p = &jsonschema.Schema{}
		default:
			p = outSchema(f.sf.Type, seen)
		}
		if doc, ok := f.sf.Tag.Lookup("doc"); ok {
			p.Description = doc
		}
		s.Properties[f.name] = p
		s.PropertyOrder = append(s.PropertyOrder, f.name)
		if !f.optional && !throughPointer(t, f.sf.Index) {
			s.Required = append(s.Required, f.name)
		}
	}
	if closed {
		s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	}
	return s
}

// outFields lists the members of t's encoded object in field order, the
// fields of one name settled by dominant; fields lists an argument
// struct's with it, once it has refused what outFields describes as any
// value.
func outFields(t reflect.Type) []field {
	var all []field
	for _, sf := range StructFields(t) {
		tag := sf.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if tag == "-" || inlined(sf, name) || !sf.IsExported() {
			continue // skipped, or inlined: its fields are visible fields of t
		}
		all = append(all, newField(sf, name, opts))
	}
	return dominant(all)
}

// throughPointer reports whether the field at index is reached through an
// embedded pointer, which may be nil and then leaves the field out.
func throughPointer(t reflect.Type, index []int) bool {
	for n := 1; n < len(index); n++ {
		if t.FieldByIndex(index[:n]).Type.Kind() == reflect.Pointer {
			return true
		}
	}
	return false
}

// nullable adds null to the types s allows; s allowing any value already
// allows null.
func nullable(s *jsonschema.Schema) *jsonschema.Schema {
	switch {
	case s.Type != "":
		s.Types, s.Type = []string{s.Type, "null"}, ""
	case len(s.Types) > 0 && !slices.Contains(s.Types, "null"):
		s.Types = append(s.Types, "null")
	}
	return s
}

// Unencodable returns a type reachable from t that no value of t can be
// encoded as JSON with (a channel, a function, a complex number or an
// unsafe pointer), through pointers, slices, arrays, map values and the
// fields of structs encoded as objects; nil when there is none. A value
// behind an interface, or of a type with its own JSON or text encoding,
// is not looked into.
func Unencodable(t reflect.Type) reflect.Type {
	return unencodable(t, map[reflect.Type]bool{})
}

func unencodable(t reflect.Type, seen map[reflect.Type]bool) reflect.Type {
	if seen[t] || t == timeType || t == rawType ||
		implements(t, jsonMarshaler) || implements(t, textMarshaler) {
		return nil
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer:
		return t
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return unencodable(t.Elem(), seen)
	case reflect.Struct:
		for _, f := range outFields(t) {
			if f.other != "" { // embedded, or an encoding of its own
				continue
			}
			if bad := unencodable(f.sf.Type, seen); bad != nil {
				return bad
			}
		}
	}
	return nil
}
