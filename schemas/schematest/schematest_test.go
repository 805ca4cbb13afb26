package schematest_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/seahaven/seahaven/schemas"
	"github.com/seahaven/seahaven/schemas/schematest"
)

// TestValidate_Compiles checks that every schema file compiles, so a
// document is refused only for what it holds.
func TestValidate_Compiles(t *testing.T) {
	for _, name := range schemas.Names() {
		var ve *jsonschema.ValidationError
		if err := schematest.Validate(name, []byte("null")); err != nil && !errors.As(err, &ve) {
			t.Errorf("%s: %v", name, err)
		}
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
		{"CallToolNoName", "action", `{"type":"call_tool"}`, "'oneOf' failed, none matched"},
		{"ActionExtra", "action", `{"type":"list_tools","x":1}`, "additional properties 'x' not allowed"},
		{"ActionUnknownType", "action", `{"type":"dance","tool_name":"x"}`, "at '/type': value must be 'call_tool'"},

		{"ResetObservation", "observation", `{}`, ""},
		{"ListToolsObservation", "observation", `{"tools":[{"name":"a","description":"b","input_schema":{"type":"object"}}]}`, ""},
		{"CallToolObservation", "observation", `{"tool_name":"a","result":{"content":[{"type":"text","text":"8","annotations":null,"meta":null}],"structured_content":{"result":8},"meta":null,"data":8,"is_error":false},"error":null}`, ""},
		{"ToolErrorObservation", "observation", `{"tool_name":"a","result":null,"error":{"error_type":"timeout","message":"m"}}`, ""},
		{"BadErrorType", "observation", `{"tool_name":"a","result":null,"error":{"error_type":"oops","message":"m"}}`, "'oneOf' failed, none matched"},
		{"ObservationMetadata", "observation", `{"tools":[],"metadata":{}}`, "'oneOf' failed, none matched"},

		{"StepResponse", "step_response", `{"observation":{},"reward":null,"done":false}`, ""},
		{"StepResponseReward", "step_response", `{"observation":{},"reward":1.5,"done":true}`, ""},
		{"StepResponseNoDone", "step_response", `{"observation":{},"reward":null}`, "missing property 'done'"},

		{"ResetEmpty", "reset_data", `{}`, ""},
		{"ResetAll", "reset_data", `{"seed":7,"episode_id":"e","fixture":"","now":"2026-01-01T00:00:00Z","clock_mode":"wall","startup":{"k":1},"control_tools":true}`, ""},
		{"ResetNulls", "reset_data", `{"seed":null,"clock_mode":null}`, ""},
		{"ResetNegativeSeed", "reset_data", `{"seed":-1}`, "at '/seed': minimum: got -1, want 0"},
		{"ResetFractionalSeed", "reset_data", `{"seed":1.5}`, "at '/seed': got number, want null or integer"},
		{"ResetIntegralFloatSeed", "reset_data", `{"seed":2.0}`, ""},
		{"ResetLongEpisode", "reset_data", `{"episode_id":"` + strings.Repeat("é", 256) + `"}`, "maxLength: got 256, want 255"},
		{"ResetClock", "reset_data", `{"clock_mode":"fast"}`, "at '/clock_mode': value must be one of 'frozen', 'step', 'wall', <nil>"},
		{"ResetUnknown", "reset_data", `{"colour":"red"}`, "additional properties 'colour' not allowed"},

		{"Inspect", "inspect_request", `{"sql":"SELECT ?","params":[1,"a",true,null,1.5]}`, ""},
		{"InspectEmptySQL", "inspect_request", `{"sql":""}`, "at '/sql': minLength: got 0, want 1"},
		{"InspectObjectParam", "inspect_request", `{"sql":"x","params":[{}]}`, "at '/params/0': got object, want null or boolean or number or string"},
		{"InspectResult", "inspect_result", `{"columns":["a"],"rows":[[1],["x"]],"truncated":false}`, ""},

		{"State", "state", state, ""},
		{"StatePreReset", "state", preReset, ""},
		{"StateBadHash", "state", strings.Replace(state, strings.Repeat("a", 64), "abc", 1), "at '/composition/main/schema_hash': 'abc' does not match pattern"},
		{"StateBadOp", "state", strings.Replace(state, `"op":"insert"`, `"op":"upsert"`, 1), "/change_log/0/op"},
		{"StateMissingKey", "state", strings.Replace(state, `"seed":7,`, "", 1), "missing property 'seed'"},
		{"StateTask", "state", strings.Replace(state, `"seed":7,`, `"seed":7,"task":"refund-1","checks":[{"name":"refunded","passed":true,"score":1,"weight":2,"detail":"ok"}],`, 1), ""},
		{"StateBadCheck", "state", strings.Replace(state, `"seed":7,`, `"seed":7,"checks":[{"name":"x","passed":"yes","score":1,"weight":1,"detail":""}],`, 1), "/checks/0/passed"},
		{"StateFormat", "state", strings.Replace(state, "seahaven.state/1", "seahaven.state/2", 1), "/state_format"},

		{"ErrorFrame", "error_frame", `{"type":"error","data":{"message":"m","code":"CAPACITY_REACHED","active_sessions":1,"max_sessions":1}}`, ""},
		{"ErrorFrameValidation", "error_frame", `{"type":"error","data":{"message":"m","code":"VALIDATION_ERROR","errors":[{"type":"missing","loc":["data",0],"msg":"Field required","input":null}]}}`, ""},
		{"ErrorFrameUnknownCode", "error_frame", `{"type":"error","data":{"message":"m","code":"OOPS"}}`, "/data/code"},

		{"ClientReset", "client_message", `{"type":"reset"}`, ""},
		{"ClientStep", "client_message", `{"type":"step","data":{"type":"list_tools"}}`, ""},
		{"ClientStateWithData", "client_message", `{"type":"state","data":{}}`, "'oneOf' failed, none matched"},
		{"ClientStepWithoutData", "client_message", `{"type":"step"}`, "'oneOf' failed, none matched"},
		{"ClientInspect", "client_message", `{"type":"inspect","data":{"sql":"SELECT 1"}}`, ""},

		{"ServerObservation", "server_message", `{"type":"observation","data":{"observation":{},"reward":null,"done":false}}`, ""},
		{"ServerState", "server_message", `{"type":"state","data":` + preReset + `}`, ""},
		{"ServerError", "server_message", `{"type":"error","data":{"message":"m","code":"INVALID_JSON"}}`, ""},
		{"ServerObservationExtra", "server_message", `{"type":"observation","data":{"observation":{"x":1},"reward":null,"done":false}}`, "'oneOf' failed, none matched"},

		{"NotJSON", "action", `{`, "not JSON"},
		{"Trailing", "action", `{} {}`, "not JSON"},
		{"UnknownSchema", "nope", `{}`, "unknown schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := schematest.Validate(tt.schema, []byte(tt.doc))
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
	err := schematest.Validate("reset_data", []byte(`{"seed":-1,"x":1}`))
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v is not a *ValidationError", err)
	}
	if msg := ve.Error(); !strings.Contains(msg, "reset_data.json") || !strings.Contains(msg, "/seed") || !strings.Contains(msg, "'x'") {
		t.Errorf("ValidationError %s, want one naming the schema, /seed and x", msg)
	}
	if err := schematest.Validate("nope", []byte(`{}`)); !errors.Is(err, schemas.ErrUnknown) {
		t.Errorf("unknown schema: %v", err)
	}
}

func ExampleValidate() {
	fmt.Println(schematest.Validate("reset_data", []byte(`{"seed":7,"episode_id":"ep-1"}`)))
	fmt.Println(schematest.Validate("reset_data", []byte(`{"seed":-1}`)))
	// Output:
	// <nil>
	// jsonschema validation failed with 'https://github.com/seahaven/seahaven/schemas/reset_data.json#'
	// - at '/seed': minimum: got -1, want 0
}
