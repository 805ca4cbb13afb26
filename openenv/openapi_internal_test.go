package openenv

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
)

// TestOpenAPI_EveryRoute checks /openapi.json against the router: it lists
// every route the listener serves, with its methods, and no other, in both
// modes.
func TestOpenAPI_EveryRoute(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  Config
		doc  func() ([]byte, error)
	}{
		{"Simulation", Config{}, openAPIDoc},
		{"Production", Config{Production: true}, productionOpenAPI},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var served []string
			err := chi.Walk((&Server{cfg: tt.cfg}).routes().(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
				served = append(served, method+" "+route)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			b, err := tt.doc()
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Paths map[string]map[string]json.RawMessage `json:"paths"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			var listed []string
			for path, ops := range doc.Paths {
				for method := range ops {
					listed = append(listed, strings.ToUpper(method)+" "+path)
				}
			}
			slices.Sort(served)
			slices.Sort(listed)
			for _, r := range served {
				if !slices.Contains(listed, r) {
					t.Errorf("%s is served but not in /openapi.json", r)
				}
			}
			for _, r := range listed {
				if !slices.Contains(served, r) {
					t.Errorf("%s is in /openapi.json but not served", r)
				}
			}
		})
	}
}
