// Package wirejson is the JSON encoding of what the server sends: replies,
// and the tool results in them. A tool result it cannot encode fails its
// call (env.WithResultCheck), with its error in the message; an episode
// called in process, and a replay of the call, check the result with the
// same encoding, so it fails alike.
package wirejson

import (
	"cmp"
	"encoding/json"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// opts make json v2 write what encoding/json writes, without its HTML
// escaping: map keys sorted, nil slices and maps as null, U+2028 and
// U+2029 escaped, invalid UTF-8 as U+FFFD, a time.Duration as its integer
// nanoseconds, an [N]byte as an array of numbers and a []~byte as base64
// (as a tool's output schema describes them), omitempty leaving out
// false, 0, a nil pointer or interface and an empty array, slice, map or
// string, two fields of one name in a struct left out rather than an
// error, and a json.Number as its number (writeNumber). Unlike encoding/json it does not
// compact raw JSON again, which for a tool's result repeated in a reply
// was most of the cost of writing it.
var opts = jsonv2.JoinOptions(
	jsonv2.Deterministic(true),
	jsonv2.FormatNilSliceAsNull(true),
	jsonv2.FormatNilMapAsNull(true),
	jsontext.EscapeForJS(true),
	jsontext.AllowInvalidUTF8(true),
	jsonv1.FormatDurationAsNano(true),
	jsonv1.FormatByteArrayAsArray(true),
	jsonv1.FormatBytesWithLegacySemantics(true),
	jsonv1.OmitEmptyWithLegacySemantics(true),
	jsonv1.ReportErrorsWithLegacySemantics(true),
	jsonv2.WithMarshalers(jsonv2.MarshalToFunc(writeNumber)),
)

// writeNumber writes a json.Number as encoding/json does: its literal as a
// number ("" as 0), or an error when it is no JSON number.
func writeNumber(enc *jsontext.Encoder, n json.Number) error {
	lit := jsontext.Value(cmp.Or(string(n), "0"))
	if !lit.IsValid() || lit.Kind() != '0' {
		return fmt.Errorf("json: invalid number literal %q", string(n))
	}
	return enc.WriteValue(lit)
}

// Marshal encodes v compactly without escaping <, > and &. It is safe for
// concurrent use.
func Marshal(v any) ([]byte, error) { return jsonv2.Marshal(v, opts) }
