package openenv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/jsonquote"
)

// object is a JSON object that keeps its keys in order, so replies read the
// same as OpenEnv's.
type object []field

// field is one key of an object.
type field struct {
	key   string
	value any
}

// MarshalJSON encodes the fields in order.
func (o object) MarshalJSON() ([]byte, error) { return o.appendJSON(nil) }

// appendJSON appends the object to b, writing nested objects directly
// (encoding/json would compact the output of every nested MarshalJSON again).
func (o object) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	for i, f := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonquote.Append(b, f.key), ':')
		var err error
		if b, err = appendValue(b, f.value); err != nil {
			return nil, fmt.Errorf("key %q: %w", f.key, err)
		}
	}
	return append(b, '}'), nil
}

// encode marshals v compactly without escaping <, > and &.
func encode(v any) ([]byte, error) { return appendValue(nil, v) }

// appendValue appends v as encode writes it: objects field by field, every
// other value as encoding/json writes it.
func appendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case object:
		return v.appendJSON(b)
	case nil:
		return append(b, "null"...), nil
	case bool:
		if v {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case string:
		return jsonquote.Append(b, v), nil
	case jsonText:
		return jsonquote.Append(b, v), nil
	case compactJSON:
		return append(b, v...), nil
	case []object:
		b = append(b, '[')
		for i, o := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = o.appendJSON(b); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case json.RawMessage:
		if json.Valid(v) {
			buf := bytes.NewBuffer(b)
			if err := json.Compact(buf, v); err == nil {
				return buf.Bytes(), nil
			}
		}
	}
	le := leafEncoders.Get().(*leafEncoder)
	defer func() {
		if le.buf.Cap() <= maxPooledLeaf {
			leafEncoders.Put(le)
		}
	}()
	le.buf.Reset()
	if err := le.enc.Encode(v); err != nil {
		return nil, err
	}
	return append(b, bytes.TrimSuffix(le.buf.Bytes(), []byte("\n"))...), nil
}

// jsonText is text, held as bytes, to be written as a JSON string.
type jsonText []byte

// compactJSON is valid, compact JSON that this package encoded: it is
// written as it is, where a json.RawMessage is validated and compacted.
type compactJSON []byte

// plain reports whether s encodes as itself between quotes (and so reads
// back from there as itself): printable ASCII without a quote or a
// backslash.
func plain[T ~string | ~[]byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// maxPooledLeaf is the largest buffer a leaf encoder keeps for reuse.
const maxPooledLeaf = 64 << 10

// leafEncoder is a reusable encoder of values other than objects.
type leafEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var leafEncoders = sync.Pool{New: func() any {
	le := &leafEncoder{}
	le.enc = json.NewEncoder(&le.buf)
	le.enc.SetEscapeHTML(false)
	return le
}}

// frameOf wraps data in a /ws envelope.
func frameOf(typ string, data any) object {
	return object{{"type", typ}, {"data", data}}
}

// stepResponse is the {"observation","reward","done"} payload of reset and
// step replies of an episode without a task: reward is null.
func stepResponse(observation any) object {
	return object{{"observation", observation}, {"reward", nil}, {"done", false}}
}

// gradedResponse is the step reply of an episode running a task: the
// reward and done flag are the task's grading after the step.
func gradedResponse(observation any, reward float64, done bool) object {
	return object{{"observation", observation}, {"reward", reward}, {"done", done}}
}

// resetObservation is the observation of a reset: the base observation,
// which has no fields once reward, done and metadata are lifted out.
var resetObservation = json.RawMessage(`{}`)

// emptyInputSchema stands in for a tool that declares no input schema.
var emptyInputSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// stepTool is one entry of a step-path tool listing (snake_case).
type stepTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
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
func listToolsObservation(tools []env.ToolInfo) object {
	out := make([]stepTool, len(tools))
	for i, t := range tools {
		out[i] = stepTool{Name: t.Name, Description: t.Description, InputSchema: inputSchema(t)}
	}
	return object{{"tools", out}}
}

// mcpToolList is the result of a JSON-RPC tools/list.
func mcpToolList(tools []env.ToolInfo) object {
	out := make([]mcpTool, len(tools))
	for i, t := range tools {
		out[i] = mcpTool{Name: t.Name, Description: t.Description, InputSchema: inputSchema(t)}
	}
	return object{{"tools", out}}
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

// resultObject is the flattened CallToolResult, with OpenEnv's snake_case keys.
func (o toolOutcome) resultObject() object {
	return object{
		{"content", []object{{{"type", "text"}, {"text", jsonText(o.result)}, {"annotations", nil}, {"meta", nil}}}},
		{"structured_content", compactJSON(o.structured())},
		{"meta", nil},
		{"data", compactJSON(o.result)},
		{"is_error", false},
	}
}

// callToolObservation is the observation of a call_tool step.
func callToolObservation(name string, o toolOutcome) object {
	if o.err != nil {
		return object{
			{"tool_name", name},
			{"result", nil},
			{"error", object{{"error_type", o.err.Kind}, {"message", o.err.Message}}},
		}
	}
	return object{{"tool_name", name}, {"result", o.resultObject()}, {"error", nil}}
}

// mcpCallResult is the result of a JSON-RPC tools/call: OpenEnv's snake_case
// keys plus the standard MCP camelCase ones.
// mcpStandardResult is a tools/call result as the MCP specification has
// it, for standard clients: the result's JSON as text content, the
// structured content, and isError with the error's text for the tool's own
// failures. No optional field is null.
func mcpStandardResult(o toolOutcome) object {
	if o.err != nil {
		return object{
			{"content", []object{{{"type", "text"}, {"text", o.err.Message}}}},
			{"isError", true},
		}
	}
	return object{
		{"content", []object{{{"type", "text"}, {"text", jsonText(o.result)}}}},
		{"structuredContent", o.structured()},
		{"isError", false},
	}
}

func mcpCallResult(o toolOutcome) object {
	return append(o.resultObject(),
		field{"structuredContent", o.structured()},
		field{"isError", false},
	)
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

// inspectReply encodes the reply to an inspect query, {"columns","rows",
// "truncated"} and, when truncated, "truncated_reason": the rows up to
// maxRows that fit, with their envelope, in maxReply bytes.
func inspectReply(r InspectRows, maxRows, maxReply int) (compactJSON, *protoError) {
	limit := maxReply - replyReserve
	b, err := appendValue(append(make([]byte, 0, 256), `{"columns":`...), nonNil(r.Columns))
	if err != nil {
		return nil, newError(codeQuery, "inspect result cannot be encoded as JSON: %v", err)
	}
	if len(b) > limit {
		return nil, newError(codeQuery, "the query's %d column names take %d bytes, more than a reply may carry (the server's max-reply-bytes, %d bytes)",
			len(r.Columns), len(b), maxReply)
	}
	rowLimit := fmt.Sprintf("the query has more than %d rows; the reply holds the first %d (the server's inspect row limit)", maxRows, maxRows)
	byteLimit := func(n int) string {
		return fmt.Sprintf("the rows after the first %d would take the reply past the limit of %d bytes on a reply (the server's max-reply-bytes)", n, maxReply)
	}
	rows, reason := r.Rows, ""
	switch {
	case len(rows) > maxRows:
		rows, reason = rows[:maxRows], rowLimit
	case r.Truncated == TruncatedRows:
		reason = rowLimit
	case r.Truncated == TruncatedBytes:
		reason = byteLimit(len(rows))
	}
	b = append(b, `,"rows":[`...)
	for i, row := range rows {
		mark := len(b)
		if i > 0 {
			b = append(b, ',')
		}
		if row == nil {
			b = append(b, "[]"...)
		} else if b, err = appendValue(b, row); err != nil {
			return nil, newError(codeQuery, "inspect result cannot be encoded as JSON: row %d: %v", i+1, err)
		}
		if len(b) > limit {
			b, reason = b[:mark], byteLimit(i)
			break
		}
	}
	b = append(b, `],"truncated":`...)
	if reason == "" {
		return append(b, "false}"...), nil
	}
	b = jsonquote.Append(append(b, `true,"truncated_reason":`...), reason)
	return append(b, '}'), nil
}
