package argschema

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"
)

var (
	timeType      = reflect.TypeFor[time.Time]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	numberType    = reflect.TypeFor[json.Number]()
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	textTypes     = []reflect.Type{
		jsonMarshaler, reflect.TypeFor[json.Unmarshaler](),
		textMarshaler, reflect.TypeFor[encoding.TextUnmarshaler](),
	}
)

// implements reports whether t or a pointer to t implements the interface it.
func implements(t, it reflect.Type) bool {
	return t.Implements(it) || reflect.PointerTo(t).Implements(it)
}

// build derives the schema of struct type st from the Go type: the
// project's tags, the nullability of pointers only, and the types json v2
// decodes.
func build(root, st reflect.Type) (*jsonschema.Schema, map[*jsonschema.Schema]numeric, error) {
	// jsonschema-go's walk of the type serves only to refuse recursive
	// types, in its words; it leaves out the types it cannot describe, for
	// the adapter to refuse by their field.
	if _, err := jsonschema.ForType(st, &jsonschema.ForOptions{IgnoreInvalidTypes: true}); err != nil {
		return nil, nil, fmt.Errorf("argschema: %v: %w", root, errors.Unwrap(err))
	}
	// json v2 refuses a json tag of a struct it reaches when it first
	// decodes into it, which for a struct deeper in is when an argument
	// first holds one: the type is refused now, by json v2's rule.
	if err := refusedTag(&adapter{root: root}, st, "", map[reflect.Type]bool{}); err != nil {
		return nil, nil, err
	}
	a := &adapter{root: root, nums: map[*jsonschema.Schema]numeric{}}
	s, err := a.schema(st, "")
	if err != nil {
		return nil, nil, err
	}
	return s, a.nums, nil
}

// adapter derives the schema of a Go type.
type adapter struct {
	root reflect.Type
	nums map[*jsonschema.Schema]numeric // each integer and number node
}

// errorf returns a schema error naming the Go field path where.
func (a *adapter) errorf(where, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if where == "" {
		return fmt.Errorf("argschema: %v: %s", a.root, msg)
	}
	return fmt.Errorf("argschema: %v field %s: %s", a.root, where, msg)
}

// scalar returns the schema of a type whose JSON has no members (time.Time,
// json.RawMessage, an interface, a string, a boolean, a number or []byte),
// or nil.
func scalar(t reflect.Type) *jsonschema.Schema {
	switch k := t.Kind(); {
	case t == timeType:
		return &jsonschema.Schema{Type: "string", Format: "date-time"}
	case t == rawType || k == reflect.Interface:
		return &jsonschema.Schema{}
	case t == numberType: // a number, kept as its literal
		return &jsonschema.Schema{Type: "number"}
	case k == reflect.String:
		return &jsonschema.Schema{Type: "string"}
	case k == reflect.Bool:
		return &jsonschema.Schema{Type: "boolean"}
	case k >= reflect.Int && k <= reflect.Uint64:
		return &jsonschema.Schema{Type: "integer"}
	case k == reflect.Float32 || k == reflect.Float64:
		return &jsonschema.Schema{Type: "number"}
	case k == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return &jsonschema.Schema{Type: "string", ContentEncoding: "base64"}
	}
	return nil
}

// kindRange returns the bounds of integer kind k a schema publishes as its
// minimum and maximum: both for the kinds of 32 bits or fewer, 0 alone for
// the other unsigned ones, none for int and int64 (their range is checked
// on decode alone).
func kindRange(k reflect.Kind) (lo, hi *number) {
	signed := func(lo, hi int64) (*number, *number) {
		return &number{i: lo, f: float64(lo)}, &number{i: hi, f: float64(hi)}
	}
	unsigned := func(hi uint64) (*number, *number) {
		return &number{}, &number{u: hi, f: float64(hi)}
	}
	switch k {
	case reflect.Int8:
		return signed(math.MinInt8, math.MaxInt8)
	case reflect.Int16:
		return signed(math.MinInt16, math.MaxInt16)
	case reflect.Int32:
		return signed(math.MinInt32, math.MaxInt32)
	case reflect.Uint8:
		return unsigned(math.MaxUint8)
	case reflect.Uint16:
		return unsigned(math.MaxUint16)
	case reflect.Uint32:
		return unsigned(math.MaxUint32)
	case reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return &number{}, nil
	}
	return nil, nil
}

// schema returns the schema of arguments of type t, found at where.
func (a *adapter) schema(t reflect.Type, where string) (*jsonschema.Schema, error) {
	nullable := t.Kind() == reflect.Pointer
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if err := a.plain(t, where); err != nil {
		return nil, err
	}
	s := scalar(t)
	var err error
	switch k := t.Kind(); {
	case k == reflect.Interface && t.NumMethod() != 0:
		return nil, a.errorf(where, "unsupported type %v: only the empty interface can hold arguments", t)
	case s != nil:
		if s.Type == "integer" || s.Type == "number" {
			// The kind's range is checked on decode, in its own words, and
			// published where a JSON Schema bound says it exactly.
			a.nums[s] = numeric{kind: k}
			lo, hi := kindRange(k)
			a.setBound(s, false, lo)
			a.setBound(s, true, hi)
		}
	case k == reflect.Slice:
		// A JSON null is no array: only pointers are nullable.
		s = &jsonschema.Schema{Type: "array"}
		s.Items, err = a.schema(t.Elem(), where+"[]")
	case k == reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, a.errorf(where, "unsupported type %v: map keys must be strings", t)
		}
		// A key type with its own text encoding turns the names the
		// schema allows into other keys, or refuses them.
		if err := a.plain(t.Key(), where+" key"); err != nil {
			return nil, err
		}
		s = &jsonschema.Schema{Type: "object"}
		s.AdditionalProperties, err = a.schema(t.Elem(), where+"[]")
	case k == reflect.Struct:
		s, err = a.object(t, where)
	default:
		return nil, a.errorf(where, "unsupported type %v", t)
	}
	if err != nil {
		return nil, err
	}
	if nullable && s.Type != "" {
		s.Types, s.Type = []string{s.Type, "null"}, ""
	}
	return s, nil
}

// plain refuses a type with its own JSON or text encoding (other than
// time.Time and json.RawMessage): its schema would not say what it accepts.
func (a *adapter) plain(t reflect.Type, where string) error {
	if t == timeType || t == rawType || t.Kind() == reflect.Interface {
		return nil
	}
	for _, it := range textTypes {
		if implements(t, it) {
			return a.errorf(where, "type %v implements %v; argument types must be plain data", t, it)
		}
	}
	return nil
}

// field is a struct field that is a member of its JSON object.
type field struct {
	sf       reflect.StructField
	name     string
	tagged   bool   // named by its json tag
	optional bool   // omitempty or omitzero
	inline   bool   // embed: members of its own, written into the object
	other    string // its first json tag option but omitempty and omitzero, or ""
}

// newField reads struct field sf, given name and the options opts by its
// json tag.
func newField(sf reflect.StructField, name, opts string) field {
	f := field{sf: sf, name: cmp.Or(name, sf.Name), tagged: name != ""}
	for opt := range strings.SplitSeq(opts, ",") {
		switch opt {
		case "":
		case "omitempty", "omitzero":
			f.optional = true
		default:
			f.other = cmp.Or(f.other, opt)
			// json v2 spells inline and unknown embed now, and reads
			// those as no option: such a field is a member of its own.
			f.inline = f.inline || opt == "embed"
		}
	}
	return f
}

// dominant returns the fields of all that json v2 keeps, in order: of the
// fields of one name, those no other field of the name beats by losesTo.
// Inline fields take no part.
func dominant(all []field) []field {
	var out []field
	for _, f := range all {
		beaten := slices.ContainsFunc(all, func(g field) bool {
			return g.name == f.name && !g.inline && !f.inline && !slices.Equal(g.sf.Index, f.sf.Index) &&
				losesTo(f.sf.Index, f.tagged, g.sf.Index, g.tagged)
		})
		if !beaten {
			out = append(out, f)
		}
	}
	return out
}

// object returns the schema of struct type t: its properties are the
// fields json v2 decodes, with their tags applied.
func (a *adapter) object(t reflect.Type, where string) (*jsonschema.Schema, error) {
	// json v2 checks the rest of a struct's fields on its first use (an
	// embedded field with an encoding of its own, no exported field at
	// all), which for a struct deeper in is when an argument first holds
	// one. Its message words the failure differently from one process to
	// the next ("cannot" or "unable to"), so the error names the cause
	// alone.
	if err := jsonv2.Unmarshal([]byte("{}"), reflect.New(t).Interface()); err != nil {
		var se *jsonv2.SemanticError
		if errors.As(err, &se) && se.Err != nil {
			err = se.Err
		}
		return nil, a.errorf(where, "%v", err)
	}
	fields, err := a.fields(t, where)
	if err != nil {
		return nil, err
	}
	s := &jsonschema.Schema{Type: "object", Properties: make(map[string]*jsonschema.Schema, len(fields)),
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
	for _, f := range fields {
		fwhere := joinWhere(where, goPath(t, f.sf.Index))
		p, err := a.schema(f.sf.Type, fwhere)
		if err != nil {
			return nil, err
		}
		if err := a.tags(f.sf, p); err != nil {
			return nil, a.errorf(fwhere, "%v", err)
		}
		s.Properties[f.name] = p
		s.PropertyOrder = append(s.PropertyOrder, f.name)
		if f.sf.Type.Kind() != reflect.Pointer && !f.optional && p.Default == nil {
			s.Required = append(s.Required, f.name)
		}
	}
	return s, nil
}

// fields refuses the fields of struct type t no argument can fill as
// written, and lists its JSON properties in field order as outFields does:
// by the rules json v2 (like encoding/json) applies to embedded structs,
// the shallowest field of a name wins, then a tagged one, and a name left
// ambiguous is no property.
func (a *adapter) fields(t reflect.Type, where string) ([]field, error) {
	for _, sf := range StructFields(t) {
		goPath := goPath(t, sf.Index)
		tag, hasTag := sf.Tag.Lookup("json")
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous {
			if inlined(sf, name) {
				continue // its fields are visible fields of t
			}
			if hasTag || sf.IsExported() {
				return nil, a.errorf(joinWhere(where, goPath), "an embedded field must be an untagged struct")
			}
			continue
		}
		if !sf.IsExported() || tag == "-" {
			// Nothing decodes into it: a tag that would shape an argument
			// means the author expected one.
			if k := argumentTag(sf); k != "" && !sf.IsExported() {
				return nil, a.errorf(joinWhere(where, goPath), "it has a %s tag, but it is unexported, so no argument fills it: export it, or drop the tag", k)
			} else if k != "" {
				return nil, a.errorf(joinWhere(where, goPath), `it has a %s tag, but its json tag is "-", so no argument fills it: give it a json name, or drop the tag`, k)
			}
			continue
		}
		if p := unexportedEmbeddedPointer(t, sf.Index); p != "" {
			return nil, a.errorf(joinWhere(where, goPath), "cannot set a field reached through the embedded pointer %s to an unexported struct type", p)
		}
		if f := newField(sf, name, opts); f.other != "" {
			return nil, a.errorf(joinWhere(where, goPath), "the json tag option %q is not supported", f.other)
		}
	}
	return outFields(t), nil
}

// argumentTags are the tags that shape an argument's schema (see tags).
var argumentTags = []string{"doc", "default", "enum", "min", "max", "maxlen"}

// argumentTag returns the first of argumentTags sf has, or "".
func argumentTag(sf reflect.StructField) string {
	for _, k := range argumentTags {
		if _, ok := sf.Tag.Lookup(k); ok {
			return k
		}
	}
	return ""
}

// inlined reports whether json v2 flattens the embedded field sf, given
// name by its json tag, into its parent: it is an untagged struct or
// pointer to one.
func inlined(sf reflect.StructField, name string) bool {
	t := sf.Type
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return sf.Anonymous && name == "" && t.Kind() == reflect.Struct
}

// StructFields lists the fields of struct type t that may be members of
// its JSON object, in field order: t's own, and, after each embedded
// struct json v2 (like encoding/json) writes into the object (untagged, or
// a pointer to one), that struct's fields, their Index reaching them from
// t. Unlike reflect.VisibleFields it hides no field by its Go name: json
// v2 settles which field of a JSON name is the member by JSON names alone
// (see dominant), so a field whose Go name a shallower one shares is still
// a member under a JSON name of its own. As in json v2 and encoding/json,
// an embedded struct type is walked once, where it is shallowest (which
// also ends recursive embedding).
func StructFields(t reflect.Type) []reflect.StructField {
	// The depth at which each embedded struct type is first met.
	depth := map[reflect.Type]int{t: 0}
	for level, types := 0, []reflect.Type{t}; len(types) > 0; level++ {
		var next []reflect.Type
		for _, st := range types {
			for i := range st.NumField() {
				et, ok := inlinedStruct(st.Field(i))
				if !ok {
					continue
				}
				if _, met := depth[et]; !met {
					depth[et] = level + 1
					next = append(next, et)
				}
			}
		}
		types = next
	}
	var out []reflect.StructField
	var walk func(st reflect.Type, index []int)
	walk = func(st reflect.Type, index []int) {
		for i := range st.NumField() {
			sf := st.Field(i)
			sf.Index = append(slices.Clone(index), i)
			out = append(out, sf)
			if et, ok := inlinedStruct(sf); ok && depth[et] == len(sf.Index) {
				walk(et, sf.Index)
			}
		}
	}
	walk(t, nil)
	return out
}

// inlinedStruct returns the struct type of sf when json v2 writes its
// fields into the object of the struct holding it (see inlined).
func inlinedStruct(sf reflect.StructField) (reflect.Type, bool) {
	name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
	if !inlined(sf, name) {
		return nil, false
	}
	if sf.Type.Kind() == reflect.Pointer {
		return sf.Type.Elem(), true
	}
	return sf.Type, true
}

// losesTo reports whether a field at index f gives its name up to another
// field of the same name at index g, by the rule json v2 (like
// encoding/json) applies to embedded structs: the shallower field wins,
// then the tagged one; two equally deep fields, both tagged or both not,
// both lose, and the name is no member.
func losesTo(f []int, fTagged bool, g []int, gTagged bool) bool {
	return len(g) < len(f) || len(g) == len(f) && (gTagged || !fTagged)
}

// goPath names the field at index in t by its Go field names, like B.Name.
func goPath(t reflect.Type, index []int) string {
	var names []string
	for _, i := range index {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		sf := t.Field(i)
		names = append(names, sf.Name)
		t = sf.Type
	}
	return strings.Join(names, ".")
}

// unexportedEmbeddedPointer returns the Go path of an unexported embedded
// struct pointer on the way to the field at index, which json v2 cannot
// allocate, or "".
func unexportedEmbeddedPointer(t reflect.Type, index []int) string {
	for n := 1; n < len(index); n++ {
		sf := t.FieldByIndex(index[:n])
		if !sf.IsExported() && sf.Type.Kind() == reflect.Pointer {
			return goPath(t, index[:n])
		}
	}
	return ""
}

func joinWhere(where, goPath string) string {
	if where == "" {
		return goPath
	}
	return where + "." + goPath
}

// tags applies a field's doc, enum, min, max, maxlen and default tags to
// its schema p.
func (a *adapter) tags(sf reflect.StructField, p *jsonschema.Schema) error {
	base := sf.Type
	for base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	kind := base.Kind()
	number := base == numberType // a string kind, but a number to its tags
	numeric := kind >= reflect.Int && kind <= reflect.Uint64 || kind == reflect.Float32 || kind == reflect.Float64 || number
	if doc, ok := sf.Tag.Lookup("doc"); ok {
		p.Description = doc
	}
	if tag, ok := sf.Tag.Lookup("enum"); ok {
		if kind != reflect.String && !numeric {
			return fmt.Errorf("the enum tag needs a string or number field, not %v", base)
		}
		// The values listed say more than the kind's range.
		a.setBound(p, false, nil)
		a.setBound(p, true, nil)
		for item := range strings.SplitSeq(tag, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				return fmt.Errorf("enum %q has an empty value", tag)
			}
			var v any = item
			if numeric {
				n, problem := parseNumber(item, kind)
				if problem != "" {
					return fmt.Errorf("enum value %q: %s", item, problem)
				}
				v = n.value(kind)
			}
			if slices.Contains(p.Enum, v) {
				return fmt.Errorf("enum %q lists %s twice", tag, literal(v))
			}
			p.Enum = append(p.Enum, v)
		}
		if sf.Type.Kind() == reflect.Pointer {
			p.Enum = append(p.Enum, nil)
		}
	}
	for _, bound := range []struct {
		name  string
		upper bool
	}{{"min", false}, {"max", true}} {
		tag, ok := sf.Tag.Lookup(bound.name)
		if !ok {
			continue
		}
		if !numeric {
			return fmt.Errorf("the %s tag needs a number field, not %v", bound.name, base)
		}
		n, problem := parseNumber(strings.TrimSpace(tag), kind)
		if problem != "" {
			return fmt.Errorf("%s %q: %s", bound.name, tag, problem)
		}
		a.setBound(p, bound.upper, &n)
	}
	if num := a.nums[p]; num.min != nil && num.max != nil && num.compare(*num.min, *num.max) > 0 {
		return fmt.Errorf("min %s is greater than max %s", num.text(*num.min), num.text(*num.max))
	}
	if tag, ok := sf.Tag.Lookup("maxlen"); ok {
		if kind != reflect.String || number {
			return fmt.Errorf("the maxlen tag needs a string field, not %v", base)
		}
		n, err := strconv.Atoi(strings.TrimSpace(tag))
		if err != nil || n < 0 {
			return fmt.Errorf("maxlen %q is not a non-negative integer", tag)
		}
		p.MaxLength = &n
	}
	if tag, ok := sf.Tag.Lookup("default"); ok {
		raw := []byte(tag)
		if kind == reflect.String && !number || base == timeType || kind == reflect.Slice && base.Elem().Kind() == reflect.Uint8 && base != rawType {
			raw, _ = json.Marshal(tag)
		}
		def, e := check(p, a.nums, raw, "value")
		if e != nil {
			if e.Field != "" {
				return fmt.Errorf("default %q: field %q: %s", tag, e.Field, e.Problem)
			}
			return fmt.Errorf("default %q: %s", tag, e.Problem)
		}
		p.Default = def
	}
	return nil
}

// literal formats an enum value or bound as JSON, for messages.
func literal(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// marshal encodes a schema as compact JSON, escaping no HTML characters.
func marshal(s *jsonschema.Schema) ([]byte, error) {
	return jsonv2.Marshal(s, jsontext.EscapeForJS(true))
}
