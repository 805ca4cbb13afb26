package openenv

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/wirejson"
)

// The messages the server replies, written by encode. The field order of a
// reply type is the key order on the wire, which is OpenEnv's.

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

// toolList is a tool listing: the observation of a list_tools step, of
// stepTools, and the result of a JSON-RPC tools/list, of mcpTools.
type toolList[T any] struct {
	Tools []T `json:"tools"`
}

// stepTool is one entry of a step-path tool listing (snake_case).
type stepTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// mcpTool is one entry of a JSON-RPC tools/list result (camelCase).
type mcpTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

// listTools lists tools, each the entry that entry makes of it and of its
// input schema (the empty one for a tool that declares none).
func listTools[T any](tools []env.ToolInfo, entry func(t env.ToolInfo, input json.RawMessage) T) toolList[T] {
	out := make([]T, len(tools))
	for i, t := range tools {
		input := t.InputSchema
		if len(bytes.TrimSpace(input)) == 0 {
			input = emptyInputSchema
		}
		out[i] = entry(t, input)
	}
	return toolList[T]{out}
}

// toolOutcome is what one tool call produced: a JSON result or a tool error.
type toolOutcome struct {
	result json.RawMessage // the tool's result encoded as JSON, when err is nil
	err    *env.ToolError  // the failure the agent sees
	// cause is what err's message does not say of the failure: the Err of
	// a world's *env.ToolError, which the agent never sees (an error
	// handler's hidden constraint or driver error), for the log.
	cause error
	// wrapped says the tool's output schema declares its structured
	// content as {"result": <result>} (env.ToolInfo.ResultWrapped).
	wrapped bool
	// noStep says the call ran nothing or was cancelled before it changed
	// anything (env.ErrNoStep): it is no step of the episode.
	noStep bool
	// cancelled says the call ended with its request's context or its
	// instance's (the client went away, the session closed), not past
	// its deadline.
	cancelled bool
	// late is the call when it ran on past its deadline, ignoring its
	// context: err says it timed out, and the instance is the call's
	// until it returns. nil for a call that returned.
	late *lateCall
}

// structured returns the result as MCP structured content, which is always
// an object: the result itself when it is one, unless the tool declares it
// wrapped, else {"result": <result>}. (A tool declares its result unwrapped
// only when its type is a struct, so the declared shape holds unless a
// middleware put a value of another type in its place.)
func (o toolOutcome) structured() json.RawMessage {
	if t := bytes.TrimSpace(o.result); !o.wrapped && len(t) > 0 && t[0] == '{' {
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
	// The step path lists no output schemas: its structured content is
	// the result when it is an object, whatever the tool declares.
	o.wrapped = false
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

// nullID is the id of a response to a request whose id is unknown.
var nullID = json.RawMessage("null")

// rpcResult is a successful JSON-RPC response.
func rpcResult(id json.RawMessage, result any) rpcResponse {
	return rpcResponse{JSONRPC: "2.0", ID: id, Result: result}
}

// rpcFailure is a JSON-RPC error response.
func rpcFailure(id json.RawMessage, code int, message string, data any) rpcResponse {
	return rpcResponse{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: code, Message: message, Data: data}}
}

// rpcProto renders a protoError as a JSON-RPC error response.
func rpcProto(id json.RawMessage, perr *protoError) rpcResponse {
	return rpcResponse{JSONRPC: "2.0", ID: id, Error: perr.rpcError()}
}

// rpcAnswer is the response of a method that returned result, or failed
// with perr.
func rpcAnswer(id json.RawMessage, result any, perr *protoError) rpcResponse {
	if perr != nil {
		return rpcProto(id, perr)
	}
	return rpcResult(id, result)
}

// standardReply drops a JSON-RPC error's null data: the MCP specification
// has no null optional fields, while OpenEnv's dialect sends "data": null.
func standardReply(resp rpcResponse) rpcResponse {
	if e, ok := resp.Error.(*rpcError); ok && e.Data == nil {
		resp.Error = &struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}{e.Code, e.Message}
	}
	return resp
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
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    serverCapabilities `json:"capabilities"`
	ServerInfo      implementation     `json:"serverInfo"`
}

// serverCapabilities are the server's MCP capabilities: tools, whose list
// it never announces as changed.
type serverCapabilities struct {
	Tools struct {
		ListChanged bool `json:"listChanged"`
	} `json:"tools"`
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
	FactoryName    string `json:"factory_name,omitempty"`  // a factory failure
	Fault          string `json:"fault,omitempty"`         // an infrastructure error's kind
	CheckpointID   string `json:"checkpoint_id,omitempty"` // a drained session's checkpoint, or SupersededBy's newest
	SupersededBy   string `json:"superseded_by,omitempty"` // the attempt that superseded the one a refused restore replaces
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

// encode marshals v compactly without escaping <, > and &, as everything
// the server sends is written (wirejson).
func encode(v any) ([]byte, error) { return wirejson.Marshal(v) }

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
	doc.EpisodeID = nil
	if episodeID != "" {
		doc.EpisodeID = &episodeID
	}
	doc.StepCount = steps
	doc.StateFormat = cmp.Or(doc.StateFormat, env.StateFormat)
	if doc.ChangeLog == nil {
		doc.ChangeLog = []env.ChangeRecord{}
	}
	return doc
}

// fitState returns doc with as many of its oldest change records left out
// as its JSON must lose to fit in MaxReplyBytes less the replyReserve and
// less beside, the bytes of the reply's other members, and counted in its
// ChangeLogTruncated, as the log's own bound drops them: a grader
// reading the state of a long episode gets the newest records, where the
// reply would have been refused whole. ReplyBytes says the reply's limit
// dropped them.
func (s *Server) fitState(doc env.StateDoc, beside int) env.StateDoc {
	max := s.cfg.MaxReplyBytes - replyReserve - beside
	b, err := encode(doc)
	if err != nil || len(b) <= max {
		return doc
	}
	over, drop := len(b)-max, 0
	for ; drop < len(doc.ChangeLog) && over > 0; drop++ {
		r, err := encode(doc.ChangeLog[drop])
		if err != nil {
			return doc
		}
		over -= len(r) + 1 // and its comma
	}
	t := env.ChangeLogTruncation{}
	if doc.ChangeLogTruncated != nil {
		t = *doc.ChangeLogTruncated
	}
	t.Dropped += drop
	t.ReplyBytes = int64(s.cfg.MaxReplyBytes)
	doc.ChangeLog, doc.ChangeLogTruncated = doc.ChangeLog[drop:], &t
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
		b, err := encode(finiteRow(nonNil(row)))
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

// finiteRow returns row, or a copy of it with each infinite float (a REAL
// value SQLite computes, as 1e999 does) written as the change log writes
// one (env.ChangeRecord): the number 1e999 or -1e999, since JSON has no
// infinity.
func finiteRow(row []any) []any {
	out, copied := row, false
	for i, v := range row {
		if f, ok := v.(float64); ok && math.IsInf(f, 0) {
			if !copied {
				out, copied = slices.Clone(row), true
			}
			out[i] = jsontext.Value("1e999")
			if f < 0 {
				out[i] = jsontext.Value("-1e999")
			}
		}
	}
	return out
}

// byteLimit is the truncated_reason of rows cut after the first n to keep
// a reply within maxReply bytes.
func byteLimit(n, maxReply int) string {
	return fmt.Sprintf("the rows after the first %d would take the reply past the limit of %d bytes on a reply (the server's max-reply-bytes)", n, maxReply)
}
