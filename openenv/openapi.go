package openenv

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/seahaven/seahaven/schemas"
)

// openAPITemplate is the OpenAPI description without the shared schemas,
// which openAPIFor adds from package schemas.
//
//go:embed openapi.json
var openAPITemplate []byte

// openAPIComponents maps component names to the schema files they embed.
var openAPIComponents = map[string]string{
	"Action":         "action",
	"Observation":    "observation",
	"StepResponse":   "step_response",
	"ResetData":      "reset_data",
	"State":          "state",
	"InspectRequest": "inspect_request",
	"InspectResult":  "inspect_result",
	"Grading":        "grading",
	"Checkpoint":     "checkpoint",
}

// openAPIFor returns the OpenAPI 3.1 description of the HTTP routes
// whose paths keep accepts, built once.
//
// Each schema file is a component without its $id and $schema, and each of
// its $defs a component of its own, so that every reference points from
// the document's root to a component ("#/components/schemas/…"): OpenAPI
// tools, code generators among them, resolve a reference against the
// document alone, not against the base URI a schema's $id sets in JSON
// Schema, and take a component's $defs for one of its properties.
func openAPIFor(keep func(path string) bool) func() ([]byte, error) {
	return sync.OnceValues(func() ([]byte, error) {
		var doc map[string]any
		if err := json.Unmarshal(openAPITemplate, &doc); err != nil {
			return nil, fmt.Errorf("openenv: openapi.json: %w", err)
		}
		maps.DeleteFunc(doc["paths"].(map[string]any), func(p string, _ any) bool { return !keep(p) })
		files := map[string]map[string]any{} // by component
		ids := map[string]string{}           // a file's $id -> its component
		for comp, name := range openAPIComponents {
			b, err := schemas.Get(name)
			if err != nil {
				return nil, err
			}
			var file map[string]any
			if err := json.Unmarshal(b, &file); err != nil {
				return nil, fmt.Errorf("openenv: schema %s: %w", name, err)
			}
			files[comp] = file
			ids[file["$id"].(string)] = comp
		}
		if err := rootRefs(doc, "", nil, ids); err != nil {
			return nil, err
		}
		comps := doc["components"].(map[string]any)["schemas"].(map[string]any)
		add := func(name string, schema any) error {
			if _, taken := comps[name]; taken {
				return fmt.Errorf("openenv: openapi.json: two components named %s", name)
			}
			comps[name] = schema
			return nil
		}
		for _, comp := range slices.Sorted(maps.Keys(files)) {
			file := files[comp]
			base, err := url.Parse(file["$id"].(string))
			if err != nil {
				return nil, fmt.Errorf("openenv: schema of %s: %w", comp, err)
			}
			if err := rootRefs(file, comp, base, ids); err != nil {
				return nil, err
			}
			defs, _ := file["$defs"].(map[string]any)
			for _, name := range slices.Sorted(maps.Keys(defs)) {
				if err := add(name, defs[name]); err != nil {
					return nil, err
				}
			}
			delete(file, "$defs")
			delete(file, "$id")
			delete(file, "$schema")
			if err := add(comp, file); err != nil {
				return nil, err
			}
		}
		return encode(doc)
	})
}

// rootRefs rewrites every $ref in v, a part of the schema file of
// component comp ("" for the document around the files), to point from
// the document's root (componentPointer): a reference inside the file
// ("#/$defs/…"), or to another file by its $id or a name relative to base,
// the file's own $id.
func rootRefs(v any, comp string, base *url.URL, ids map[string]string) error {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			ref, isRef := e.(string)
			if k != "$ref" || !isRef {
				if err := rootRefs(e, comp, base, ids); err != nil {
					return err
				}
				continue
			}
			if frag, local := strings.CutPrefix(ref, "#"); local {
				if comp != "" {
					v[k] = componentPointer(comp, frag)
				}
				continue
			}
			u, err := url.Parse(ref)
			if err == nil && base != nil {
				u = base.ResolveReference(u)
			}
			if err != nil {
				return fmt.Errorf("openenv: openapi.json: $ref %q: %w", ref, err)
			}
			frag := u.Fragment
			u.Fragment = ""
			target, ok := ids[u.String()]
			if !ok {
				return fmt.Errorf("openenv: openapi.json: $ref %q names no schema of the document", ref)
			}
			v[k] = componentPointer(target, frag)
		}
	case []any:
		for _, e := range v {
			if err := rootRefs(e, comp, base, ids); err != nil {
				return err
			}
		}
	}
	return nil
}

// componentPointer is the reference from the document's root to what the
// JSON pointer ptr names in the schema file of component comp, whose $defs
// are components of their own.
func componentPointer(comp, ptr string) string {
	if def, ok := strings.CutPrefix(ptr, "/$defs/"); ok {
		return "#/components/schemas/" + def
	}
	return "#/components/schemas/" + comp + ptr
}

var (
	// openAPIDoc describes every route.
	openAPIDoc = openAPIFor(func(string) bool { return true })
	// agentOpenAPI describes the agent listener's routes.
	agentOpenAPI = openAPIFor(func(p string) bool { return slices.Contains(AgentPaths, p) })
	// productionOpenAPI describes every route but the episode routes.
	productionOpenAPI = openAPIFor(func(p string) bool { return !episodePaths[p] })
)

// serveOpenAPI serves GET /openapi.json: the description doc returns, or
// the error making it.
func serveOpenAPI(doc func() ([]byte, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		b, err := doc()
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, newError(codeExecution, "%v", err).httpBody())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}
}
