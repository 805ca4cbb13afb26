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
// which openAPIFor adds from package schemas.
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

// openAPIFor returns the OpenAPI 3.1 description of the HTTP routes
// whose paths keep accepts, built once.
func openAPIFor(keep func(path string) bool) func() ([]byte, error) {
	return sync.OnceValues(func() ([]byte, error) {
		var doc map[string]any
		if err := json.Unmarshal(openAPITemplate, &doc); err != nil {
			return nil, fmt.Errorf("openenv: openapi.json: %w", err)
		}
		maps.DeleteFunc(doc["paths"].(map[string]any), func(p string, _ any) bool { return !keep(p) })
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
