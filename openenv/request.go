package openenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/rfc3339"
	"github.com/seahaven/seahaven/internal/runecut"
)

// This file and reply.go declare the messages of the protocol as Go types.
// Here is what a client sends, read by decodeObject (decode.go) into the
// types below, whose own UnmarshalJSON methods hold the protocol's rules.

// resetData is the data of a reset: a /ws reset message's data, the body of
// POST /reset, the params of openenv/session/create, the query of a /mcp
// URL. A nil field is a key left out.
type resetData struct {
	Seed         *seed        `json:"seed"`
	EpisodeID    *label       `json:"episode_id"`
	Fixture      *string      `json:"fixture"`
	Now          *clockTime   `json:"now"`
	ClockMode    *clockMode   `json:"clock_mode"`
	Startup      *startupData `json:"startup"`
	ControlTools *bool        `json:"control_tools"`
	Task         *string      `json:"task"`
	// Checkpoint restores a checkpoint instead of opening an instance;
	// Replaces names the attempt the restore supersedes (fences).
	Checkpoint *string `json:"checkpoint"`
	Replaces   *string `json:"replaces"`

	// loc is where the reset's data sits in its message ("data" on /ws,
	// "body" on POST /reset): the prefix of an error about one of its keys.
	loc []any
}

// parseReset reads the data of a reset; raw may be empty for "no data".
// loc prefixes every reported location.
func parseReset(raw []byte, loc []any) (resetData, []fieldError) {
	req := resetData{loc: loc}
	if len(bytes.TrimSpace(raw)) == 0 {
		return req, nil
	}
	return req, decodeObject(raw, loc, &req)
}

// queryLoc is the location of the reset data of a /mcp URL's query: the
// prefix of an error about one of its keys.
var queryLoc = []any{"query"}

// resetFromQuery reads a standard MCP client's episode set-up from the
// /mcp URL's query, which takes the keys of reset data: fixture, seed,
// task, now, clock_mode, episode_id, control_tools (true or false) and
// startup (a JSON object). Unknown keys and repeated keys are refused, as
// in a reset.
func resetFromQuery(q url.Values) (resetData, *protoError) {
	var members []string
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if len(q[k]) > 1 {
			return resetData{}, newError(codeValidation, "The /mcp URL names %s %d times; name each reset key once", runecut.Echo(k), len(q[k]))
		}
		v := q[k][0]
		kq, _ := json.Marshal(k)
		vq, _ := json.Marshal(v)
		switch k {
		case "seed", "control_tools", "startup": // JSON values, as written
			if perr := checkJSON([]byte(v), nil); perr != nil && perr.code == codeInvalidJSON {
				return resetData{}, newError(codeValidation, "The /mcp URL's %s is not a JSON value (%s): write it as JSON, percent-encoded", k, strings.TrimPrefix(perr.message, "Invalid JSON: "))
			}
			vq = []byte(v)
		}
		members = append(members, string(kq)+":"+string(vq))
	}
	data := []byte("{" + strings.Join(members, ",") + "}")
	if perr := checkJSON(data, queryLoc); perr != nil {
		// A key named twice inside a value, or values nested past the
		// decoder's depth once they are one object.
		if perr.code == codeInvalidJSON {
			return resetData{}, newError(codeValidation, "The /mcp URL's reset data is not valid JSON as one object (%s)", strings.TrimPrefix(perr.message, "Invalid JSON: "))
		}
		return resetData{}, perr
	}
	req, errs := parseReset(data, queryLoc)
	if len(errs) > 0 {
		return resetData{}, invalid(errs)
	}
	return req, nil
}

// Action kinds of a step.
const (
	actionListTools = "list_tools"
	actionCallTool  = "call_tool"
)

// action is a step's action: a list_tools action has only the type and
// metadata; a call_tool action (the type when none is given) names a tool
// and its arguments ({} when not given).
type action struct {
	Type      actionType `json:"type"`
	Metadata  jsonObject `json:"metadata"`
	ToolName  string     `json:"tool_name"`
	Arguments jsonObject `json:"arguments"`
	// RequestID makes the step idempotent within the episode: a retry
	// with the same id gets the recorded reply (see session.step).
	RequestID *label `json:"request_id"`

	idLoc []any // where RequestID was read, for a refusal
}

// key identifies what the action does, for comparing a retry under the
// same request_id with the step that used it: its type, tool and
// arguments in canonical form (RFC 8785), so a client that re-encodes them
// with another key order or spacing still matches.
func (a action) key() string {
	args := jsontext.Value(bytes.Clone(a.Arguments))
	if args.Canonicalize() != nil {
		args = jsontext.Value(a.Arguments)
	}
	return string(a.Type) + "\x00" + a.ToolName + "\x00" + string(args)
}

// listToolsAction is the shape of a list_tools action.
type listToolsAction struct {
	Type      actionType `json:"type"`
	Metadata  jsonObject `json:"metadata"`
	RequestID *label     `json:"request_id"`
}

// parseAction reads a step's action. loc prefixes every reported location.
func parseAction(raw []byte, loc []any) (action, []fieldError) {
	m, ok := members(raw)
	if !ok {
		return action{}, []fieldError{typeError("dict_type", at(loc), raw)}
	}
	a := action{Type: actionCallTool, Arguments: jsonObject(`{}`), idLoc: at(loc, "request_id")}
	if t, present := m["type"]; present {
		if errs := decodeMembers(map[string]jsontext.Value{"type": t}, loc, &a); len(errs) > 0 {
			return action{}, errs
		}
	}
	if a.Type == actionListTools {
		var l listToolsAction
		errs := decodeMembers(m, loc, &l)
		return action{Type: actionListTools, RequestID: l.RequestID, idLoc: a.idLoc}, errs
	}
	return a, decodeRequired(m, raw, loc, &a, "tool_name")
}

// callToolStep is a /ws step message whose action calls a tool, read in
// one pass: the common message, and the one a training loop sends most.
// readCallToolStep takes it only when the member-by-member reading
// (dispatch, parseAction) would read the same action without a fault.
type callToolStep struct {
	Type string `json:"type"`
	Data *struct {
		action
		ToolName *string `json:"tool_name"` // nil when missing, which action's own field cannot tell
	} `json:"data"`
}

// readCallToolStep reads raw as a /ws step that calls a tool; ok is false
// for any other message, and for any it cannot read in one pass: a JSON
// null anywhere (each field has its own null rule), a missing tool_name,
// an unknown or repeated key, a value of the wrong type or one a field's
// rule refuses, JSON that does not parse. Those go the member-by-member
// way, which says what is wrong in pydantic's shape. A message that does
// not hold "step" as written is not read at all: a reset or an inspect
// costs no read of this pass.
func readCallToolStep(raw []byte) (a action, ok bool) {
	var m callToolStep
	if !bytes.Contains(raw, []byte(`"step"`)) || bytes.Contains(raw, []byte("null")) || jsonv2.Unmarshal(raw, &m, strictOpts) != nil ||
		m.Type != "step" || m.Data == nil || m.Data.ToolName == nil || m.Data.Type == actionListTools {
		return action{}, false
	}
	a = m.Data.action
	a.Type, a.ToolName, a.idLoc = actionCallTool, *m.Data.ToolName, []any{"data", "request_id"}
	if a.Arguments == nil {
		a.Arguments = jsonObject(`{}`)
	}
	return a, true
}

// inspectData is an inspect query: one read-only statement and its
// parameters, read one by one into args to report each that fails.
type inspectData struct {
	SQL    nonEmpty       `json:"sql"`
	Params *inspectParams `json:"params"`

	args []any // the parameters as SQL values
}

// inspectParams are an inspect query's parameters, as JSON.
type inspectParams []jsontext.Value

// maxInspectParams is how many parameters a statement may have in SQLite
// (its SQLITE_MAX_VARIABLE_NUMBER): more can bind none.
const maxInspectParams = 32766

var tooManyParams = &problem{typ: "too_long",
	msg: fmt.Sprintf("List should have at most %d items (SQLite binds at most %d parameters to a statement), not more", maxInspectParams, maxInspectParams)}

func (p *inspectParams) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '[' {
		return &problem{"list_type", "Input should be a valid list"}
	}
	if countValues(b, maxInspectParams+1) > maxInspectParams+1 { // the list itself, and its items
		return tooManyParams
	}
	return jsonv2.Unmarshal(b, (*[]jsontext.Value)(p), readOpts)
}

// countValues counts the JSON values in raw, valid JSON, raw itself and
// every one within it, up to past limit.
func countValues(raw []byte, limit int) int {
	d := jsontext.NewDecoder(bytes.NewReader(raw), looseOpts)
	n := 0
	for n <= limit {
		tok, err := d.ReadToken()
		if err != nil {
			break
		}
		if k := tok.Kind(); k != ']' && k != '}' {
			n++
		}
	}
	return n
}

// parseInspect reads an inspect query. loc prefixes every reported location.
func parseInspect(raw []byte, loc []any) (inspectData, []fieldError) {
	var req inspectData
	errs := decodeObject(raw, loc, &req, "sql")
	if req.Params == nil {
		return req, errs
	}
	req.args = make([]any, len(*req.Params))
	for i, p := range *req.Params {
		var err error
		if req.args[i], err = inspectArg(p); err != nil {
			fe := typeError("scalar_type", at(loc, "params", i), p)
			if pr, ok := err.(*problem); ok {
				fe.Type, fe.Msg = pr.typ, pr.msg
			}
			errs = append(errs, fe)
		}
	}
	return req, errs
}

// stepBody is the body of POST /step; action is its action, read, with
// the body's request_id.
type stepBody struct {
	Action    jsontext.Value `json:"action"`
	TimeoutS  *timeoutS      `json:"timeout_s"`
	RequestID *label         `json:"request_id"`

	action action
}

// parseStepBody reads the body of POST /step, at loc. Failures inside the
// action are located relative to the action, as upstream reports them; an
// action that is not an object is at loc plus "action".
func parseStepBody(raw []byte, loc []any) (stepBody, []fieldError) {
	var body stepBody
	errs := decodeObject(raw, loc, &body, "action")
	switch {
	case body.Action == nil:
	case body.Action.Kind() != '{': // the body's own field, at its place in the body
		errs = append([]fieldError{typeError("dict_type", at(loc, "action"), body.Action)}, errs...)
	default:
		var aerrs []fieldError
		body.action, aerrs = parseAction(body.Action, nil)
		errs = append(aerrs, errs...)
	}
	if body.RequestID != nil {
		if in := body.action.RequestID; in != nil && *in != *body.RequestID {
			errs = append(errs, fieldError{Type: "value_error", Loc: at(loc, "request_id"), Input: mustEncode(string(*body.RequestID)),
				Msg: fmt.Sprintf("Value error, the body's request_id and its action's (%q) differ: give it once", runecut.Echo(string(*in)))})
		}
		body.action.RequestID, body.action.idLoc = body.RequestID, at(loc, "request_id")
	}
	return body, errs
}

// rpcRequest is a JSON-RPC 2.0 request, or a notification when it has no
// id. Params are read by each method.
type rpcRequest struct {
	JSONRPC rpcVersion `json:"jsonrpc"`
	ID      rpcID      `json:"id"`
	Method  string     `json:"method"`
	Params  jsonObject `json:"params"`
}

// rpcVersion is a request's jsonrpc: "2.0".
type rpcVersion string

func (v *rpcVersion) UnmarshalJSON(b []byte) error {
	if string(b) != `"2.0"` {
		return &problem{"literal_error", "Input should be '2.0'"}
	}
	*v = "2.0"
	return nil
}

// rpcID is a request's id: a string, an integer or null, kept as its JSON
// (valid UTF-8) to echo in the response.
type rpcID json.RawMessage

func (id *rpcID) UnmarshalJSON(b []byte) error {
	switch jsontext.Value(b).Kind() {
	case 'n', '"':
	case '0':
		if integerLiteral(b) {
			break
		}
		fallthrough
	default:
		return &problem{"type_error", "Input should be a valid string or integer"}
	}
	*id = rpcID(inputOf(b))
	return nil
}

// The types below read one value each under a rule of the protocol. A value
// of the wrong JSON type fails with a plain error, which decodeMembers
// reports as the type error of the type's kind; one that breaks the rule
// fails with a *problem.

// seed is a reset's seed: an integer from 0. As in pydantic, a number
// with a zero fraction (7.0, 1e3) is that integer.
type seed int64

func (s *seed) UnmarshalJSON(b []byte) error {
	var n int64
	if err := jsonv2.Unmarshal(b, &n); err != nil {
		var f float64
		if jsonv2.Unmarshal(b, &f) != nil || integerLiteral(b) || math.Abs(f) >= 1<<63 {
			return err
		}
		if f != math.Trunc(f) {
			return &problem{"int_from_float", "Input should be a valid integer, got a number with a fractional part"}
		}
		n = int64(f)
	}
	if n < 0 {
		return &problem{"greater_than_equal", "Input should be greater than or equal to 0"}
	}
	*s = seed(n)
	return nil
}

// maxLabel is the most characters of an episode_id or request_id, as
// upstream.
const maxLabel = 255

// label is an episode_id or a request_id: at most 255 characters.
type label string

func (l *label) UnmarshalJSON(b []byte) error {
	var s string
	if err := jsonv2.Unmarshal(b, &s, readOpts); err != nil {
		return err
	}
	if len([]rune(s)) > maxLabel {
		return &problem{"string_too_long", fmt.Sprintf("String should have at most %d characters", maxLabel)}
	}
	*l = label(s)
	return nil
}

// clockTime is a reset's now: an RFC 3339 time within the clock's range.
type clockTime string

func (c *clockTime) UnmarshalJSON(b []byte) error {
	var s string
	if err := jsonv2.Unmarshal(b, &s, readOpts); err != nil {
		return err
	}
	if t, err := rfc3339.Parse(s); err != nil || !env.InClockRange(t) {
		return &problem{"value_error", "Value error, now must be an RFC 3339 time from " + env.MinTime + " to " + env.MaxTime}
	}
	*c = clockTime(s)
	return nil
}

// clockMode is a reset's clock_mode.
type clockMode string

func (c *clockMode) UnmarshalJSON(b []byte) error {
	var s string
	if jsonv2.Unmarshal(b, &s) != nil || (s != env.ClockFrozen && s != env.ClockStep && s != env.ClockWall) {
		return &problem{"literal_error", "Input should be 'frozen', 'step' or 'wall'"}
	}
	*c = clockMode(s)
	return nil
}

// actionType is an action's type.
type actionType string

func (a *actionType) UnmarshalJSON(b []byte) error {
	var s string
	if jsonv2.Unmarshal(b, &s) != nil || (s != actionListTools && s != actionCallTool) {
		return &problem{"literal_error", "Input should be 'list_tools' or 'call_tool'"}
	}
	*a = actionType(s)
	return nil
}

// nonEmpty is a string of at least one character.
type nonEmpty string

func (n *nonEmpty) UnmarshalJSON(b []byte) error {
	if b[0] == 'n' {
		return errors.New("null")
	}
	var s string
	if err := jsonv2.Unmarshal(b, &s, readOpts); err != nil {
		return err
	}
	if s == "" {
		return &problem{"string_too_short", "String should have at least 1 character"}
	}
	*n = nonEmpty(s)
	return nil
}

// timeoutS is POST /step's timeout_s: seconds, more than 0 and at most
// MaxStepTimeoutS.
type timeoutS float64

func (t *timeoutS) UnmarshalJSON(b []byte) error {
	var f float64
	if err := jsonv2.Unmarshal(b, &f); err != nil {
		return err
	}
	switch {
	case f <= 0:
		return &problem{"greater_than", "Input should be greater than 0"}
	case f > MaxStepTimeoutS:
		return &problem{"less_than_equal", fmt.Sprintf("Input should be less than or equal to %d", MaxStepTimeoutS)}
	}
	*t = timeoutS(f)
	return nil
}

// notObject is the failure of a value that must be an object: its Go
// types (a byte slice, a map) would name another pydantic type.
var notObject = &problem{"dict_type", "Input should be a valid dictionary"}

// jsonObject is a JSON object kept as its bytes.
type jsonObject json.RawMessage

func (o *jsonObject) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '{' {
		return notObject
	}
	*o = append((*o)[:0], b...)
	return nil
}

// startupData is a reset's startup values, numbers kept as json.Number.
type startupData map[string]any

// maxStartupValues is how many JSON values (each key, each value, and
// each item within one) a reset's startup keywords may hold: they are
// read into Go values whole, ten or more times their size.
const maxStartupValues = 100_000

var tooManyStartupValues = &problem{typ: "too_long",
	msg: fmt.Sprintf("Startup keywords should hold at most %d JSON values (keys, values and the items within them), not more", maxStartupValues)}

func (s *startupData) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '{' {
		return notObject
	}
	if countValues(b, maxStartupValues+1)-1 > maxStartupValues { // not the object itself
		return tooManyStartupValues
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode((*map[string]any)(s))
}

// inspectArg reads an inspect parameter, a JSON scalar, as a SQL value:
// string, int64 (an integer literal, which must fit), float64 (±Inf for
// a number past the float range, such as 1e999), bool or nil.
func inspectArg(b []byte) (any, error) {
	switch b[0] {
	case '"':
		var s string
		err := jsonv2.Unmarshal(b, &s, readOpts)
		return s, err
	case 't', 'f':
		return b[0] == 't', nil
	case 'n':
		return nil, nil
	case '{', '[':
		return nil, errors.New("not a scalar")
	}
	if !integerLiteral(b) {
		var f float64
		if err := jsonv2.Unmarshal(b, &f); err != nil {
			// A number past the largest float is the infinity of its
			// sign, as a reply writes one (1e999) and as readers that
			// hold numbers as doubles read it.
			if inf, _ := strconv.ParseFloat(string(b), 64); math.IsInf(inf, 0) {
				return inf, nil
			}
			return nil, err
		}
		return f, nil
	}
	var n int64
	if jsonv2.Unmarshal(b, &n) != nil {
		// Read as a float it would be rounded: the query would silently
		// compare with another number.
		return nil, &problem{"int_parsing_size", "Integer does not fit in 64 bits (-9223372036854775808 to 9223372036854775807); send it as a string, or as a float to round it"}
	}
	return n, nil
}

// integerLiteral reports whether b, a JSON number, is written without a
// fraction or an exponent.
func integerLiteral(b []byte) bool { return !bytes.ContainsAny(b, ".eE") }
