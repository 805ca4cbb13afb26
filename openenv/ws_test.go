package openenv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/openenv"
)

const resetOK = `{"type":"observation","data":{"observation":{},"reward":null,"done":false}}`

func TestWS_Reset(t *testing.T) {
	tests := []struct {
		name string
		msg  string // the reset message
		// want are "path=value" checks on the state document after the reset.
		want []string
	}{
		{"NoData", `{"type":"reset"}`, []string{"fixture.id=base", "seed=0", "clock_mode=frozen", "step_count=0"}},
		{"EmptyData", `{"type":"reset","data":{}}`, []string{"fixture.id=base"}},
		{"Everything", `{"type":"reset","data":{"seed":7,"episode_id":"ep-1","fixture":"child","now":"2026-03-04T05:06:07Z","clock_mode":"step","startup":{"greeting":"hi"},"control_tools":true}}`,
			[]string{"episode_id=ep-1", "seed=7", "fixture.id=child", "now=2026-03-04T05:06:07.000Z", "clock_mode=step"}},
		{"NowLowerCase", `{"type":"reset","data":{"now":"2026-03-04t05:06:07z"}}`, []string{"now=2026-03-04T05:06:07.000Z"}},
		{"Genesis", `{"type":"reset","data":{"fixture":""}}`, []string{"fixture=<nil>"}},
		{"NullsAreDefaults", `{"type":"reset","data":{"seed":null,"episode_id":null,"fixture":null,"now":null,"clock_mode":null,"startup":null,"control_tools":null}}`,
			[]string{"seed=0", "fixture.id=base"}},
	}
	s := mustServe(t, newFake(t), openenv.Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := s.dial(t)
			jsonEq(t, roundTrip(t, c, tt.msg), resetOK)
			state := roundTrip(t, c, `{"type":"state"}`)
			for _, w := range tt.want {
				path, val, _ := strings.Cut(w, "=")
				if got := fmt.Sprint(field(t, state, "data."+path)); got != val {
					t.Errorf("%s = %s, want %s", path, got, val)
				}
			}
			if id := field(t, state, "data.episode_id"); id == nil || id == "" {
				t.Errorf("episode_id = %v, want one", id)
			}
		})
	}
}

func TestWS_ResetControlTools(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"control_tools":true}}`)
	tools := roundTrip(t, c, `{"type":"step","data":{"type":"list_tools"}}`)
	if !strings.Contains(tools, `"name":"seahaven_control"`) {
		t.Errorf("control tool not listed: %s", tools)
	}
	roundTrip(t, c, `{"type":"reset"}`)
	tools = roundTrip(t, c, `{"type":"step","data":{"type":"list_tools"}}`)
	if strings.Contains(tools, "seahaven_control") {
		t.Errorf("control tool listed without control_tools: %s", tools)
	}
}

// TestWS_IntegralSeed: as in pydantic, a seed written with a zero fraction
// or an exponent is that integer.
func TestWS_IntegralSeed(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	c := s.dial(t)
	for _, tt := range []struct{ seed, want string }{{"7.0", `"seed":7,`}, {"1e3", `"seed":1000,`}, {"-0.0", `"seed":0,`}} {
		if reply := roundTrip(t, c, `{"type":"reset","data":{"seed":`+tt.seed+`}}`); strings.Contains(reply, `"error"`) {
			t.Fatalf("seed %s: %s", tt.seed, reply)
		}
		if state := roundTrip(t, c, `{"type":"state"}`); !strings.Contains(state, tt.want) {
			t.Errorf("seed %s: state %s, want %s", tt.seed, state, tt.want)
		}
	}
}

// manyValues returns n JSON numbers, comma-separated.
func manyValues(n int) string { return strings.TrimSuffix(strings.Repeat("0,", n), ",") }

// manyMembers returns the members of an object of n keys, comma-separated.
func manyMembers(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":0`, i)
	}
	return b.String()
}

func TestWS_ResetValidation(t *testing.T) {
	tests := []struct {
		name string
		data string // the reset data
		// want lists "loc type" of each expected error, in order.
		want []string
	}{
		{"UnknownKey", `{"colour":"red"}`, []string{"data.colour extra_forbidden"}},
		{"NegativeSeed", `{"seed":-1}`, []string{"data.seed greater_than_equal"}},
		{"FractionalSeed", `{"seed":1.5}`, []string{"data.seed int_from_float"}},
		{"FractionalHugeSeed", `{"seed":1e19}`, []string{"data.seed int_type"}},
		{"StringSeed", `{"seed":"7"}`, []string{"data.seed int_type"}},
		{"HugeSeed", `{"seed":99999999999999999999}`, []string{"data.seed int_type"}},
		{"LongEpisode", `{"episode_id":"` + strings.Repeat("x", 256) + `"}`, []string{"data.episode_id string_too_long"}},
		{"EpisodeNumber", `{"episode_id":5}`, []string{"data.episode_id string_type"}},
		{"ClockMode", `{"clock_mode":"fast"}`, []string{"data.clock_mode literal_error"}},
		{"StartupList", `{"startup":[1]}`, []string{"data.startup dict_type"}},
		// Read whole into Go values, startup keywords are bounded by the
		// values they hold, not by their bytes alone.
		{"StartupTooManyValues", `{"startup":{"region":[` + manyValues(100_000) + `]}}`, []string{"data.startup too_long"}},
		{"ControlString", `{"control_tools":"yes"}`, []string{"data.control_tools bool_type"}},
		{"FixtureNumber", `{"fixture":1}`, []string{"data.fixture string_type"}},
		{"NowBool", `{"now":true}`, []string{"data.now string_type"}},
		{"NowNotATime", `{"now":"tuesday"}`, []string{"data.now value_error"}},
		{"NowPastMax", `{"now":"9999-12-31T00:00:00Z"}`, []string{"data.now value_error"}},
		{"NowBeforeMin", `{"now":"0999-12-31T23:59:59Z"}`, []string{"data.now value_error"}},
		{"NotObject", `[1]`, []string{"data dict_type"}},
		{"Null", `null`, []string{"data dict_type"}},
		{"Several", `{"seed":-1,"colour":"red","clock_mode":"fast","zone":1}`,
			[]string{"data.clock_mode literal_error", "data.colour extra_forbidden", "data.seed greater_than_equal", "data.zone extra_forbidden"}},
	}
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	c := s.dial(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply := roundTrip(t, c, `{"type":"reset","data":`+tt.data+`}`)
			if code := str(t, reply, "data.code"); code != "VALIDATION_ERROR" {
				t.Fatalf("code %s, want VALIDATION_ERROR: %s", code, reply)
			}
			errs := field(t, reply, "data.errors").([]any)
			if len(errs) != len(tt.want) {
				t.Fatalf("%d errors, want %d: %s", len(errs), len(tt.want), reply)
			}
			msg := str(t, reply, "data.message")
			for i, e := range errs {
				m := e.(map[string]any)
				var loc []string
				for _, l := range m["loc"].([]any) {
					loc = append(loc, fmt.Sprint(l))
				}
				got := strings.Join(loc, ".") + " " + m["type"].(string)
				if got != tt.want[i] {
					t.Errorf("error %d is %q, want %q", i, got, tt.want[i])
				}
				if _, ok := m["input"]; !ok {
					t.Errorf("error %d has no input: %v", i, m)
				}
				if key := strings.Join(loc, "."); !strings.Contains(msg, key+": ") {
					t.Errorf("message %q does not name %s", msg, key)
				}
			}
		})
	}
	if n := fake.opened.Load(); n != 0 {
		t.Errorf("invalid resets opened %d instances", n)
	}
	// The session survives every refusal.
	jsonEq(t, roundTrip(t, c, `{"type":"reset"}`), resetOK)
	// At the bound, the keywords are read, and go to the backend.
	if reply := roundTrip(t, c, `{"type":"reset","data":{"startup":{"region":[`+manyValues(99_998)+`]}}}`); !strings.Contains(reply, `unknown startup keyword \"region\"`) {
		t.Errorf("startup of 100000 values: %.300s, want it read (and refused by the backend)", reply)
	}
}

func TestWS_ResetFailureKeepsInstance(t *testing.T) {
	tests := []struct {
		name string
		data string // data of the failing reset
		want string // the error message
	}{
		{"UnknownFixture", `{"fixture":"nope"}`, `unknown fixture "nope"`},
		{"UnknownStartup", `{"startup":{"volume":11}}`, `unknown startup keyword "volume"`},
		{"Panic", `{"fixture":"panic"}`, "internal error: Backend.Open panicked: fixture loader exploded"},
	}
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := s.dial(t)
			jsonEq(t, roundTrip(t, c, `{"type":"reset","data":{"episode_id":"kept"}}`), resetOK)
			roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"echo","arguments":{"message":"one"}}}`)
			jsonEq(t, roundTrip(t, c, `{"type":"reset","data":`+tt.data+`}`),
				fmt.Sprintf(`{"type":"error","data":{"message":%q,"code":"EXECUTION_ERROR"}}`, tt.want))
			state := roundTrip(t, c, `{"type":"state"}`)
			if id := str(t, state, "data.episode_id"); id != "kept" {
				t.Errorf("episode_id %s after a failed reset, want kept", id)
			}
			if n := fmt.Sprint(field(t, state, "data.step_count")); n != "1" {
				t.Errorf("step_count %s after a failed reset, want 1", n)
			}
			reply := roundTrip(t, c, `{"type":"inspect","data":{"sql":"SELECT message FROM echoes"}}`)
			jsonEq(t, reply, `{"type":"inspect","data":{"columns":["message"],"rows":[["one"]],"truncated":false}}`)
		})
	}
}

func TestWS_ResetReplacesInstance(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	c := s.dial(t)
	for range 3 {
		roundTrip(t, c, `{"type":"reset"}`)
		// The replaced instance closes in the background, after the reply.
		waitFor(t, "the replaced instance to close", func() bool { return fake.open.Load() == 1 })
	}
	if n := fake.opened.Load(); n != 3 {
		t.Errorf("%d instances opened, want 3", n)
	}
}

func TestWS_Step(t *testing.T) {
	tests := []struct {
		name string
		data string // the step data
		want string // the whole reply
	}{
		{"ListTools", `{"type":"list_tools"}`,
			`{"type":"observation","data":{"observation":{"tools":[
			{"name":"echo","description":"Echo a message.","input_schema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"],"additionalProperties":false}},
			{"name":"add","description":"Add two numbers.","input_schema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}},
			{"name":"fail","description":"Always fails.","input_schema":{"type":"object","properties":{},"additionalProperties":false}},
			{"name":"boom","description":"Panics.","input_schema":{"type":"object","properties":{},"additionalProperties":false}},
			{"name":"slow","description":"Blocks until cancelled.","input_schema":{"type":"object","properties":{}}},
			{"name":"blob","description":"Return n bytes.","input_schema":{"type":"object","properties":{"n":{"type":"integer"}}}}]},"reward":null,"done":false}}`},
		{"ListToolsMetadata", `{"type":"list_tools","metadata":{"trace":"x"}}`, ""},
		{"CallObjectResult", `{"type":"call_tool","tool_name":"echo","arguments":{"message":"Hello <&>!"}}`,
			`{"type":"observation","data":{"observation":{"tool_name":"echo","result":{"content":[{"type":"text","text":"{\"message\":\"Hello <&>!\"}","annotations":null,"meta":null}],"structured_content":{"message":"Hello <&>!"},"meta":null,"data":{"message":"Hello <&>!"},"is_error":false},"error":null},"reward":null,"done":false}}`},
		{"CallNumberResult", `{"type":"call_tool","tool_name":"add","arguments":{"a":5,"b":3},"metadata":{}}`,
			`{"type":"observation","data":{"observation":{"tool_name":"add","result":{"content":[{"type":"text","text":"8","annotations":null,"meta":null}],"structured_content":{"result":8},"meta":null,"data":8,"is_error":false},"error":null},"reward":null,"done":false}}`},
		{"TypeDefaultsToCallTool", `{"tool_name":"add","arguments":{"a":1,"b":1}}`, ""},
		{"ToolError", `{"type":"call_tool","tool_name":"fail"}`,
			`{"type":"observation","data":{"observation":{"tool_name":"fail","result":null,"error":{"error_type":"execution_error","message":"card declined"}},"reward":null,"done":false}}`},
		{"InvalidArgs", `{"type":"call_tool","tool_name":"add","arguments":{"a":"x"}}`,
			`{"type":"observation","data":{"observation":{"tool_name":"add","result":null,"error":{"error_type":"invalid_args","message":"add: a and b are required numbers"}},"reward":null,"done":false}}`},
		{"UnknownTool", `{"type":"call_tool","tool_name":"nope","arguments":{}}`,
			`{"type":"observation","data":{"observation":{"tool_name":"nope","result":null,"error":{"error_type":"tool_not_found","message":"unknown tool \"nope\""}},"reward":null,"done":false}}`},
		{"Panic", `{"type":"call_tool","tool_name":"boom"}`,
			`{"type":"error","data":{"message":"internal error: tool \"boom\" panicked: tool exploded","code":"EXECUTION_ERROR"}}`},
	}
	s := mustServe(t, newFake(t), openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply := roundTrip(t, c, `{"type":"step","data":`+tt.data+`}`)
			if tt.want == "" {
				if typ := str(t, reply, "type"); typ != "observation" {
					t.Errorf("reply %s, want an observation", reply)
				}
				return
			}
			jsonEq(t, reply, tt.want)
		})
	}
}

func TestWS_ReservedNamesAreNotTools(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	for _, name := range []string{"reset", "step", "state", "close"} {
		reply := roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"`+name+`"}}`)
		jsonEq(t, reply, `{"type":"observation","data":{"observation":{"tool_name":"`+name+
			`","result":null,"error":{"error_type":"tool_not_found","message":"unknown tool \"`+name+`\""}},"reward":null,"done":false}}`)
	}
}

func TestWS_StepValidation(t *testing.T) {
	tests := []struct {
		name string
		msg  string // the whole message
		want string // "loc type" of each error, joined by ", "
	}{
		{"MissingData", `{"type":"step"}`, "data missing"},
		{"DataNotObject", `{"type":"step","data":"list_tools"}`, "data dict_type"},
		{"MissingToolName", `{"type":"step","data":{"type":"call_tool"}}`, "data.tool_name missing"},
		{"ToolNameNumber", `{"type":"step","data":{"type":"call_tool","tool_name":3}}`, "data.tool_name string_type"},
		{"ArgumentsList", `{"type":"step","data":{"type":"call_tool","tool_name":"add","arguments":[1]}}`, "data.arguments dict_type"},
		{"ExtraKey", `{"type":"step","data":{"type":"call_tool","tool_name":"add","timeout_s":3}}`, "data.timeout_s extra_forbidden"},
		{"ListToolsExtra", `{"type":"step","data":{"type":"list_tools","tool_name":"add"}}`, "data.tool_name extra_forbidden"},
		{"UnknownAction", `{"type":"step","data":{"type":"dance"}}`, "data.type literal_error"},
		{"MetadataString", `{"type":"step","data":{"type":"list_tools","metadata":"x"}}`, "data.metadata dict_type"},
		{"EnvelopeExtra", `{"type":"step","data":{"type":"list_tools"},"id":1}`, "id extra_forbidden"},
		{"StateWithData", `{"type":"state","data":{}}`, "data extra_forbidden"},
		{"CloseWithData", `{"type":"close","data":{}}`, "data extra_forbidden"},
		{"InspectMissingSQL", `{"type":"inspect","data":{}}`, "data.sql missing"},
		{"InspectEmptySQL", `{"type":"inspect","data":{"sql":""}}`, "data.sql string_too_short"},
		{"InspectBadParams", `{"type":"inspect","data":{"sql":"SELECT 1","params":[1,{"a":1},[2]]}}`, "data.params.1 scalar_type, data.params.2 scalar_type"},
		{"InspectParamsObject", `{"type":"inspect","data":{"sql":"SELECT 1","params":{}}}`, "data.params list_type"},
		// More than SQLite binds, refused before they are read.
		{"InspectTooManyParams", `{"type":"inspect","data":{"sql":"SELECT 1","params":[` + manyValues(32767) + `]}}`, "data.params too_long"},
		// An object of more members than a message may hold, refused
		// before a map of them is built.
		{"WideObject", `{"type":"step","data":{"type":"list_tools","metadata":{` + manyMembers(100_001) + `}}}`, "data.metadata too_long"},
		{"InspectExtra", `{"type":"inspect","data":{"sql":"SELECT 1","limit":5}}`, "data.limit extra_forbidden"},
		{"MCPMissingData", `{"type":"mcp"}`, "data missing"},
		{"MCPDataList", `{"type":"mcp","data":[]}`, "data dict_type"},
		{"NotAnObject", `[1,2]`, " model_type"},
	}
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	c := s.dial(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply := roundTrip(t, c, tt.msg)
			if code := str(t, reply, "data.code"); code != "VALIDATION_ERROR" {
				t.Fatalf("reply %s, want VALIDATION_ERROR", reply)
			}
			var got []string
			for _, e := range field(t, reply, "data.errors").([]any) {
				m := e.(map[string]any)
				var loc []string
				for _, l := range m["loc"].([]any) {
					loc = append(loc, fmt.Sprint(l))
				}
				got = append(got, strings.Join(loc, ".")+" "+m["type"].(string))
			}
			if g := strings.Join(got, ", "); g != tt.want {
				t.Errorf("errors %q, want %q", g, tt.want)
			}
		})
	}
	if n := fake.opened.Load(); n != 0 {
		t.Errorf("invalid messages opened %d instances", n)
	}
	// A rejected close does not close.
	if typ := str(t, roundTrip(t, c, `{"type":"state"}`), "type"); typ != "state" {
		t.Errorf("session gone after rejected messages")
	}
}

func TestWS_ProtocolErrors(t *testing.T) {
	tests := []struct {
		name string
		msg  string // the frame
		want string // the whole reply
	}{
		{"InvalidJSON", `{"type":`, `{"type":"error","data":{"message":"Invalid JSON: unexpected end of JSON input","code":"INVALID_JSON"}}`},
		{"NotJSON", `hello`, `{"type":"error","data":{"message":"Invalid JSON: invalid character 'h' looking for beginning of value","code":"INVALID_JSON"}}`},
		{"TrailingData", `{} {}`, `{"type":"error","data":{"message":"Invalid JSON: invalid character '{' after top-level value","code":"INVALID_JSON"}}`},
		{"Empty", ``, `{"type":"error","data":{"message":"Invalid JSON: unexpected end of JSON input","code":"INVALID_JSON"}}`},
		// A character outside ASCII is named as the message has it, not as
		// its first byte read as a character of its own ('â' for '“').
		{"TypographicQuotes", `{“type”: “state”}`, `{"type":"error","data":{"message":"Invalid JSON: invalid character '“' (U+201C) looking for beginning of object key string","code":"INVALID_JSON"}}`},
		{"ByteOrderMark", "\ufeff" + `{"type":"state"}`, `{"type":"error","data":{"message":"Invalid JSON: invalid byte order mark U+FEFF looking for beginning of value","code":"INVALID_JSON"}}`},
		{"AccentedValue", `{"type":é}`, `{"type":"error","data":{"message":"Invalid JSON: invalid character 'é' (U+00E9) looking for beginning of value","code":"INVALID_JSON"}}`},
		{"MissingType", `{"data":{}}`, `{"type":"error","data":{"message":"Unknown message type: null","code":"UNKNOWN_TYPE"}}`},
		{"NumberType", `{"type":5}`, `{"type":"error","data":{"message":"Unknown message type: 5","code":"UNKNOWN_TYPE"}}`},
		{"UnknownType", `{"type":"dance"}`, `{"type":"error","data":{"message":"Unknown message type: dance","code":"UNKNOWN_TYPE"}}`},
		{"TypeIsCaseSensitive", `{"type":"STATE"}`, `{"type":"error","data":{"message":"Unknown message type: STATE","code":"UNKNOWN_TYPE"}}`},
		{"KeyIsCaseSensitive", `{"TYPE":"state"}`, `{"type":"error","data":{"message":"Unknown message type: null","code":"UNKNOWN_TYPE"}}`},
		{"NotObject", `"state"`, `{"type":"error","data":{"message":"Invalid message: (message): Input should be an object","code":"VALIDATION_ERROR","errors":[{"type":"model_type","loc":[],"msg":"Input should be an object","input":"state"}]}}`},
	}
	s := mustServe(t, newFake(t), openenv.Config{})
	c := s.dial(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jsonEq(t, roundTrip(t, c, tt.msg), tt.want)
		})
	}
}

func TestWS_State(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	c := s.dial(t)
	t.Run("BeforeReset", func(t *testing.T) {
		jsonEq(t, roundTrip(t, c, `{"type":"state"}`), `{"type":"state","data":{"episode_id":null,"step_count":0,
			"state_format":"seahaven.state/1","world":"fake","world_version":"1.2.3","seed":0,"now":"","clock_mode":"",
			"composition":null,"fixture":null,"change_log":[]}}`)
	})
	t.Run("AfterSteps", func(t *testing.T) {
		roundTrip(t, c, `{"type":"reset","data":{"seed":3,"episode_id":"e"}}`)
		roundTrip(t, c, `{"type":"step","data":{"type":"list_tools"}}`)
		roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"echo","arguments":{"message":"m"}}}`)
		roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"fail"}}`)
		jsonEq(t, roundTrip(t, c, `{"type":"state"}`), `{"type":"state","data":{"episode_id":"e","step_count":2,
			"state_format":"seahaven.state/1","world":"fake","world_version":"1.2.3","seed":3,"now":"2026-06-01T09:00:00.000Z","clock_mode":"frozen",
			"composition":{"main":{"path":"main","world":"fake","world_version":"1.2.3","scope":null,"aliases":[],"schema_hash":"`+hash("CREATE TABLE echoes")+`","frozen_world_version":null}},
			"fixture":{"id":"base","format_version":2,"file_sha256":{"main":"`+hash("base")+`"}},
			"change_log":[{"seq":1,"call":1,"tool":"echo","internal":false,"world":"main","table":"echoes","op":"insert","key":{"id":1},"before":null,"after":{"id":1,"message":"m"}}]}}`)
	})
	t.Run("ResetZeroesSteps", func(t *testing.T) {
		roundTrip(t, c, `{"type":"reset"}`)
		if n := fmt.Sprint(field(t, roundTrip(t, c, `{"type":"state"}`), "data.step_count")); n != "0" {
			t.Errorf("step_count %s after reset, want 0", n)
		}
	})
}

func TestWS_ImplicitReset(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	c := s.dial(t)
	reply := roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"add","arguments":{"a":1,"b":2}}}`)
	if d := fmt.Sprint(field(t, reply, "data.observation.result.data")); d != "3" {
		t.Fatalf("result %s, want 3: %s", d, reply)
	}
	state := roundTrip(t, c, `{"type":"state"}`)
	if id, ok := field(t, state, "data.episode_id").(string); !ok || len(id) != 36 {
		t.Errorf("episode_id %v, want a UUID", field(t, state, "data.episode_id"))
	}
	if f := str(t, state, "data.fixture.id"); f != "base" {
		t.Errorf("fixture %s, want the default, base", f)
	}
	if n := fmt.Sprint(field(t, state, "data.step_count")); n != "1" {
		t.Errorf("step_count %s, want 1", n)
	}
	if n := fake.opened.Load(); n != 1 {
		t.Errorf("%d instances opened, want 1", n)
	}
}

func TestWS_FactoryError(t *testing.T) {
	fake := newFake(t)
	fake.defaultFixture = "gone"
	s := mustServe(t, fake, openenv.Config{})
	c := s.dial(t)
	jsonEq(t, roundTrip(t, c, `{"type":"step","data":{"type":"list_tools"}}`),
		`{"type":"error","data":{"message":"unknown fixture \"gone\"","code":"FACTORY_ERROR","factory_name":"fake"}}`)
	jsonEq(t, roundTrip(t, c, `{"type":"inspect","data":{"sql":"SELECT n FROM numbers"}}`),
		`{"type":"error","data":{"message":"unknown fixture \"gone\"","code":"FACTORY_ERROR","factory_name":"fake"}}`)
	// The session stays; an explicit reset works.
	jsonEq(t, roundTrip(t, c, `{"type":"reset","data":{"fixture":"child"}}`), resetOK)
	if typ := str(t, roundTrip(t, c, `{"type":"step","data":{"type":"list_tools"}}`), "type"); typ != "observation" {
		t.Errorf("step after reset: %s", typ)
	}
}

func TestWS_Inspect(t *testing.T) {
	tests := []struct {
		name string
		data string // the inspect data
		want string // the whole reply
	}{
		{"Rows", `{"sql":"SELECT message FROM echoes"}`, `{"type":"inspect","data":{"columns":["message"],"rows":[["a"],["b"]],"truncated":false}}`},
		{"StringParam", `{"sql":"SELECT ? AS value","params":["x"]}`, `{"type":"inspect","data":{"columns":["value"],"rows":[["x"]],"truncated":false}}`},
		{"IntParam", `{"sql":"SELECT ? AS value","params":[9007199254740993]}`, `{"type":"inspect","data":{"columns":["value"],"rows":[[9007199254740993]],"truncated":false}}`},
		{"FloatParam", `{"sql":"SELECT ? AS value","params":[1.5]}`, `{"type":"inspect","data":{"columns":["value"],"rows":[[1.5]],"truncated":false}}`},
		{"BoolParam", `{"sql":"SELECT ? AS value","params":[true]}`, `{"type":"inspect","data":{"columns":["value"],"rows":[[true]],"truncated":false}}`},
		{"NullParam", `{"sql":"SELECT ? AS value","params":[null]}`, `{"type":"inspect","data":{"columns":["value"],"rows":[[null]],"truncated":false}}`},
		{"SQLError", `{"sql":"SELECT * FROM nowhere"}`, `{"type":"error","data":{"message":"no such table: SELECT * FROM nowhere","code":"EXECUTION_ERROR"}}`},
		{"BindError", `{"sql":"SELECT ? AS value"}`, `{"type":"error","data":{"message":"bind: want 1 parameter, got 0","code":"EXECUTION_ERROR"}}`},
		{"Panic", `{"sql":"SELECT panic"}`, `{"type":"error","data":{"message":"internal error: Instance.Inspect panicked: inspector exploded","code":"EXECUTION_ERROR"}}`},
		{"Timeout", `{"sql":"SELECT sleep"}`, `{"type":"error","data":{"message":"inspect timed out after 50ms: interrupted: context deadline exceeded","code":"EXECUTION_ERROR"}}`},
	}
	s := mustServe(t, newFake(t), openenv.Config{InspectTimeout: 50 * time.Millisecond})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"echo","arguments":{"message":"a"}}}`)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"echo","arguments":{"message":"b"}}}`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jsonEq(t, roundTrip(t, c, `{"type":"inspect","data":`+tt.data+`}`), tt.want)
		})
	}
	t.Run("Truncated", func(t *testing.T) {
		reply := roundTrip(t, c, `{"type":"inspect","data":{"sql":"SELECT n FROM numbers"}}`)
		rows := field(t, reply, "data.rows").([]any)
		if len(rows) != openenv.DefaultInspectRowLimit || field(t, reply, "data.truncated") != true {
			t.Errorf("%d rows, truncated %v; want %d, true", len(rows), field(t, reply, "data.truncated"), openenv.DefaultInspectRowLimit)
		}
		if last := fmt.Sprint(rows[len(rows)-1]); last != "[1000]" {
			t.Errorf("last row %s, want [1000]", last)
		}
	})
	t.Run("RowLimit", func(t *testing.T) {
		s := mustServe(t, newFake(t), openenv.Config{InspectRowLimit: 1500})
		c := s.dial(t)
		reply := roundTrip(t, c, `{"type":"inspect","data":{"sql":"SELECT n FROM numbers"}}`)
		if n := len(field(t, reply, "data.rows").([]any)); n != 1500 || field(t, reply, "data.truncated") != false {
			t.Errorf("%d rows, truncated %v; want 1500, false", n, field(t, reply, "data.truncated"))
		}
	})
}

func TestWS_Close(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	send(t, c, `{"type":"close"}`)
	expectClose(t, c, websocket.StatusNormalClosure, "")
	waitFor(t, "the instance to close", func() bool { return fake.open.Load() == 0 })
	waitFor(t, "the slot to free", func() bool { return len(s.Sessions()) == 0 })
}

func TestWS_Disconnect(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	c.CloseNow()
	waitFor(t, "the instance to close", func() bool { return fake.open.Load() == 0 })
	waitFor(t, "the slot to free", func() bool { return len(s.Sessions()) == 0 })
}

func TestWS_DisconnectMidStep(t *testing.T) {
	for _, mode := range []string{"CloseNow", "CloseHandshake"} {
		t.Run(mode, func(t *testing.T) {
			fake := newFake(t)
			s := mustServe(t, fake, openenv.Config{StepTimeout: time.Hour})
			c := s.dial(t)
			roundTrip(t, c, `{"type":"reset","data":{"episode_id":"mid"}}`)
			send(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"slow"}}`)
			if ep := <-fake.slowStarted; ep != "mid" {
				t.Fatalf("slow started for %s", ep)
			}
			if mode == "CloseNow" {
				c.CloseNow()
			} else {
				go c.Close(websocket.StatusNormalClosure, "bye")
			}
			waitFor(t, "the instance to close", func() bool { return fake.open.Load() == 0 })
			waitFor(t, "the slot to free", func() bool { return len(s.Sessions()) == 0 })
		})
	}
}

func TestWS_BinaryFrame(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	ctx := context.Background()
	if err := c.Write(ctx, websocket.MessageBinary, []byte(`{"type":"state"}`)); err != nil {
		t.Fatal(err)
	}
	jsonEq(t, recv(t, c), `{"type":"error","data":{"message":"Binary frames are not supported: send each message as a JSON text frame","code":"SESSION_ERROR"}}`)
	expectClose(t, c, websocket.StatusUnsupportedData, "Binary frames are not supported")
	waitFor(t, "the instance to close", func() bool { return fake.open.Load() == 0 })
	waitFor(t, "the slot to free", func() bool { return len(s.Sessions()) == 0 })
}

func TestWS_MessageTooBig(t *testing.T) {
	tests := []struct {
		name  string
		limit int64 // Config.MaxMessageBytes; 0 is the default
		size  int   // bytes sent
		want  string
	}{
		{"17MiB", 0, 17 << 20, "Message of 17825792 bytes exceeds the limit of 16777216 bytes"},
		{"OneOver", 100, 101, "Message of 101 bytes exceeds the limit of 100 bytes"},
		{"FarOver", 100, 1000, "Message of more than 400 bytes exceeds the limit of 100 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake(t)
			s := mustServe(t, fake, openenv.Config{MaxMessageBytes: tt.limit})
			c := s.dial(t)
			roundTrip(t, c, `{"type":"reset"}`)
			msg := `{"type":"reset","data":{"episode_id":"` + strings.Repeat("x", tt.size-41) + `"}}`
			if len(msg) != tt.size {
				t.Fatalf("message is %d bytes, want %d", len(msg), tt.size)
			}
			send(t, c, msg)
			jsonEq(t, recv(t, c), fmt.Sprintf(`{"type":"error","data":{"message":%q,"code":"SESSION_ERROR"}}`, tt.want))
			expectClose(t, c, websocket.StatusMessageTooBig, "exceeds the limit")
			waitFor(t, "the instance to close", func() bool { return fake.open.Load() == 0 })
		})
	}
	t.Run("AtLimit", func(t *testing.T) {
		s := mustServe(t, newFake(t), openenv.Config{MaxMessageBytes: 100})
		c := s.dial(t)
		msg := `{"type":"reset","data":{"episode_id":"` + strings.Repeat("x", 100-41) + `"}}`
		jsonEq(t, roundTrip(t, c, msg), resetOK)
	})
}

func TestWS_Capacity(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{MaxSessions: 2})
	a, b := s.dial(t), s.dial(t)
	roundTrip(t, a, `{"type":"state"}`)
	roundTrip(t, b, `{"type":"state"}`)
	c := s.dial(t)
	jsonEq(t, recv(t, c), `{"type":"error","data":{"message":"Server at capacity: 2/2 sessions active. Cannot accept new connections.","code":"CAPACITY_REACHED","active_sessions":2,"max_sessions":2}}`)
	expectClose(t, c, websocket.StatusTryAgainLater, "capacity")
	// MCP sessions share the pool.
	jsonEq(t, s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`),
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"Server at capacity: 2/2 sessions active. Cannot accept new connections.","data":{"active_sessions":2,"max_sessions":2}}}`)
	// Closing one frees its slot.
	send(t, a, `{"type":"close"}`)
	waitFor(t, "a slot to free", func() bool { return len(s.Sessions()) == 1 })
	d := s.dial(t)
	if typ := str(t, roundTrip(t, d, `{"type":"state"}`), "type"); typ != "state" {
		t.Errorf("a new connection after a close got %s", typ)
	}
}

func TestWS_StepTimeout(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{StepTimeout: 20 * time.Millisecond})
	c := s.dial(t)
	jsonEq(t, roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"slow"}}`),
		`{"type":"observation","data":{"observation":{"tool_name":"slow","result":null,"error":{"error_type":"timeout","message":"tool \"slow\" timed out after 20ms"}},"reward":null,"done":false}}`)
	// The session goes on.
	if d := fmt.Sprint(field(t, roundTrip(t, c, `{"type":"step","data":{"tool_name":"add","arguments":{"a":2,"b":2}}}`), "data.observation.result.data")); d != "4" {
		t.Errorf("step after a timeout gave %s", d)
	}
}

func TestWS_PingDuringStep(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{StepTimeout: time.Hour})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	send(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"slow"}}`)
	<-fake.slowStarted
	// The client's Ping needs a concurrent reader for its pong.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	readErr := make(chan error, 1)
	go func() {
		_, _, err := c.Read(ctx)
		readErr <- err
	}()
	for i := range 3 {
		pctx, pcancel := context.WithTimeout(ctx, waitLimit)
		err := c.Ping(pctx)
		pcancel()
		if err != nil {
			t.Fatalf("ping %d during a step: %v", i, err)
		}
	}
	c.CloseNow()
	<-readErr
	waitFor(t, "the instance to close", func() bool { return fake.open.Load() == 0 })
}

func TestWS_ServerPing(t *testing.T) {
	t.Run("LivePeerKept", func(t *testing.T) {
		fake := newFake(t)
		s := mustServe(t, fake, openenv.Config{PingInterval: time.Millisecond, PongTimeout: waitLimit})
		var pings atomic.Int64
		c := s.dialWith(t, &websocket.DialOptions{OnPingReceived: func(context.Context, []byte) bool {
			pings.Add(1)
			return true
		}})
		// The client answers pings only while it reads.
		frames := make(chan string, 1)
		go func() {
			defer close(frames)
			for {
				_, b, err := c.Read(context.Background())
				if err != nil {
					return
				}
				frames <- string(b)
			}
		}()
		waitFor(t, "several pings", func() bool { return pings.Load() >= 5 })
		send(t, c, `{"type":"state"}`)
		if reply := <-frames; !strings.HasPrefix(reply, `{"type":"state"`) {
			t.Fatalf("reply %s, want a state", reply)
		}
		if n := len(s.Sessions()); n != 1 {
			t.Errorf("%d sessions, want the pinged one", n)
		}
	})
	t.Run("DeadPeerDropped", func(t *testing.T) {
		fake := newFake(t)
		s := mustServe(t, fake, openenv.Config{PingInterval: 20 * time.Millisecond, PongTimeout: 20 * time.Millisecond})
		c := s.dial(t)
		send(t, c, `{"type":"reset"}`)
		// The client never reads, so it never answers a ping. On a loaded
		// machine the peer may be dropped before its reset is processed, so
		// the test asks only that the session goes and leaves no instance.
		waitFor(t, "the silent peer to be dropped", func() bool { return len(s.Sessions()) == 0 })
		if n := fake.open.Load(); n != 0 {
			t.Errorf("%d instances open after the peer was dropped", n)
		}
	})
}

func TestWS_Pipelined(t *testing.T) {
	const n = 10000
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{MaxPending: 4})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	sent := make(chan int, n)
	sendErr := make(chan error, 1)
	go func() {
		ctx := context.Background()
		for i := range n {
			msg := fmt.Sprintf(`{"type":"step","data":{"type":"call_tool","tool_name":"add","arguments":{"a":%d,"b":1}}}`, i)
			if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
				sendErr <- err
				return
			}
			sent <- i
		}
		sendErr <- nil
	}()
	// Let the client run well ahead of the server's queue before reading anything.
	for range 16 * 4 {
		<-sent
	}
	for i := range n {
		reply := recvRaw(t, c)
		if want := fmt.Sprintf(`"data":%d,`, i+1); !strings.Contains(reply, want) {
			t.Fatalf("reply %d is %s, want one with %s", i, reply, want)
		}
	}
	if err := <-sendErr; err != nil {
		t.Fatalf("send: %v", err)
	}
	if steps := fmt.Sprint(field(t, roundTrip(t, c, `{"type":"state"}`), "data.step_count")); steps != fmt.Sprint(n) {
		t.Errorf("step_count %s, want %d", steps, n)
	}
}

// TestWS_LongStepKeepsOrder sends steps behind one that runs long, which the
// reader reads ahead while the worker answers it: every reply comes back in
// order, and the session answers promptly again afterwards.
func TestWS_LongStepKeepsOrder(t *testing.T) {
	const n = 20
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{StepTimeout: 150 * time.Millisecond})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	for round := range 3 {
		send(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"slow"}}`)
		<-fake.slowStarted
		for i := range n {
			send(t, c, fmt.Sprintf(`{"type":"step","data":{"type":"call_tool","tool_name":"add","arguments":{"a":%d,"b":1}}}`, i))
		}
		if reply := recvRaw(t, c); !strings.Contains(reply, `"error_type":"timeout"`) {
			t.Fatalf("round %d: first reply %s, want the slow call's timeout", round, reply)
		}
		for i := range n {
			if reply, want := recvRaw(t, c), fmt.Sprintf(`"data":%d,`, i+1); !strings.Contains(reply, want) {
				t.Fatalf("round %d: reply %d is %s, want one with %s", round, i, reply, want)
			}
		}
		if got := fmt.Sprint(field(t, roundTrip(t, c, `{"type":"state"}`), "data.step_count")); got != fmt.Sprint((round+1)*(n+1)) {
			t.Fatalf("round %d: step_count %s, want %d", round, got, (round+1)*(n+1))
		}
	}
}

func TestWS_ClientNeverReads(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{WriteTimeout: 50 * time.Millisecond, MaxPending: 2})
	// A small receive buffer makes the server's writes block after little data.
	dialer := &net.Dialer{}
	transport := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dialer.DialContext(ctx, network, addr)
		if err == nil {
			err = conn.(*net.TCPConn).SetReadBuffer(4096)
		}
		return conn, err
	}}
	c := s.dialWith(t, &websocket.DialOptions{HTTPClient: &http.Client{Transport: transport}})
	go func() {
		// Each reply holds 512 KiB; the server's writes block once the socket
		// buffers fill, and these writes block or fail soon after.
		for range 1000 {
			err := c.Write(context.Background(), websocket.MessageText,
				[]byte(`{"type":"step","data":{"type":"call_tool","tool_name":"blob","arguments":{"n":262144}}}`))
			if err != nil {
				return
			}
		}
	}()
	waitFor(t, "the stalled session to be closed", func() bool { return fake.opened.Load() == 1 && len(s.Sessions()) == 0 })
	waitFor(t, "the instance to close", func() bool { return fake.open.Load() == 0 })
}

func TestWS_MCP(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"episode_id":"ws-mcp"}}`)
	sessions := s.Sessions()
	if len(sessions) != 1 {
		t.Fatalf("%d sessions, want 1", len(sessions))
	}
	own := sessions[0].ID
	tests := []struct {
		name string
		rpc  string // the JSON-RPC request
		want string // the data of the mcp reply
	}{
		{"Create", `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"session_id":"` + own + `"}}`},
		{"CloseOwn", `{"jsonrpc":"2.0","id":2,"method":"openenv/session/close","params":{"session_id":"` + own + `"}}`,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Cannot close active WebSocket-managed session via MCP method","data":null}}`},
		{"CallOwnSession", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":5,"b":3}}}`,
			`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"8","annotations":null,"meta":null}],"structured_content":{"result":8},"meta":null,"data":8,"is_error":false,"structuredContent":{"result":8},"isError":false}}`},
		{"CallOwnSessionByID", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"session_id":"` + own + `"}}`,
			`{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"{\"message\":\"hi\"}","annotations":null,"meta":null}],"structured_content":{"message":"hi"},"meta":null,"data":{"message":"hi"},"is_error":false,"structuredContent":{"message":"hi"},"isError":false}}`},
		{"Notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":null,"result":{}}`},
		{"InvalidRequest", `{"id":5,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"Invalid request: jsonrpc: Field required","data":null}}`},
		{"NoReset", `{"jsonrpc":"2.0","id":6,"method":"reset"}`,
			`{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"Method not found: reset","data":null}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply := roundTrip(t, c, `{"type":"mcp","data":`+tt.rpc+`}`)
			jsonEq(t, reply, `{"type":"mcp","data":`+tt.want+`}`)
		})
	}
	t.Run("ListTools", func(t *testing.T) {
		reply := roundTrip(t, c, `{"type":"mcp","data":{"jsonrpc":"2.0","id":"x","method":"tools/list"}}`)
		if name := str(t, reply, "data.id"); name != "x" {
			t.Errorf("id %s, want x", name)
		}
		tools := field(t, reply, "data.result.tools").([]any)
		if len(tools) != 6 {
			t.Fatalf("%d tools, want 6", len(tools))
		}
		if _, ok := tools[0].(map[string]any)["inputSchema"]; !ok {
			t.Errorf("tool has no inputSchema: %v", tools[0])
		}
	})
	// MCP calls on the socket's session count as steps.
	state := roundTrip(t, c, `{"type":"state"}`)
	if ep, n := str(t, state, "data.episode_id"), fmt.Sprint(field(t, state, "data.step_count")); ep != "ws-mcp" || n != "2" {
		t.Errorf("episode %s, step_count %s; want ws-mcp, 2", ep, n)
	}
}

func TestWS_ConcurrentUseIsSerialised(t *testing.T) {
	// An HTTP client inspecting a WebSocket session while the socket steps
	// must never reach the instance concurrently (the fake reports it).
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	id := s.Sessions()[0].ID
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 50 {
			s.httpDo(t, "POST", "/inspect", `{"sql":"SELECT message FROM echoes"}`, map[string]string{openenv.SessionHeader: id})
		}
	}()
	for i := range 50 {
		roundTrip(t, c, fmt.Sprintf(`{"type":"step","data":{"tool_name":"echo","arguments":{"message":"%d"}}}`, i))
	}
	wg.Wait()
}

// An upgrade the WebSocket handshake refuses (a plain GET, a wrong
// version, a malformed key) is answered as every other route's error,
// JSON {"detail": …} saying what is wrong, where it was text/plain.
func TestWS_UpgradeRefusedAsJSON(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	upgrade := map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
	with := func(k, v string) map[string]string {
		h := maps.Clone(upgrade)
		h[k] = v
		return h
	}
	for _, tt := range []struct {
		name   string
		header map[string]string
		status int
		detail string
	}{
		{"PlainGET", nil, http.StatusUpgradeRequired, `Connection header "" does not contain Upgrade`},
		{"NoUpgrade", with("Upgrade", "h2c"), http.StatusUpgradeRequired, `Upgrade header "h2c" does not contain websocket`},
		{"Version", with("Sec-WebSocket-Version", "8"), http.StatusBadRequest, `unsupported WebSocket protocol version`},
		{"Key", with("Sec-WebSocket-Key", "short"), http.StatusBadRequest, `invalid Sec-WebSocket-Key "short"`},
		// Refused as every route refuses a page of another origin.
		{"Origin", with("Origin", "http://evil.example"), http.StatusForbidden, `Origin http://evil.example is not allowed: this server answers pages of its own origin and of its allowed origins only`},
		{"LongOrigin", with("Origin", "http://"+strings.Repeat("a", 4096)), http.StatusForbidden, `… (4103 bytes, not echoed) is not allowed`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body, resp := s.httpDo(t, http.MethodGet, "/ws", "", tt.header)
			var got struct{ Detail string }
			if err := json.Unmarshal([]byte(body), &got); err != nil || code != tt.status ||
				resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(got.Detail, tt.detail) {
				t.Errorf("%d %s %q, want %d application/json with a detail saying %s", code, resp.Header.Get("Content-Type"), body, tt.status, tt.detail)
			}
		})
	}
	// The server still upgrades a request that is right.
	if got := roundTrip(t, s.dial(t), `{"type":"reset"}`); got != resetOK {
		t.Errorf("reset: %s", got)
	}
}
