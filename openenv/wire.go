package openenv

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/seahaven/seahaven/env"
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
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := encode(f.value)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", f.key, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// encode marshals v compactly without escaping <, > and &.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// frameOf wraps data in a /ws envelope.
func frameOf(typ string, data any) object {
	return object{{"type", typ}, {"data", data}}
}

// stepResponse is the {"observation","reward","done"} payload of reset and
// step replies. Seahaven computes no reward, so reward is always null.
func stepResponse(observation any) object {
	return object{{"observation", observation}, {"reward", nil}, {"done", false}}
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

// textContent is an MCP text content block.
type textContent struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations any    `json:"annotations"`
	Meta        any    `json:"meta"`
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
		{"content", []textContent{{Type: "text", Text: string(o.result)}}},
		{"structured_content", o.structured()},
		{"meta", nil},
		{"data", o.result},
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

// inspectResult is the reply to an inspect message.
func inspectResult(columns []string, rows [][]any, truncated bool) object {
	return object{{"columns", nonNil(columns)}, {"rows", nonNil(rows)}, {"truncated", truncated}}
}
