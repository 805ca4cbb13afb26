package argschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

const (
	// MaxInputSize is the largest raw argument document Decode accepts, in bytes.
	MaxInputSize = 8 << 20
	// MaxDepth is the deepest nesting of objects and arrays Decode accepts;
	// the top-level object is level 1.
	MaxDepth = 64
)

// Error is an invalid-arguments error returned by Decode. Its text is what an
// agent sees.
type Error struct {
	// Field is the JSON path of the offending value, like "amount" or
	// "items[2].sku"; it is "" for the top level. Keys that are not plain
	// names are written in brackets, like meta["a b"].
	Field string
	// Problem says what is wrong with the value at Field, like
	// `expected integer, got string`. For an unknown, duplicate or missing
	// field, Field is the path of the enclosing object and Problem names the
	// key, like `unknown field "amout"`.
	Problem string
}

// Error returns the complete human text, like
// `invalid arguments: field "amount": expected integer, got string`.
func (e *Error) Error() string {
	if e.Field == "" {
		return "invalid arguments: " + e.Problem
	}
	return "invalid arguments: field " + strconv.Quote(e.Field) + ": " + e.Problem
}

// Schema derives the JSON Schema (the draft 2020-12 subset MCP tool input
// schemas use) of t, which must be a struct type or a pointer to one. It
// returns an error naming the field for unsupported field types and invalid
// tags. The output is deterministic: properties in field order, compact JSON,
// byte-identical on every call. The caller owns the returned slice.
func Schema(t reflect.Type) (json.RawMessage, error) {
	e := load(t)
	if e.err != nil {
		return nil, e.err
	}
	return append(json.RawMessage(nil), e.json...), nil
}

// Decode parses raw as arguments for t and returns a new value of type t
// (for a pointer type, a pointer to a new struct). Empty input and null mean
// {}. Absent optional fields are left zero (pointers nil) or set to their
// default. Errors about raw are *Error; if t itself is not supported, Decode
// returns the error Schema returns for it.
func Decode(t reflect.Type, raw []byte) (reflect.Value, error) {
	e := load(t)
	if e.err != nil {
		return reflect.Value{}, e.err
	}
	if len(raw) > MaxInputSize {
		return reflect.Value{}, &Error{Problem: fmt.Sprintf("input is %d bytes, larger than the %d-byte (8 MiB) limit", len(raw), MaxInputSize)}
	}
	return e.decode(t, raw)
}

// entry is the cached analysis of one type: its schema, or the reason it is
// not supported. It is read-only once built.
type entry struct {
	schema *jsonschema.Schema
	nums   map[*jsonschema.Schema]numeric // each integer and number node
	json   []byte                         // schema, marshalled
	err    error
}

// cache maps reflect.Type to *entry.
var cache sync.Map

func load(t reflect.Type) *entry {
	if t == nil {
		return &entry{err: errors.New("argschema: nil type")}
	}
	if e, ok := cache.Load(t); ok {
		return e.(*entry)
	}
	e := compile(t)
	actual, _ := cache.LoadOrStore(t, e)
	return actual.(*entry)
}

func compile(t reflect.Type) *entry {
	st := t
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() != reflect.Struct {
		return &entry{err: fmt.Errorf("argschema: %v is not a struct type or a pointer to one", t)}
	}
	s, nums, err := build(t, st)
	if err != nil {
		return &entry{err: err}
	}
	b, err := marshalBounds(s, nums)
	if err != nil {
		return &entry{err: fmt.Errorf("argschema: %v: %w", t, err)}
	}
	return &entry{schema: s, nums: nums, json: b}
}
