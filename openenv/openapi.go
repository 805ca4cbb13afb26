package openenv

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
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

var (
	openAPIOnce  sync.Once
	openAPIBytes []byte
	openAPIErr   error
)

// openAPIDoc returns the OpenAPI 3.1 description of the HTTP routes.
func openAPIDoc() ([]byte, error) {
	openAPIOnce.Do(func() {
		var doc map[string]any
		if err := json.Unmarshal(openAPITemplate, &doc); err != nil {
			openAPIErr = fmt.Errorf("openenv: openapi.json: %w", err)
			return
		}
		comps := doc["components"].(map[string]any)["schemas"].(map[string]any)
		for comp, name := range openAPIComponents {
			b, err := schemas.Get(name)
			if err != nil {
				openAPIErr = err
				return
			}
			comps[comp] = json.RawMessage(b)
		}
		openAPIBytes, openAPIErr = encode(doc)
	})
	return openAPIBytes, openAPIErr
}

// serveOpenAPI serves GET /openapi.json.
func (s *Server) serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	b, err := s.openAPIServed()
	writeOpenAPI(w, b, err)
}
