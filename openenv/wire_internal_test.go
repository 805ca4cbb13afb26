package openenv

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// referenceMembers is what members replaces: json.Unmarshal into a map.
func referenceMembers(raw []byte) (map[string]json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, false
	}
	return m, true
}

// referenceValue is what appendValue's fast paths replace: encoding/json
// without HTML escaping.
func referenceValue(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

var memberSeeds = []string{
	`{}`, ` { } `, `{"type":"step","data":{"type":"call_tool","tool_name":"add","arguments":{"a":1,"b":2}}}`,
	`{"a":1,"a":2}`, `{"a" : [1, {"b": "}"}] , "c":"\"}"}`, `{"\u0074ype":"state"}`, `{"k\"ey":null}`,
	`{"é":true,"\ud800":false}`, "{\"a\":\"\xff\"}", "{\"\xff\":1}", `{"a":-1.5e+3,"b":[],"c":{}}`,
	`[1]`, `"x"`, `"`, `"a"b"`, `"tab\t"`, `"\u0041"`, "\"\x7f\"", `{"a":1,}`, `{"a"}`, `{"a":1} x`, ``, `{`, "{\"a\":\t1\n}",
}

func TestMembers_MatchesUnmarshal(t *testing.T) {
	for _, in := range memberSeeds {
		checkMembers(t, []byte(in))
	}
}

func FuzzMembers(f *testing.F) {
	for _, in := range memberSeeds {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkMembers(t, in) })
}

func checkMembers(t *testing.T, in []byte) {
	t.Helper()
	// members and isObject read validated JSON only.
	if json.Valid(in) {
		got, gotOK := members(in)
		want, wantOK := referenceMembers(in)
		if gotOK != wantOK || !reflect.DeepEqual(normalize(got), normalize(want)) {
			t.Fatalf("members(%q) = %q, %v; json.Unmarshal reads %q, %v", in, got, gotOK, want, wantOK)
		}
		if isObject(in) != wantOK {
			t.Fatalf("isObject(%q) = %v, json.Unmarshal into a map says %v", in, !wantOK, wantOK)
		}
	}
	var ref string
	refErr := json.Unmarshal(bytes.TrimSpace(in), &ref)
	wantStr := len(bytes.TrimSpace(in)) > 0 && bytes.TrimSpace(in)[0] == '"' && refErr == nil
	if s, ok := asString(in); ok != wantStr || (ok && s != ref) {
		t.Fatalf("asString(%q) = %q, %v; json.Unmarshal into a string reads %q, %v", in, s, ok, ref, wantStr)
	}
}

// normalize drops the difference between a nil and an empty map.
func normalize(m map[string]json.RawMessage) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

var valueSeeds = []string{"", "plain", `quote"`, `back\slash`, "tab\t", "<html>&", "é", "\xff", "\u2028", "\x7f", "~"}

func TestAppendValue_MatchesEncodingJSON(t *testing.T) {
	for _, s := range valueSeeds {
		checkValue(t, s)
		checkText(t, s)
		checkValue(t, json.RawMessage(s))
	}
	for _, v := range []any{0, -1, 1 << 40, int64(-1 << 62), json.RawMessage(` { "a" : [ 1 , 2 ] } `), json.RawMessage(`"\u2028<"`)} {
		checkValue(t, v)
	}
}

func FuzzAppendValue(f *testing.F) {
	for _, s := range valueSeeds {
		f.Add(s, int64(len(s)))
	}
	f.Fuzz(func(t *testing.T, s string, n int64) {
		checkValue(t, s)
		checkText(t, s)
		checkValue(t, json.RawMessage(s))
		checkValue(t, n)
		checkValue(t, int(n))
	})
}

// checkText checks that text held as bytes encodes as the string would.
func checkText(t *testing.T, s string) {
	t.Helper()
	got, err := appendValue(nil, jsonText(s))
	want, _ := json.Marshal(s)
	if err != nil || !bytes.Equal(got, bytes.ReplaceAll(bytes.ReplaceAll(bytes.ReplaceAll(want,
		[]byte(`\u003c`), []byte("<")), []byte(`\u003e`), []byte(">")), []byte(`\u0026`), []byte("&"))) {
		t.Fatalf("jsonText(%q) = %s, %v; encoding/json writes %s", s, got, err, want)
	}
}

func checkValue(t *testing.T, v any) {
	t.Helper()
	got, gotErr := appendValue([]byte("prefix"), v)
	want, wantErr := referenceValue(v)
	if (gotErr != nil) != (wantErr != nil) {
		t.Fatalf("appendValue(%#v) error %v, encoding/json's %v", v, gotErr, wantErr)
	}
	if gotErr == nil && string(got) != "prefix"+string(want) {
		t.Fatalf("appendValue(%#v) = %s, encoding/json writes %s", v, got[len("prefix"):], want)
	}
}
