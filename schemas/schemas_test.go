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
	want := "action client_message error_frame inspect_request inspect_result observation reset_data server_message state step_response"
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

func TestValidate(t *testing.T) {
	state := `{"episode_id":"ep-1","step_count":2,"state_format":"seahaven.state/1","world":"company","world_version":"0.1.0",
		"seed":7,"now":"2026-06-01T09:00:00.000Z","clock_mode":"frozen",
		"composition":{"main":{"path":"main","world":"company","world_version":"0.1.0","scope":null,"aliases":[],"schema_hash":"` + strings.Repeat("a", 64) + `","frozen_world_version":null},
			"payments":{"path":"payments","world":"payments","world_version":"1.0.0","scope":"pay","aliases":["billing"],"schema_hash":"` + strings.Repeat("b", 64) + `","frozen_world_version":"1.0.0"}},
		"fixture":{"id":"acme","format_version":2,"file_sha256":{"main":"` + strings.Repeat("c", 64) + `"}},
		"change_log":[{"seq":1,"call":1,"tool":"create_charge","internal":true,"world":"payments","table":"charges","op":"insert","key":{"id":"ch_1"},"before":null,"after":{"id":"ch_1","amount":500}}]}`
	preReset := `{"episode_id":null,"step_count":0,"state_format":"seahaven.state/1","world":"company","world_version":"0.1.0",
		"seed":0,"now":"","clock_mode":"","composition":null,"fixture":null,"change_log":[]}`
	tests := []struct {
		name   string
		schema string
		doc    string
		want   string // a substring of the error; "" when doc is valid
	}{
		{"ListTools", "action", `{"type":"list_tools","metadata":{}}`, ""},
		{"CallTool", "action", `{"type":"call_tool","tool_name":"x","arguments":{"a":1}}`, ""},
		{"CallToolDefaultType", "action", `{"tool_name":"x"}`, ""},
		{"CallToolNoName", "action", `{"type":"call_tool"}`, "matches none of the oneOf"},
		{"ActionExtra", "action", `{"type":"list_tools","x":1}`, "/x: key is not allowed"},
		{"ActionUnknownType", "action", `{"type":"dance","tool_name":"x"}`, `want "call_tool", got "dance"`},

		{"ResetObservation", "observation", `{}`, ""},
		{"ListToolsObservation", "observation", `{"tools":[{"name":"a","description":"b","input_schema":{"type":"object"}}]}`, ""},
		{"CallToolObservation", "observation", `{"tool_name":"a","result":{"content":[{"type":"text","text":"8","annotations":null,"meta":null}],"structured_content":{"result":8},"meta":null,"data":8,"is_error":false},"error":null}`, ""},
		{"ToolErrorObservation", "observation", `{"tool_name":"a","result":null,"error":{"error_type":"timeout","message":"m"}}`, ""},
		{"BadErrorType", "observation", `{"tool_name":"a","result":null,"error":{"error_type":"oops","message":"m"}}`, "matches none of the oneOf"},
		{"ObservationMetadata", "observation", `{"tools":[],"metadata":{}}`, "matches none of the oneOf"},

		{"StepResponse", "step_response", `{"observation":{},"reward":null,"done":false}`, ""},
		{"StepResponseReward", "step_response", `{"observation":{},"reward":1.5,"done":true}`, ""},
		{"StepResponseNoDone", "step_response", `{"observation":{},"reward":null}`, `missing required key "done"`},

		{"ResetEmpty", "reset_data", `{}`, ""},
		{"ResetAll", "reset_data", `{"seed":7,"episode_id":"e","fixture":"","now":"2026-01-01T00:00:00Z","clock_mode":"wall","startup":{"k":1},"control_tools":true}`, ""},
		{"ResetNulls", "reset_data", `{"seed":null,"clock_mode":null}`, ""},
		{"ResetNegativeSeed", "reset_data", `{"seed":-1}`, "/seed: want at least 0, got -1"},
		{"ResetFractionalSeed", "reset_data", `{"seed":1.5}`, "/seed: want integer or null, got number"},
		{"ResetIntegralFloatSeed", "reset_data", `{"seed":2.0}`, ""},
		{"ResetLongEpisode", "reset_data", `{"episode_id":"` + strings.Repeat("é", 256) + `"}`, "want at most 255 characters, got 256"},
		{"ResetClock", "reset_data", `{"clock_mode":"fast"}`, `want one of "frozen", "step", "wall", null, got "fast"`},
		{"ResetUnknown", "reset_data", `{"colour":"red"}`, "/colour: key is not allowed"},

		{"Inspect", "inspect_request", `{"sql":"SELECT ?","params":[1,"a",true,null,1.5]}`, ""},
		{"InspectEmptySQL", "inspect_request", `{"sql":""}`, "want at least 1 characters"},
		{"InspectObjectParam", "inspect_request", `{"sql":"x","params":[{}]}`, "/params/0: want string or number or boolean or null, got object"},
		{"InspectResult", "inspect_result", `{"columns":["a"],"rows":[[1],["x"]],"truncated":false}`, ""},
		{"InspectResultTruncated", "inspect_result", `{"columns":["a"],"rows":[[1]],"truncated":true,"truncated_reason":"the query has more than 1 rows"}`, ""},
		{"InspectResultBadReason", "inspect_result", `{"columns":["a"],"rows":[],"truncated":true,"truncated_reason":7}`, "/truncated_reason"},

		{"State", "state", state, ""},
		{"StatePreReset", "state", preReset, ""},
		{"StateBadHash", "state", strings.Replace(state, strings.Repeat("a", 64), "abc", 1), `/composition/main/schema_hash: "abc" does not match`},
		{"StateBadOp", "state", strings.Replace(state, `"op":"insert"`, `"op":"upsert"`, 1), "/change_log/0/op"},
		{"StateMissingKey", "state", strings.Replace(state, `"seed":7,`, "", 1), `missing required key "seed"`},
		{"StateTask", "state", strings.Replace(state, `"seed":7,`, `"seed":7,"task":"refund-1","checks":[{"name":"refunded","passed":true,"score":1,"weight":2,"detail":"ok"}],`, 1), ""},
		{"StateBadCheck", "state", strings.Replace(state, `"seed":7,`, `"seed":7,"checks":[{"name":"x","passed":"yes","score":1,"weight":1,"detail":""}],`, 1), "/checks/0/passed"},
		{"StateFormat", "state", strings.Replace(state, "seahaven.state/1", "seahaven.state/2", 1), "/state_format"},

		{"ErrorFrame", "error_frame", `{"type":"error","data":{"message":"m","code":"CAPACITY_REACHED","active_sessions":1,"max_sessions":1}}`, ""},
		{"ErrorFrameValidation", "error_frame", `{"type":"error","data":{"message":"m","code":"VALIDATION_ERROR","errors":[{"type":"missing","loc":["data",0],"msg":"Field required","input":null}]}}`, ""},
		{"ErrorFrameUnknownCode", "error_frame", `{"type":"error","data":{"message":"m","code":"OOPS"}}`, "/data/code"},

		{"ClientReset", "client_message", `{"type":"reset"}`, ""},
		{"ClientStep", "client_message", `{"type":"step","data":{"type":"list_tools"}}`, ""},
		{"ClientStateWithData", "client_message", `{"type":"state","data":{}}`, "matches none of the oneOf"},
		{"ClientStepWithoutData", "client_message", `{"type":"step"}`, "matches none of the oneOf"},
		{"ClientInspect", "client_message", `{"type":"inspect","data":{"sql":"SELECT 1"}}`, ""},

		{"ServerObservation", "server_message", `{"type":"observation","data":{"observation":{},"reward":null,"done":false}}`, ""},
		{"ServerState", "server_message", `{"type":"state","data":` + preReset + `}`, ""},
		{"ServerError", "server_message", `{"type":"error","data":{"message":"m","code":"INVALID_JSON"}}`, ""},
		{"ServerObservationExtra", "server_message", `{"type":"observation","data":{"observation":{"x":1},"reward":null,"done":false}}`, "matches none of the oneOf"},

		{"NotJSON", "action", `{`, "not JSON"},
		{"Trailing", "action", `{} {}`, "not JSON"},
		{"UnknownSchema", "nope", `{}`, "unknown schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := schemas.Validate(tt.schema, []byte(tt.doc))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("want valid, got %v", err)
			case tt.want != "" && err == nil:
				t.Errorf("want an error containing %q, got none", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestValidate_ErrorType(t *testing.T) {
	err := schemas.Validate("reset_data", []byte(`{"seed":-1,"x":1}`))
	var ve *schemas.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v is not a *ValidationError", err)
	}
	if ve.Schema != "reset_data" || len(ve.Problems) != 2 {
		t.Errorf("ValidationError %+v", ve)
	}
	if err := schemas.Validate("nope", []byte(`{}`)); !errors.Is(err, schemas.ErrUnknown) {
		t.Errorf("unknown schema: %v", err)
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

func ExampleValidate() {
	fmt.Println(schemas.Validate("reset_data", []byte(`{"seed":7,"episode_id":"ep-1"}`)))
	fmt.Println(schemas.Validate("reset_data", []byte(`{"seed":-1}`)))
	// Output:
	// <nil>
	// schemas: document does not match reset_data: /seed: want at least 0, got -1
}
