package task

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/rfc3339"
)

// DefinitionHash returns the hex SHA-256 of t's definition as an episode
// runs and is graded under it, in a canonical JSON form: its id,
// instruction, fixture, now (the instant it names, however written), startup keywords, seed, tools allow list,
// no_change_correct, and each check in order with its name (the default
// one when none is given), weight (1 when 0), kind and what the kind
// reads (sql, args and equals, or its table patterns). A Go check (Func)
// counts by its name and weight only: its code goes with the world's
// version. The difficulty, which is only listed, and the file and line
// the task was declared at are left out, and so are the order of the
// tools and of a check's table patterns, which are sets; a value in args,
// equals or startup counts as the JSON it encodes to (1 and 1.0 are one
// number). A trajectory's header records it (Header.TaskSHA256).
func DefinitionHash(t env.Task) string {
	type check struct {
		Name     string            `json:"name"`
		Weight   float64           `json:"weight"`
		Kind     string            `json:"kind"`
		SQL      string            `json:"sql,omitempty"`
		Args     []json.RawMessage `json:"args,omitempty"`
		Equals   json.RawMessage   `json:"equals,omitempty"`
		Patterns []string          `json:"patterns,omitempty"`
	}
	def := struct {
		ID              string                     `json:"id"`
		Instruction     string                     `json:"instruction"`
		Fixture         string                     `json:"fixture"`
		Now             string                     `json:"now"`
		Startup         map[string]json.RawMessage `json:"startup"`
		Seed            *int64                     `json:"seed"`
		Tools           []string                   `json:"tools"`
		NoChangeCorrect bool                       `json:"no_change_correct"`
		Checks          []check                    `json:"checks"`
	}{
		ID: t.ID, Instruction: t.Instruction, Fixture: t.Fixture, Now: t.Now, Seed: t.Seed,
		Tools: slices.Sorted(slices.Values(t.Tools)), NoChangeCorrect: t.NoChangeCorrect, Checks: []check{},
	}
	if now, err := rfc3339.Parse(t.Now); err == nil {
		def.Now = now.UTC().Format(time.RFC3339Nano) // the instant, however written
	}
	if t.Startup != nil {
		def.Startup = map[string]json.RawMessage{}
		for k, v := range t.Startup {
			def.Startup[k] = canonJSON(v)
		}
	}
	for _, c := range t.Normalize().Checks {
		cc := check{Name: c.Name, Weight: c.EffectiveWeight(), Kind: c.Kind(), SQL: c.SQL}
		for _, a := range c.Args {
			cc.Args = append(cc.Args, canonJSON(a))
		}
		if c.Equals != nil {
			cc.Equals = canonJSON(c.Equals)
		}
		for _, p := range [][]string{c.OnlyChanged, c.MustChange, c.Unchanged} {
			cc.Patterns = append(cc.Patterns, slices.Sorted(slices.Values(p))...)
		}
		def.Checks = append(def.Checks, cc)
	}
	b, err := json.Marshal(def)
	if err != nil { // every value went through canonJSON
		panic(fmt.Sprintf("task: definition of %s: %v", t.ID, err))
	}
	sum := sha256.Sum256(append([]byte("seahaven task definition 1\n"), b...))
	return hex.EncodeToString(sum[:])
}

// canonJSON is v as JSON, or, for a value that does not encode (a Go
// task's), its Go syntax as a JSON string.
func canonJSON(v any) json.RawMessage {
	if b, err := json.Marshal(v); err == nil {
		return b
	}
	b, _ := json.Marshal(fmt.Sprintf("go:%#v", v))
	return b
}

// StateHash returns, per node path, the hex SHA-256 of the node's contents
// as the inspection view reads them: every ordinary table (virtual tables
// are left out; their shadow tables hold their rows), by name, with its
// column names and its rows in a canonical order. It depends on the data
// only, not on page layout, so two instances that made the same changes
// hash the same.
func StateHash(ctx context.Context, inst *composition.Instance) (map[string]string, error) {
	v := inst.Inspect()
	out := map[string]string{}
	for _, n := range inst.Composition() {
		schema := composition.SchemaName(n.Path)
		tables, err := v.Rows(ctx, fmt.Sprintf(`SELECT name FROM %s.sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%%' ORDER BY name`, quoteIdent(schema)))
		if err != nil {
			return nil, fmt.Errorf("task: state hash of %s: %w", n.Path, err)
		}
		h := sha256.New()
		for _, t := range tables {
			name := t["name"].(string)
			rows, err := v.Query(ctx, fmt.Sprintf(`SELECT * FROM %s.%s`, quoteIdent(schema), quoteIdent(name)))
			if err != nil {
				return nil, fmt.Errorf("task: state hash of %s.%s: %w", n.Path, name, err)
			}
			lines := make([]string, len(rows.Values))
			for i, r := range rows.Values {
				lines[i] = hashRow(r)
			}
			slices.Sort(lines)
			cols, _ := json.Marshal(rows.Columns)
			fmt.Fprintf(h, "table %q %s %d\n", name, cols, len(lines))
			for _, l := range lines {
				fmt.Fprintln(h, l)
			}
		}
		out[n.Path] = hex.EncodeToString(h.Sum(nil))
	}
	return out, nil
}

// hashRow writes a row with each value's type, so that text never reads
// as a number or a blob.
func hashRow(r []any) string {
	var b strings.Builder
	for i, v := range r {
		if i > 0 {
			b.WriteByte('\t')
		}
		switch x := v.(type) {
		case nil:
			b.WriteString("null")
		case int64:
			b.WriteString("i:" + strconv.FormatInt(x, 10))
		case float64:
			b.WriteString("f:" + strconv.FormatFloat(x, 'g', -1, 64))
		case string:
			b.WriteString("s:" + strconv.Quote(x))
		case []byte:
			b.WriteString("b:" + hex.EncodeToString(x))
		default:
			fmt.Fprintf(&b, "?:%v", x)
		}
	}
	return b.String()
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
