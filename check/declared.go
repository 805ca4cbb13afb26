package check

import (
	"reflect"
	"slices"
	"strings"

	"github.com/seahaven/seahaven/env"
)

// declaredFindings binds the structs declared with env.DeclareWorlds to the
// world's AddWorld registrations: a field naming no registered child is
// SH502, and, when at least one struct is declared, a registered child no
// struct names is SH503.
func declaredFindings(w *env.World) []Finding {
	declared := w.DeclaredWorlds()
	if len(declared) == 0 {
		return nil
	}
	edges := w.Edges()
	names := make([]string, len(edges))
	for i, e := range edges {
		names[i] = e.Name
	}
	list := "it adds no worlds"
	if len(names) > 0 {
		list = "registered: " + strings.Join(names, ", ")
	}
	var fs []Finding
	annotated := map[string]bool{}
	var types []string
	for _, d := range declared {
		types = append(types, d.Type.String())
		for _, f := range handleFields(d) {
			annotated[f.child] = true
			if !slices.Contains(names, f.child) {
				fs = append(fs, finding(at(d.Where, w), "SH502", "%s.%s names the child %q, which no AddWorld on %s registered (%s)",
					d.Type, f.field, f.child, w.Name(), list))
			}
		}
	}
	for _, e := range edges {
		if !annotated[e.Name] {
			fs = append(fs, finding(at(e.Where, w), "SH503", "%s registers the child %q, which no declared struct names (declared: %s)",
				w.Name(), e.Name, strings.Join(types, ", ")))
		}
	}
	return fs
}

type handleField struct{ field, child string }

// handleFields returns a declaration's fields in field order.
func handleFields(d *env.Declared) []handleField {
	byField := make(map[string]string, len(d.Fields))
	for child, field := range d.Fields {
		byField[field] = child
	}
	var out []handleField
	if d.Type != nil && d.Type.Kind() == reflect.Struct {
		for f := range d.Type.Fields() {
			if child, ok := byField[f.Name]; ok {
				out = append(out, handleField{field: f.Name, child: child})
			}
		}
	}
	return out
}
