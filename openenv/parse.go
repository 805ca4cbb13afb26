package openenv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/seahaven/seahaven/env"
)

// The parsers here read untrusted JSON strictly: keys match exactly (not
// case-insensitively, as encoding/json's struct decoding would), unknown
// keys are refused, and every failure is reported in pydantic's shape with
// its location, so clients written against OpenEnv read them unchanged. A
// JSON null counts as a key left out.

// members decodes raw as a JSON object; ok is false when it is not one.
// raw is valid JSON: a message json.Valid accepted, or a value within one
// (every entry point validates a message once, whole, before it is
// parsed). It reads as json.Unmarshal into the map would (the last of
// repeated keys wins), without reflection; each value is raw's bytes of
// that value, sharing raw's memory.
func members(raw json.RawMessage) (m map[string]json.RawMessage, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	return validMembers(raw)
}

// validMembers is members for raw that json.Valid has accepted, trimmed
// and starting with '{'.
func validMembers(raw json.RawMessage) (m map[string]json.RawMessage, ok bool) {
	m = make(map[string]json.RawMessage, 4)
	i := skipSpace(raw, 1)
	if raw[i] == '}' {
		return m, true
	}
	for {
		end := stringEnd(raw, i)
		key, ok := unquotePlain(raw[i:end])
		if !ok {
			if err := json.Unmarshal(raw[i:end], &key); err != nil {
				return nil, false
			}
		}
		i = skipSpace(raw, skipSpace(raw, end)+1) // past the colon
		end = valueEnd(raw, i)
		m[key] = raw[i:end:end]
		i = skipSpace(raw, end)
		if raw[i] != ',' {
			return m, true // the closing brace
		}
		i = skipSpace(raw, i+1)
	}
}

// The scanners below read JSON that json.Valid has accepted.

// duplicateKey returns the location of the first key that an object in
// valid JSON raw names twice ("a" and "\u0061" are the same key), as a
// pydantic location: object keys and array indexes from the top, ending
// with the repeated key. json.Valid bounds the nesting, and so the
// recursion.
func duplicateKey(raw []byte) (loc []any, found bool) {
	i := skipSpace(raw, 0)
	if i == len(raw) {
		return nil, false
	}
	_, loc, found = scanDuplicates(raw, i)
	return loc, found
}

// smallObject is how many keys an object may have before scanDuplicates
// tracks them in a map rather than comparing each with the ones before.
const smallObject = 16

// scanDuplicates checks the value starting at b[i] and returns the index
// just past it, or the location of a repeated key.
func scanDuplicates(b []byte, i int) (end int, loc []any, found bool) {
	switch b[i] {
	case '{':
		var few [smallObject][]byte
		keys := few[:0]
		var many map[string]bool
		i = skipSpace(b, i+1)
		if b[i] == '}' {
			return i + 1, nil, false
		}
		for {
			kEnd := stringEnd(b, i)
			key := keyContent(b[i:kEnd])
			if many == nil {
				for _, k := range keys {
					if bytes.Equal(k, key) {
						return 0, []any{string(key)}, true
					}
				}
				if keys = append(keys, key); len(keys) == smallObject {
					many = make(map[string]bool, 2*smallObject)
					for _, k := range keys {
						many[string(k)] = true
					}
				}
			} else {
				if many[string(key)] {
					return 0, []any{string(key)}, true
				}
				many[string(key)] = true
			}
			i = skipSpace(b, skipSpace(b, kEnd)+1) // past the colon
			vEnd, sub, found := scanDuplicates(b, i)
			if found {
				return 0, append([]any{string(key)}, sub...), true
			}
			i = skipSpace(b, vEnd)
			if b[i] != ',' {
				return i + 1, nil, false // the closing brace
			}
			i = skipSpace(b, i+1)
		}
	case '[':
		i = skipSpace(b, i+1)
		if b[i] == ']' {
			return i + 1, nil, false
		}
		for n := 0; ; n++ {
			vEnd, sub, found := scanDuplicates(b, i)
			if found {
				return 0, append([]any{n}, sub...), true
			}
			i = skipSpace(b, vEnd)
			if b[i] != ',' {
				return i + 1, nil, false // the closing bracket
			}
			i = skipSpace(b, i+1)
		}
	}
	return valueEnd(b, i), nil, false
}

// keyContent returns the key the quoted key q names, as encoding/json
// decodes it: its bytes when it has no escape and is UTF-8, else its
// decoded form (invalid UTF-8 becomes U+FFFD).
func keyContent(q []byte) []byte {
	content := q[1 : len(q)-1]
	if plain(content) || (bytes.IndexByte(content, '\\') < 0 && utf8.Valid(content)) {
		return content
	}
	var s string
	if json.Unmarshal(q, &s) != nil { // valid JSON: cannot fail
		return content
	}
	return []byte(s)
}

// duplicateKeyError is the validation failure of a message, body or
// request that names a key twice in one object; prefix comes before loc.
func duplicateKeyError(prefix, loc []any) fieldError {
	key := loc[len(loc)-1]
	return fieldError{Type: "duplicate_key", Loc: at(prefix, loc...),
		Msg: fmt.Sprintf("Duplicate key %q: an object may name each key once", key), Input: mustEncode(key)}
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i].
func stringEnd(b []byte, i int) int {
	for i++; ; i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
}

// valueEnd returns the index just past the value starting at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}

// unquotePlain returns a quoted JSON string whose content is plain (see
// plain) as that content; ok is false for any other input.
func unquotePlain(quoted []byte) (string, bool) {
	if len(quoted) < 2 || quoted[0] != '"' || quoted[len(quoted)-1] != '"' || !plain(quoted[1:len(quoted)-1]) {
		return "", false
	}
	content := quoted[1 : len(quoted)-1]
	if s, ok := protocolWord(content); ok {
		return s, true
	}
	return string(content), true
}

// protocolWord returns b as a string without allocating one when b is a
// key or a word of the protocol that every message repeats.
func protocolWord(b []byte) (string, bool) {
	s, ok := protocolWords[string(b)] // a lookup that converts nothing
	return s, ok
}

// protocolWords maps each word protocolWord knows to itself.
var protocolWords = func() map[string]string {
	m := map[string]string{}
	for _, w := range []string{"type", "data", "step", "call_tool", "list_tools", "tool_name", "arguments",
		"reset", "state", "action", "timeout_s", "request_id", "jsonrpc", "method", "params", "id", "name", "mcp"} {
		m[w] = w
	}
	return m
}()

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// at returns a fresh location: prefix followed by more.
func at(prefix []any, more ...any) []any {
	loc := make([]any, 0, len(prefix)+len(more))
	return append(append(loc, prefix...), more...)
}

// isNull reports whether raw is absent or the JSON null.
func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// maxEchoDepth bounds the nesting of an input echoed in a validation error.
// A reply wraps the input a few levels deeper, and encoding/json refuses
// JSON nested more than 10000 levels, so echoing input nested that deep
// would leave the refusal itself unencodable.
const maxEchoDepth = 1000

// deepInput stands in for an input nested more than maxEchoDepth levels.
var deepInput = json.RawMessage(`"(input nested more than 1000 levels deep, not echoed)"`)

// inputOf returns raw for a fieldError's input, null when absent.
func inputOf(raw json.RawMessage) json.RawMessage {
	if raw = bytes.TrimSpace(raw); len(raw) == 0 {
		return json.RawMessage("null")
	}
	if nestingDepth(raw) > maxEchoDepth {
		return deepInput
	}
	return sanitize(raw)
}

// nestingDepth returns how deeply arrays and objects nest in valid JSON raw.
func nestingDepth(raw json.RawMessage) int {
	depth, most := 0, 0
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			most = max(most, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return most
}

// sanitize returns valid JSON raw as valid UTF-8, so that echoing a client's
// input never puts invalid UTF-8 in a text frame: invalid bytes become
// U+FFFD, as encoding/json decodes them.
func sanitize(raw json.RawMessage) json.RawMessage {
	if utf8.Valid(raw) {
		return raw
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return json.RawMessage("null")
	}
	b, err := encode(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

func extraForbidden(loc []any, raw json.RawMessage) fieldError {
	return fieldError{Type: "extra_forbidden", Loc: loc, Msg: "Extra inputs are not permitted", Input: inputOf(raw)}
}

func missing(loc []any, parent json.RawMessage) fieldError {
	return fieldError{Type: "missing", Loc: loc, Msg: "Field required", Input: inputOf(parent)}
}

// typeError reports a value of the wrong JSON type; kind is a pydantic type
// name such as "int_type".
func typeError(kind string, loc []any, raw json.RawMessage) fieldError {
	return fieldError{Type: kind, Loc: loc, Msg: typeMessages[kind], Input: inputOf(raw)}
}

// typeMessages are pydantic's messages for a value of the wrong type.
var typeMessages = map[string]string{
	"int_type":    "Input should be a valid integer",
	"string_type": "Input should be a valid string",
	"bool_type":   "Input should be a valid boolean",
	"dict_type":   "Input should be a valid dictionary",
	"list_type":   "Input should be a valid list",
	"float_type":  "Input should be a valid number",
	"scalar_type": "Input should be a valid string, number, boolean or null",
}

// asString decodes a JSON string.
func asString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	if s, ok := unquotePlain(raw); ok {
		return s, true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// asInt decodes a JSON integer literal that fits an int64.
func asInt(raw json.RawMessage) (int64, bool) {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	return n, err == nil
}

// isInteger reports whether raw is a JSON integer literal: digits, perhaps
// after a minus sign, without a fraction or an exponent.
func isInteger(raw json.RawMessage) bool {
	raw = bytes.TrimPrefix(bytes.TrimSpace(raw), []byte("-"))
	if len(raw) == 0 {
		return false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// asNumber decodes any JSON number.
func asNumber(raw json.RawMessage) (float64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false
	}
	var f float64
	return f, json.Unmarshal(raw, &f) == nil
}

// asBool decodes a JSON boolean.
func asBool(raw json.RawMessage) (bool, bool) {
	switch string(bytes.TrimSpace(raw)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// isObject reports whether raw, valid JSON as for members, is an object.
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// resetRequest is the parsed data of a reset. Nil pointers are keys left out.
type resetRequest struct {
	seed         *int64
	episodeID    *string
	fixture      *string
	now          *string
	clockMode    *string
	startup      map[string]any
	controlTools bool
	task         *string
	// loc is where the reset's data sits in its message ("data" on /ws,
	// "body" on POST /reset): the prefix of an error about one of its keys.
	loc []any
}

// resetKeys are the keys a reset's data may hold.
var resetKeys = map[string]bool{"seed": true, "episode_id": true, "fixture": true, "now": true,
	"clock_mode": true, "startup": true, "control_tools": true, "task": true}

// maxEpisodeID is the longest episode_id a reset accepts, as upstream.
const maxEpisodeID = 255

// parseReset reads the data of a reset (or the body of POST /reset). raw may
// be empty for "no data". loc prefixes every reported location.
func parseReset(raw json.RawMessage, loc []any) (resetRequest, []fieldError) {
	req := resetRequest{loc: loc}
	if len(bytes.TrimSpace(raw)) == 0 {
		return req, nil
	}
	m, ok := members(raw)
	if !ok {
		return req, []fieldError{typeError("dict_type", at(loc), raw)}
	}
	var errs []fieldError
	str := func(k string) *string {
		s, ok := asString(m[k])
		if !ok {
			errs = append(errs, typeError("string_type", at(loc, k), m[k]))
			return nil
		}
		return &s
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		if !resetKeys[k] {
			errs = append(errs, extraForbidden(at(loc, k), v))
			continue
		}
		if isNull(v) {
			continue
		}
		switch k {
		case "seed":
			n, ok := asInt(v)
			switch {
			case !ok:
				errs = append(errs, typeError("int_type", at(loc, k), v))
			case n < 0:
				errs = append(errs, fieldError{Type: "greater_than_equal", Loc: at(loc, k),
					Msg: "Input should be greater than or equal to 0", Input: inputOf(v)})
			default:
				req.seed = &n
			}
		case "episode_id":
			if s := str(k); s != nil {
				if len([]rune(*s)) > maxEpisodeID {
					errs = append(errs, fieldError{Type: "string_too_long", Loc: at(loc, k),
						Msg: "String should have at most 255 characters", Input: inputOf(v)})
				} else {
					req.episodeID = s
				}
			}
		case "fixture":
			req.fixture = str(k)
		case "now":
			if now := str(k); now != nil {
				if t, err := time.Parse(time.RFC3339Nano, *now); err != nil || !env.InClockRange(t) {
					errs = append(errs, fieldError{Type: "value_error", Loc: at(loc, k),
						Msg: "Value error, now must be an RFC 3339 time from " + env.MinTime + " to " + env.MaxTime, Input: inputOf(v)})
				} else {
					req.now = now
				}
			}
		case "task":
			req.task = str(k)
		case "clock_mode":
			s, ok := asString(v)
			if !ok || (s != env.ClockFrozen && s != env.ClockStep && s != env.ClockWall) {
				errs = append(errs, fieldError{Type: "literal_error", Loc: at(loc, k),
					Msg: "Input should be 'frozen', 'step' or 'wall'", Input: inputOf(v)})
			} else {
				req.clockMode = &s
			}
		case "startup":
			if !isObject(v) {
				errs = append(errs, typeError("dict_type", at(loc, k), v))
				continue
			}
			d := json.NewDecoder(bytes.NewReader(v))
			d.UseNumber()
			if err := d.Decode(&req.startup); err != nil {
				errs = append(errs, typeError("dict_type", at(loc, k), v))
			}
		case "control_tools":
			b, ok := asBool(v)
			if !ok {
				errs = append(errs, typeError("bool_type", at(loc, k), v))
			}
			req.controlTools = b
		}
	}
	return req, errs
}

// Action kinds of a step.
const (
	actionListTools = "list_tools"
	actionCallTool  = "call_tool"
)

// action is a parsed step action.
type action struct {
	kind     string          // actionListTools or actionCallTool
	toolName string          // for actionCallTool
	args     json.RawMessage // for actionCallTool; {} when not given
}

// actionKeys are the keys each kind of action may have.
var actionKeys = map[string]map[string]bool{
	actionListTools: {"type": true, "metadata": true},
	actionCallTool:  {"type": true, "metadata": true, "tool_name": true, "arguments": true},
}

// parseAction reads a step's action. loc prefixes every reported location.
func parseAction(raw json.RawMessage, loc []any) (action, []fieldError) {
	m, ok := members(raw)
	if !ok {
		return action{}, []fieldError{typeError("dict_type", at(loc), raw)}
	}
	a := action{kind: actionCallTool}
	if t, present := m["type"]; present {
		s, ok := asString(t)
		if !ok || (s != actionListTools && s != actionCallTool) {
			return action{}, []fieldError{{Type: "literal_error", Loc: at(loc, "type"),
				Msg: "Input should be 'list_tools' or 'call_tool'", Input: inputOf(t)}}
		}
		a.kind = s
	}
	allowed := actionKeys[a.kind]
	var errs []fieldError
	for _, k := range sortedKeys(m) {
		v := m[k]
		if !allowed[k] {
			errs = append(errs, extraForbidden(at(loc, k), v))
			continue
		}
		switch k {
		case "metadata":
			if !isObject(v) {
				errs = append(errs, typeError("dict_type", at(loc, k), v))
			}
		case "tool_name":
			s, ok := asString(v)
			if !ok {
				errs = append(errs, typeError("string_type", at(loc, k), v))
			}
			a.toolName = s
		case "arguments":
			if !isObject(v) {
				errs = append(errs, typeError("dict_type", at(loc, k), v))
			}
			a.args = bytes.TrimSpace(v)
		}
	}
	if _, present := m["tool_name"]; a.kind == actionCallTool && !present {
		errs = append(errs, missing(at(loc, "tool_name"), raw))
	}
	if len(a.args) == 0 {
		a.args = json.RawMessage(`{}`)
	}
	return a, errs
}

// inspectRequest is a parsed inspect query.
type inspectRequest struct {
	sql    string
	params []any
}

// parseInspect reads an inspect query. loc prefixes every reported location.
func parseInspect(raw json.RawMessage, loc []any) (inspectRequest, []fieldError) {
	var req inspectRequest
	m, ok := members(raw)
	if !ok {
		return req, []fieldError{typeError("dict_type", at(loc), raw)}
	}
	var errs []fieldError
	for _, k := range sortedKeys(m) {
		v := m[k]
		switch k {
		case "sql":
			s, ok := asString(v)
			switch {
			case !ok:
				errs = append(errs, typeError("string_type", at(loc, k), v))
			case s == "":
				errs = append(errs, fieldError{Type: "string_too_short", Loc: at(loc, k),
					Msg: "String should have at least 1 character", Input: inputOf(v)})
			}
			req.sql = s
		case "params":
			if isNull(v) {
				continue
			}
			var list []json.RawMessage
			if t := bytes.TrimSpace(v); len(t) == 0 || t[0] != '[' || json.Unmarshal(t, &list) != nil {
				errs = append(errs, typeError("list_type", at(loc, k), v))
				continue
			}
			req.params = make([]any, len(list))
			for i, p := range list {
				if isInteger(p) {
					if _, ok := asInt(p); !ok {
						// Read as a float it would be rounded: the query
						// would silently compare with another number.
						errs = append(errs, fieldError{Type: "int_parsing_size", Loc: at(loc, k, i),
							Msg: "Integer does not fit in 64 bits (-9223372036854775808 to 9223372036854775807); send it as a string, or as a float to round it", Input: inputOf(p)})
						continue
					}
				}
				val, ok := scalar(p)
				if !ok {
					errs = append(errs, typeError("scalar_type", at(loc, k, i), p))
				}
				req.params[i] = val
			}
		default:
			errs = append(errs, extraForbidden(at(loc, k), v))
		}
	}
	if _, present := m["sql"]; !present {
		errs = append(errs, missing(at(loc, "sql"), raw))
	}
	return req, errs
}

// scalar converts a JSON scalar to a SQL parameter: string, int64 (for an
// integer literal that fits), float64, bool or nil.
func scalar(raw json.RawMessage) (any, bool) {
	if isNull(raw) {
		return nil, true
	}
	if s, ok := asString(raw); ok {
		return s, true
	}
	if b, ok := asBool(raw); ok {
		return b, true
	}
	if n, ok := asInt(raw); ok {
		return n, true
	}
	if f, ok := asNumber(raw); ok {
		return f, true
	}
	return nil, false
}

// stepRequest is the parsed body of POST /step.
type stepRequest struct {
	action  action
	timeout float64 // timeout_s, 0 when not given
}

// parseStepRequest reads the body of POST /step. Action failures are located
// relative to the action, as upstream reports them.
func parseStepRequest(raw json.RawMessage) (stepRequest, []fieldError) {
	var req stepRequest
	m, ok := members(raw)
	if !ok {
		return req, []fieldError{typeError("dict_type", []any{"body"}, raw)}
	}
	var errs []fieldError
	for _, k := range sortedKeys(m) {
		v := m[k]
		switch k {
		case "action":
			var aerrs []fieldError
			req.action, aerrs = parseAction(v, nil)
			errs = append(errs, aerrs...)
		case "timeout_s":
			if isNull(v) {
				continue
			}
			f, ok := asNumber(v)
			switch {
			case !ok:
				errs = append(errs, typeError("float_type", at([]any{"body"}, k), v))
			case f <= 0:
				errs = append(errs, fieldError{Type: "greater_than", Loc: at([]any{"body"}, k),
					Msg: "Input should be greater than 0", Input: inputOf(v)})
			case !(f <= MaxStepTimeoutS): // NaN too
				errs = append(errs, fieldError{Type: "less_than_equal", Loc: at([]any{"body"}, k),
					Msg: fmt.Sprintf("Input should be less than or equal to %d", MaxStepTimeoutS), Input: inputOf(v)})
			default:
				req.timeout = f
			}
		case "request_id":
			if isNull(v) {
				continue
			}
			s, ok := asString(v)
			switch {
			case !ok:
				errs = append(errs, typeError("string_type", at([]any{"body"}, k), v))
			case len([]rune(s)) > 255:
				errs = append(errs, fieldError{Type: "string_too_long", Loc: at([]any{"body"}, k),
					Msg: "String should have at most 255 characters", Input: inputOf(v)})
			}
		default:
			errs = append(errs, extraForbidden(at([]any{"body"}, k), v))
		}
	}
	if _, present := m["action"]; !present {
		errs = append(errs, missing([]any{"body", "action"}, raw))
	}
	return req, errs
}
