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

	"github.com/seahaven/seahaven/composition"
)

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
