// Package docgen renders and checks the generated parts of Seahaven's
// guides: the field tables of the state document, rendered from its JSON
// Schema (schemas/state.json), and the fenced code blocks of a Markdown
// file with the marker comments that tie them to compiled code.
//
// Everything in the package is a pure function and safe for concurrent use.
package docgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// StateBegin and StateEnd delimit the generated state tables in
// docs/eval.md. Everything between them is replaced by `go run ./docs/gen`.
const (
	StateBegin = "<!-- state-table:begin (generated from schemas/state.json by `go run ./docs/gen`; do not edit) -->"
	StateEnd   = "<!-- state-table:end -->"
)

// object is a JSON object that keeps its keys in document order.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) get(key string) (any, bool) {
	if o == nil {
		return nil, false
	}
	v, ok := o.vals[key]
	return v, ok
}

func (o *object) str(key string) string {
	v, _ := o.get(key)
	s, _ := v.(string)
	return s
}

func (o *object) obj(key string) *object {
	v, _ := o.get(key)
	m, _ := v.(*object)
	return m
}

// parse decodes JSON, keeping object keys in order. Numbers are json.Number.
func parse(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := value(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("docgen: trailing data after the JSON document")
	}
	return v, nil
}

func value(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				v, err := value(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.keys = append(o.keys, k)
				}
				o.vals[k] = v
			}
			_, err := dec.Token() // '}'
			return o, err
		case '[':
			var a []any
			for dec.More() {
				v, err := value(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token() // ']'
			return a, err
		}
	}
	return tok, nil
}

// StateTables renders the field tables of the state document from its JSON
// Schema: one table for the document, then one per $defs entry in the order
// the document first refers to them. Each row gives a field's name, its
// type (with its constraints), whether it is required, and its description:
// the schema's, else the field's entry in notes (see Notes). It fails for a
// field with neither, and for a note naming no field of the schema.
func StateTables(schema []byte, notes map[string]string) (string, error) {
	v, err := parse(schema)
	if err != nil {
		return "", fmt.Errorf("docgen: the schema is not JSON: %w", err)
	}
	root, ok := v.(*object)
	if !ok {
		return "", errors.New("docgen: the schema is not a JSON object")
	}
	defs := root.obj("$defs")
	var b strings.Builder
	seen := map[string]bool{}
	used := map[string]bool{}
	var queue []*object
	var titles []string
	queue = append(queue, root)
	titles = append(titles, cmpOr(root.str("title"), "State"))
	for len(queue) > 0 {
		o, title := queue[0], titles[0]
		queue, titles = queue[1:], titles[1:]
		refs, err := table(&b, title, o, notes, used)
		if err != nil {
			return "", err
		}
		for _, r := range refs {
			if seen[r] {
				continue
			}
			seen[r] = true
			d := defs.obj(r)
			if d == nil {
				return "", fmt.Errorf("docgen: #/$defs/%s does not resolve", r)
			}
			queue = append(queue, d)
			titles = append(titles, r)
		}
	}
	// $defs no field refers to are rendered too, in name order.
	var rest []string
	for _, k := range defs.keysOrNil() {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, r := range rest {
		if _, err := table(&b, r, defs.obj(r), notes, used); err != nil {
			return "", err
		}
	}
	var stale []string
	for k := range notes {
		if !used[k] {
			stale = append(stale, k)
		}
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		return "", fmt.Errorf("docgen: notes name fields the schema does not have, or that it describes itself: %s", strings.Join(stale, ", "))
	}
	return strings.TrimRight(b.String(), "\n") + "\n", nil
}

func (o *object) keysOrNil() []string {
	if o == nil {
		return nil
	}
	return o.keys
}

// table writes one object schema's heading, description and field table,
// and returns the $defs it refers to, in order. used collects the notes it
// took.
func table(b *strings.Builder, title string, o *object, notes map[string]string, used map[string]bool) ([]string, error) {
	props := o.obj("properties")
	if props == nil {
		return nil, fmt.Errorf("docgen: %s has no properties", title)
	}
	required := map[string]bool{}
	if req, ok := o.get("required"); ok {
		for _, r := range req.([]any) {
			required[r.(string)] = true
		}
	}
	fmt.Fprintf(b, "#### %s\n\n", title)
	if d := o.str("description"); d != "" {
		fmt.Fprintf(b, "%s\n\n", d)
	}
	b.WriteString("| field | type | required | description |\n|---|---|---|---|\n")
	var refs []string
	for _, name := range props.keys {
		p := props.obj(name)
		typ, r, err := typeOf(p)
		if err != nil {
			return nil, fmt.Errorf("docgen: %s.%s: %w", title, name, err)
		}
		refs = append(refs, r...)
		req := "no"
		if required[name] {
			req = "yes"
		}
		desc := p.str("description")
		if desc == "" {
			key := title + "." + name
			if desc = notes[key]; desc == "" {
				return nil, fmt.Errorf("docgen: %s has no description in the schema and no entry in the notes", key)
			}
			used[key] = true
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", name, cell(typ), req, cell(desc))
	}
	b.WriteString("\n")
	return refs, nil
}

// typeOf renders a property schema as a type, and returns the $defs it
// refers to.
func typeOf(p *object) (string, []string, error) {
	if p == nil {
		return "", nil, errors.New("not an object schema")
	}
	if ref := p.str("$ref"); ref != "" {
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		if !ok {
			return "", nil, fmt.Errorf("unsupported $ref %q", ref)
		}
		return fmt.Sprintf("[%s](#%s)", name, strings.ToLower(name)), []string{name}, nil
	}
	if c, ok := p.get("const"); ok {
		return literal(c), nil, nil
	}
	if e, ok := p.get("enum"); ok {
		var alts []string
		for _, v := range e.([]any) {
			alts = append(alts, literal(v))
		}
		return strings.Join(alts, " or "), nil, nil
	}
	if alts0, ok := p.get("anyOf"); ok {
		var alts []string
		var refs []string
		for _, a := range alts0.([]any) {
			t, r, err := typeOf(a.(*object))
			if err != nil {
				return "", nil, err
			}
			alts = append(alts, t)
			refs = append(refs, r...)
		}
		return strings.Join(alts, " or "), refs, nil
	}
	var types []string
	switch t := p.vals["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			types = append(types, x.(string))
		}
	case nil:
		return "any JSON value", nil, nil
	}
	var refs []string
	for i, t := range types {
		switch t {
		case "array":
			if items := p.obj("items"); items != nil {
				it, r, err := typeOf(items)
				if err != nil {
					return "", nil, err
				}
				types[i] = "array of " + it
				refs = append(refs, r...)
			}
		case "object":
			if ap := p.obj("additionalProperties"); ap != nil {
				it, r, err := typeOf(ap)
				if err != nil {
					return "", nil, err
				}
				types[i] = "object of " + it
				refs = append(refs, r...)
			}
		}
	}
	s := strings.Join(types, " or ")
	if m, ok := p.get("minimum"); ok {
		s += fmt.Sprintf(", ≥ %v", m)
	}
	if pat := p.str("pattern"); pat != "" {
		s += fmt.Sprintf(", matching `%s`", pat)
	}
	return s, refs, nil
}

func literal(v any) string {
	b, _ := json.Marshal(v)
	return "`" + string(b) + "`"
}

// cell escapes text for a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Splice replaces what lies between the lines begin and end in doc with
// content. It fails when either marker is missing, repeated or out of order.
func Splice(doc, begin, end, content string) (string, error) {
	_, before, after, err := between(doc, begin, end)
	if err != nil {
		return "", err
	}
	return before + content + after, nil
}

// Between returns what lies between the lines begin and end in doc.
func Between(doc, begin, end string) (string, error) {
	inner, _, _, err := between(doc, begin, end)
	return inner, err
}

func between(doc, begin, end string) (inner, before, after string, err error) {
	if strings.Count(doc, begin+"\n") != 1 || strings.Count(doc, "\n"+end) != 1 {
		return "", "", "", fmt.Errorf("docgen: want exactly one line %q and one line %q", begin, end)
	}
	i := strings.Index(doc, begin+"\n") + len(begin) + 1
	j := strings.Index(doc, "\n"+end) + 1
	if j < i {
		return "", "", "", fmt.Errorf("docgen: %q comes before %q", end, begin)
	}
	return doc[i:j], doc[:i], doc[j:], nil
}
