package argschema

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/seahaven/seahaven/internal/jsonquote"
)

// kind is how a codec reads a value.
type kind uint8

const (
	kindString kind = iota
	kindBool
	kindInt
	kindUint
	kindFloat
	kindTime
	kindBytes
	kindRaw
	kindAny
	kindPtr
	kindSlice
	kindMap
	kindStruct
)

// jsonType is the JSON type a codec of each kind expects, for messages.
var jsonType = [...]string{
	kindString: "string",
	kindBool:   "boolean",
	kindInt:    "integer",
	kindUint:   "integer",
	kindFloat:  "number",
	kindTime:   "string",
	kindBytes:  "string",
	kindSlice:  "array",
	kindMap:    "object",
	kindStruct: "object",
}

// codec is the analysis of one Go type: how to decode it and its schema.
// Codecs are immutable once built and shared by concurrent decodes.
type codec struct {
	kind kind
	typ  reflect.Type
	// elem is the element codec of a pointer, slice or map.
	elem *codec
	// fields are a struct's fields in field order; byName indexes them.
	fields []field
	byName map[string]int
	// embeddedPtrs are the index paths of the embedded struct pointers
	// leading to fields, shallowest first; decoding allocates them.
	embeddedPtrs [][]int
	schema       *node
}

// field is one JSON property of a struct.
type field struct {
	name     string
	index    []int
	codec    *codec
	required bool
	cons     *constraints // nil when the field has none
	def      *defaultValue
}

// defaultValue is a field's default. Scalars are set from value; other
// types are decoded afresh from raw each time so that no two decoded values
// share a slice, map or pointer.
type defaultValue struct {
	raw    []byte
	value  reflect.Value
	scalar bool
}

// constraints are a field's enum, minimum, maximum and maxlen tags, parsed
// for the field's base kind.
type constraints struct {
	enumStrings []string
	enumInts    []int64
	enumUints   []uint64
	enumFloats  []float64
	hasEnum     bool
	enumText    string // the allowed values, for messages

	hasMin, hasMax   bool
	minI, maxI       int64
	minU, maxU       uint64
	minF, maxF       float64
	minText, maxText string

	maxLen int // -1 when absent
}

var (
	timeType            = reflect.TypeFor[time.Time]()
	rawType             = reflect.TypeFor[json.RawMessage]()
	jsonMarshalerType   = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// builder builds the codec tree of one root type.
type builder struct {
	root     reflect.Type
	building map[reflect.Type]bool // struct types on the current path, to refuse recursion
}

// errorf returns a schema error naming the Go field path where.
func (b *builder) errorf(where, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if where == "" {
		return fmt.Errorf("argschema: %v: %s", b.root, msg)
	}
	return fmt.Errorf("argschema: %v field %s: %s", b.root, where, msg)
}

func (b *builder) build(t reflect.Type, where string) (*codec, error) {
	switch t {
	case timeType:
		return &codec{kind: kindTime, typ: t, schema: &node{types: []string{"string"}, format: "date-time"}}, nil
	case rawType:
		return &codec{kind: kindRaw, typ: t, schema: &node{}}, nil
	}
	if t.Kind() != reflect.Interface && t.Kind() != reflect.Pointer {
		pt := reflect.PointerTo(t)
		for _, it := range []reflect.Type{jsonMarshalerType, jsonUnmarshalerType, textMarshalerType, textUnmarshalerType} {
			if t.Implements(it) || pt.Implements(it) {
				return nil, b.errorf(where, "type %v implements %v; argument types must be plain data", t, it)
			}
		}
	}
	switch t.Kind() {
	case reflect.String:
		return &codec{kind: kindString, typ: t, schema: &node{types: []string{"string"}}}, nil
	case reflect.Bool:
		return &codec{kind: kindBool, typ: t, schema: &node{types: []string{"boolean"}}}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &codec{kind: kindInt, typ: t, schema: &node{types: []string{"integer"}}}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &codec{kind: kindUint, typ: t, schema: &node{types: []string{"integer"}}}, nil
	case reflect.Float32, reflect.Float64:
		return &codec{kind: kindFloat, typ: t, schema: &node{types: []string{"number"}}}, nil
	case reflect.Interface:
		if t.NumMethod() != 0 {
			return nil, b.errorf(where, "unsupported type %v: only the empty interface can hold arguments", t)
		}
		return &codec{kind: kindAny, typ: t, schema: &node{}}, nil
	case reflect.Pointer:
		elem, err := b.build(t.Elem(), where)
		if err != nil {
			return nil, err
		}
		return &codec{kind: kindPtr, typ: t, elem: elem, schema: elem.schema.nullable()}, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			if _, err := b.build(t.Elem(), where+"[]"); err != nil {
				return nil, err
			}
			return &codec{kind: kindBytes, typ: t, schema: &node{types: []string{"string"}, contentEncoding: "base64"}}, nil
		}
		elem, err := b.build(t.Elem(), where+"[]")
		if err != nil {
			return nil, err
		}
		return &codec{kind: kindSlice, typ: t, elem: elem, schema: &node{types: []string{"array"}, items: elem.schema}}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, b.errorf(where, "unsupported type %v: map keys must be strings", t)
		}
		if _, err := b.build(t.Key(), where+"[key]"); err != nil {
			return nil, err
		}
		elem, err := b.build(t.Elem(), where+"[]")
		if err != nil {
			return nil, err
		}
		return &codec{kind: kindMap, typ: t, elem: elem, schema: &node{types: []string{"object"}, additional: elem.schema}}, nil
	case reflect.Struct:
		return b.buildStruct(t, where)
	}
	return nil, b.errorf(where, "unsupported type %v", t)
}

func (b *builder) buildStruct(t reflect.Type, where string) (*codec, error) {
	if b.building[t] {
		return nil, b.errorf(where, "recursive type %v is not supported", t)
	}
	b.building[t] = true
	defer delete(b.building, t)

	cands, err := b.structFields(t, where)
	if err != nil {
		return nil, err
	}
	c := &codec{kind: kindStruct, typ: t, byName: make(map[string]int, len(cands))}
	n := &node{types: []string{"object"}, hasProperties: true, closed: true}
	for _, cf := range cands {
		fwhere := joinWhere(where, cf.goPath)
		f, fn, err := b.buildField(cf, fwhere)
		if err != nil {
			return nil, err
		}
		c.byName[f.name] = len(c.fields)
		c.fields = append(c.fields, f)
		n.properties = append(n.properties, property{name: f.name, schema: fn})
		if f.required {
			n.required = append(n.required, f.name)
		}
		// Embedded pointers on the way to this field are allocated on decode.
		for i := 1; i < len(f.index); i++ {
			prefix := f.index[:i]
			if t.FieldByIndex(prefix).Type.Kind() != reflect.Pointer {
				continue
			}
			if !slices.ContainsFunc(c.embeddedPtrs, func(p []int) bool { return slices.Equal(p, prefix) }) {
				c.embeddedPtrs = append(c.embeddedPtrs, slices.Clone(prefix))
			}
		}
	}
	slices.SortStableFunc(c.embeddedPtrs, func(a, b []int) int { return len(a) - len(b) })
	c.schema = n
	return c, nil
}

func joinWhere(where, goPath string) string {
	if where == "" {
		return goPath
	}
	return where + "." + goPath
}

// candidate is a struct field that may become a JSON property.
type candidate struct {
	name   string
	tagged bool   // named by its json tag
	dup    bool   // found in an embedded type embedded twice at one depth
	index  []int  // reflect index path from the struct
	goPath string // Go field path, for messages
	sf     reflect.StructField
	opts   tagOptions
}

type tagOptions struct {
	omitEmpty, omitZero bool
}

// embedLevel is an embedded struct type whose fields are examined at one
// depth of the breadth-first walk.
type embedLevel struct {
	typ    reflect.Type
	index  []int
	goPath string
	multi  bool // embedded more than once at this depth
	viaPtr bool // reached through an unexported embedded pointer
}

// structFields lists the JSON properties of t in field order, resolving
// names of embedded fields by the rules encoding/json applies: the shallowest
// field wins, a tagged field wins over an untagged one at the same depth, and
// a name left ambiguous is dropped.
func (b *builder) structFields(t reflect.Type, where string) ([]candidate, error) {
	var cands []candidate
	visited := map[reflect.Type]bool{}
	current := []embedLevel{{typ: t}}
	for len(current) > 0 {
		var next []embedLevel
		nextCount := map[reflect.Type]int{}
		for _, lv := range current {
			if visited[lv.typ] {
				continue
			}
			visited[lv.typ] = true
			for i := range lv.typ.NumField() {
				sf := lv.typ.Field(i)
				goPath := sf.Name
				if lv.goPath != "" {
					goPath = lv.goPath + "." + sf.Name
				}
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, err := parseJSONTag(tag)
				if err != nil {
					return nil, b.errorf(joinWhere(where, goPath), "%v", err)
				}
				index := append(slices.Clone(lv.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					if lv.viaPtr {
						return nil, b.errorf(joinWhere(where, goPath), "cannot set a field reached through an embedded pointer to unexported struct type")
					}
					tagged := name != ""
					if name == "" {
						name = sf.Name
					}
					cands = append(cands, candidate{name: name, tagged: tagged, dup: lv.multi, index: index, goPath: goPath, sf: sf, opts: opts})
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					viaPtr := lv.viaPtr || (!sf.IsExported() && sf.Type.Kind() == reflect.Pointer)
					next = append(next, embedLevel{typ: ft, index: index, goPath: goPath, viaPtr: viaPtr})
				}
			}
		}
		for i := range next {
			next[i].multi = nextCount[next[i].typ] > 1
		}
		current = next
	}

	// Pick the dominant field of each name.
	byName := map[string][]candidate{}
	var names []string
	for _, c := range cands {
		if _, ok := byName[c.name]; !ok {
			names = append(names, c.name)
		}
		byName[c.name] = append(byName[c.name], c)
	}
	var out []candidate
	for _, name := range names {
		group := byName[name]
		slices.SortStableFunc(group, func(a, b candidate) int {
			if d := len(a.index) - len(b.index); d != 0 {
				return d
			}
			if a.tagged != b.tagged {
				if a.tagged {
					return -1
				}
				return 1
			}
			return 0
		})
		first := group[0]
		if first.dup {
			continue
		}
		if len(group) > 1 && len(group[1].index) == len(first.index) && group[1].tagged == first.tagged {
			continue
		}
		out = append(out, first)
	}
	slices.SortFunc(out, func(a, b candidate) int { return slices.Compare(a.index, b.index) })
	return out, nil
}

// parseJSONTag splits a json tag into its name and the options this package
// honours. An invalid name or the "string" option is an error.
func parseJSONTag(tag string) (string, tagOptions, error) {
	var opts tagOptions
	name, rest, _ := strings.Cut(tag, ",")
	if name != "" && !validJSONName(name) {
		return "", opts, fmt.Errorf("invalid json name %q", name)
	}
	for rest != "" {
		var opt string
		opt, rest, _ = strings.Cut(rest, ",")
		switch opt {
		case "omitempty":
			opts.omitEmpty = true
		case "omitzero":
			opts.omitZero = true
		case "string":
			return "", opts, fmt.Errorf(`the json tag option "string" is not supported`)
		}
	}
	return name, opts, nil
}

// validJSONName reports whether name is a json tag name encoding/json would
// honour: letters, digits and a set of punctuation.
func validJSONName(name string) bool {
	for _, r := range name {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", r):
		case unicode.IsLetter(r), unicode.IsDigit(r):
		default:
			return false
		}
	}
	return true
}

func (b *builder) buildField(cf candidate, where string) (field, *node, error) {
	c, err := b.build(cf.sf.Type, where)
	if err != nil {
		return field{}, nil, err
	}
	f := field{name: cf.name, index: cf.index, codec: c}
	base := c
	for base.kind == kindPtr {
		base = base.elem
	}
	cons, err := parseConstraints(cf.sf.Tag, base)
	if err != nil {
		return field{}, nil, b.errorf(where, "%v", err)
	}
	f.cons = cons

	n := c.schema.clone()
	if doc, ok := cf.sf.Tag.Lookup("doc"); ok {
		n.description = doc
	}
	if cons != nil {
		if cons.hasEnum {
			n.enum = enumLiterals(cons, base)
			if c.kind == kindPtr {
				n.enum = append(n.enum, "null")
			}
		}
		if cons.hasMin {
			n.minimum = cons.minText
		}
		if cons.hasMax {
			n.maximum = cons.maxText
		}
		if cons.maxLen >= 0 {
			n.hasMaxLength, n.maxLength = true, cons.maxLen
		}
	}

	if tag, ok := cf.sf.Tag.Lookup("default"); ok {
		def, err := buildDefault(c, cons, tag)
		if err != nil {
			return field{}, nil, b.errorf(where, "default %q: %v", tag, err)
		}
		f.def = def
		n.def = def.raw
	}
	f.required = c.kind != kindPtr && !cf.opts.omitEmpty && !cf.opts.omitZero && f.def == nil
	return f, n, nil
}

// parseConstraints reads the enum, min, max and maxlen tags for a field
// whose value (after pointers) is decoded by base.
func parseConstraints(tag reflect.StructTag, base *codec) (*constraints, error) {
	enumTag, hasEnum := tag.Lookup("enum")
	minTag, hasMin := tag.Lookup("min")
	maxTag, hasMax := tag.Lookup("max")
	lenTag, hasLen := tag.Lookup("maxlen")
	if !hasEnum && !hasMin && !hasMax && !hasLen {
		return nil, nil
	}
	cons := &constraints{maxLen: -1}
	numeric := base.kind == kindInt || base.kind == kindUint || base.kind == kindFloat
	if hasEnum {
		if base.kind != kindString && !numeric {
			return nil, fmt.Errorf("the enum tag needs a string or number field, not %v", base.typ)
		}
		cons.hasEnum = true
		var text []string
		for _, item := range strings.Split(enumTag, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				return nil, fmt.Errorf("enum %q has an empty value", enumTag)
			}
			switch base.kind {
			case kindString:
				if slices.Contains(cons.enumStrings, item) {
					return nil, fmt.Errorf("enum %q lists %q twice", enumTag, item)
				}
				cons.enumStrings = append(cons.enumStrings, item)
				text = append(text, strconv.Quote(item))
			default:
				lit, problem := parseNumberTag(base, item)
				if problem != "" {
					return nil, fmt.Errorf("enum value %q: %s", item, problem)
				}
				if slices.Contains(text, lit.text) {
					return nil, fmt.Errorf("enum %q lists %s twice", enumTag, lit.text)
				}
				cons.enumInts = append(cons.enumInts, lit.i)
				cons.enumUints = append(cons.enumUints, lit.u)
				cons.enumFloats = append(cons.enumFloats, lit.f)
				text = append(text, lit.text)
			}
		}
		cons.enumText = strings.Join(text, ", ")
	}
	for _, bound := range []struct {
		name string
		tag  string
		has  bool
		max  bool
	}{{"min", minTag, hasMin, false}, {"max", maxTag, hasMax, true}} {
		if !bound.has {
			continue
		}
		if !numeric {
			return nil, fmt.Errorf("the %s tag needs a number field, not %v", bound.name, base.typ)
		}
		lit, problem := parseNumberTag(base, strings.TrimSpace(bound.tag))
		if problem != "" {
			return nil, fmt.Errorf("%s %q: %s", bound.name, bound.tag, problem)
		}
		if bound.max {
			cons.hasMax, cons.maxI, cons.maxU, cons.maxF, cons.maxText = true, lit.i, lit.u, lit.f, lit.text
		} else {
			cons.hasMin, cons.minI, cons.minU, cons.minF, cons.minText = true, lit.i, lit.u, lit.f, lit.text
		}
	}
	if cons.hasMin && cons.hasMax && cons.above(cons.minI, cons.minU, cons.minF, base.kind) {
		return nil, fmt.Errorf("min %s is greater than max %s", cons.minText, cons.maxText)
	}
	if hasLen {
		if base.kind != kindString {
			return nil, fmt.Errorf("the maxlen tag needs a string field, not %v", base.typ)
		}
		n, err := strconv.Atoi(strings.TrimSpace(lenTag))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("maxlen %q is not a non-negative integer", lenTag)
		}
		cons.maxLen = n
	}
	return cons, nil
}

// above reports whether a number is greater than the maximum.
func (c *constraints) above(i int64, u uint64, f float64, k kind) bool {
	switch k {
	case kindInt:
		return i > c.maxI
	case kindUint:
		return u > c.maxU
	default:
		return f > c.maxF
	}
}

// below reports whether a number is less than the minimum.
func (c *constraints) below(i int64, u uint64, f float64, k kind) bool {
	switch k {
	case kindInt:
		return i < c.minI
	case kindUint:
		return u < c.minU
	default:
		return f < c.minF
	}
}

// enumLiterals returns the JSON literals of an enum, for the schema.
func enumLiterals(cons *constraints, base *codec) []string {
	var out []string
	switch base.kind {
	case kindString:
		for _, s := range cons.enumStrings {
			out = append(out, string(jsonquote.Append(nil, s)))
		}
	case kindInt:
		for _, i := range cons.enumInts {
			out = append(out, strconv.FormatInt(i, 10))
		}
	case kindUint:
		for _, u := range cons.enumUints {
			out = append(out, strconv.FormatUint(u, 10))
		}
	default:
		for _, f := range cons.enumFloats {
			out = append(out, formatFloat(f, base.typ.Bits()))
		}
	}
	return out
}

// buildDefault parses a default tag for a field decoded by c, validating it
// against the field's type and constraints.
func buildDefault(c *codec, cons *constraints, tag string) (*defaultValue, error) {
	base := c
	for base.kind == kindPtr {
		base = base.elem
	}
	var raw []byte
	switch base.kind {
	case kindString, kindTime, kindBytes:
		raw = jsonquote.Append(nil, tag)
	default:
		raw = []byte(tag)
	}
	v := reflect.New(c.typ).Elem()
	if e := decodeInto(c, cons, v, raw); e != nil {
		if e.Field != "" {
			return nil, fmt.Errorf("field %q: %s", e.Field, e.Problem)
		}
		return nil, errors.New(e.Problem)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v.Interface()); err != nil {
		return nil, err
	}
	def := &defaultValue{raw: bytes.TrimSuffix(buf.Bytes(), []byte("\n")), value: v}
	switch c.kind {
	case kindString, kindBool, kindInt, kindUint, kindFloat, kindTime:
		def.scalar = true
	}
	return def, nil
}
