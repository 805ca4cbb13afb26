package company_test

import (
	"encoding/json"
	"testing"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/company"
)

// TestWorlds_StringsHaveMaxLength checks that every string argument of
// every tool of the example worlds (the company and every world it adds)
// has a maxLength, so no call can store or echo text of any size.
func TestWorlds_StringsHaveMaxLength(t *testing.T) {
	seen := map[*env.World]bool{}
	var walk func(w *env.World)
	walk = func(w *env.World) {
		if seen[w] {
			return
		}
		seen[w] = true
		for _, def := range w.Tools() {
			var schema map[string]any
			if err := json.Unmarshal(def.Info(def.Name).InputSchema, &schema); err != nil {
				t.Fatalf("%s.%s: %v", w.Name(), def.Name, err)
			}
			checkStrings(t, w.Name()+"."+def.Name, schema)
		}
		for _, e := range w.Edges() {
			walk(e.Child)
		}
	}
	walk(company.World)
	if len(seen) < 4 {
		t.Fatalf("walked %d worlds, want the company and the worlds it adds", len(seen))
	}
}

// checkStrings fails for every string schema under s without maxLength.
func checkStrings(tb testing.TB, at string, s map[string]any) {
	tb.Helper()
	if s["type"] == "string" {
		if _, ok := s["maxLength"]; !ok {
			tb.Errorf("%s: a string with no maxLength", at)
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for name, p := range props {
			if ps, ok := p.(map[string]any); ok {
				checkStrings(tb, at+"."+name, ps)
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		checkStrings(tb, at+"[]", items)
	}
}
