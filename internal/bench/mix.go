package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// ListTools is the name that stands in a tool mix for the list_tools action
// (which is not a tool).
const ListTools = "list_tools"

// MixEntry is one tool of a tool mix with its relative weight.
type MixEntry struct {
	// Tool is the tool's published name, or ListTools.
	Tool string
	// Weight is the entry's share of the calls, relative to the others.
	Weight int
}

// ParseToolMix parses a tool mix such as "invoice:3,list_staff:1": tool names
// with optional integer weights (default 1), separated by commas. An empty
// string is an empty mix.
func ParseToolMix(s string) ([]MixEntry, error) {
	var mix []MixEntry
	seen := map[string]bool{}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, w, hasWeight := strings.Cut(part, ":")
		name = strings.TrimSpace(name)
		weight := 1
		if hasWeight {
			n, err := strconv.Atoi(strings.TrimSpace(w))
			if err != nil || n < 1 {
				return nil, fmt.Errorf("bench: tool mix %q: weight of %q must be a positive integer, got %q", s, name, w)
			}
			weight = n
		}
		if name == "" {
			return nil, fmt.Errorf("bench: tool mix %q: an entry has no tool name", s)
		}
		if seen[name] {
			return nil, fmt.Errorf("bench: tool mix %q: %s is listed twice", s, name)
		}
		seen[name] = true
		mix = append(mix, MixEntry{Tool: name, Weight: weight})
	}
	return mix, nil
}

// FormatToolMix is the inverse of ParseToolMix.
func FormatToolMix(mix []MixEntry) string {
	parts := make([]string, len(mix))
	for i, e := range mix {
		parts[i] = e.Tool + ":" + strconv.Itoa(e.Weight)
	}
	return strings.Join(parts, ",")
}

// picker draws tools from a mix by weight.
type picker struct {
	mix   []MixEntry
	total int
}

func newPicker(mix []MixEntry) *picker {
	p := &picker{mix: mix}
	for _, e := range mix {
		p.total += e.Weight
	}
	return p
}

// pick returns a tool name drawn by weight; "" for an empty mix.
func (p *picker) pick(r *rand.Rand) string {
	if p.total == 0 {
		return ""
	}
	n := r.IntN(p.total)
	for _, e := range p.mix {
		if n < e.Weight {
			return e.Tool
		}
		n -= e.Weight
	}
	return p.mix[len(p.mix)-1].Tool
}

// ExampleArgs returns arguments that satisfy a tool's input JSON Schema with
// the least effort: every required property gets the smallest value its
// schema allows (integers and numbers 1, or the bound nearest it, strings
// "bench" cut to maxLength or padded to minLength, a date-time an instant
// and base64 text the bytes "bench", booleans false, arrays empty, objects
// built the same way, enums their first value, defaults their default).
func ExampleArgs(schema json.RawMessage) (json.RawMessage, error) {
	var s map[string]any
	if len(schema) > 0 {
		if err := json.Unmarshal(schema, &s); err != nil {
			return nil, fmt.Errorf("bench: input schema: %w", err)
		}
	}
	v := exampleValue(s, 0)
	if _, ok := v.(map[string]any); !ok {
		v = map[string]any{}
	}
	return json.Marshal(v)
}

// exampleValue builds the smallest value a schema accepts.
func exampleValue(s map[string]any, depth int) any {
	if s == nil || depth > 8 {
		return map[string]any{}
	}
	if d, ok := s["default"]; ok {
		return d
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	typ, _ := s["type"].(string)
	if ts, ok := s["type"].([]any); ok && len(ts) > 0 {
		typ, _ = ts[0].(string)
	}
	switch typ {
	case "integer", "number":
		// 1, unless the bounds leave it out.
		v := 1.0
		if m, ok := s["minimum"].(float64); ok && m > v {
			v = m
		}
		if m, ok := s["exclusiveMinimum"].(float64); ok && m >= v {
			v = math.Floor(m) + 1
		}
		if m, ok := s["maximum"].(float64); ok && m < v {
			v = m
			if typ == "integer" {
				v = math.Floor(m)
			}
		}
		return v
	case "string":
		switch {
		case s["format"] == "date-time":
			return "2026-01-01T00:00:00Z"
		case s["contentEncoding"] == "base64":
			return "YmVuY2g=" // "bench"
		}
		v := "bench"
		if n, ok := s["maxLength"].(float64); ok && int(n) < len(v) {
			v = v[:max(int(n), 0)]
		}
		if n, ok := s["minLength"].(float64); ok && int(n) > len(v) {
			v += strings.Repeat("x", int(n)-len(v))
		}
		return v
	case "boolean":
		return false
	case "array":
		return []any{}
	case "null":
		return nil
	}
	props, _ := s["properties"].(map[string]any)
	out := map[string]any{}
	req, _ := s["required"].([]any)
	names := make([]string, 0, len(req))
	for _, r := range req {
		if n, ok := r.(string); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		ps, _ := props[n].(map[string]any)
		out[n] = exampleValue(ps, depth+1)
	}
	return out
}
