package argschema

import (
	"cmp"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TagField is what json v2 reads of a struct field to check its json tag:
// the tag, and of the field only its name, whether it is exported or
// embedded and whether it holds a struct. So an analysis of the source
// can check tags by the rule registration checks them by.
type TagField struct {
	Name     string // the Go field name
	Tag      string // the value of its json tag
	HasTag   bool   // it has a json tag, even an empty one
	Exported bool
	Embedded bool // a Go embedded field
	Struct   bool // of a struct type, or of an unnamed pointer to one
}

// TagError returns json v2's error for the first of fields, the fields of
// one struct type in order, whose json tag json v2 refuses, and the index
// of that field; -1 and nil when it refuses none. json v2 refuses
//
//   - a malformed tag: a name with a quote, a backslash or a space in it
//     (`json:"'a"`), a trailing comma, an option that is no Go identifier;
//   - an option mis-spelt in case or underscores (omitEmpty, omit_zero),
//     repeated (omitempty,omitempty), or without its value (case, format);
//     a case other than case:ignore or case:strict, or both of them; a
//     format before another option;
//   - an embedded field (the embed option, or a Go embedded struct with no
//     JSON name) with another option or a JSON name, and a Go embedded field
//     of another type with no JSON name;
//   - a json tag on an unexported field, and an unexported field that
//     would be a member;
//   - two fields of the struct with one JSON name (fields of one name from
//     embedded structs are no error: the shallowest, then a tagged one,
//     wins, and when none does the name is no member);
//   - when it refuses nothing else in the struct, a format option: json v2
//     takes one only with its ExperimentalSupportFormatTag option, which
//     neither the server nor Decode gives, so it refuses every value of the
//     struct.
//
// The server's encoding of results, with encoding/json's error semantics,
// writes such a type without an error, in a shape its output schema does
// not always describe. The error names the field by its Go name and gives
// its tag. TagError is safe for concurrent use.
func TagError(fields []TagField) (int, error) {
	format := -1
	errs := TagErrors(fields)
	for i, err := range errs {
		if _, ok := err.(formatError); ok && format < 0 {
			format = i
		} else if err != nil && !ok {
			return i, err
		}
	}
	if format >= 0 {
		return format, errs[format]
	}
	return -1, nil
}

// TagErrors returns json v2's error for each of fields, the fields of one
// struct type in order, by the rule TagError applies: nil for a field whose
// tag json v2 takes. A field whose tag is refused still holds its name, as
// in json v2, so a field after it may conflict with it.
func TagErrors(fields []TagField) []error {
	errs := make([]error, len(fields))
	names := map[string]int{} // the field of each JSON name
	for i, f := range fields {
		o, ignored, err := readTag(f)
		if err != nil {
			errs[i] = withTag(f, err)
		}
		if ignored {
			continue
		}
		embed := o.embed
		if f.Embedded && !o.hasName {
			if f.Struct {
				embed = true
			} else {
				errs[i] = cmp.Or(errs[i], jsonErrorf("embedded Go struct field %s of non-struct type must be explicitly given a JSON name", f.Name))
			}
		}
		if embed {
			if o.hasName || o.other {
				errs[i] = cmp.Or(errs[i], withTag(f, jsonErrorf("Go struct field %s cannot have any options other than `embed` specified", f.Name)))
			}
			if !o.hasName { // else a member of its own, as below
				if !f.Struct && !f.Exported {
					errs[i] = cmp.Or(errs[i], withTag(f, jsonErrorf("embedded Go struct field %s is not exported", f.Name)))
				}
				continue
			}
		}
		if !f.Exported && !(f.Embedded && f.Struct) {
			errs[i] = cmp.Or(errs[i], withTag(f, jsonErrorf("Go struct field %s is not exported", f.Name)))
			continue
		}
		if j, ok := names[o.name]; ok {
			errs[i] = cmp.Or(errs[i], jsonErrorf("Go struct fields %s and %s conflict over JSON object name %q", fields[j].Name, f.Name, o.name))
		}
		names[o.name] = i
		if o.format && errs[i] == nil {
			errs[i] = formatError{withTag(f, jsonErrorf("Go struct field %s has unsupported `format` tag option", f.Name))}
		}
	}
	return errs
}

// formatError is json v2's error for a format option, which it reports
// only when it refuses nothing else in the struct.
type formatError struct{ error }

// withTag adds the field's tag to err, json v2's words for it.
func withTag(f TagField, err error) error {
	if !f.HasTag || !f.Exported && !f.Embedded { // json v2's words quote it
		return err
	}
	return fmt.Errorf("%w (tag `json:%q`)", err, f.Tag)
}

// jsonErrorf returns an error in json v2's words, which begin with Go's
// name.
func jsonErrorf(format string, args ...any) error {
	return fmt.Errorf(format, args...)
}

// tagOptions is what json v2 reads of a json tag.
type tagOptions struct {
	name    string // the JSON name, or the Go name
	hasName bool   // named by the tag
	embed   bool
	other   bool // an option but embed: omitempty, omitzero, string, format or case
	format  bool // a format
}

// readTag reads f's json tag as json v2 does, and returns its first
// error; ignored says json v2 leaves the field out.
func readTag(f TagField) (o tagOptions, ignored bool, err error) {
	tag := f.Tag
	if tag == "-" {
		return o, true, nil
	}
	if !f.Exported && !f.Embedded {
		if f.HasTag {
			err = jsonErrorf("unexported Go struct field %s cannot have non-ignored `json:%q` tag", f.Name, tag)
		}
		return o, true, err
	}
	o.name = f.Name
	if tag != "" && !strings.HasPrefix(tag, ",") {
		// Almost any name, up to a comma, a backslash or a quote.
		n := len(tag) - len(strings.TrimLeftFunc(tag, func(r rune) bool {
			return !strings.ContainsRune(",\\'\"`", r)
		}))
		name := tag[:n]
		var err2 error
		if !strings.HasPrefix(tag[n:], ",") && len(name) != len(tag) {
			name, n, err2 = consumeOption(tag, false)
			if err2 != nil {
				err = cmp.Or(err, jsonErrorf("Go struct field %s has malformed `json` tag: %v", f.Name, err2))
			}
		}
		if !utf8.ValidString(name) {
			err = cmp.Or(err, jsonErrorf("Go struct field %s has JSON object name %q with invalid UTF-8", f.Name, name))
			name = string([]rune(name))
		}
		if err2 == nil {
			o.hasName, o.name = true, name
		}
		tag = tag[n:]
	}
	var wasFormat, caseIgnore, caseStrict bool
	seen := map[string]bool{}
	for tag != "" {
		if tag[0] != ',' {
			err = cmp.Or(err, jsonErrorf("Go struct field %s has malformed `json` tag: invalid character %q before next option (expecting ',')", f.Name, tag[0]))
		} else {
			tag = tag[len(","):]
			if tag == "" {
				err = cmp.Or(err, jsonErrorf("Go struct field %s has malformed `json` tag: invalid trailing ',' character", f.Name))
				break
			}
		}
		opt, n, err2 := consumeOption(tag, false)
		if err2 != nil {
			err = cmp.Or(err, jsonErrorf("Go struct field %s has malformed `json` tag: %v", f.Name, err2))
		}
		rawOpt := tag[:n]
		tag = tag[n:]
		if wasFormat {
			err = cmp.Or(err, jsonErrorf("Go struct field %s has `format` tag option that was not specified last", f.Name))
		}
		switch opt {
		case "case":
			if !strings.HasPrefix(tag, ":") {
				err = cmp.Or(err, jsonErrorf("Go struct field %s is missing value for `case` tag option; specify `case:ignore` or `case:strict` instead", f.Name))
				break
			}
			tag = tag[len(":"):]
			val, n, err2 := consumeOption(tag, false)
			if err2 != nil {
				err = cmp.Or(err, jsonErrorf("Go struct field %s has malformed value for `case` tag option: %v", f.Name, err2))
				break
			}
			rawVal := tag[:n]
			tag = tag[n:]
			switch val {
			case "ignore":
				caseIgnore = true
			case "strict":
				caseStrict = true
			default:
				err = cmp.Or(err, jsonErrorf("Go struct field %s has unknown `case:%s` tag value", f.Name, rawVal))
			}
			o.other = true
		case "embed":
			o.embed = true
		case "omitzero", "omitempty", "string":
			o.other = true
		case "format":
			if !strings.HasPrefix(tag, ":") {
				err = cmp.Or(err, jsonErrorf("Go struct field %s is missing value for `format` tag option", f.Name))
				break
			}
			tag = tag[len(":"):]
			val, n, err2 := consumeOption(tag, true)
			if err2 != nil {
				err = cmp.Or(err, jsonErrorf("Go struct field %s has malformed value for `format` tag option: %v", f.Name, err2))
				break
			} else if val == "" {
				err = cmp.Or(err, jsonErrorf("Go struct field %s cannot have empty value for `format` tag option", f.Name))
				break
			}
			tag = tag[n:]
			o.other, o.format, wasFormat = true, true, true
		default:
			// Any other option is ignored, but a mis-spelling of one json
			// v2 knows.
			if want := KnownOption(opt); want != "" {
				err = cmp.Or(err, jsonErrorf("Go struct field %s has invalid appearance of `%s` tag option; specify `%s` instead", f.Name, opt, want))
			}
		}
		switch {
		case caseIgnore && caseStrict:
			err = cmp.Or(err, jsonErrorf("Go struct field %s cannot have both `case:ignore` and `case:strict` tag options", f.Name))
		case seen[opt]:
			err = cmp.Or(err, jsonErrorf("Go struct field %s has duplicate appearance of `%s` tag option", f.Name, rawOpt))
		}
		seen[opt] = true
	}
	return o, false, err
}

// consumeOption reads the option at the start of in, a Go identifier or,
// when quoted is allowed, a single-quoted string, and returns it and the
// bytes it takes up; when it is neither, all of in up to the next comma
// and an error.
func consumeOption(in string, quoted bool) (string, int, error) {
	i := strings.IndexByte(in, ',')
	if i < 0 {
		i = len(in)
	}
	switch r, _ := utf8.DecodeRuneInString(in); {
	case r == '_' || unicode.IsLetter(r):
		n := len(in) - len(strings.TrimLeftFunc(in, isIdentRune))
		return in[:n], n, nil
	case r == '\'' && quoted:
		// A Go string literal in single quotes: \' for a quote, and a
		// double quote as it is.
		var escaped bool
		b := []byte{'"'}
		n := len(`'`)
		for len(in) > n {
			r, rn := utf8.DecodeRuneInString(in[n:])
			switch {
			case escaped:
				if r == '\'' {
					b = b[:len(b)-1]
				}
				escaped = false
			case r == '\\':
				escaped = true
			case r == '"':
				b = append(b, '\\')
			case r == '\'':
				b = append(b, '"')
				n += len(`'`)
				out, err := strconv.Unquote(string(b))
				if err != nil {
					return in[:i], i, jsonErrorf("invalid single-quoted string: %s", in[:n])
				}
				return out, n, nil
			}
			b = append(b, in[n:][:rn]...)
			n += rn
		}
		return in[:i], i, jsonErrorf("single-quoted string not terminated: %s...", in[:min(n, 10)])
	case in == "":
		return in[:i], i, io.ErrUnexpectedEOF
	case quoted:
		return in[:i], i, jsonErrorf("invalid character %q at start of option (expecting Unicode letter or single quote)", r)
	default:
		return in[:i], i, jsonErrorf("invalid character %q at start of option (expecting Unicode letter)", r)
	}
}

// KnownOption returns the json v2 tag option opt spells in any case, with
// any underscores (omitEmpty, omit_zero: omitempty, omitzero), or "": json
// v2 refuses such a mis-spelling. It is safe for concurrent use.
func KnownOption(opt string) string {
	switch norm := strings.ReplaceAll(strings.ToLower(opt), "_", ""); norm {
	case "case", "embed", "omitzero", "omitempty", "string", "format":
		return norm
	}
	return ""
}

// isIdentRune reports whether r may be in a json tag option, as json v2
// reads one.
func isIdentRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

// RefusedTag returns an error naming a field, of a struct reachable from t
// through pointers, slices, arrays, map values and struct fields (not into
// interfaces or types with their own JSON or text encoding), whose json
// tag json v2 refuses (see TagError), in json v2's words after the Go path
// of the field holding the struct; nil when there is none. Schema refuses
// an argument type by the same rule; a result type needs it on its own,
// for the server encodes results with encoding/json's error semantics,
// which write such a type all the same.
func RefusedTag(t reflect.Type) error {
	return refusedTag(&adapter{root: t}, t, "", map[reflect.Type]bool{})
}

func refusedTag(a *adapter, t reflect.Type, where string, seen map[reflect.Type]bool) error {
	if seen[t] || t == timeType || t == rawType ||
		implements(t, jsonMarshaler) || implements(t, textMarshaler) {
		return nil
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return refusedTag(a, t.Elem(), where, seen)
	case reflect.Struct:
		fields := make([]TagField, t.NumField())
		for i := range fields {
			sf := t.Field(i)
			tag, hasTag := sf.Tag.Lookup("json")
			ft := sf.Type
			if ft.Kind() == reflect.Pointer && ft.Name() == "" {
				ft = ft.Elem()
			}
			fields[i] = TagField{Name: sf.Name, Tag: tag, HasTag: hasTag, Exported: sf.IsExported(),
				Embedded: sf.Anonymous, Struct: ft.Kind() == reflect.Struct}
		}
		if _, err := TagError(fields); err != nil {
			return a.errorf(where, "%v", err)
		}
		for i, f := range fields {
			if f.Tag == "-" || !f.Exported && !f.Embedded {
				continue
			}
			if err := refusedTag(a, t.Field(i).Type, joinWhere(where, f.Name), seen); err != nil {
				return err
			}
		}
	}
	return nil
}
