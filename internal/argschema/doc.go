// Package argschema derives a tool's input JSON Schema from its Go argument
// struct and decodes untrusted JSON arguments strictly against that struct.
//
// A world author declares a tool's arguments as a struct:
//
//	type ChargeArgs struct {
//		Amount   int64   `json:"amount" doc:"Amount in cents." min:"1"`
//		Currency string  `json:"currency" enum:"usd,eur" default:"usd"`
//		Memo     *string `json:"memo" maxlen:"140"`
//	}
//
// [Schema] turns that type into the input schema a tool listing shows, and
// [Decode] turns an agent's raw arguments into a ChargeArgs, refusing anything
// the schema does not allow with an [*Error] that names the offending field.
//
// [Schema] derives the schema with github.com/google/jsonschema-go and adapts
// it to the tags below; [Decode] checks the raw arguments against that schema,
// then decodes them with json v2 (github.com/go-json-experiment/json). So the
// schema an agent reads is the one its arguments are held to.
//
// # Fields
//
// Exported fields are named by their json tag, or by the Go field name when
// the tag gives none; `json:"-"` fields are skipped, and embedded structs
// flatten as encoding/json and json v2 flatten them, so a decoded value
// re-encodes with encoding/json under the same names. A field is required
// unless it is a pointer, has the omitempty or omitzero option, or has a
// default tag; other json tag options, embedded fields that are not
// untagged structs, a json tag json v2 refuses in a struct however
// deep ([TagError]), and a struct however deep with fields but no exported
// one and no json tag (json v2 would refuse every argument holding one),
// are refused. Further tags:
//
//   - doc:"text" is the field's "description".
//   - default:"value" is applied when the field is absent and listed as
//     "default". The value is the raw text for string, time.Time (RFC 3339)
//     and []byte (base64) fields, a JSON literal for numbers and booleans,
//     and a JSON document for every other type (json.RawMessage and any
//     included).
//   - enum:"a,b,c" lists the allowed values of a string or number field;
//     surrounding spaces are trimmed, so a value cannot contain a comma.
//   - min:"0" and max:"100" bound a number field (inclusive). Bounds are
//     JSON numbers: an integer field's are checked and published as the
//     integers written, past 2^53 too (max:"9223372036854775807" publishes
//     "maximum":9223372036854775807); a float or json.Number field's, and
//     its enum values, are compared as float64, the argument as written
//     (a float32 field's too, before it is rounded to a float32).
//   - maxlen:"N" bounds a string field to N characters (Unicode code points).
//
// Tags on a pointer field apply to the value it points to.
//
// # Types
//
//	string, named string types   {"type":"string"}
//	bool                         {"type":"boolean"}
//	int, int8 … uint64           {"type":"integer"}, range of the kind enforced; the
//	                             kinds of 32 bits or fewer publish it as "minimum" and
//	                             "maximum", uint and uint64 a "minimum" of 0 (min, max
//	                             and enum tags narrow it)
//	float32, float64             {"type":"number"}
//	json.Number                  {"type":"number"}, any number, kept as written
//	time.Time                    {"type":"string","format":"date-time"}, RFC 3339, decoded in UTC
//	                             (years 0000 to 9999 in UTC; a leap second, 23:59:60, is refused)
//	[]byte                       {"type":"string","contentEncoding":"base64"}
//	[]T                          {"type":"array","items":T}
//	map[string]T                 {"type":"object","additionalProperties":T}
//	struct                       {"type":"object","properties":…,"required":…,"additionalProperties":false}
//	*T                           T with "null" added to its type (and enum)
//	json.RawMessage, any         true (any JSON value)
//
// An integer may be written with a fraction or an exponent when its value is
// integral (2.0, 1e3) and the exponent fits in an int64, as JSON Schema
// validators need. An `any` value decodes as encoding/json decodes it
// with UseNumber: map[string]any, []any, string, bool, json.Number or nil. A
// json.RawMessage holds the compact form of the value. Channels, functions,
// complex numbers, arrays, maps with non-string keys, non-empty interfaces,
// recursive types and types with their own JSON or text encoding (other than
// time.Time and json.RawMessage) are refused by Schema with an error naming
// the type.
//
// # Validation
//
// Decode refuses, with an [*Error]: input larger than [MaxInputSize];
// malformed JSON; anything but an object at the top level (empty input and
// null mean {}); unknown fields; duplicate keys; missing required fields;
// values of the wrong JSON type; integers that are not integral or do not fit
// the field's kind; numbers that do not fit a float32 or float64; enum,
// minimum, maximum and maxLength violations; invalid UTF-8 (an escaped lone
// surrogate decodes to U+FFFD, as in encoding/json); and nesting deeper than [MaxDepth] levels, which is
// refused before reading further.
//
// # Concurrency
//
// Schema and Decode are safe for concurrent use. The analysis of a type is
// done once and cached for the life of the process.
package argschema
