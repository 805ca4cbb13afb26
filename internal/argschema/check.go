package argschema

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"errors"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/seahaven/seahaven/internal/rfc3339"
	"github.com/seahaven/seahaven/internal/runecut"
)

// check reads raw, one JSON value, against the schema s and returns it
// normalised for json v2 to decode: compact, with the defaults of absent
// properties filled in, integers written as plain integers and date-times in
// UTC. nums gives the Go kind and bounds of each integer and number node;
// what names
// raw in messages. The error names the first thing in raw that s does not
// allow.
func check(s *jsonschema.Schema, nums map[*jsonschema.Schema]numeric, raw []byte, what string) ([]byte, *Error) {
	c := checkers.Get().(*checker)
	defer c.release()
	c.nums, c.bad = nums, -1
	if !utf8.Valid(raw) {
		c.bad = int64(firstInvalidUTF8(raw))
	}
	c.in.Reset(raw)
	// Escaped lone surrogates decode to U+FFFD, as in encoding/json; raw
	// bytes that are not UTF-8 are refused by read.
	c.dec.Reset(&c.in, jsontext.AllowInvalidUTF8(true))
	c.enc.Reset(&c.out, jsontext.EscapeForJS(true))
	if e := c.value(s); e != nil {
		return nil, e
	}
	if _, err := c.dec.ReadToken(); err != io.EOF {
		return nil, &Error{Problem: "unexpected data after the " + what}
	}
	return bytes.Clone(c.out.Bytes()), nil
}

// checkers recycles checkers, whose decoder and encoder buffers are most of
// the allocations of a check.
var checkers = sync.Pool{New: func() any {
	c := new(checker)
	c.dec, c.enc = jsontext.NewDecoder(&c.in), jsontext.NewEncoder(&c.out)
	return c
}}

// release returns c to the pool.
func (c *checker) release() {
	c.in.Reset(nil)
	c.dec.Reset(&c.in)
	c.out.Reset()
	c.enc.Reset(&c.out)
	c.nums, c.path = nil, c.path[:0]
	checkers.Put(c)
}

// checker is the state of one check.
type checker struct {
	in   bytes.Reader
	dec  *jsontext.Decoder
	enc  *jsontext.Encoder
	out  bytes.Buffer
	nums map[*jsonschema.Schema]numeric
	bad  int64 // offset of the first invalid UTF-8 byte, or -1
	// path leads to the value being read: a segment for each object or
	// array it is in.
	path []segment
}

// segment is one step of a JSON path: an object key or an array index.
type segment struct {
	key   string
	index int // -1 for a key
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// errorf returns an *Error at the current path.
func (c *checker) errorf(problem string) *Error {
	return &Error{Field: c.pathString(), Problem: problem}
}

// readError turns an error of the decoder into an *Error; key says whether
// an object key was being read.
func (c *checker) readError(err error, key bool) *Error {
	var se *jsontext.SyntacticError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF:
		return c.errorf("malformed JSON: unexpected end of input")
	case errors.Is(err, jsontext.ErrDuplicateName) && errors.As(err, &se):
		return c.errorf("duplicate field " + strconv.Quote(clip(se.JSONPointer.LastToken())))
	case errors.As(err, &se) && c.bad >= 0 && se.ByteOffset >= c.bad:
		if key {
			return c.errorf("invalid UTF-8 in field name")
		}
		return c.errorf("invalid UTF-8")
	case errors.As(err, &se):
		return c.errorf("malformed JSON at byte " + strconv.FormatInt(se.ByteOffset, 10) + ": " + se.Err.Error())
	}
	return c.errorf("malformed JSON: " + err.Error())
}

// read reads the next token; key says whether it is an object key.
func (c *checker) read(key bool) (jsontext.Token, *Error) {
	tok, err := c.dec.ReadToken()
	if err != nil {
		return tok, c.readError(err, key)
	}
	if c.bad >= 0 && c.dec.InputOffset() > c.bad {
		return tok, c.readError(&jsontext.SyntacticError{ByteOffset: c.bad}, key)
	}
	return tok, nil
}

// anything is the schema of a value that may be any JSON value; read-only.
var anything = &jsonschema.Schema{}

// jsonKinds names the JSON type of a value by its first byte.
var jsonKinds = map[jsontext.Kind]string{
	'n': "null", 't': "boolean", 'f': "boolean", '"': "string", '0': "number", '{': "object", '[': "array",
}

// allows reports whether s admits values of the JSON type typ, and the type
// it expects, for messages.
func allows(s *jsonschema.Schema, typ string) (bool, string) {
	if s.Type == "" && s.Types == nil {
		return true, ""
	}
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	return slices.Contains(types, typ) || typ == "number" && slices.Contains(types, "integer"), types[0]
}

// value checks and copies the next value, whose schema is s.
func (c *checker) value(s *jsonschema.Schema) *Error {
	k := c.dec.PeekKind()
	if k == jsontext.KindInvalid {
		_, e := c.read(false)
		return e
	}
	got := jsonKinds[k]
	if ok, want := allows(s, got); !ok {
		return c.errorf("expected " + want + ", got " + got)
	}
	switch k {
	case '{':
		return c.object(s)
	case '[':
		return c.array(s)
	}
	tok, e := c.read(false)
	if e != nil {
		return e
	}
	switch k {
	case '"':
		str, e := c.checkString(s, tok.String())
		if e != nil {
			return e
		}
		tok = jsontext.String(str) // as decoded: escaped lone surrogates are U+FFFD
	case '0':
		if s.Type == "" && s.Types == nil {
			break
		}
		lit := tok.String()
		n, problem := parseNumber(lit, c.nums[s].kind)
		if problem != "" {
			return c.errorf(problem)
		}
		if e := c.checkNumber(s, n, lit); e != nil {
			return e
		}
		if n.canonical != "" {
			return c.write(c.enc.WriteValue(jsontext.Value(n.canonical)))
		}
	}
	return c.write(c.enc.WriteToken(tok))
}

// write reports a failure to write the output, which is an internal error.
func (c *checker) write(err error) *Error {
	if err != nil {
		return c.errorf("internal error: " + err.Error())
	}
	return nil
}

// open enters an object or array, one level deeper than path, and copies
// its opening token.
func (c *checker) open() *Error {
	if len(c.path) >= MaxDepth {
		return c.errorf("nesting is deeper than " + strconv.Itoa(MaxDepth) + " levels")
	}
	tok, e := c.read(false)
	if e != nil {
		return e
	}
	return c.write(c.enc.WriteToken(tok))
}

// object checks and copies an object: unknown and missing properties, then
// the defaults of absent ones.
func (c *checker) object(s *jsonschema.Schema) *Error {
	if e := c.open(); e != nil {
		return e
	}
	var seen []string
	for c.dec.PeekKind() != '}' {
		tok, e := c.read(true)
		if e != nil {
			return e
		}
		key := tok.String()
		sub := s.Properties[key]
		switch {
		case sub != nil:
			seen = append(seen, key)
		case s.AdditionalProperties != nil && s.AdditionalProperties.Not != nil:
			return c.errorf("unknown field " + strconv.Quote(clip(key)) + knownFields(s))
		case s.AdditionalProperties != nil:
			sub = s.AdditionalProperties
		default:
			sub = anything
		}
		if err := c.enc.WriteToken(jsontext.String(key)); err != nil {
			return c.write(err)
		}
		c.path = append(c.path, segment{key: key, index: -1})
		if e := c.value(sub); e != nil {
			return e
		}
		c.path = c.path[:len(c.path)-1]
	}
	if _, e := c.read(true); e != nil {
		return e
	}
	for _, name := range s.Required {
		if !slices.Contains(seen, name) {
			return c.errorf("missing required field " + strconv.Quote(name))
		}
	}
	for _, name := range s.PropertyOrder {
		if def := s.Properties[name].Default; def != nil && !slices.Contains(seen, name) {
			if err := c.enc.WriteToken(jsontext.String(name)); err != nil {
				return c.write(err)
			}
			if err := c.enc.WriteValue(jsontext.Value(def)); err != nil {
				return c.write(err)
			}
		}
	}
	return c.write(c.enc.WriteToken(jsontext.EndObject))
}

// array checks and copies an array.
func (c *checker) array(s *jsonschema.Schema) *Error {
	if e := c.open(); e != nil {
		return e
	}
	items := cmp.Or(s.Items, anything)
	for i := 0; ; i++ {
		c.path = append(c.path, segment{index: i})
		if c.dec.PeekKind() == ']' {
			break
		}
		if e := c.value(items); e != nil {
			return e
		}
		c.path = c.path[:len(c.path)-1]
	}
	if _, e := c.read(false); e != nil {
		return e
	}
	c.path = c.path[:len(c.path)-1]
	return c.write(c.enc.WriteToken(jsontext.EndArray))
}

// checkString checks str against the schema s and returns it as json v2
// is to decode it: a date-time in UTC.
func (c *checker) checkString(s *jsonschema.Schema, str string) (string, *Error) {
	if s.MaxLength != nil && len(str) > *s.MaxLength {
		if n := utf8.RuneCountInString(str); n > *s.MaxLength {
			return "", c.errorf("string length " + strconv.Itoa(n) + " exceeds maxLength " + strconv.Itoa(*s.MaxLength))
		}
	}
	if s.Enum != nil && !slices.Contains(s.Enum, any(str)) {
		return "", c.errorf("value " + strconv.Quote(clip(str)) + " is not one of " + enumText(s.Enum))
	}
	switch {
	case s.Format == "date-time":
		tm, err := rfc3339.Parse(str)
		if err != nil {
			return "", c.errorf("expected an RFC 3339 date-time, got " + strconv.Quote(clip(str)))
		}
		if y := tm.UTC().Year(); y < 0 || y > 9999 {
			return "", c.errorf("date-time " + strconv.Quote(clip(str)) + " is outside the years 0000 to 9999 in UTC")
		}
		return tm.UTC().Format(time.RFC3339Nano), nil
	case s.ContentEncoding == "base64":
		// Go's decoder skips line breaks; json v2 refuses them.
		if i := strings.IndexAny(str, "\r\n"); i >= 0 {
			return "", c.errorf("invalid base64: a line break at byte " + strconv.Itoa(i))
		}
		if _, err := base64.StdEncoding.DecodeString(str); err != nil {
			return "", c.errorf("invalid base64: " + err.Error())
		}
	}
	return str, nil
}

// checkNumber checks n, written as lit, against the enum and bounds of s:
// an integer kind's exactly.
func (c *checker) checkNumber(s *jsonschema.Schema, n number, lit string) *Error {
	num := c.nums[s]
	if s.Enum != nil && !slices.Contains(s.Enum, n.value(num.kind)) {
		return c.errorf("value " + clip(lit) + " is not one of " + enumText(s.Enum))
	}
	if num.min != nil && num.compare(n, *num.min) < 0 {
		return c.errorf("value " + clip(lit) + " is less than minimum " + num.text(*num.min))
	}
	if num.max != nil && num.compare(n, *num.max) > 0 {
		return c.errorf("value " + clip(lit) + " is greater than maximum " + num.text(*num.max))
	}
	return nil
}

// enumText lists the allowed values of an enum, for messages.
func enumText(enum []any) string {
	var items []string
	for _, v := range enum {
		if v != nil {
			items = append(items, literal(v))
		}
	}
	return strings.Join(items, ", ")
}

// number is a JSON number read for a Go kind.
type number struct {
	i         int64
	u         uint64
	f         float64 // the value as a float64, for bounds
	canonical string  // the integer as plain digits when written otherwise; "" when as written
}

// value returns the number as the Go value an enum holds for kind.
func (n number) value(kind reflect.Kind) any {
	switch {
	case kind >= reflect.Int && kind <= reflect.Int64:
		return n.i
	case kind >= reflect.Uint && kind <= reflect.Uint64:
		return n.u
	}
	return n.f
}

var bits = map[reflect.Kind]int{
	reflect.Int: strconv.IntSize, reflect.Int8: 8, reflect.Int16: 16, reflect.Int32: 32, reflect.Int64: 64,
	reflect.Uint: strconv.IntSize, reflect.Uint8: 8, reflect.Uint16: 16, reflect.Uint32: 32, reflect.Uint64: 64, reflect.Uintptr: 64,
	reflect.Float32: 32, reflect.Float64: 64,
}

// parseNumber reads the JSON number lit for a field of the given kind
// (reflect.String for a json.Number). An
// integer may be written with a fraction or an exponent (2.0, 1e3) when its
// value is integral. The problem is "" on success.
func parseNumber(lit string, kind reflect.Kind) (number, string) {
	if !jsontext.Value(lit).IsValid() || jsontext.Value(lit).Kind() != '0' {
		return number{}, "not a JSON number"
	}
	outOfRange := func() string { return "number " + clip(lit) + " is out of range for " + kind.String() }
	var n number
	if kind == reflect.String { // a json.Number keeps any number as written
		n.f, _ = strconv.ParseFloat(lit, 64) // ±Inf past float64, for bounds
		return n, ""
	}
	if kind == reflect.Float32 || kind == reflect.Float64 {
		// Whether it fits is the kind's; bounds and enums compare the
		// number as written, read as a float64, as the schema states
		// them (a float32's 0.1 is not rounded to 0.100000001 first).
		if f, err := strconv.ParseFloat(lit, bits[kind]); err != nil && f != 0 { // underflow rounds to zero
			return n, outOfRange()
		}
		n.f, _ = strconv.ParseFloat(lit, 64)
		return n, ""
	}
	// An integer kind, signed or not.
	parse := func(s string) (err error) {
		if kind >= reflect.Uint && kind <= reflect.Uintptr {
			n.u, err = strconv.ParseUint(s, 10, bits[kind])
			n.f = float64(n.u)
		} else {
			n.i, err = strconv.ParseInt(s, 10, bits[kind])
			n.f = float64(n.i)
		}
		return err
	}
	if parse(lit) != nil {
		digits, problem := integral(lit, outOfRange)
		if problem != "" {
			return n, problem
		}
		if parse(digits) != nil { // too large, or negative for an unsigned kind
			return n, outOfRange()
		}
		n.canonical = digits
	}
	return n, ""
}

// integral returns the integer value of the JSON number lit as decimal
// digits, or a problem: lit is not integral, or has more digits than any
// integer kind (outOfRange's). Its work is linear in len(lit).
func integral(lit string, outOfRange func() string) (string, string) {
	sign, lit := "", lit
	if rest, ok := strings.CutPrefix(lit, "-"); ok {
		sign, lit = "-", rest
	}
	mant, expText, _ := strings.Cut(strings.ToLower(lit), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	exp, err := 0, error(nil)
	if expText != "" {
		exp, err = strconv.Atoi(strings.TrimPrefix(expText, "+"))
	}
	if digits == "" {
		if err != nil {
			// Zero, but JSON Schema validators (and the schema's
			// readers) cannot read an exponent past int64.
			return "", "number " + clip(sign+lit) + " has an exponent out of range"
		}
		return "0", ""
	}
	if err != nil || exp > 1<<30 || exp < -1<<30 { // far too large, or too small
		if strings.HasPrefix(expText, "-") {
			return "", "expected integer, got non-integral number " + clip(sign+lit)
		}
		return "", outOfRange()
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed) - len(frac)
	switch {
	case exp < 0:
		return "", "expected integer, got non-integral number " + clip(sign+lit)
	case len(trimmed)+exp > 20:
		return "", outOfRange()
	}
	return sign + trimmed + strings.Repeat("0", exp), ""
}

// pathString formats the current path, like items[2].sku or meta["a b"].
func (c *checker) pathString() string {
	var b strings.Builder
	for _, s := range c.path {
		switch {
		case s.index >= 0:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case plainKey(s.key):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		default:
			b.WriteString("[" + strconv.Quote(clip(s.key)) + "]")
		}
	}
	return b.String()
}

// plainKey reports whether a key can be written bare in a path.
func plainKey(k string) bool {
	if k == "" || len(k) > clipLen {
		return false
	}
	for _, r := range k {
		if r != '_' && r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// maxKnownFields is the most field names an unknown field's message lists.
const maxKnownFields = 20

// knownFields is what an unknown field's message adds: the names the
// object takes, in the schema's order, so an agent that misspelled one can
// correct it from the refusal alone.
func knownFields(s *jsonschema.Schema) string {
	names := s.PropertyOrder
	switch {
	case len(names) == 0:
		return " (the object takes no fields)"
	case len(names) > maxKnownFields:
		return " (known fields: " + strings.Join(names[:maxKnownFields], ", ") + " and " + strconv.Itoa(len(names)-maxKnownFields) + " more)"
	}
	return " (known fields: " + strings.Join(names, ", ") + ")"
}

// clipLen is the most bytes of untrusted text a message repeats.
const clipLen = 64

// clip shortens s to at most clipLen bytes, on a character boundary.
func clip(s string) string {
	if len(s) <= clipLen {
		return s
	}
	return runecut.Prefix(s, clipLen) + "..."
}
