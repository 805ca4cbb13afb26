package openenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Messages are read strictly, with json v2: names match exactly (not
// case-insensitively, as encoding/json's struct decoding would), no object
// names a key twice, unknown keys are refused, and every failure is
// reported in pydantic's shape with its location, so clients written
// against OpenEnv read them unchanged. A JSON null counts as a key left
// out. Invalid UTF-8 in a string reads as U+FFFD, as encoding/json reads it.
// A /ws step calling a tool, the message a training loop sends most, is
// first read in one pass (readCallToolStep); whatever that pass does not
// take is read member by member here, which is what locates a fault.

// readOpts are the json v2 options of every read of JSON checkJSON
// accepted whole. checkJSON has found every name an object repeats, so
// reads do not track names again: a message of many keys pays for that
// once, not once per read.
var readOpts = jsonv2.JoinOptions(jsontext.AllowInvalidUTF8(true), jsonv2.RejectUnknownMembers(true), jsontext.AllowDuplicateNames(true))

// strictOpts are readOpts for JSON nothing checked yet (readCallToolStep):
// a repeated name fails the read.
var strictOpts = jsonv2.JoinOptions(readOpts, jsontext.AllowDuplicateNames(false))

// looseOpts read JSON that may repeat a name, to locate or measure it.
var looseOpts = jsonv2.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

// checkJSON refuses raw unless it is one JSON value in which no object
// names a key twice: JSON that does not parse is an INVALID_JSON error in
// encoding/json's words (clients see them), with its failure at prefix; a
// repeated key is a validation error at its pydantic location under
// prefix, the first one's.
func checkJSON(raw []byte, prefix []any) *protoError {
	// First: finding repeated names keeps every name of an object.
	if ptr, wide := wideObject(raw); wide {
		return invalid([]fieldError{{Type: "too_long", Loc: at(prefix, locOf(raw, ptr)...),
			Msg:   fmt.Sprintf("Object should have at most %d members, not more", maxMembers),
			Input: mustEncode(fmt.Sprintf("(an object of more than %d members, not echoed)", maxMembers))}})
	}
	if jsontext.Value(raw).IsValid(jsontext.AllowInvalidUTF8(true)) {
		return nil
	}
	d := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowInvalidUTF8(true))
	_, err := d.ReadValue()
	if err == nil {
		if _, err = d.ReadToken(); err == io.EOF {
			return nil
		}
	}
	var se *jsontext.SyntacticError
	if errors.As(err, &se) && errors.Is(se.Err, jsontext.ErrDuplicateName) {
		loc := locOf(raw, se.JSONPointer)
		key := loc[len(loc)-1]
		return invalid([]fieldError{{Type: "duplicate_key", Loc: at(prefix, loc...),
			Msg: fmt.Sprintf("Duplicate key %q: an object may name each key once", key), Input: mustEncode(key)}})
	}
	var v any
	if err = json.Unmarshal(raw, &v); err == nil { // the two disagree only on pathological input
		err = errors.New("not a single JSON value")
	}
	reason := syntaxMessage(raw, err)
	return &protoError{code: codeInvalidJSON, message: "Invalid JSON: " + reason,
		errors: []fieldError{{Type: "json_invalid", Loc: at(prefix), Msg: "JSON decode error", Input: json.RawMessage("{}"), Ctx: &errorCtx{reason}}}}
}

// maxMembers is how many members an object of a message may have. A
// message is refused past it before anything reads it: a million keys,
// read into a map (a message's members, its params, its startup
// keywords), would take hundreds of megabytes.
const maxMembers = 100_000

// wideObject returns the location in raw of its first object of more than
// maxMembers members, if it has one before anything that does not parse.
// JSON too short to hold one is not read.
func wideObject(raw []byte) (jsontext.Pointer, bool) {
	if len(raw) < len(`"":0,`)*maxMembers {
		return "", false
	}
	d := jsontext.NewDecoder(bytes.NewReader(raw), looseOpts)
	for {
		if _, err := d.ReadToken(); err != nil {
			return "", false
		}
		// An object's length counts its names and its values; the
		// pointer names the member just read.
		if kind, n := d.StackIndex(d.StackDepth()); kind == '{' && n > 2*maxMembers {
			return d.StackPointer().Parent(), true
		}
	}
}

// maxDepth is how deep arrays and objects nest in JSON that encoding/json
// and json v2 read.
const maxDepth = 10000

// syntaxMessage is the text of err, encoding/json's failure to read raw.
// encoding/json names an unexpected byte as if it were a character of its
// own, so a character outside ASCII, a typographic quote say, shows as
// another ('â' for '“'): the text names the character raw holds there
// instead, with its code point, or the byte when it starts no UTF-8
// character.
func syntaxMessage(raw []byte, err error) string {
	msg := err.Error()
	var se *json.SyntaxError
	if !errors.As(err, &se) || se.Offset < 1 || se.Offset > int64(len(raw)) {
		return msg
	}
	if strings.HasSuffix(msg, "exceeded max depth") { // encoding/json's "invalid character '[' exceeded max depth"
		return fmt.Sprintf("arrays and objects nested past the depth limit of %d (at byte %d)", maxDepth, se.Offset-1)
	}
	b := raw[se.Offset-1]
	if b < utf8.RuneSelf {
		return msg
	}
	shown := "'" + string(rune(b)) + "'" // as encoding/json quotes it
	if !strings.Contains(msg, shown) {
		return msg
	}
	r, size := utf8.DecodeRune(raw[se.Offset-1:])
	name := fmt.Sprintf("byte 0x%02X (not UTF-8)", b)
	switch {
	case r == '\ufeff':
		name = "byte order mark U+FEFF"
	case r != utf8.RuneError || size > 1:
		name = fmt.Sprintf("character %q (U+%04X)", r, r)
	}
	return strings.Replace(msg, "character "+shown, name, 1)
}

// locOf turns a JSON pointer into raw into a pydantic location: object keys
// as strings, array indexes as numbers.
func locOf(raw []byte, ptr jsontext.Pointer) []any {
	var loc []any
	v := jsontext.Value(raw)
	for tok := range ptr.Tokens() {
		switch v.Kind() {
		case '[':
			var elems []jsontext.Value
			n, _ := strconv.Atoi(tok)
			loc = append(loc, n)
			if jsonv2.Unmarshal(v, &elems, looseOpts) != nil || n >= len(elems) {
				return loc
			}
			v = elems[n]
		default:
			var m map[string]jsontext.Value
			loc = append(loc, tok)
			if jsonv2.Unmarshal(v, &m, looseOpts) != nil {
				return loc
			}
			v = m[tok]
		}
	}
	return loc
}

// members decodes raw, JSON that checkJSON accepted, as an object; ok is
// false when it is not one, or when it holds an object checkJSON refuses
// as too wide (a message read before it is checked builds no map of its
// members).
func members(raw jsontext.Value) (m map[string]jsontext.Value, ok bool) {
	if raw.Kind() != '{' {
		return nil, false
	}
	if _, wide := wideObject(raw); wide {
		return nil, false
	}
	return m, jsonv2.Unmarshal(raw, &m, readOpts) == nil
}

// problem is a value that has the right JSON type but breaks a rule of the
// protocol: the pydantic type and message of its failure.
type problem struct{ typ, msg string }

func (p *problem) Error() string { return p.msg }

// pydanticTypes name a value of the wrong JSON type by the Go kind it
// decodes into.
var pydanticTypes = map[reflect.Kind]string{
	reflect.String: "string_type", reflect.Int64: "int_type", reflect.Float64: "float_type",
	reflect.Bool: "bool_type", reflect.Map: "dict_type", reflect.Slice: "list_type",
}

// typeMessages are pydantic's messages for a value of the wrong type.
var typeMessages = map[string]string{
	"int_type":    "Input should be a valid integer",
	"string_type": "Input should be a valid string",
	"bool_type":   "Input should be a valid boolean",
	"dict_type":   "Input should be a valid dictionary",
	"list_type":   "Input should be a valid list",
	"float_type":  "Input should be a valid number",
	"scalar_type": "Input should be a valid string, number, boolean or null",
}

// decodeMembers decodes the members of m into the fields of the struct dst
// points to, by their json tags, in key order: a key dst has no field for is
// extra_forbidden, a value that fails to decode is reported at loc and its
// key, as the *problem its type returned or as the type error its field's
// kind names. A pointer field is optional, as pydantic's Optional: null
// reads as the key left out. Other fields refuse null, but for types that
// read it themselves (their UnmarshalJSON) and raw JSON. Unknown keys past
// the maxProblems a reply lists are counted, not built, so a message of a
// million keys costs a count, not a million problems.
func decodeMembers(m map[string]jsontext.Value, loc []any, dst any) []fieldError {
	v := reflect.ValueOf(dst).Elem()
	fields := fieldsOf(v.Type())
	var errs []fieldError
	for _, k := range slices.Sorted(maps.Keys(m)) {
		val := m[k]
		i, ok := fields[k]
		if !ok {
			errs = addExtra(errs, loc, k, val)
			continue
		}
		f := v.Field(i)
		if val.Kind() == 'n' && f.Kind() == reflect.Pointer {
			continue
		}
		var err error
		_, custom := f.Addr().Interface().(json.Unmarshaler)
		if val.Kind() == 'n' && !custom && f.Type() != reflect.TypeFor[jsontext.Value]() {
			err = errors.New("null")
		} else if err = jsonv2.Unmarshal(val, f.Addr().Interface(), readOpts); err == nil {
			continue
		}
		var p *problem
		if errors.As(err, &p) {
			input := inputOf(val)
			if p.typ == "too_long" { // too large to echo: its size instead
				input = mustEncode(fmt.Sprintf("(%d bytes, not echoed)", len(val)))
			}
			errs = append(errs, fieldError{Type: p.typ, Loc: at(loc, k), Msg: p.msg, Input: input})
			continue
		}
		t := f.Type()
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		errs = append(errs, typeError(pydanticTypes[t.Kind()], at(loc, k), val))
	}
	return errs
}

// addExtra appends to errs the extra_forbidden problem of the unknown key k
// at loc. Once errs holds the maxProblems a reply lists, the key is only
// counted, in an entry whose more counts the keys past them.
func addExtra(errs []fieldError, loc []any, k string, raw []byte) []fieldError {
	switch {
	case len(errs) < maxProblems:
		return append(errs, extraForbidden(at(loc, k), raw))
	case errs[len(errs)-1].more > 0:
		errs[len(errs)-1].more++
		return errs
	}
	return append(errs, fieldError{more: 1})
}

// structFields caches fieldsOf.
var structFields sync.Map // reflect.Type -> map[string]int

// fieldsOf maps the json tag names of a struct type's fields to their
// indexes.
func fieldsOf(t reflect.Type) map[string]int {
	if m, ok := structFields.Load(t); ok {
		return m.(map[string]int)
	}
	m := map[string]int{}
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			m[name] = i
		}
	}
	structFields.Store(t, m)
	return m
}

// decodeObject decodes raw, JSON that checkJSON accepted, into dst as
// decodeMembers does, and reports each required key raw lacks.
func decodeObject(raw jsontext.Value, loc []any, dst any, required ...string) []fieldError {
	m, ok := members(raw)
	if !ok {
		return []fieldError{typeError("dict_type", at(loc), raw)}
	}
	return decodeRequired(m, raw, loc, dst, required...)
}

// decodeRequired is decodeObject for raw's members m.
func decodeRequired(m map[string]jsontext.Value, raw []byte, loc []any, dst any, required ...string) []fieldError {
	errs := decodeMembers(m, loc, dst)
	for _, k := range required {
		if _, present := m[k]; !present {
			errs = append(errs, missing(at(loc, k), raw))
		}
	}
	return errs
}

// at returns a fresh location: prefix followed by more.
func at(prefix []any, more ...any) []any {
	loc := make([]any, 0, len(prefix)+len(more))
	return append(append(loc, prefix...), more...)
}

// maxEchoDepth bounds the nesting of an input echoed in a validation error.
// A reply wraps the input a few levels deeper, and encoding/json refuses
// JSON nested more than 10000 levels, so echoing input nested that deep
// would leave the refusal itself unencodable.
const maxEchoDepth = 1000

// deepInput stands in for an input nested more than maxEchoDepth levels.
var deepInput = json.RawMessage(`"(input nested more than 1000 levels deep, not echoed)"`)

// inputOf returns raw for a fieldError's input, null when absent, and as
// valid UTF-8: echoing a client's input never puts invalid UTF-8 in a text
// frame.
func inputOf(raw []byte) json.RawMessage {
	if raw = bytes.TrimSpace(raw); len(raw) == 0 {
		return json.RawMessage("null")
	}
	d := jsontext.NewDecoder(bytes.NewReader(raw), looseOpts)
	for {
		if _, err := d.ReadToken(); err != nil {
			break
		}
		if d.StackDepth() > maxEchoDepth {
			return deepInput
		}
	}
	return bytes.ToValidUTF8(raw, []byte("\uFFFD"))
}

func extraForbidden(loc []any, raw []byte) fieldError {
	return fieldError{Type: "extra_forbidden", Loc: loc, Msg: "Extra inputs are not permitted", Input: inputOf(raw)}
}

func missing(loc []any, parent []byte) fieldError {
	return fieldError{Type: "missing", Loc: loc, Msg: "Field required", Input: inputOf(parent)}
}

// typeError reports a value of the wrong JSON type; kind is a pydantic type
// name such as "int_type".
func typeError(kind string, loc []any, raw []byte) fieldError {
	return fieldError{Type: kind, Loc: loc, Msg: typeMessages[kind], Input: inputOf(raw)}
}

// str decodes a JSON string; ok is false for any other value.
func str(v jsontext.Value) (s string, ok bool) {
	return s, v.Kind() == '"' && jsonv2.Unmarshal(v, &s, readOpts) == nil
}
