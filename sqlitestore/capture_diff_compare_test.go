package sqlitestore_test

// Snapshots of every table, and their comparison with what a capture
// reported: the judge of the differential test (capture_diff_test.go).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/sqlitestore"
)

// diffRow is one row of a snapshot.
type diffRow struct {
	names []string
	vals  []any
}

// diffTable is a table's stored columns and its rows by key.
type diffTable struct {
	names []string
	rows  map[string]diffRow
}

// diffSnapshot is every row of every captured table, by table and key.
type diffSnapshot map[string]diffTable

// snapshotTables reads every row of every ordinary table of the main schema,
// as change capture would describe it: stored columns only, keyed by the
// primary key or by the rowid. A table's map key is its name and key
// columns; a row's is its key's values.
func snapshotTables(t *testing.T, s *sqlitestore.Store) diffSnapshot {
	t.Helper()
	ctx := context.Background()
	snap := diffSnapshot{}
	tables := MustQuery(t, s, `SELECT name, wr FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`)
	for _, tr := range tables.Values {
		name := tr[0].(string)
		withoutRowid := tr[1].(int64) != 0
		cols := MustQuery(t, s, `SELECT name, pk, hidden FROM pragma_table_xinfo(?1, 'main') ORDER BY cid`, name)
		var names, all []string
		pk := map[int64]string{}
		for _, c := range cols.Values {
			all = append(all, c[0].(string))
			if c[2].(int64) == 2 {
				continue
			}
			names = append(names, c[0].(string))
			if p := c[1].(int64); p > 0 {
				pk[p] = c[0].(string)
			}
		}
		var keyNames []string
		for i := int64(1); i <= int64(len(pk)); i++ {
			keyNames = append(keyNames, pk[i])
		}
		sel := make([]string, len(names))
		for i, n := range names {
			sel[i] = `"` + n + `"`
		}
		rowidCol := ""
		if len(keyNames) == 0 && !withoutRowid {
			for _, r := range []string{"rowid", "_rowid_", "oid"} {
				if !slices.ContainsFunc(all, func(c string) bool { return strings.EqualFold(c, r) }) {
					rowidCol = r
					break
				}
			}
			if rowidCol == "" {
				continue // refused: rows cannot be keyed
			}
			sel = append(sel, rowidCol)
			keyNames = []string{rowidCol} // the name that reads it back
		}
		rows, err := s.Query(ctx, "SELECT "+strings.Join(sel, ", ")+` FROM "`+name+`"`)
		if err != nil {
			t.Fatal(err)
		}
		tab := map[string]diffRow{}
		for _, r := range rows.Values {
			var key []any
			if rowidCol != "" {
				key = []any{r[len(names)]}
			} else {
				for _, k := range keyNames {
					key = append(key, r[slices.Index(names, k)])
				}
			}
			tab[diffKey(key)] = diffRow{names, r[:len(names)]}
		}
		snap[name+"\x00"+strings.Join(keyNames, "\x00")] = diffTable{names, tab}
	}
	return snap
}

// diffKey encodes key values, each with its type.
func diffKey(key []any) string {
	var b strings.Builder
	for _, v := range key {
		if f, ok := v.(float64); ok {
			fmt.Fprintf(&b, "f%x|", math.Float64bits(f))
			continue
		}
		fmt.Fprintf(&b, "%T:%v|", v, v)
	}
	return b.String()
}

// sameValue is valueEqual: of one type, equal bit for bit.
func sameValue(a, b any) bool {
	return diffKey([]any{a}) == diffKey([]any{b})
}

// checkDiff compares a capture's changes with the difference of two
// snapshots. Rows are compared on the columns both snapshots have: a
// column added or dropped changes no row. Every row that differs must be
// reported with its images; a row reported with the same values on those
// columns is allowed only when its table's columns changed (its images
// then tell the added column apart).
//
// A table whose columns were renamed, or dropped and added again (skip,
// see diffRig.noteDDL), is not compared: its rows are the same rows under
// other key names, which capture does not report, or a column dropped and
// added again under its name holds other values in rows no statement
// wrote.
//
// Rows inner captures reported (inner, by rowID) the capture reports only
// when it touched them itself, with its own first image as before: only
// their after-image is checked.
func checkDiff(before, after diffSnapshot, rows []sqlitestore.RowChange, skip, inner map[string]bool) error {
	reported := map[string]sqlitestore.Change{}
	rnames := map[string][]string{}
	var errs []error
	for _, r := range rows {
		id := rowID(r)
		if _, dup := reported[id]; dup {
			errs = append(errs, fmt.Errorf("row reported twice: %s %v", r.Table, r.KeyValues))
		}
		reported[id] = r.Change()
		rnames[id] = r.Names
	}
	// Tables by name, to tell which rows of a table keyed as before.
	tableOf := func(snap diffSnapshot, name string) (string, diffTable) {
		for k, tab := range snap {
			if strings.HasPrefix(k, name+"\x00") {
				return k, tab
			}
		}
		return "", diffTable{}
	}
	seen := map[string]bool{}
	check := func(tk, rowKey string, b, a *diffRow) {
		table := tk[:strings.IndexByte(tk, 0)]
		id := tk + "\x00" + rowKey
		seen[id] = true
		if skip[table] {
			return
		}
		if inner[id] {
			if ch, ok := reported[id]; ok && (a == nil) != (ch.After == nil) {
				errs = append(errs, fmt.Errorf("%s %s: reported %s %v, but the row is %v", table, rowKey, ch.Op, ch.After, a))
			}
			if ch, ok := reported[id]; ok && a != nil && ch.After != nil {
				for i, n := range a.names {
					if v, ok := ch.After[n]; !ok || !sameValue(v, a.vals[i]) {
						errs = append(errs, fmt.Errorf("%s %s: after %v, want %v", table, rowKey, ch.After, *a))
						break
					}
				}
			}
			return
		}
		ch, ok := reported[id]
		var common []string
		if b != nil && a != nil {
			for _, n := range a.names {
				if slices.Contains(b.names, n) {
					common = append(common, n)
				}
			}
		}
		differs := (b == nil) != (a == nil)
		if b != nil && a != nil {
			for _, n := range common {
				if !sameValue(b.vals[slices.Index(b.names, n)], a.vals[slices.Index(a.names, n)]) {
					differs = true
				}
			}
		}
		if !ok {
			if differs {
				errs = append(errs, fmt.Errorf("%s %s: not reported; before %v, after %v", table, rowKey, b, a))
			}
			return
		}
		want := sqlitestore.OpUpdate
		switch {
		case b == nil:
			want = sqlitestore.OpInsert
		case a == nil:
			want = sqlitestore.OpDelete
		case !differs && slices.Equal(b.names, a.names):
			errs = append(errs, fmt.Errorf("%s %s: reported %s, but unchanged: %v", table, rowKey, ch.Op, *b))
			return
		}
		if ch.Op != want {
			errs = append(errs, fmt.Errorf("%s %s: reported %s, want %s; before %v, after %v", table, rowKey, ch.Op, want, b, a))
			return
		}
		if a != nil {
			if len(ch.After) != len(a.names) {
				errs = append(errs, fmt.Errorf("%s %s: after %v, want %v", table, rowKey, ch.After, *a))
			}
			for i, n := range a.names {
				if v, ok := ch.After[n]; !ok || !sameValue(v, a.vals[i]) {
					errs = append(errs, fmt.Errorf("%s %s: after %v, want %v", table, rowKey, ch.After, *a))
					break
				}
			}
		}
		if b != nil {
			// Before is in the table's shape at the end, when it is still there.
			atk, atab := tableOf(after, table)
			for i, n := range b.names {
				if atk == tk && !slices.Contains(atab.names, n) {
					continue // dropped since
				}
				v, ok := ch.Before[n]
				if !ok && !slices.Equal(rnames[id], b.names) {
					continue // dropped before the row was first touched
				}
				if !ok || !sameValue(v, b.vals[i]) {
					errs = append(errs, fmt.Errorf("%s %s: before %v, want %v", table, rowKey, ch.Before, *b))
					break
				}
			}
		}
	}
	for tk, btab := range before {
		brows := btab.rows
		name := tk[:strings.IndexByte(tk, 0)]
		atk, atab := tableOf(after, name)
		arows := atab.rows
		if atk != tk {
			arows = nil // gone, or keyed anew: its rows are gone
		}
		for k, b := range brows {
			b := b
			var a *diffRow
			if r, ok := arows[k]; ok {
				a = &r
			}
			check(tk, k, &b, a)
		}
	}
	for tk, atab := range after {
		name := tk[:strings.IndexByte(tk, 0)]
		btk, btab := tableOf(before, name)
		brows := btab.rows
		for k, a := range atab.rows {
			a := a
			if btk == tk {
				if _, ok := brows[k]; ok {
					continue // checked above
				}
			}
			check(tk, k, nil, &a)
		}
	}
	for id, ch := range reported {
		if !seen[id] && !skip[ch.Table] && !inner[id] {
			errs = append(errs, fmt.Errorf("reported %s %s %v, in neither snapshot: before %v, after %v", ch.Op, ch.Table, ch.KeyValues, ch.Before, ch.After))
		}
	}
	return errors.Join(errs...)
}
