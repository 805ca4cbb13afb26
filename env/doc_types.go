package env

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
)

// ToolInfo is one entry of a tool listing: what the agent sees.
type ToolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	// OutputSchema is the JSON Schema of the tool's structured result (MCP's
	// structuredContent, always an object); empty when not declared.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// ResultWrapped says the structured result is {"result": <result>}
	// rather than the result itself, which is then not always an object.
	ResultWrapped bool `json:"-"`
}

// Change operations of a ChangeRecord.
const (
	OpInsert = "insert"
	OpUpdate = "update"
	OpDelete = "delete"
)

// ChangeRecord is one row changed by one call, in one node's store.
type ChangeRecord struct {
	// Seq numbers the records of an instance from 1, in log order.
	Seq int `json:"seq"`
	// Call numbers the agent-level calls (activations) of an instance from
	// 1: the calls that ran a tool, not those refused before it ran.
	Call int `json:"call"`
	// Tool is the tool whose frame wrote the row, as the owning world names it.
	Tool string `json:"tool"`
	// Internal is true when the writing frame was a nested call made by host code.
	Internal bool `json:"internal"`
	// World is the owning node's canonical path; "main" for the root.
	World string `json:"world"`
	// Table is the table's name in that node's store.
	Table string `json:"table"`
	// Op is OpInsert, OpUpdate or OpDelete.
	Op string `json:"op"`
	// Key holds the primary key columns (or "rowid" for a table without
	// one; "_rowid_", or "oid", when a column is named rowid).
	Key map[string]any `json:"key"`
	// Before is the row when the writing frame began (a call has one frame
	// per node it writes, and one per nested call; a call of the tool's
	// own instance or a DB.Transaction cuts a frame in two, and each part
	// begins where the one before it ended); nil for an insert.
	Before map[string]any `json:"before"`
	// After is the row when the writing frame ended; nil for a delete.
	After map[string]any `json:"after"`
}

// MarshalJSON writes the record as its field tags say, as encoding/json
// would, except for an infinite float value in Key, Before or After (a REAL
// column may hold one, and JSON has no infinity): +Inf is written as the
// number 1e999 and -Inf as -1e999. JSON's grammar puts no bound on a
// number, and a reader that holds numbers as doubles (Python's json,
// JavaScript's JSON.parse) reads them back as the same infinities, where a
// string such as "Infinity" would read as the text a TEXT column may hold.
// Go's encoding/json decodes them only as json.Number (Decoder.UseNumber);
// strconv.ParseFloat then returns the infinity with a range error.
func (r ChangeRecord) MarshalJSON() ([]byte, error) {
	type plain ChangeRecord // the same fields, without this method
	p := plain(r)
	p.Key, p.Before, p.After = finiteJSON(r.Key), finiteJSON(r.Before), finiteJSON(r.After)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the caller's encoder escapes, or not, as it is set
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Infinities as ChangeRecord.MarshalJSON writes them.
const (
	jsonPosInf = json.Number("1e999")
	jsonNegInf = json.Number("-1e999")
)

// finiteJSON returns m, or a copy of it with each infinite float64 value
// replaced by its JSON number.
func finiteJSON(m map[string]any) map[string]any {
	out, copied := m, false
	for k, v := range m {
		f, ok := v.(float64)
		if !ok || !math.IsInf(f, 0) {
			continue
		}
		if !copied {
			out, copied = maps.Clone(m), true
		}
		out[k] = jsonPosInf
		if f < 0 {
			out[k] = jsonNegInf
		}
	}
	return out
}

// CompositionRecord describes one node of an instance.
type CompositionRecord struct {
	Path               string   `json:"path"`
	World              string   `json:"world"`
	WorldVersion       string   `json:"world_version"`
	Scope              *string  `json:"scope"`
	Aliases            []string `json:"aliases"`
	SchemaHash         string   `json:"schema_hash"`
	FrozenWorldVersion *string  `json:"frozen_world_version"`
}

// FixtureRef says which fixture an instance was created from.
type FixtureRef struct {
	ID            string            `json:"id"`
	FormatVersion int               `json:"format_version"`
	FileSHA256    map[string]string `json:"file_sha256"`
}

// StateFormat is the name of the state document format.
const StateFormat = "seahaven.state/1"

// StateDoc is the seahaven.state/1 document an eval grades on. Composition
// is keyed by node path; Fixture is nil for a genesis instance.
type StateDoc struct {
	EpisodeID    *string                      `json:"episode_id"`
	StepCount    int                          `json:"step_count"`
	StateFormat  string                       `json:"state_format"`
	World        string                       `json:"world"`
	WorldVersion string                       `json:"world_version"`
	Seed         int64                        `json:"seed"`
	Now          string                       `json:"now"`
	ClockMode    string                       `json:"clock_mode"`
	Composition  map[string]CompositionRecord `json:"composition"`
	Fixture      *FixtureRef                  `json:"fixture"`
	ChangeLog    []ChangeRecord               `json:"change_log"`
	// ChangeLogTruncated is set when the change log outgrew the server's
	// bound, or the state document a server's reply limit, and its oldest
	// records were dropped: ChangeLog then holds only
	// the newest, from Seq ChangeLogTruncated.Dropped+1. Nil when the log
	// is whole.
	ChangeLogTruncated *ChangeLogTruncation `json:"change_log_truncated,omitempty"`
	// Task is the id of the task the episode runs, when it runs one.
	Task *string `json:"task,omitempty"`
	// Checks are the results of the task's latest grading, when it runs one
	// and its latest grading did not fail.
	Checks []CheckResult `json:"checks,omitempty"`
}

// ChangeLogTruncation says that a change log lost its oldest records to a
// bound on its size.
type ChangeLogTruncation struct {
	// Dropped is how many of the oldest records were dropped.
	Dropped int `json:"dropped"`
	// MaxBytes is the bound the log was kept within, when that bound
	// dropped records.
	MaxBytes int64 `json:"max_bytes,omitzero"`
	// ReplyBytes, when set, is the limit on a reply a server's state
	// document was kept within by leaving out the oldest records it still
	// held (counted in Dropped): the instance's log has them.
	ReplyBytes int64 `json:"reply_bytes,omitzero"`
}

// Clock modes of an instance.
const (
	// ClockFrozen keeps time at the instance's now until the control tool moves it.
	ClockFrozen = "frozen"
	// ClockStep advances the clock by a fixed tick on each agent call.
	ClockStep = "step"
	// ClockWall starts at now and advances with real time; not reproducible.
	ClockWall = "wall"
)

// TimeFormat is how instants are written in documents and sidecars:
// RFC 3339 in UTC with milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z"
