package argschema

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"
)

// slowTokens tokenizes raw with encoding/json's Decoder, the path taken by
// documents that are not valid JSON.
func slowTokens(raw []byte) []json.Token {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var toks []json.Token
	for {
		tok, err := dec.Token()
		if err != nil {
			return toks
		}
		toks = append(toks, tok)
	}
}

// fastTokens tokenizes raw with the scanner used for valid documents.
func fastTokens(t testing.TB, raw []byte) []json.Token {
	d := newDecoder(raw)
	if d.dec != nil {
		t.Fatalf("valid document %q took the slow path", raw)
	}
	var toks []json.Token
	for d.skipSpace(); d.pos < len(d.raw); d.skipSpace() {
		tok, e := d.next()
		if e != nil {
			t.Fatalf("%q: %v", raw, e)
		}
		toks = append(toks, tok)
	}
	return toks
}

var tokenDocs = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0.5e+10`, `"x"`,
	`{"amount":500,"currency":"eur","memo":"coffee"}`,
	` { "a" : [ 1 , 2.5 , -3e2 , true , false , null , { } , [ ] ] } `,
	`{"esc":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00","k\u0041":"\\"}`,
	`{"unicode":"日本語","empty":"","nested":{"x":{"y":[[[]]]}}}`,
	"{\"tabs\":\t\"\\t\"\r\n}",
}

// TestFastTokensMatchDecoder checks that the scanner and encoding/json agree
// on every token of valid documents.
func TestFastTokensMatchDecoder(t *testing.T) {
	for _, doc := range tokenDocs {
		raw := []byte(doc)
		if got, want := fastTokens(t, raw), slowTokens(raw); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n fast %#v\n slow %#v", doc, got, want)
		}
	}
}

// FuzzTokens checks the same agreement on arbitrary valid documents, and that
// anything else takes the Decoder path.
func FuzzTokens(f *testing.F) {
	for _, doc := range tokenDocs {
		f.Add([]byte(doc))
	}
	f.Add([]byte(`{"a":tru}`))
	f.Add([]byte("{\"a\":\"\xff\"}"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || !utf8.Valid(raw) {
			if newDecoder(raw).dec == nil {
				t.Fatalf("invalid document %q took the fast path", raw)
			}
			return
		}
		if got, want := fastTokens(t, raw), slowTokens(raw); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n fast %#v\n slow %#v", raw, got, want)
		}
	})
}
