package openenv_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/openenv"
)

// echoReplyLimit is more than any reply to one bounded validation failure
// needs, and far less than the inputs the tests below send.
const echoReplyLimit = 8 << 10

// TestValidation_EchoBounded sends 2 MiB where a number belongs, as a key
// that is not allowed and as a fixture name, on each transport: each
// refusal repeats the first KiB of the client's text, says how long it
// was, and stays a few KiB, instead of sending the megabytes back.
func TestValidation_EchoBounded(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	big := strings.Repeat("é", 1<<20) // 2 MiB, two bytes a character
	cut := strings.Repeat("é", 512) + "… (" + strconv.Itoa(len(big)) + " bytes, not echoed)"
	c := s.dial(t)
	t.Run("WS", func(t *testing.T) {
		reply := roundTrip(t, c, `{"type":"reset","data":{"seed":"`+big+`","`+big+`":1}}`)
		if len(reply) > echoReplyLimit {
			t.Fatalf("a reply of %d bytes: %.300s", len(reply), reply)
		}
		checkError(t, reply, []string{"VALIDATION_ERROR"}, "data."+cut+": Extra inputs are not permitted", "data.seed: Input should be a valid integer")
		errs := field(t, reply, "data.errors").([]any)
		if len(errs) != 2 {
			t.Fatalf("%d errors, want 2: %s", len(errs), reply)
		}
		seed, extra := errs[0].(map[string]any), errs[1].(map[string]any) // in key order
		if loc := extra["loc"].([]any); len(loc) != 2 || loc[1] != cut {
			t.Errorf("loc %.300q, want the key cut", loc)
		}
		if seed["input"] != cut {
			t.Errorf("input %.300q, want %.300q", seed["input"], cut)
		}
		reply = roundTrip(t, c, `{"type":"reset","data":{"fixture":"`+big+`"}}`)
		if len(reply) > echoReplyLimit {
			t.Fatalf("a reply of %d bytes: %.300s", len(reply), reply)
		}
		checkError(t, reply, []string{"VALIDATION_ERROR"}, "data.fixture: ", " bytes, not echoed)")
	})
	t.Run("HTTP", func(t *testing.T) {
		seed := `[` + strings.Repeat("1,", 1<<20) + `1]`
		status, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{"seed":`+seed+`}`, nil)
		if status != http.StatusUnprocessableEntity || len(body) > echoReplyLimit {
			t.Fatalf("status %d, a body of %d bytes: %.300s", status, len(body), body)
		}
		want := seed[:1<<10] + "… (" + strconv.Itoa(len(seed)) + " bytes, not echoed)"
		if got := field(t, body, "detail").([]any)[0].(map[string]any)["input"]; got != want {
			t.Errorf("input %.300q, want the JSON's text cut, %.300q", got, want)
		}
	})
	t.Run("MCP", func(t *testing.T) {
		reply := s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":{"`+big+`":1}}`)
		if len(reply) > echoReplyLimit {
			t.Fatalf("a reply of %d bytes: %.300s", len(reply), reply)
		}
		if msg := str(t, reply, "error.message"); msg != "Invalid message: params."+cut+": Extra inputs are not permitted" {
			t.Errorf("message %.300q", msg)
		}
	})
}

// TestValidation_ProblemsBounded sends a reset with 5000 keys the reset
// does not take: the refusal lists the first 100 in key order and says
// how many more there were, on /ws and over HTTP (where, before, the body
// said nothing of them).
func TestValidation_ProblemsBounded(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	keys := make([]string, 5000)
	for i := range keys {
		keys[i] = `"k` + strconv.Itoa(10000+i) + `":1`
	}
	data := "{" + strings.Join(keys, ",") + "}"
	reply := roundTrip(t, s.dial(t), `{"type":"reset","data":`+data+`}`)
	checkError(t, reply, []string{"VALIDATION_ERROR"}, "data.k10000: Extra inputs are not permitted; ",
		"data.k10099: Extra inputs are not permitted; and 4900 more problems, not listed")
	if msg := str(t, reply, "data.message"); strings.Contains(msg, "k10100") {
		t.Errorf("message %.300q names a problem past the first 100", msg)
	}
	if errs := field(t, reply, "data.errors").([]any); len(errs) != 100 {
		t.Errorf("%d problems listed, want 100", len(errs))
	}
	status, body, _ := s.httpDo(t, http.MethodPost, "/reset", data, nil)
	if status != http.StatusUnprocessableEntity {
		t.Fatalf("status %d: %.300s", status, body)
	}
	// The body is the list alone, so its last entry says it was cut.
	errs := field(t, body, "detail").([]any)
	if len(errs) != 101 {
		t.Fatalf("%d entries, want the 100 problems and one saying how many more", len(errs))
	}
	if last, _ := json.Marshal(errs[100]); string(last) != `{"input":null,"loc":["body"],"msg":"and 4900 more problems, not listed (a reply lists the first 100)","type":"too_many_errors"}` {
		t.Errorf("last entry %s", last)
	}
}

// TestErrors_NameBounded sends 2 MiB as a message type, a JSON-RPC method
// and a tool name, and most of a megabyte as an SQL token: each error names
// the first KiB of it and how long it was, instead of the megabytes.
func TestErrors_NameBounded(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	big := strings.Repeat("q", 2<<20)
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	for _, tt := range []struct {
		name, msg, path, want string
	}{
		{"WSType", `{"type":"` + big + `"}`, "data.message", "Unknown message type: " + big[:1<<10] + "… (2097152 bytes, not echoed)"},
		{"WSMethod", `{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"` + big + `"}}`, "data.error.message", "Method not found: " + big[:1<<10] + "… (2097152 bytes, not echoed)"},
		{"WSMCPTool", `{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + big + `","arguments":{}}}}`, "data.error.message", `unknown tool "` + big[:1<<10] + `… (2097152 bytes, not echoed)"`},
		// The longest token the inspection connection takes (a statement
		// is at most sqlitestore.MaxInspectSQL, a million bytes, long).
		{"WSInspect", `{"type":"inspect","data":{"sql":"SELECT ` + big[:1_000_000-len("SELECT ")] + `"}}`, "data.message", " bytes, not echoed)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reply := roundTrip(t, c, tt.msg)
			if len(reply) > echoReplyLimit {
				t.Fatalf("a reply of %d bytes: %.300s", len(reply), reply)
			}
			if got := str(t, reply, tt.path); !strings.HasSuffix(got, tt.want) {
				t.Errorf("%s %.300q, want it to end %.300q", tt.path, got, tt.want)
			}
		})
	}
	t.Run("MCP", func(t *testing.T) {
		reply := s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"`+big+`"}`)
		if len(reply) > echoReplyLimit {
			t.Fatalf("a reply of %d bytes: %.300s", len(reply), reply)
		}
	})
	t.Run("MCPSessionParam", func(t *testing.T) {
		reply := s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"session_id":"`+big+`"}}`)
		if len(reply) > echoReplyLimit {
			t.Fatalf("a reply of %d bytes: %.300s", len(reply), reply)
		}
		if msg := str(t, reply, "error.message"); msg != "Unknown session_id: "+big[:1<<10]+"… (2097152 bytes, not echoed)" {
			t.Errorf("message %.300q", msg)
		}
	})
	t.Run("ContentType", func(t *testing.T) {
		status, reply, _ := s.httpDo(t, http.MethodPost, "/reset", "{}", map[string]string{"Content-Type": "text/" + big[:512<<10]})
		if status != http.StatusUnsupportedMediaType || len(reply) > echoReplyLimit {
			t.Fatalf("status %d, a reply of %d bytes: %.300s", status, len(reply), reply)
		}
	})
	t.Run("URL", func(t *testing.T) {
		long := big[:256<<10]
		for _, path := range []string{"/sessions/" + long + "/watch", "/mcp?" + long + "=1&" + long + "=2"} {
			method, body := http.MethodGet, ""
			if strings.HasPrefix(path, "/mcp") {
				method, body = http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
			}
			status, reply, _ := s.httpDo(t, method, path, body, nil)
			if len(reply) > echoReplyLimit || !strings.Contains(reply, "… (262144 bytes, not echoed)") {
				t.Errorf("%.30s: status %d, a reply of %d bytes: %.300s", path, status, len(reply), reply)
			}
		}
	})
	t.Run("MCPSessionHeader", func(t *testing.T) {
		sid := big[:512<<10] // within net/http's 1 MiB of headers
		for _, method := range []string{http.MethodPost, http.MethodDelete} {
			body := ""
			if method == http.MethodPost {
				body = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
			}
			status, reply, _ := s.httpDo(t, method, "/mcp", body, map[string]string{openenv.MCPSessionHeader: sid})
			if status != http.StatusNotFound || len(reply) > echoReplyLimit {
				t.Fatalf("%s: status %d, a reply of %d bytes: %.300s", method, status, len(reply), reply)
			}
			if msg := str(t, reply, "error.message"); !strings.Contains(msg, "… (524288 bytes, not echoed) (it ended, or never existed)") {
				t.Errorf("%s: message %.300q", method, msg)
			}
		}
	})
}
