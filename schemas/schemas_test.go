package schemas_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/schemas"
)

func TestNames(t *testing.T) {
	want := "action checkpoint client_message error_frame grading inspect_request inspect_result observation reset_data server_message state step_response"
	if got := strings.Join(schemas.Names(), " "); got != want {
		t.Errorf("Names() = %s\nwant %s", got, want)
	}
}

func TestGet(t *testing.T) {
	tests := []struct {
		name    string
		wantErr bool
	}{
		{"action", false},
		{"action.json", false},
		{"state", false},
		{"nope", true},
		{"", true},
		{"../schemas/action", true},
		{"action.json.json", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := schemas.Get(tt.name)
			if tt.wantErr {
				if !errors.Is(err, schemas.ErrUnknown) {
					t.Errorf("Get(%q) error %v, want ErrUnknown", tt.name, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
				t.Errorf("$schema = %v", doc["$schema"])
			}
			base := strings.TrimSuffix(tt.name, ".json")
			if doc["$id"] != "https://github.com/seahaven/seahaven/schemas/"+base+".json" {
				t.Errorf("$id = %v", doc["$id"])
			}
		})
	}
	t.Run("Copy", func(t *testing.T) {
		a, _ := schemas.Get("action")
		a[0] = 'X'
		b, _ := schemas.Get("action")
		if b[0] == 'X' {
			t.Error("Get returned shared bytes")
		}
	})
}

func TestServedSchemasAreSelfContained(t *testing.T) {
	// GET /schema serves these alone, so their references must stay inside them.
	for _, name := range []string{"action", "observation", "state"} {
		b, _ := schemas.Get(name)
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				if ref, ok := v["$ref"].(string); ok && !strings.HasPrefix(ref, "#/") {
					t.Errorf("%s refers outside itself: %s", name, ref)
				}
				for _, e := range v {
					walk(e)
				}
			case []any:
				for _, e := range v {
					walk(e)
				}
			}
		}
		walk(doc)
	}
}

func ExampleGet() {
	b, err := schemas.Get("action")
	if err != nil {
		panic(err)
	}
	var doc struct {
		Title string `json:"title"`
		Defs  map[string]json.RawMessage
	}
	json.Unmarshal(b, &doc)
	fmt.Println(doc.Title)
	// Output: Action
}
