package sqlitestore

import (
	"bytes"
	"maps"
	"math"
	"slices"
)

// The changes a capture reports, and how their images are shaped and
// compared.

// Change is the net change of one row during a capture.
type Change struct {
	// Table is the table's name in the main schema. Rows are told apart
	// by table name, key columns and key: a table dropped while the
	// capture ran reports every row it had as deleted, and one created
	// (by CREATE TABLE ... AS SELECT too) reports its rows as inserted;
	// a table dropped and created again with other key columns reports
	// the old rows deleted and the new ones inserted. Renaming a table
	// a capture holds rows of, or one of its columns, is refused while
	// it runs (see Capture).
	Table string
	// Op is "insert", "update" or "delete".
	Op string
	// Key maps the primary-key columns to their values; it is {"rowid": n}
	// for a table with no declared primary key ({"_rowid_": n}, or
	// {"oid": n}, when a column is named rowid).
	Key map[string]any
	// KeyValues holds the same values in primary-key column order.
	KeyValues []any
	// Before is the row before the capture; nil for an insert.
	Before map[string]any
	// After is the row when the capture finished; nil for a delete.
	After map[string]any
}

// RowChange is the net change of one row during a capture in compact form:
// the row images are slices by column rather than maps, so a change costs no
// map until one is asked for (Change). FinishRows returns them.
//
// Its slices must not be modified: KeyNames and Names are shared with the
// store's table metadata and with other RowChanges of the same table, and
// KeyValues and the []byte values of the images are shared with the Changes
// built from it. Read only, a RowChange is safe for concurrent use.
type RowChange struct {
	// Table is the table's name in the main schema.
	Table string
	// Op is OpInsert, OpUpdate or OpDelete.
	Op string
	// KeyNames names the primary-key columns in key order; it is ["rowid"]
	// for a table with no declared primary key (["_rowid_"], or ["oid"],
	// when a column is named rowid).
	KeyNames []string
	// KeyValues holds the key's values, by KeyNames.
	KeyValues []any
	// Names names the columns of Before and After: the table's columns when
	// the capture finished (when the table is gone, its columns when the row
	// was first touched).
	Names []string
	// Before is the row before the capture, by Names; nil for an insert. A
	// column added during the capture holds NULL when the row was first
	// touched before it was added, and what SQLite read for it (its
	// default) when after.
	Before []any
	// After is the row when the capture finished, by Names; nil for a
	// delete.
	After []any
}

// Change returns r as a Change, with maps of its own: Key, Before and After
// are fresh on every call, KeyValues is r's.
func (r RowChange) Change() Change {
	ch := Change{Table: r.Table, Op: r.Op, KeyValues: r.KeyValues, Key: rowMap(r.KeyNames, r.KeyValues)}
	if r.Before != nil {
		ch.Before = rowMap(r.Names, r.Before)
	}
	if r.After != nil {
		ch.After = rowMap(r.Names, r.After)
	}
	return ch
}

// Change operations.
const (
	OpInsert = "insert"
	OpUpdate = "update"
	OpDelete = "delete"
)

// changes converts rows to Changes; nil when rows is nil.
func changes(rows []RowChange) []Change {
	if rows == nil {
		return nil
	}
	out := make([]Change, len(rows))
	for i, r := range rows {
		out[i] = r.Change()
	}
	return out
}

// rowMap returns row as column name -> value, by names; when two names are
// the same, the later one wins.
func rowMap(names []string, row []any) map[string]any {
	m := make(map[string]any, len(names))
	for i, n := range names {
		m[n] = row[i]
	}
	return m
}

// reshape returns row, by names, in the shape to: by the columns to, a
// column of to missing from names NULL. Names match exactly (as map keys
// would). It returns row itself when the shapes are the same.
func reshape(names []string, row []any, to []string) []any {
	if slices.Equal(names, to) {
		return row
	}
	out := make([]any, len(to))
	for i, n := range to {
		if k := slices.Index(names, n); k >= 0 {
			out[i] = row[k]
		}
	}
	return out
}

// valueEqual reports whether two column values are the same value: of the
// same type, and equal bit for bit. 0.0 and -0.0 are equal to SQLite and
// to Go's ==, but a column holding one and then the other has changed: the
// file, the inspection view and the JSON of a record tell them apart.
// (SQLite stores no NaN, so no float is unequal to itself.)
func valueEqual(a, b any) bool {
	switch a := a.(type) {
	case []byte:
		bb, ok := b.([]byte)
		return ok && bytes.Equal(a, bb)
	case float64:
		bf, ok := b.(float64)
		return ok && math.Float64bits(a) == math.Float64bits(bf)
	}
	return a == b // false for values of different types, a []byte b among them
}

// sameChanges reports whether two lists of changes are the same, values
// compared by valueEqual (reflect.DeepEqual would take 0.0 for -0.0).
func sameChanges(a, b []Change) bool {
	same := func(x, y map[string]any) bool {
		return (x == nil) == (y == nil) && maps.EqualFunc(x, y, valueEqual)
	}
	return slices.EqualFunc(a, b, func(x, y Change) bool {
		return x.Table == y.Table && x.Op == y.Op && slices.EqualFunc(x.KeyValues, y.KeyValues, valueEqual) &&
			same(x.Key, y.Key) && same(x.Before, y.Before) && same(x.After, y.After)
	})
}
