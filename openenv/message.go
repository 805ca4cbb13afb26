package openenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/seahaven/seahaven/env"
)

// This file declares the messages of the protocol as Go types: what a
// client sends (read by decodeObject, see decode.go) and what the server
// replies (written by encode). The field order of a reply type is the key
// order on the wire, which is OpenEnv's.

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
}

// listToolsAction is the shape of a list_tools action.
type listToolsAction struct {
	Type     actionType `json:"type"`
	Metadata jsonObject `json:"metadata"`
}

// parseAction reads a step's action. loc prefixes every reported location.
func parseAction(raw []byte, loc []any) (action, []fieldError) {
	m, ok := members(raw)
	if !ok {
		return action{}, []fieldError{typeError("dict_type", at(loc), raw)}
	}
	a := action{Type: actionCallTool, Arguments: jsonObject(`{}`)}
	if t, present := m["type"]; present {
		if errs := decodeMembers(map[string]jsontext.Value{"type": t}, loc, &a); len(errs) > 0 {
			return action{}, errs
		}
	}
	if a.Type == actionListTools {
		var l listToolsAction
		errs := decodeMembers(m, loc, &l)
		return action{Type: actionListTools}, errs
	}
	return a, decodeRequired(m, raw, loc, &a, "tool_name")
}

// inspectData is an inspect query: one read-only statement and its
// parameters.
type inspectData struct {
	SQL    nonEmpty     `json:"sql"`
	Params []inspectArg `json:"params"`
}

// parseInspect reads an inspect query. loc prefixes every reported location.
func parseInspect(raw []byte, loc []any) (inspectData, []fieldError) {
	var req inspectData
	m, ok := members(raw)
	if !ok {
		return req, []fieldError{typeError("dict_type", at(loc), raw)}
	}
	var params []jsontext.Value
	if p := m["params"]; p.Kind() == '[' || p.Kind() == 'n' {
		// Each parameter is read on its own, to report each that fails.
		delete(m, "params")
		if err := jsonv2.Unmarshal(p, &params, readOpts); err != nil {
			return req, []fieldError{typeError("list_type", at(loc, "params"), p)}
		}
	}
	errs := decodeMembers(m, loc, &req)
	if _, present := m["sql"]; !present {
		errs = append(errs, missing(at(loc, "sql"), raw))
	}
	if params != nil {
		req.Params = make([]inspectArg, len(params))
	}
	for i, p := range params {
		if err := req.Params[i].UnmarshalJSON(p); err != nil {
			fe := typeError("scalar_type", at(loc, "params", i), p)
			if pr, ok := err.(*problem); ok {
				fe.Type, fe.Msg = pr.typ, pr.msg
			}
			errs = append(errs, fe)
		}
	}
	return req, errs
}

// stepBody is the body of POST /step.
type stepBody struct {
	Action    jsontext.Value `json:"action"`
	TimeoutS  *timeoutS      `json:"timeout_s"`
	RequestID *label         `json:"request_id"`
}

// parseStepBody reads the body of POST /step. Action failures are located
// relative to the action, as upstream reports them.
func parseStepBody(raw []byte) (action, float64, []fieldError) {
	var body stepBody
	errs := decodeObject(raw, []any{"body"}, &body, "action")
	var a action
	if body.Action != nil {
		var aerrs []fieldError
		a, aerrs = parseAction(body.Action, nil)
		errs = append(aerrs, errs...)
	}
	var timeout float64
	if body.TimeoutS != nil {
		timeout = float64(*body.TimeoutS)
	}
	return a, timeout, errs
}

// The types below read one value each under a rule of the protocol. A value
// of the wrong JSON type fails with a plain error, which decodeMembers
// reports as the type error of the type's kind; one that breaks the rule
// fails with a *problem.

// seed is a reset's seed: an integer from 0.
type seed int64

func (s *seed) UnmarshalJSON(b []byte) error {
	var n int64
	if err := jsonv2.Unmarshal(b, &n); err != nil {
		return err
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
	if t, err := time.Parse(time.RFC3339Nano, s); err != nil || !env.InClockRange(t) {
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

// jsonObject is a JSON object kept as its bytes.
type jsonObject json.RawMessage

func (o *jsonObject) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '{' {
		return errors.New("not an object")
	}
	*o = append((*o)[:0], b...)
	return nil
}

// startupData is a reset's startup values, numbers kept as json.Number.
type startupData map[string]any

func (s *startupData) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '{' {
		return errors.New("not an object")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode((*map[string]any)(s))
}

// inspectArg is an inspect parameter: a JSON scalar read as a SQL value:
// string, int64 (an integer literal, which must fit), float64, bool or nil.
type inspectArg struct{ v any }

func (a *inspectArg) UnmarshalJSON(b []byte) error {
	switch b[0] {
	case '"':
		var s string
		err := jsonv2.Unmarshal(b, &s, readOpts)
		a.v = s
		return err
	case 't', 'f':
		a.v = b[0] == 't'
	case 'n':
		a.v = nil
	case '{', '[':
		return &problem{"scalar_type", typeMessages["scalar_type"]}
	default:
		if !bytes.ContainsAny(b, ".eE") {
			var n int64
			if jsonv2.Unmarshal(b, &n) != nil {
				// Read as a float it would be rounded: the query would
				// silently compare with another number.
				return &problem{"int_parsing_size", "Integer does not fit in 64 bits (-9223372036854775808 to 9223372036854775807); send it as a string, or as a float to round it"}
			}
			a.v = n
			return nil
		}
		var f float64
		err := jsonv2.Unmarshal(b, &f)
		a.v = f
		return err
	}
	return nil
}

// args returns the parameters as SQL values.
func (req inspectData) args() []any {
	if req.Params == nil {
		return nil
	}
	out := make([]any, len(req.Params))
	for i, p := range req.Params {
		out[i] = p.v
	}
	return out
}

// Replies.

// wsFrame is a /ws message: its type and data.
type wsFrame struct {
	Type string `json:"type"`
	Data any    `json:"data"`
}

// stepReply is the payload of reset and step replies. Reward is the task's
// grading after the step, null for an episode without a task.
type stepReply struct {
	Observation any      `json:"observation"`
	Reward      *float64 `json:"reward"`
	Done        bool     `json:"done"`
}

// resetObservation is the observation of a reset: the base observation,
// which has no fields once reward, done and metadata are lifted out.
var resetObservation = json.RawMessage(`{}`)

// emptyInputSchema stands in for a tool that declares no input schema.
var emptyInputSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// toolsObservation is the observation of a list_tools step.
type toolsObservation struct {
	Tools []stepTool `json:"tools"`
}

// stepTool is one entry of a step-path tool listing (snake_case).
type stepTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// mcpToolList is the result of a JSON-RPC tools/list.
type mcpToolList struct {
	Tools []mcpTool `json:"tools"`
}

// mcpTool is one entry of a JSON-RPC tools/list result (camelCase).
type mcpTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// inputSchema returns a tool's schema, or the empty one.
func inputSchema(t env.ToolInfo) json.RawMessage {
	if len(bytes.TrimSpace(t.InputSchema)) == 0 {
		return emptyInputSchema
	}
	return t.InputSchema
}

// listToolsObservation is the observation of a list_tools step.
func listToolsObservation(tools []env.ToolInfo) toolsObservation {
	out := make([]stepTool, len(tools))
	for i, t := range tools {
		out[i] = stepTool{Name: t.Name, Description: t.Description, InputSchema: inputSchema(t)}
	}
	return toolsObservation{out}
}

// mcpTools is the result of a JSON-RPC tools/list.
func mcpTools(tools []env.ToolInfo) mcpToolList {
	out := make([]mcpTool, len(tools))
	for i, t := range tools {
		out[i] = mcpTool{Name: t.Name, Description: t.Description, InputSchema: inputSchema(t)}
	}
	return mcpToolList{out}
}

// toolOutcome is what one tool call produced: a JSON result or a tool error.
type toolOutcome struct {
	result json.RawMessage // the tool's result encoded as JSON, when err is nil
	err    *env.ToolError  // the failure the agent sees
}

// structured returns the result as MCP structured content: the result when it
// is a JSON object, else {"result": <result>}.
func (o toolOutcome) structured() json.RawMessage {
	if t := bytes.TrimSpace(o.result); len(t) > 0 && t[0] == '{' {
		return o.result
	}
	return json.RawMessage(`{"result":` + string(o.result) + `}`)
}

// callToolObservation is the observation of a call_tool step: the result,
// or the tool's error.
type callToolObservation struct {
	ToolName string          `json:"tool_name"`
	Result   *callToolResult `json:"result"`
	Error    *toolErrorData  `json:"error"`
}

// toolErrorData is the error of a call_tool observation.
type toolErrorData struct {
	ErrorType string `json:"error_type"`
	Message   string `json:"message"`
}

// callToolResult is the flattened CallToolResult, with OpenEnv's snake_case
// keys; its optional fields are null.
type callToolResult struct {
	Content           []openEnvContent `json:"content"`
	StructuredContent json.RawMessage  `json:"structured_content"`
	Meta              any              `json:"meta"`
	Data              json.RawMessage  `json:"data"`
	IsError           bool             `json:"is_error"`
}

// openEnvContent is a content item of a callToolResult.
type openEnvContent struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations any    `json:"annotations"`
	Meta        any    `json:"meta"`
}

// mcpCallResult is the result of a JSON-RPC tools/call in OpenEnv's
// dialect: its snake_case keys plus the standard MCP camelCase ones.
type mcpCallResult struct {
	callToolResult
	StructuredContentMCP json.RawMessage `json:"structuredContent"`
	IsErrorMCP           bool            `json:"isError"`
}

// mcpStandardResult is a tools/call result as the MCP specification has
// it, for standard clients: the result's JSON as text content, the
// structured content, and isError with the error's text for the tool's own
// failures. No optional field is null.
type mcpStandardResult struct {
	Content           []mcpContent    `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError"`
}

// mcpContent is a text content item of a standard MCP result.
type mcpContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// resultOf is the callToolResult of a successful call.
func (o toolOutcome) resultOf() *callToolResult {
	return &callToolResult{
		Content:           []openEnvContent{{Type: "text", Text: string(o.result)}},
		StructuredContent: o.structured(),
		Data:              o.result,
	}
}

// observation is the observation of a call_tool step of the tool name.
func (o toolOutcome) observation(name string) callToolObservation {
	if o.err != nil {
		return callToolObservation{ToolName: name, Error: &toolErrorData{o.err.Kind, o.err.Message}}
	}
	return callToolObservation{ToolName: name, Result: o.resultOf()}
}

// mcpResult is the result of a tools/call in OpenEnv's dialect.
func (o toolOutcome) mcpResult() mcpCallResult {
	return mcpCallResult{callToolResult: *o.resultOf(), StructuredContentMCP: o.structured()}
}

// standardResult is the result of a tools/call for a standard client.
func (o toolOutcome) standardResult() mcpStandardResult {
	if o.err != nil {
		return mcpStandardResult{Content: []mcpContent{{"text", o.err.Message}}, IsError: true}
	}
	return mcpStandardResult{Content: []mcpContent{{"text", string(o.result)}}, StructuredContent: o.structured()}
}

// rpcResponse is a JSON-RPC 2.0 response: a result or an error.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitzero"`
	Error   any             `json:"error,omitzero"` // an *rpcError, or one without data (standardReply)
}

// rpcError is the error of a JSON-RPC response.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data"`
}

// empty is the empty object, the result of ping and of a notification.
type empty struct{}

// sessionResult is the result of openenv/session/create and close.
type sessionResult struct {
	SessionID string `json:"session_id"`
	Closed    bool   `json:"closed,omitzero"`
}

// initializeResult is the result of the MCP initialize handshake.
type initializeResult struct {
	ProtocolVersion string `json:"protocolVersion"`
	Capabilities    struct {
		Tools struct {
			ListChanged bool `json:"listChanged"`
		} `json:"tools"`
	} `json:"capabilities"`
	ServerInfo struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"serverInfo"`
}

// errorData is the data of a /ws error frame; Errors lists the failures of
// a validation error.
type errorData struct {
	Message string        `json:"message"`
	Code    string        `json:"code"`
	Errors  *[]fieldError `json:"errors,omitempty"`
	errorExtra
}

// errorExtra is what some errors carry beside their message.
type errorExtra struct {
	ActiveSessions int    `json:"active_sessions,omitzero"` // a capacity refusal
	MaxSessions    int    `json:"max_sessions,omitzero"`
	FactoryName    string `json:"factory_name,omitempty"` // a factory failure
	Fault          string `json:"fault,omitempty"`        // an infrastructure error's kind
}

// httpError is the FastAPI-style body of an HTTP error: a list of failures
// for a validation error, else the message, with the code alongside.
type httpError struct {
	Detail any    `json:"detail"`
	Code   string `json:"code,omitempty"`
	errorExtra
}

// detail is the body of the server's own small refusals.
type detail struct {
	Detail string `json:"detail"`
}

// health is the body of the health and readiness routes.
type health struct {
	Status string `json:"status"`
	Fault  string `json:"fault,omitempty"`
}

// metadata is GET /metadata, OpenEnv's EnvironmentMetadata.
type metadata struct {
	Name             string  `json:"name"`
	Description      string  `json:"description"`
	ReadmeContent    *string `json:"readme_content"`
	Version          string  `json:"version"`
	Author           *string `json:"author"`
	DocumentationURL *string `json:"documentation_url"`
}

// writeOpts make json v2 write what encoding/json writes, without its
// HTML escaping: map keys sorted, nil slices and maps as null, U+2028 and
// U+2029 escaped, invalid UTF-8 as U+FFFD. Unlike encoding/json it does not
// compact raw JSON again, which for a tool's result repeated in a reply
// was most of the cost of writing it.
var writeOpts = jsonv2.JoinOptions(
	jsonv2.Deterministic(true),
	jsonv2.FormatNilSliceAsNull(true),
	jsonv2.FormatNilMapAsNull(true),
	jsontext.EscapeForJS(true),
	jsontext.AllowInvalidUTF8(true),
)

// encode marshals v compactly without escaping <, > and &.
func encode(v any) ([]byte, error) { return jsonv2.Marshal(v, writeOpts) }

// mustEncode encodes a value that always encodes.
func mustEncode(v any) json.RawMessage {
	b, err := encode(v)
	if err != nil {
		panic(fmt.Sprintf("openenv: encoding %T: %v", v, err))
	}
	return b
}

// stateDoc returns the state document with the session's counters filled
// in and the change log never null.
func stateDoc(doc env.StateDoc, episodeID string, steps int) env.StateDoc {
	if episodeID != "" {
		id := episodeID
		doc.EpisodeID = &id
	} else {
		doc.EpisodeID = nil
	}
	doc.StepCount = steps
	if doc.StateFormat == "" {
		doc.StateFormat = env.StateFormat
	}
	if doc.ChangeLog == nil {
		doc.ChangeLog = []env.ChangeRecord{}
	}
	return doc
}

// replyReserve is the part of MaxReplyBytes kept for what wraps a reply's
// data: the /ws envelope, a JSON-RPC id, a step's tool name, an inspect
// reply's truncated_reason.
const replyReserve = 4 << 10

// inspectReplyData is the reply to an inspect query.
type inspectReplyData struct {
	Columns         []string          `json:"columns"`
	Rows            []json.RawMessage `json:"rows"`
	Truncated       bool              `json:"truncated"`
	TruncatedReason string            `json:"truncated_reason,omitempty"`
}

// inspectReply encodes the reply to an inspect query: the rows up to
// maxRows that fit, with their envelope, in maxReply bytes.
func inspectReply(r InspectRows, maxRows, maxReply int) (json.RawMessage, *protoError) {
	limit := maxReply - replyReserve
	reply := inspectReplyData{Columns: nonNil(r.Columns), Rows: []json.RawMessage{}}
	cols, err := encode(reply.Columns)
	if err != nil {
		return nil, newError(codeQuery, "inspect result cannot be encoded as JSON: %v", err)
	}
	if n := len(`{"columns":`) + len(cols); n > limit {
		return nil, newError(codeQuery, "the query's %d column names take %d bytes, more than a reply may carry (the server's max-reply-bytes, %d bytes)",
			len(r.Columns), n, maxReply)
	}
	rows, n := r.Rows, len(cols)+len(`{"columns":,"rows":[],"truncated":false}`)
	switch rowLimit := fmt.Sprintf("the query has more than %d rows; the reply holds the first %d (the server's inspect row limit)", maxRows, maxRows); {
	case len(rows) > maxRows:
		rows, reply.TruncatedReason = rows[:maxRows], rowLimit
	case r.Truncated == TruncatedRows:
		reply.TruncatedReason = rowLimit
	case r.Truncated == TruncatedBytes:
		reply.TruncatedReason = byteLimit(len(rows), maxReply)
	}
	for i, row := range rows {
		b, err := encode(nonNil(row))
		if err != nil {
			return nil, newError(codeQuery, "inspect result cannot be encoded as JSON: row %d: %v", i+1, err)
		}
		if n += len(b) + 1; n > limit {
			reply.TruncatedReason = byteLimit(i, maxReply)
			break
		}
		reply.Rows = append(reply.Rows, b)
	}
	reply.Truncated = reply.TruncatedReason != ""
	return mustEncode(reply), nil
}

// byteLimit is the truncated_reason of rows cut after the first n to keep
// a reply within maxReply bytes.
func byteLimit(n, maxReply int) string {
	return fmt.Sprintf("the rows after the first %d would take the reply past the limit of %d bytes on a reply (the server's max-reply-bytes)", n, maxReply)
}
