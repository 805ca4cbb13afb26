package openenv

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path"
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
		paths := doc["paths"].(map[string]any)
		maps.DeleteFunc(paths, func(p string, _ any) bool { return !keep(p) })
		for p, item := range paths {
			for _, v := range item.(map[string]any) {
				op, ok := v.(map[string]any)
				switch {
				case !ok: // not an operation
				case openPaths[p]:
					op["security"] = []any{}
				default:
					// Answered 401 without the token a server was
					// started with.
					op["responses"].(map[string]any)["401"] = map[string]any{"$ref": "#/components/responses/Unauthorized"}
				}
			}
		}
		comps := doc["components"].(map[string]any)["schemas"].(map[string]any)
		byFile := map[string]string{} // schema file name -> component
		for comp, name := range openAPIComponents {
			byFile[name] = comp
		}
		for _, comp := range slices.Sorted(maps.Keys(openAPIComponents)) {
			b, err := schemas.Get(openAPIComponents[comp])
			if err != nil {
				return nil, err
			}
			var file map[string]any
			if err := json.Unmarshal(b, &file); err != nil {
				return nil, fmt.Errorf("openenv: schema of %s: %w", comp, err)
			}
			if err := rootRefs(file, comp, byFile); err != nil {
				return nil, err
			}
			defs, _ := file["$defs"].(map[string]any)
			delete(file, "$defs")
			delete(file, "$id")
			delete(file, "$schema")
			if defs == nil {
				defs = map[string]any{}
			}
			defs[comp] = file
			for name, schema := range defs {
				if _, taken := comps[name]; taken {
					return nil, fmt.Errorf("openenv: openapi.json: two components named %s", name)
				}
				comps[name] = schema
			}
		}
		return encode(doc)
	})
}

// rootRefs rewrites every $ref in v, a part of the schema file of
// component comp, to point from the document's root: to comp, another
// file's component (named by its file, or its $id) or the component one of
// their $defs is.
func rootRefs(v any, comp string, byFile map[string]string) error {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			ref, isRef := e.(string)
			if k != "$ref" || !isRef {
				if err := rootRefs(e, comp, byFile); err != nil {
					return err
				}
				continue
			}
			file, ptr, _ := strings.Cut(ref, "#")
			target := comp
			if file != "" {
				if target = byFile[strings.TrimSuffix(path.Base(file), ".json")]; target == "" {
					return fmt.Errorf("openenv: openapi.json: $ref %q names no schema of the document", ref)
				}
			}
			if def, ok := strings.CutPrefix(ptr, "/$defs/"); ok {
				v[k] = "#/components/schemas/" + def
			} else {
				v[k] = "#/components/schemas/" + target + ptr
			}
		}
	case []any:
		for _, e := range v {
			if err := rootRefs(e, comp, byFile); err != nil {
				return err
			}
		}
	}
	return nil
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
