package openenv

import (
	"bytes"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// readStepSlowly reads raw as dispatch reads a /ws message member by
// member, and returns the action of a step that has no fault.
func readStepSlowly(raw []byte) (action, bool) {
	if checkJSON(raw, nil) != nil {
		return action{}, false
	}
	m, ok := members(raw)
	if !ok {
		return action{}, false
	}
	if typ, ok := str(m["type"]); !ok || typ != "step" {
		return action{}, false
	}
	if keys := slices.Sorted(maps.Keys(m)); !slices.Equal(keys, []string{"data", "type"}) {
		return action{}, false
	}
	a, errs := parseAction(m["data"], []any{"data"})
	return a, len(errs) == 0
}

// readStepCases are messages on both sides of every rule readCallToolStep
// leaves to the member-by-member reading.
var readStepCases = []string{
	`{"type":"step","data":{"type":"call_tool","tool_name":"add","arguments":{"a":5,"b":3}}}`,
	`{"type":"step","data":{"tool_name":"add"}}`,
	`{"data":{"tool_name":"add","arguments":{}},"type":"step"}`,
	` {"type" : "step", "data" : {"tool_name" : "nullable", "arguments" : {"x" : "null"}}} `,
	`{"type":"step","data":{"tool_name":"add","arguments":{"a":null}}}`,
	`{"type":"step","data":{"tool_name":"add","metadata":null}}`,
	`{"type":"step","data":{"tool_name":"add","request_id":null}}`,
	`{"type":"step","data":{"tool_name":null}}`,
	`{"type":"step","data":null}`,
	`{"type":"step","data":{"tool_name":"add","metadata":{"k":1},"request_id":"r-1"}}`,
	`{"type":"step","data":{"tool_name":"add","request_id":""}}`,
	`{"type":"step","data":{"type":"list_tools"}}`,
	`{"type":"step","data":{"type":"list_tools","tool_name":"add"}}`,
	`{"type":"step","data":{"type":"other","tool_name":"add"}}`,
	`{"type":"step","data":{"arguments":{}}}`,
	`{"type":"step","data":{"tool_name":"add","arguments":[]}}`,
	`{"type":"step","data":{"tool_name":"add","arguments":"{}"}}`,
	`{"type":"step","data":{"tool_name":7}}`,
	`{"type":"step","data":{"tool_name":"add","extra":1}}`,
	`{"type":"step","data":{"tool_name":"add"},"extra":1}`,
	`{"type":"step","data":{"tool_name":"add","tool_name":"sub"}}`,
	`{"type":"step","type":"step","data":{"tool_name":"add"}}`,
	`{"typ\u0065":"step","data":{"tool_n\u0061me":"add"}}`,
	`{"type":"step","data":{"tool_name":"a\u0000d\ud800"}}`,
	"{\"type\":\"step\",\"data\":{\"tool_name\":\"a\xffd\"}}",
	`{"type":"Step","data":{"tool_name":"add"}}`,
	`{"Type":"step","data":{"tool_name":"add"}}`,
	`{"type":"step","data":{"Tool_name":"add"}}`,
	`{"type":"state"}`,
	`{"type":"reset","data":{"seed":1}}`,
	`{"type":"step"}`,
	`{"type":"step","data":{"tool_name":"add"}} {}`,
	`{"type":"step","data":{"tool_name":"add"}`,
	`[]`,
	`"step"`,
	``,
}

// TestReadCallToolStep: the one-pass reading takes a message only when the
// member-by-member reading reads the same action from it without a fault.
func TestReadCallToolStep(t *testing.T) {
	taken := 0
	for _, raw := range readStepCases {
		if checkReadStep(t, []byte(raw)) {
			taken++
		}
	}
	if taken < 8 {
		t.Errorf("the one-pass reading took %d of the %d cases, want the common shapes", taken, len(readStepCases))
	}
}

// checkReadStep compares the two readings of raw and reports whether the
// one-pass reading took it.
func checkReadStep(t *testing.T, raw []byte) bool {
	t.Helper()
	fast, ok := readCallToolStep(raw)
	if !ok {
		return false
	}
	slow, slowOK := readStepSlowly(raw)
	if !slowOK {
		t.Errorf("%q: read in one pass, but the member-by-member reading refuses it", raw)
	} else if !reflect.DeepEqual(fast, slow) {
		t.Errorf("%q: read in one pass as\n%#v\nmember by member as\n%#v", raw, fast, slow)
	}
	return true
}

// FuzzReadCallToolStep checks the same on any input.
func FuzzReadCallToolStep(f *testing.F) {
	for _, raw := range readStepCases {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkReadStep(t, raw) })
}

// BenchmarkReadStep compares the two readings of a typical tool call.
func BenchmarkReadStep(b *testing.B) {
	raw := []byte(`{"type":"step","data":{"type":"call_tool","tool_name":"invoice","arguments":{"amount":500,"client":"acme"}}}`)
	b.Run("OnePass", func(b *testing.B) {
		for b.Loop() {
			readCallToolStep(raw)
		}
	})
	b.Run("MemberByMember", func(b *testing.B) {
		for b.Loop() {
			readStepSlowly(raw)
		}
	})
}

// BenchmarkEncodeStepReply measures writing the reply of a tool call.
func BenchmarkEncodeStepReply(b *testing.B) {
	o := toolOutcome{result: []byte(`{"id":"inv_1","charge_id":"ch_1","amount":500}`)}
	reply := wsFrame{"observation", stepReply{Observation: o.observation("invoice")}}
	for b.Loop() {
		if _, err := encode(reply); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzLeadingID checks refusedID on any body and each of its prefixes: an
// id found in a prefix is a string or a number, and the
// whole body, when it is a JSON object, has that same id.
func FuzzLeadingID(f *testing.F) {
	for _, raw := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":"r-1","method":"ping"}`,
		`{"method":"ping","jsonrpc":"2.0","id":3}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"id":{"a":1}}`,
		`[{"jsonrpc":"2.0","id":4}]`,
		`{"jsonrpc":"2.0","id":"\u00e9","method":"ping"}`,
	} {
		f.Add([]byte(raw), len(raw)/2)
	}
	f.Fuzz(func(t *testing.T, body []byte, cut int) {
		if cut < 0 || cut > len(body) {
			return
		}
		id := refusedID(body[:cut])
		if string(id) == "null" { // none found: an id found is never null
			return
		}
		if k := jsontext.Value(id).Kind(); k != '"' && k != '0' {
			t.Fatalf("%q: id %s is neither a string nor a number", body[:cut], id)
		}
		var whole map[string]jsontext.Value
		if jsonv2.Unmarshal(body, &whole) == nil {
			if got, ok := whole["id"]; !ok || !bytes.Equal(bytes.TrimSpace(got), id) {
				t.Fatalf("%q: the prefix %q has id %s, the body %s", body, body[:cut], id, got)
			}
		}
	})
}

// TestCloseReason: a close frame's reason fits its 123 bytes and stays
// UTF-8, however long the message and wherever its characters fall.
func TestCloseReason(t *testing.T) {
	for _, msg := range []string{
		"short",
		strings.Repeat("é", 100),        // 200 bytes, two to a character
		"x" + strings.Repeat("€", 60),   // three to a character, offset by one
		strings.Repeat("a", 119) + "😀😀", // a four-byte character across the cut
		"bad \xff byte",
		strings.Repeat("a", 200),
	} {
		got := closeReason(msg)
		if len(got) > 123 || !utf8.ValidString(got) {
			t.Errorf("closeReason(%q) = %q (%d bytes), want valid UTF-8 of at most 123 bytes", msg, got, len(got))
		}
		if len(msg) > 123 && !strings.HasSuffix(got, "...") {
			t.Errorf("closeReason(%q) = %q, want it cut with ...", msg, got)
		}
	}
	if got := closeReason(strings.Repeat("a", 200)); got != strings.Repeat("a", 120)+"..." {
		t.Errorf("closeReason of 200 bytes of ASCII = %q, want 120 bytes and ...", got)
	}
}

// TestClip: a client's string clipped for a log line keeps at most n bytes
// before the ellipsis and stays UTF-8 wherever its characters fall.
func TestClip(t *testing.T) {
	for _, v := range []string{"short", strings.Repeat("é", 100), "x" + strings.Repeat("€", 60), strings.Repeat("a", 127) + "😀"} {
		got := clip(v, 128)
		body := strings.TrimSuffix(got, "...")
		if len(body) > 128 || !utf8.ValidString(got) {
			t.Errorf("clip(%q, 128) = %q, want valid UTF-8 of at most 128 bytes before the ellipsis", v, got)
		}
		if len(v) > 128 && body == got {
			t.Errorf("clip(%q, 128) = %q, want it cut with ...", v, got)
		}
	}
}

// TestSyntaxMessage_NotUTF8: a byte that starts no UTF-8 character is
// named as a byte, not as the character encoding/json reads it as.
func TestSyntaxMessage_NotUTF8(t *testing.T) {
	perr := checkJSON([]byte("{\"a\":\xff}"), nil)
	if perr == nil || perr.message != "Invalid JSON: invalid byte 0xFF (not UTF-8) looking for beginning of value" {
		t.Errorf("checkJSON of a stray byte: %+v", perr)
	}
}

// TestDecodeMembers_UnknownKeysCounted: past the problems a reply lists,
// unknown keys are counted, not each built into a problem, and the
// refusal still lists the first ones in key order and counts the rest,
// known keys' problems past the list included.
func TestDecodeMembers_UnknownKeysCounted(t *testing.T) {
	keys := []string{`"seed":"x"`} // a type error after the unknown keys in key order
	for i := range 5000 {
		keys = append(keys, `"k`+strconv.Itoa(10000+i)+`":1`)
	}
	_, errs := parseReset([]byte("{"+strings.Join(keys, ",")+"}"), []any{"data"})
	if len(errs) > maxProblems+2 {
		t.Errorf("%d problems built for 5001, want at most %d", len(errs), maxProblems+2)
	}
	perr := invalid(errs)
	if len(perr.errors) != maxProblems || perr.errors[0].Loc[1] != "k10000" || perr.errors[maxProblems-1].Loc[1] != "k10099" {
		t.Fatalf("listed %d problems, from %v to %v", len(perr.errors), perr.errors[0].Loc, perr.errors[len(perr.errors)-1].Loc)
	}
	if want := "; and 4901 more problems, not listed"; !strings.HasSuffix(perr.message, want) {
		t.Errorf("message ends %q, want %q", perr.message[len(perr.message)-60:], want)
	}
}
