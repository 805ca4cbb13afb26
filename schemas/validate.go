package schemas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// ValidationError says why a document does not match a schema.
type ValidationError struct {
	// Schema is the name of the schema checked against.
	Schema string
	// Problems lists each failure as "<JSON pointer>: <reason>", in document order.
	Problems []string
}

// Error joins the problems.
func (e *ValidationError) Error() string {
	return fmt.Sprintf("schemas: document does not match %s: %s", e.Schema, strings.Join(e.Problems, "; "))
}

// Validate checks the JSON document doc against the schema called name. It
// returns nil when doc matches, a *ValidationError when it does not, and
// another error when doc is not JSON or name is unknown (wrapping ErrUnknown).
//
// Validate implements the part of JSON Schema 2020-12 that these files use:
// type, const, enum, properties, required, additionalProperties, items,
// oneOf, anyOf, minimum, minLength, maxLength, pattern, $ref (to a $defs
// entry or a sibling file) and the annotations ($id, title, description,
// default, ...). The package's tests refuse a schema file that uses any other
// keyword, so nothing in these files is silently unchecked.
func Validate(name string, doc []byte) error {
	set, err := loadSet()
	if err != nil {
		return err
	}
	file := fileName(name)
	root, ok := set.docs[file]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknown, name)
	}
	inst, err := decode(doc)
	if err != nil {
		return fmt.Errorf("schemas: document is not JSON: %w", err)
	}
	var problems []string
	set.check(file, root, inst, "", &problems)
	if len(problems) > 0 {
		return &ValidationError{Schema: strings.TrimSuffix(file, ".json"), Problems: problems}
	}
	return nil
}

// schemaSet is every embedded schema, parsed and checked once.
type schemaSet struct {
	docs map[string]any // file name -> parsed schema

	mu       sync.Mutex                // guards patterns
	patterns map[string]*regexp.Regexp // compiled pattern keywords
}

var (
	setOnce sync.Once
	setVal  *schemaSet
	setErr  error
)

// loadSet parses the embedded files and checks that each uses only supported
// keywords and that every $ref resolves.
func loadSet() (*schemaSet, error) {
	setOnce.Do(func() {
		s := &schemaSet{docs: map[string]any{}, patterns: map[string]*regexp.Regexp{}}
		for _, n := range Names() {
			b, err := FS.ReadFile(n + ".json")
			if err != nil {
				setErr = fmt.Errorf("schemas: reading %s.json: %w", n, err)
				return
			}
			v, err := decode(b)
			if err != nil {
				setErr = fmt.Errorf("schemas: %s.json is not JSON: %w", n, err)
				return
			}
			s.docs[n+".json"] = v
		}
		for file, doc := range s.docs {
			if err := s.lint(file, doc, "#"); err != nil {
				setErr = err
				return
			}
		}
		setVal = s
	})
	return setVal, setErr
}

// decode parses JSON keeping numbers as json.Number and refusing trailing data.
func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	if _, err := d.Token(); err == nil {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

// annotations are keywords that never fail a document.
var annotations = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "title": true,
	"description": true, "default": true, "examples": true,
}

// assertions are the keywords check implements.
var assertions = map[string]bool{
	"$defs": true, "$ref": true, "type": true, "const": true, "enum": true,
	"properties": true, "required": true, "additionalProperties": true,
	"items": true, "oneOf": true, "anyOf": true, "minimum": true,
	"minLength": true, "maxLength": true, "pattern": true,
}

// lint checks one schema of file at JSON pointer where.
func (s *schemaSet) lint(file string, schema any, where string) error {
	at := func(format string, args ...any) error {
		return fmt.Errorf("schemas: %s%s: %s", file, where, fmt.Sprintf(format, args...))
	}
	if _, ok := schema.(bool); ok {
		return nil
	}
	m, ok := schema.(map[string]any)
	if !ok {
		return at("a schema must be an object or a boolean")
	}
	for _, k := range sortedKeys(m) {
		if !annotations[k] && !assertions[k] {
			return at("unsupported keyword %q", k)
		}
	}
	for _, k := range []string{"$defs", "properties"} {
		if sub, ok := m[k]; ok {
			subs, ok := sub.(map[string]any)
			if !ok {
				return at("%s must be an object", k)
			}
			for _, n := range sortedKeys(subs) {
				if err := s.lint(file, subs[n], where+"/"+k+"/"+n); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range []string{"additionalProperties", "items"} {
		if sub, ok := m[k]; ok {
			if err := s.lint(file, sub, where+"/"+k); err != nil {
				return err
			}
		}
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if sub, ok := m[k]; ok {
			list, ok := sub.([]any)
			if !ok || len(list) == 0 {
				return at("%s must be a non-empty array", k)
			}
			for i, e := range list {
				if err := s.lint(file, e, fmt.Sprintf("%s/%s/%d", where, k, i)); err != nil {
					return err
				}
			}
		}
	}
	if ref, ok := m["$ref"]; ok {
		r, ok := ref.(string)
		if !ok {
			return at("$ref must be a string")
		}
		if _, _, err := s.resolve(file, r); err != nil {
			return at("%v", err)
		}
	}
	if t, ok := m["type"]; ok {
		for _, n := range typeNames(t) {
			switch n {
			case "object", "array", "string", "integer", "number", "boolean", "null":
			default:
				return at("unknown type %q", n)
			}
		}
		if len(typeNames(t)) == 0 {
			return at("type must be a string or an array of strings")
		}
	}
	if req, ok := m["required"]; ok {
		list, ok := req.([]any)
		if !ok {
			return at("required must be an array")
		}
		for _, r := range list {
			if _, ok := r.(string); !ok {
				return at("required must list strings")
			}
		}
	}
	if e, ok := m["enum"]; ok {
		if _, ok := e.([]any); !ok {
			return at("enum must be an array")
		}
	}
	for _, k := range []string{"minimum", "minLength", "maxLength"} {
		if v, ok := m[k]; ok {
			if _, ok := v.(json.Number); !ok {
				return at("%s must be a number", k)
			}
		}
	}
	if p, ok := m["pattern"]; ok {
		ps, ok := p.(string)
		if !ok {
			return at("pattern must be a string")
		}
		if _, err := regexp.Compile(ps); err != nil {
			return at("pattern: %v", err)
		}
	}
	return nil
}

// resolve finds the schema a $ref names, relative to file.
func (s *schemaSet) resolve(file, ref string) (string, any, error) {
	target, frag, _ := strings.Cut(ref, "#")
	if target != "" {
		target = path.Base(target)
	} else {
		target = file
	}
	doc, ok := s.docs[target]
	if !ok {
		return "", nil, fmt.Errorf("$ref %q names no schema file", ref)
	}
	if frag == "" {
		return target, doc, nil
	}
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return "", nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
		if cur, ok = m[tok]; !ok {
			return "", nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
	}
	return target, cur, nil
}

// check appends to problems every way inst (at pointer at) fails schema.
func (s *schemaSet) check(file string, schema any, inst any, at string, problems *[]string) {
	fail := func(format string, args ...any) {
		loc := at
		if loc == "" {
			loc = "(root)"
		}
		*problems = append(*problems, loc+": "+fmt.Sprintf(format, args...))
	}
	if b, ok := schema.(bool); ok {
		if !b {
			fail("no value is allowed here")
		}
		return
	}
	m := schema.(map[string]any)
	if ref, ok := m["$ref"].(string); ok {
		f, sub, err := s.resolve(file, ref)
		if err != nil {
			fail("%v", err)
			return
		}
		s.check(f, sub, inst, at, problems)
	}
	if t, ok := m["type"]; ok {
		names := typeNames(t)
		matched := false
		for _, n := range names {
			if hasType(inst, n) {
				matched = true
				break
			}
		}
		if !matched {
			fail("want %s, got %s", strings.Join(names, " or "), kindOf(inst))
			return
		}
	}
	if c, ok := m["const"]; ok && !equal(c, inst) {
		fail("want %s, got %s", show(c), show(inst))
	}
	if e, ok := m["enum"].([]any); ok {
		found := false
		for _, v := range e {
			if equal(v, inst) {
				found = true
				break
			}
		}
		if !found {
			opts := make([]string, len(e))
			for i, v := range e {
				opts[i] = show(v)
			}
			fail("want one of %s, got %s", strings.Join(opts, ", "), show(inst))
		}
	}
	if obj, ok := inst.(map[string]any); ok {
		s.checkObject(file, m, obj, at, problems)
	}
	if arr, ok := inst.([]any); ok {
		if items, ok := m["items"]; ok {
			for i, v := range arr {
				s.check(file, items, v, at+"/"+strconv.Itoa(i), problems)
			}
		}
	}
	if str, ok := inst.(string); ok {
		n := utf8.RuneCountInString(str)
		if v, ok := number(m["minLength"]); ok && float64(n) < v {
			fail("want at least %v characters, got %d", v, n)
		}
		if v, ok := number(m["maxLength"]); ok && float64(n) > v {
			fail("want at most %v characters, got %d", v, n)
		}
		if p, ok := m["pattern"].(string); ok && !s.pattern(p).MatchString(str) {
			fail("%s does not match %s", show(str), p)
		}
	}
	if num, ok := number(inst); ok {
		if v, ok := number(m["minimum"]); ok && num < v {
			fail("want at least %v, got %v", v, num)
		}
	}
	if alts, ok := m["oneOf"].([]any); ok {
		var first []string
		n := 0
		for _, alt := range alts {
			var sub []string
			s.check(file, alt, inst, at, &sub)
			if len(sub) == 0 {
				n++
			} else if first == nil || len(sub) < len(first) {
				first = sub
			}
		}
		switch {
		case n == 0:
			fail("matches none of the oneOf alternatives; the closest fails with: %s", strings.Join(first, "; "))
		case n > 1:
			fail("matches %d of the oneOf alternatives, want exactly one", n)
		}
	}
	if alts, ok := m["anyOf"].([]any); ok {
		var first []string
		for _, alt := range alts {
			var sub []string
			s.check(file, alt, inst, at, &sub)
			if len(sub) == 0 {
				first = nil
				break
			}
			if first == nil || len(sub) < len(first) {
				first = sub
			}
		}
		if first != nil {
			fail("matches none of the anyOf alternatives; the closest fails with: %s", strings.Join(first, "; "))
		}
	}
}

// checkObject applies the object keywords of schema m to obj.
func (s *schemaSet) checkObject(file string, m map[string]any, obj map[string]any, at string, problems *[]string) {
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if _, ok := obj[r.(string)]; !ok {
				loc := at
				if loc == "" {
					loc = "(root)"
				}
				*problems = append(*problems, fmt.Sprintf("%s: missing required key %q", loc, r))
			}
		}
	}
	props, _ := m["properties"].(map[string]any)
	for _, k := range sortedKeys(obj) {
		child := at + "/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
		if p, ok := props[k]; ok {
			s.check(file, p, obj[k], child, problems)
			continue
		}
		if ap, ok := m["additionalProperties"]; ok {
			if b, ok := ap.(bool); ok && !b {
				*problems = append(*problems, fmt.Sprintf("%s: key is not allowed", child))
				continue
			}
			s.check(file, ap, obj[k], child, problems)
		}
	}
}

// pattern returns the compiled form of a pattern keyword.
func (s *schemaSet) pattern(p string) *regexp.Regexp {
	s.mu.Lock()
	defer s.mu.Unlock()
	re, ok := s.patterns[p]
	if !ok {
		re = regexp.MustCompile(p) // lint compiled it already
		s.patterns[p] = re
	}
	return re
}

// typeNames reads a type keyword.
func typeNames(t any) []string {
	switch t := t.(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil
			}
			out = append(out, s)
		}
		return out
	}
	return nil
}

// hasType reports whether v is of JSON Schema type name.
func hasType(v any, name string) bool {
	switch name {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		f, ok := number(v)
		return ok && !math.IsInf(f, 0) && f == math.Trunc(f)
	}
	return false
}

// kindOf names the JSON type of v.
func kindOf(v any) string {
	switch v := v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	case json.Number:
		if hasType(v, "integer") {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// number returns v as a float64 when it is a JSON number.
func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	if err != nil && !math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// equal compares two decoded JSON values.
func equal(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		fa, _ := number(a)
		fb, ok := number(b)
		return ok && fa == fb
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			w, ok := bm[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		bl, ok := b.([]any)
		if !ok || len(a) != len(bl) {
			return false
		}
		for i := range a {
			if !equal(a[i], bl[i]) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// show renders a value for a message, shortened.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
