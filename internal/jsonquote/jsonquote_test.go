package jsonquote_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/seahaven/seahaven/internal/jsonquote"
)

var seeds = []string{"", "plain", `quote"`, `back\slash`, "tab\t\n\r\b\f\x01\x1f", "<html>&", "é", "\xff", "a\xc3", "\u2028\u2029", "\x7f", "~", "\ud7ff\U0010ffff"}

// reference is what encoding/json writes with HTML escaping off.
func reference(t *testing.T, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func check(t *testing.T, s string) {
	t.Helper()
	want := reference(t, s)
	if got := jsonquote.Append([]byte("x"), s); string(got) != "x"+string(want) {
		t.Fatalf("Append(%q) = %s, encoding/json writes %s", s, got[1:], want)
	}
	if got := jsonquote.Append(nil, []byte(s)); string(got) != string(want) {
		t.Fatalf("Append([]byte(%q)) = %s, encoding/json writes %s", s, got, want)
	}
}

func TestAppend_MatchesEncodingJSON(t *testing.T) {
	for _, s := range seeds {
		check(t, s)
	}
	for c := 0; c < 0x80; c++ {
		check(t, string(rune(c)))
	}
}

func FuzzAppend(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(check)
}

func ExampleAppend() {
	b := jsonquote.Append([]byte("text: "), "say \"hi\"\n<ok>")
	fmt.Println(string(b))
	// Output: text: "say \"hi\"\n<ok>"
}
