package argschema

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
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

	"github.com/seahaven/seahaven/internal/jsonquote"
)

// decoder reads one JSON document as a stream of tokens. It is used by one
// goroutine for one document.
//
// A document that is valid JSON and valid UTF-8 (nearly every tool call) is
// tokenized by a small scanner over raw, which relies on that validity; any
// other document goes through encoding/json's Decoder, whose syntax errors
// the messages quote. Both produce the same token sequence for a valid
// document, so every other message is the same on either path.
type decoder struct {
	dec     *json.Decoder // nil on the fast path
	raw     []byte        // the document, on the fast path
	pos     int           // offset of the next unread byte of raw
	bad     int64         // offset of the first invalid UTF-8 byte, or -1
	depth   int
	path    []segment
	pathBuf [8]segment
}

// segment is one step of a JSON path: an object key or an array index.
type segment struct {
	key   string
	index int // -1 for a key
}

// decoders recycles decoders: one per call is otherwise a third of the
// allocations of decoding a small arguments object.
var decoders = sync.Pool{New: func() any { return new(decoder) }}

// release returns d to the pool.
func (d *decoder) release() {
	*d = decoder{}
	decoders.Put(d)
}

func newDecoder(raw []byte) *decoder {
	d := decoders.Get().(*decoder)
	d.bad = -1
	d.path = d.pathBuf[:0]
	if utf8.Valid(raw) && json.Valid(raw) {
		d.raw = raw
		return d
	}
	d.dec = json.NewDecoder(bytes.NewReader(raw))
	d.dec.UseNumber()
	if !utf8.Valid(raw) {
		for i := 0; i < len(raw); {
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				d.bad = int64(i)
				break
			}
			i += size
		}
	}
	return d
}

// decodeTop decodes raw as the arguments object of type t, whose struct
// codec is c.
func decodeTop(c *codec, t reflect.Type, raw []byte) (reflect.Value, *Error) {
	d := newDecoder(raw)
	defer d.release()
	v := reflect.New(t).Elem()
	sv := v
	if t.Kind() == reflect.Pointer {
		v.Set(reflect.New(t.Elem()))
		sv = v.Elem()
	}
	if isBlank(raw) {
		d.allocEmbedded(c, sv)
		if e := d.finishStruct(c, sv, nil); e != nil {
			return reflect.Value{}, e
		}
		return v, nil
	}
	tok, e := d.token(false)
	if e != nil {
		return reflect.Value{}, e
	}
	switch tok {
	case nil:
		if e := d.end("arguments object"); e != nil {
			return reflect.Value{}, e
		}
		d.allocEmbedded(c, sv)
		e = d.finishStruct(c, sv, nil)
	case json.Delim('{'):
		d.depth = 1
		e = d.structBody(c, sv)
	default:
		e = d.errorf("expected object, got " + tokenType(tok))
	}
	if e != nil {
		return reflect.Value{}, e
	}
	if e := d.end("arguments object"); e != nil {
		return reflect.Value{}, e
	}
	return v, nil
}

// decodeInto decodes raw, a single JSON value, into v with codec c.
func decodeInto(c *codec, cons *constraints, v reflect.Value, raw []byte) *Error {
	d := newDecoder(raw)
	defer d.release()
	tok, e := d.token(false)
	if e != nil {
		return e
	}
	if e := d.value(c, cons, v, tok); e != nil {
		return e
	}
	return d.end("value")
}

// end refuses anything after the document.
func (d *decoder) end(what string) *Error {
	if d.dec == nil {
		if d.skipSpace(); d.pos < len(d.raw) {
			return &Error{Problem: "unexpected data after the " + what}
		}
		return nil
	}
	if _, err := d.dec.Token(); err != io.EOF {
		return &Error{Problem: "unexpected data after the " + what}
	}
	return nil
}

func isBlank(raw []byte) bool {
	for _, c := range raw {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// errorf returns an *Error at the current path.
func (d *decoder) errorf(problem string) *Error {
	return &Error{Field: d.pathString(), Problem: problem}
}

// token reads the next token; key says whether an object key is expected,
// for messages.
func (d *decoder) token(key bool) (json.Token, *Error) {
	if d.dec == nil {
		return d.next()
	}
	tok, err := d.dec.Token()
	if err != nil {
		return nil, d.syntaxError(err)
	}
	if d.bad >= 0 && d.dec.InputOffset() > d.bad {
		if key {
			return nil, d.errorf("invalid UTF-8 in field name")
		}
		return nil, d.errorf("invalid UTF-8")
	}
	return tok, nil
}

// skipSpace advances over white space and the separators ',' and ':', which
// carry no information once the document is known to be valid.
func (d *decoder) skipSpace() {
	for d.pos < len(d.raw) {
		switch d.raw[d.pos] {
		case ' ', '\t', '\n', '\r', ',', ':':
			d.pos++
		default:
			return
		}
	}
}

// next reads the next token of a document known to be valid JSON and valid
// UTF-8, as json.Decoder.Token with UseNumber would return it.
func (d *decoder) next() (json.Token, *Error) {
	d.skipSpace()
	if d.pos >= len(d.raw) {
		return nil, d.errorf("malformed JSON: unexpected end of input")
	}
	switch c := d.raw[d.pos]; c {
	case '{', '}', '[', ']':
		d.pos++
		return json.Delim(c), nil
	case 't':
		d.pos += len("true")
		return true, nil
	case 'f':
		d.pos += len("false")
		return false, nil
	case 'n':
		d.pos += len("null")
		return nil, nil
	case '"':
		start, escaped := d.pos, false
		i := start + 1
		for ; i < len(d.raw); i++ {
			if b := d.raw[i]; b == '\\' {
				escaped = true
				i++
			} else if b == '"' {
				break
			}
		}
		d.pos = i + 1
		if !escaped {
			return string(d.raw[start+1 : i]), nil
		}
		var s string
		if err := json.Unmarshal(d.raw[start:d.pos], &s); err != nil {
			return nil, d.errorf("malformed JSON: " + err.Error())
		}
		return s, nil
	}
	start := d.pos
	for d.pos < len(d.raw) {
		switch d.raw[d.pos] {
		case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '-', '+', '.', 'e', 'E':
			d.pos++
			continue
		}
		break
	}
	return json.Number(d.raw[start:d.pos]), nil
}

func (d *decoder) syntaxError(err error) *Error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return d.errorf("malformed JSON: unexpected end of input")
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// A byte that is not UTF-8 outside a string is refused by the
		// scanner at (or one byte past) the offset it reports.
		if d.bad >= 0 && d.bad <= se.Offset+1 {
			return d.errorf("invalid UTF-8")
		}
		return d.errorf("malformed JSON at byte " + strconv.FormatInt(se.Offset, 10) + ": " + se.Error())
	}
	return d.errorf("malformed JSON: " + err.Error())
}

func (d *decoder) enter() *Error {
	d.depth++
	if d.depth > MaxDepth {
		return d.errorf("nesting is deeper than " + strconv.Itoa(MaxDepth) + " levels")
	}
	return nil
}

func (d *decoder) leave() { d.depth-- }

func (d *decoder) pushKey(k string) { d.path = append(d.path, segment{key: k, index: -1}) }

func (d *decoder) pushIndex(i int) { d.path = append(d.path, segment{index: i}) }

func (d *decoder) pop() { d.path = d.path[:len(d.path)-1] }

// pathString formats the current path, like items[2].sku or meta["a b"].
func (d *decoder) pathString() string {
	var b strings.Builder
	for _, s := range d.path {
		switch {
		case s.index >= 0:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
		case plainKey(s.key):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		default:
			b.WriteByte('[')
			b.WriteString(strconv.Quote(clip(s.key)))
			b.WriteByte(']')
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

// clipLen is the most bytes of untrusted text a message repeats.
const clipLen = 64

// clip shortens s to at most clipLen bytes, on a character boundary.
func clip(s string) string {
	if len(s) <= clipLen {
		return s
	}
	n := clipLen
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// tokenType names the JSON type of a token, for messages.
func tokenType(tok json.Token) string {
	switch tok := tok.(type) {
	case json.Delim:
		if tok == '{' {
			return "object"
		}
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return "unknown token"
}

func (d *decoder) mismatch(c *codec, tok json.Token) *Error {
	return d.errorf("expected " + jsonType[c.kind] + ", got " + tokenType(tok))
}

// value decodes the value starting with tok into v, which is settable.
func (d *decoder) value(c *codec, cons *constraints, v reflect.Value, tok json.Token) *Error {
	switch c.kind {
	case kindPtr:
		if tok == nil {
			v.SetZero()
			return nil
		}
		if v.IsNil() {
			v.Set(reflect.New(c.typ.Elem()))
		}
		return d.value(c.elem, cons, v.Elem(), tok)
	case kindAny:
		x, e := d.anyValue(tok)
		if e != nil {
			return e
		}
		if x == nil {
			v.SetZero()
		} else {
			v.Set(reflect.ValueOf(x))
		}
		return nil
	case kindRaw:
		b, e := d.rawValue(nil, tok)
		if e != nil {
			return e
		}
		v.SetBytes(b)
		return nil
	case kindString:
		s, ok := tok.(string)
		if !ok {
			return d.mismatch(c, tok)
		}
		if cons != nil {
			if e := d.checkString(cons, s); e != nil {
				return e
			}
		}
		v.SetString(s)
		return nil
	case kindBool:
		b, ok := tok.(bool)
		if !ok {
			return d.mismatch(c, tok)
		}
		v.SetBool(b)
		return nil
	case kindInt:
		n, ok := tok.(json.Number)
		if !ok {
			return d.mismatch(c, tok)
		}
		i, problem := parseIntLit(string(n), c.typ)
		if problem != "" {
			return d.errorf(problem)
		}
		if cons != nil {
			if e := d.checkNumber(cons, kindInt, i, 0, 0, string(n)); e != nil {
				return e
			}
		}
		v.SetInt(i)
		return nil
	case kindUint:
		n, ok := tok.(json.Number)
		if !ok {
			return d.mismatch(c, tok)
		}
		u, problem := parseUintLit(string(n), c.typ)
		if problem != "" {
			return d.errorf(problem)
		}
		if cons != nil {
			if e := d.checkNumber(cons, kindUint, 0, u, 0, string(n)); e != nil {
				return e
			}
		}
		v.SetUint(u)
		return nil
	case kindFloat:
		n, ok := tok.(json.Number)
		if !ok {
			return d.mismatch(c, tok)
		}
		f, problem := parseFloatLit(string(n), c.typ)
		if problem != "" {
			return d.errorf(problem)
		}
		if cons != nil {
			if e := d.checkNumber(cons, kindFloat, 0, 0, f, string(n)); e != nil {
				return e
			}
		}
		v.SetFloat(f)
		return nil
	case kindTime:
		s, ok := tok.(string)
		if !ok {
			return d.mismatch(c, tok)
		}
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return d.errorf("expected an RFC 3339 date-time, got " + strconv.Quote(clip(s)))
		}
		tm = tm.UTC()
		if y := tm.Year(); y < 0 || y > 9999 {
			return d.errorf("date-time " + strconv.Quote(clip(s)) + " is outside the years 0000 to 9999 in UTC")
		}
		v.Set(reflect.ValueOf(tm))
		return nil
	case kindBytes:
		s, ok := tok.(string)
		if !ok {
			return d.mismatch(c, tok)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return d.errorf("invalid base64: " + err.Error())
		}
		v.SetBytes(b)
		return nil
	case kindSlice:
		if tok != json.Delim('[') {
			return d.mismatch(c, tok)
		}
		if e := d.enter(); e != nil {
			return e
		}
		s := reflect.MakeSlice(c.typ, 0, 0)
		zero := reflect.Zero(c.typ.Elem())
		for i := 0; ; i++ {
			d.pushIndex(i)
			et, e := d.token(false)
			if e != nil {
				return e
			}
			if et == json.Delim(']') {
				d.pop()
				break
			}
			s = reflect.Append(s, zero)
			if e := d.value(c.elem, nil, s.Index(i), et); e != nil {
				return e
			}
			d.pop()
		}
		v.Set(s)
		d.leave()
		return nil
	case kindMap:
		if tok != json.Delim('{') {
			return d.mismatch(c, tok)
		}
		if e := d.enter(); e != nil {
			return e
		}
		m := reflect.MakeMap(c.typ)
		keyType, elemType := c.typ.Key(), c.typ.Elem()
		for {
			kt, e := d.token(true)
			if e != nil {
				return e
			}
			if kt == json.Delim('}') {
				break
			}
			key, _ := kt.(string)
			kv := reflect.ValueOf(key).Convert(keyType)
			if m.MapIndex(kv).IsValid() {
				return d.errorf("duplicate field " + strconv.Quote(clip(key)))
			}
			d.pushKey(key)
			vt, e := d.token(false)
			if e != nil {
				return e
			}
			ev := reflect.New(elemType).Elem()
			if e := d.value(c.elem, nil, ev, vt); e != nil {
				return e
			}
			d.pop()
			m.SetMapIndex(kv, ev)
		}
		v.Set(m)
		d.leave()
		return nil
	case kindStruct:
		if tok != json.Delim('{') {
			return d.mismatch(c, tok)
		}
		if e := d.enter(); e != nil {
			return e
		}
		if e := d.structBody(c, v); e != nil {
			return e
		}
		d.leave()
		return nil
	}
	return d.errorf("internal error: no decoder for " + c.typ.String())
}

// structBody decodes the members of an object whose '{' has been read.
func (d *decoder) structBody(c *codec, v reflect.Value) *Error {
	d.allocEmbedded(c, v)
	var small [1]uint64
	seen := small[:]
	if n := (len(c.fields) + 63) / 64; n > 1 {
		seen = make([]uint64, n)
	}
	for {
		kt, e := d.token(true)
		if e != nil {
			return e
		}
		if kt == json.Delim('}') {
			break
		}
		key, _ := kt.(string)
		i, ok := c.byName[key]
		if !ok {
			return d.errorf("unknown field " + strconv.Quote(clip(key)))
		}
		if seen[i/64]&(1<<(i%64)) != 0 {
			return d.errorf("duplicate field " + strconv.Quote(clip(key)))
		}
		seen[i/64] |= 1 << (i % 64)
		f := &c.fields[i]
		d.pushKey(key)
		vt, e := d.token(false)
		if e != nil {
			return e
		}
		if e := d.value(f.codec, f.cons, fieldOf(v, f.index), vt); e != nil {
			return e
		}
		d.pop()
	}
	return d.finishStruct(c, v, seen)
}

// finishStruct refuses a missing required field and applies defaults. seen
// marks the fields present; nil means none.
func (d *decoder) finishStruct(c *codec, v reflect.Value, seen []uint64) *Error {
	for i := range c.fields {
		if seen != nil && seen[i/64]&(1<<(i%64)) != 0 {
			continue
		}
		f := &c.fields[i]
		if f.required {
			return d.errorf("missing required field " + strconv.Quote(f.name))
		}
		if f.def == nil {
			continue
		}
		fv := fieldOf(v, f.index)
		if f.def.scalar {
			fv.Set(f.def.value)
			continue
		}
		if e := decodeInto(f.codec, f.cons, fv, f.def.raw); e != nil {
			return d.errorf("default of field " + strconv.Quote(f.name) + ": " + e.Problem)
		}
	}
	return nil
}

// allocEmbedded allocates the embedded struct pointers of a struct value.
func (d *decoder) allocEmbedded(c *codec, v reflect.Value) {
	for _, p := range c.embeddedPtrs {
		fv := v.FieldByIndex(p)
		if fv.IsNil() {
			fv.Set(reflect.New(fv.Type().Elem()))
		}
	}
}

func fieldOf(v reflect.Value, index []int) reflect.Value {
	if len(index) == 1 {
		return v.Field(index[0])
	}
	return v.FieldByIndex(index)
}

// anyValue decodes the value starting with tok as encoding/json decodes
// into an empty interface with UseNumber.
func (d *decoder) anyValue(tok json.Token) (any, *Error) {
	switch tok {
	case json.Delim('{'):
		if e := d.enter(); e != nil {
			return nil, e
		}
		m := map[string]any{}
		for {
			kt, e := d.token(true)
			if e != nil {
				return nil, e
			}
			if kt == json.Delim('}') {
				break
			}
			key, _ := kt.(string)
			if _, dup := m[key]; dup {
				return nil, d.errorf("duplicate field " + strconv.Quote(clip(key)))
			}
			d.pushKey(key)
			vt, e := d.token(false)
			if e != nil {
				return nil, e
			}
			x, e := d.anyValue(vt)
			if e != nil {
				return nil, e
			}
			d.pop()
			m[key] = x
		}
		d.leave()
		return m, nil
	case json.Delim('['):
		if e := d.enter(); e != nil {
			return nil, e
		}
		s := []any{}
		for i := 0; ; i++ {
			d.pushIndex(i)
			et, e := d.token(false)
			if e != nil {
				return nil, e
			}
			if et == json.Delim(']') {
				d.pop()
				break
			}
			x, e := d.anyValue(et)
			if e != nil {
				return nil, e
			}
			d.pop()
			s = append(s, x)
		}
		d.leave()
		return s, nil
	}
	return tok, nil
}

// rawValue appends the compact JSON of the value starting with tok to b.
func (d *decoder) rawValue(b []byte, tok json.Token) ([]byte, *Error) {
	switch tok := tok.(type) {
	case json.Delim:
		if e := d.enter(); e != nil {
			return nil, e
		}
		if tok == '{' {
			var keys []string
			var many map[string]struct{}
			b = append(b, '{')
			for {
				kt, e := d.token(true)
				if e != nil {
					return nil, e
				}
				if kt == json.Delim('}') {
					break
				}
				key, _ := kt.(string)
				if slices.Contains(keys, key) {
					return nil, d.errorf("duplicate field " + strconv.Quote(clip(key)))
				}
				if _, dup := many[key]; dup {
					return nil, d.errorf("duplicate field " + strconv.Quote(clip(key)))
				}
				if len(keys) > 0 || many != nil {
					b = append(b, ',')
				}
				// Small objects are checked by a scan, large ones by a set,
				// so the work stays linear in the input.
				if len(keys) < 8 {
					keys = append(keys, key)
				} else {
					if many == nil {
						many = make(map[string]struct{})
					}
					many[key] = struct{}{}
				}
				b = jsonquote.Append(b, key)
				b = append(b, ':')
				d.pushKey(key)
				vt, e := d.token(false)
				if e != nil {
					return nil, e
				}
				if b, e = d.rawValue(b, vt); e != nil {
					return nil, e
				}
				d.pop()
			}
			b = append(b, '}')
		} else {
			b = append(b, '[')
			for i := 0; ; i++ {
				d.pushIndex(i)
				et, e := d.token(false)
				if e != nil {
					return nil, e
				}
				if et == json.Delim(']') {
					d.pop()
					break
				}
				if i > 0 {
					b = append(b, ',')
				}
				if b, e = d.rawValue(b, et); e != nil {
					return nil, e
				}
				d.pop()
			}
			b = append(b, ']')
		}
		d.leave()
		return b, nil
	case string:
		return jsonquote.Append(b, tok), nil
	case json.Number:
		return append(b, tok...), nil
	case bool:
		return strconv.AppendBool(b, tok), nil
	case nil:
		return append(b, "null"...), nil
	}
	return nil, d.errorf("internal error: unexpected token")
}

func (d *decoder) checkString(cons *constraints, s string) *Error {
	if cons.maxLen >= 0 && len(s) > cons.maxLen {
		if n := utf8.RuneCountInString(s); n > cons.maxLen {
			return d.errorf("string length " + strconv.Itoa(n) + " exceeds maxLength " + strconv.Itoa(cons.maxLen))
		}
	}
	if cons.hasEnum && !slices.Contains(cons.enumStrings, s) {
		return d.errorf("value " + strconv.Quote(clip(s)) + " is not one of " + cons.enumText)
	}
	return nil
}

// checkNumber checks a decoded number against enum, min and max; lit is the
// number as written, for messages.
func (d *decoder) checkNumber(cons *constraints, k kind, i int64, u uint64, f float64, lit string) *Error {
	if cons.hasEnum {
		var ok bool
		switch k {
		case kindInt:
			ok = slices.Contains(cons.enumInts, i)
		case kindUint:
			ok = slices.Contains(cons.enumUints, u)
		default:
			ok = slices.Contains(cons.enumFloats, f)
		}
		if !ok {
			return d.errorf("value " + clip(lit) + " is not one of " + cons.enumText)
		}
	}
	if cons.hasMin && cons.below(i, u, f, k) {
		return d.errorf("value " + clip(lit) + " is less than minimum " + cons.minText)
	}
	if cons.hasMax && cons.above(i, u, f, k) {
		return d.errorf("value " + clip(lit) + " is greater than maximum " + cons.maxText)
	}
	return nil
}
