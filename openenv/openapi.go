package openenv

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"

	"github.com/seahaven/seahaven/schemas"
)

// openAPITemplate is the OpenAPI description without the shared schemas,
// which openAPIDoc adds from package schemas.
//
//go:embed openapi.json
var openAPITemplate []byte

// openAPIComponents maps component names to the schema files they embed.
// Each file keeps its $id, so its references resolve inside the document.
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

// openAPIDoc returns the OpenAPI 3.1 description of the HTTP routes.
var openAPIDoc = sync.OnceValues(func() ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openAPITemplate, &doc); err != nil {
		return nil, fmt.Errorf("openenv: openapi.json: %w", err)
	}
	comps := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for comp, name := range openAPIComponents {
		b, err := schemas.Get(name)
		if err != nil {
			return nil, err
		}
		comps[comp] = json.RawMessage(b)
	}
	return encode(doc)
})

// openAPIPaths returns openAPIDoc restricted to the paths keep accepts.
func openAPIPaths(keep func(path string) bool) ([]byte, error) {
	full, err := openAPIDoc()
	if err != nil {
		return nil, err
	}
	var doc map[string]json.RawMessage
	var paths map[string]json.RawMessage
	if err := json.Unmarshal(full, &doc); err != nil {
		return nil, fmt.Errorf("openenv: openapi.json: %w", err)
	}
	if err := json.Unmarshal(doc["paths"], &paths); err != nil {
		return nil, fmt.Errorf("openenv: openapi.json paths: %w", err)
	}
	maps.DeleteFunc(paths, func(p string, _ json.RawMessage) bool { return !keep(p) })
	if doc["paths"], err = encode(paths); err != nil {
		return nil, err
	}
	return encode(doc)
}

var (
	// agentOpenAPI describes the agent listener's routes.
	agentOpenAPI = sync.OnceValues(func() ([]byte, error) {
		return openAPIPaths(func(p string) bool { return slices.Contains(AgentPaths, p) })
	})
	// productionOpenAPI describes every route but the episode routes.
	productionOpenAPI = sync.OnceValues(func() ([]byte, error) {
		return openAPIPaths(func(p string) bool { return !episodePaths[p] })
	})
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
