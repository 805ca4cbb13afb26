package argschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// unmarshalOptions decode a checked document: unknown members stay refused,
// an `any` holds what encoding/json with UseNumber gives, a json.Number
// the number as written, and a
// time.Duration is its integer nanoseconds, as encoding/json has it (the
// schema says integer).
var unmarshalOptions = jsonv2.JoinOptions(
	jsonv2.RejectUnknownMembers(true),
	jsonv1.FormatDurationAsNano(true),
	jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *any) error {
		raw, err := dec.ReadValue()
		if err != nil {
			return err
		}
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		return d.Decode(v)
	}), jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *json.Number) error {
		// A json.Number is the number's literal, as encoding/json has it;
		// the schema says number, and the check let nothing else through.
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if tok.Kind() != '0' {
			return errors.New("a json.Number takes a JSON number")
		}
		*v = json.Number(tok.String())
		return nil
	}))),
)

// decode checks raw against the entry's schema, then decodes the checked
// document into a new value of type t with json v2.
func (e *entry) decode(t reflect.Type, raw []byte) (reflect.Value, error) {
	switch trimmed := bytes.TrimSpace(raw); {
	case len(trimmed) == 0 || string(trimmed) == "null":
		raw = []byte("{}")
	case bytes.HasPrefix(trimmed, []byte("null")) && !jsontext.Value(trimmed).IsValid():
		return reflect.Value{}, &Error{Problem: "unexpected data after the arguments object"}
	}
	// The check refuses anything but an object at its first byte, however
	// deep the input.
	doc, cerr := check(e.schema, e.nums, raw, "arguments object")
	if cerr != nil {
		return reflect.Value{}, cerr
	}
	v := reflect.New(t)
	if err := jsonv2.Unmarshal(doc, v.Interface(), unmarshalOptions); err != nil {
		// The check refuses everything json v2 would; reaching this is a defect.
		field := ""
		var se *jsonv2.SemanticError
		if errors.As(err, &se) {
			field = strings.TrimPrefix(string(se.JSONPointer), "/")
		}
		if se != nil && se.Err != nil {
			// json v2's own wording varies from one process to the next.
			err = se.Err
		}
		return reflect.Value{}, &Error{Field: field, Problem: "cannot decode: " + err.Error()}
	}
	return v.Elem(), nil
}
