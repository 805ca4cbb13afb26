package sqlitestore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
)

// Keys the change capture cannot use.
//
// Capture keys each row by its primary key (by its rowid when the table
// declares none) and tells two rows apart by their key values, byte for
// byte. That is exact only when SQLite's own notion of "the same key" is the
// same: a key no two rows can share and that SQLite compares as the capture
// writes it. Three shapes break it:
//
//   - A primary-key column that may hold NULL: SQLite accepts NULL in the
//     primary key of a rowid table that is not STRICT (a compatibility
//     quirk, unlike WITHOUT ROWID and STRICT tables, which refuse it), and
//     any number of rows may then share the key NULL.
//   - A primary-key column whose values SQLite finds equal while they
//     differ: one with no type affinity (declared with no type, or a type
//     SQLite gives BLOB affinity, or ANY in a STRICT table) may hold 1 and
//     1.0, or 0 and -0.0; one compared with a collation other than BINARY
//     (NOCASE, RTRIM) may hold 'a' and 'A'. Every affinity but BLOB turns
//     numbers into one form (INTEGER and NUMERIC: integral reals become
//     integers; REAL: integers become reals, -0.0 becomes 0.0; TEXT:
//     numbers become text), so under BINARY it holds each key one way.
//     The one exception, the real -2^63.0, which INTEGER and NUMERIC keep
//     as a real beside the integer -2^63 it equals, is one key to SQLite
//     and two to capture, which reads a row back only at its own (see
//     conn.readRow): a REPLACE of one by the other is the one deleted and
//     the other inserted.
//   - A rowid table with no primary key whose columns are named rowid, oid
//     and _rowid_: its rows are keyed by rowid, and no name is left to read
//     a row by it.
//
// Such a table is refused rather than described: KeyProblems reports it for
// a schema, and a capture that touches one fails (see tableMeta.keyProblem).

// KeyProblem is a table of a schema whose rows change capture cannot key
// exactly, and why. It is an error.
type KeyProblem struct {
	// Table is the table's name.
	Table string
	// Column is the primary-key column at fault; "" when the fault is the
	// table's rowid.
	Column string
	// Reason says what is wrong and how to fix it.
	Reason string
}

// Error returns "table T: " followed by the reason.
func (p *KeyProblem) Error() string { return "table " + p.Table + ": " + p.Reason }

// KeyProblems applies schema to an empty in-memory store and returns the
// tables of its main schema that change capture cannot key exactly (see
// KeyProblem), in table order; untracked names tables left out of capture,
// as Options.Untracked does. Views, virtual tables, their shadow tables and
// sqlite_* tables are never captured and never reported. A schema that does
// not apply returns SQLite's error.
func KeyProblems(ctx context.Context, schema string, untracked []string) ([]*KeyProblem, error) {
	var out []*KeyProblem
	err := probe(ctx, schema, func(cn *conn) error {
		skip := make(map[string]bool, len(untracked))
		for _, t := range untracked {
			skip[foldASCII(t)] = true
		}
		if err := cn.loadMeta(skip); err != nil {
			return err
		}
		for _, m := range cn.meta {
			if m.keyProblem != nil {
				out = append(out, m.keyProblem)
			}
		}
		slices.SortFunc(out, func(a, b *KeyProblem) int { return strings.Compare(a.Table, b.Table) })
		return nil
	})
	return out, err
}

// tableKey is what tells whether the rows of a table can be keyed exactly.
type tableKey struct {
	strict, withoutRowid bool
	names                []string // every column
	key                  []keyCol // the primary-key columns, in key order once loadMeta sorts them
}

// keyCol is a primary-key column.
type keyCol struct {
	pos, cid        int // position in the key (from 1), column index
	name, typ, coll string
	notNull         bool
}

// problem returns why the rows of table cannot be keyed exactly, or nil.
func (t *tableKey) problem(table string) *KeyProblem {
	if len(t.key) == 0 {
		if !t.withoutRowid && rowidName(t.names) == "" {
			return &KeyProblem{Table: table, Reason: "its columns rowid, oid and _rowid_ take every name of its rowid, " +
				"which keys its change records as it declares no primary key, so a row cannot be read back by its key; " +
				"rename one of those columns or declare a primary key"}
		}
		return nil
	}
	// A rowid alias (INTEGER PRIMARY KEY) is the only primary key
	// without an index; its values are integers, never NULL.
	if len(t.key) == 1 && t.key[0].coll == "" {
		return nil
	}
	for _, k := range t.key {
		if p := t.columnProblem(k); p != "" {
			return &KeyProblem{Table: table, Column: k.name, Reason: fmt.Sprintf("its primary-key column %s %s", k.name, p)}
		}
	}
	return nil
}

// columnProblem says why a primary-key column (not a rowid alias) cannot
// key change records exactly, or returns "".
func (t *tableKey) columnProblem(k keyCol) string {
	switch {
	case !t.strict && !t.withoutRowid && !k.notNull:
		return "may hold NULL (SQLite accepts NULL in the primary key of a rowid table that is not STRICT), " +
			"and rows whose keys are NULL cannot be told apart; declare it NOT NULL, or make the table STRICT or WITHOUT ROWID"
	case !strings.EqualFold(k.coll, "BINARY"):
		return fmt.Sprintf("compares with COLLATE %s, under which different values (such as 'a' and 'A' under NOCASE) are one key; "+
			"keep the key BINARY (a UNIQUE index may use the collation)", k.coll)
	case blobAffinity(k.typ, t.strict):
		return fmt.Sprintf("has no type affinity (declared type %q), so it may hold values SQLite finds equal though they differ, "+
			"such as 1 and 1.0; declare it INTEGER, REAL, NUMERIC or TEXT", k.typ)
	}
	return ""
}

// blobAffinity reports whether a column of a declared type keeps every value
// as given: ANY in a STRICT table; otherwise BLOB affinity.
func blobAffinity(typ string, strict bool) bool {
	if strict {
		return strings.EqualFold(typ, "ANY")
	}
	return affinity(typ) == "BLOB"
}

// realAffinity reports whether a column of a declared type has REAL
// affinity: REAL in a STRICT table; otherwise by SQLite's rules.
func realAffinity(typ string, strict bool) bool {
	if strict {
		return strings.EqualFold(typ, "REAL")
	}
	return affinity(typ) == "REAL"
}

// affinity returns the affinity SQLite gives a column of a declared type in
// a table that is not STRICT, by its rules in order: a type naming INT is
// INTEGER; else one naming CHAR, CLOB or TEXT is TEXT; else an empty one or
// one naming BLOB is BLOB; else one naming REAL, FLOA or DOUB is REAL; any
// other is NUMERIC.
func affinity(typ string) string {
	t := strings.ToUpper(typ)
	has := func(s ...string) bool {
		return slices.ContainsFunc(s, func(s string) bool { return strings.Contains(t, s) })
	}
	switch {
	case has("INT"):
		return "INTEGER"
	case has("CHAR", "CLOB", "TEXT"):
		return "TEXT"
	case t == "" || has("BLOB"):
		return "BLOB"
	case has("REAL", "FLOA", "DOUB"):
		return "REAL"
	}
	return "NUMERIC"
}

// rowidName returns the first of the rowid's names (rowid, _rowid_, oid)
// that none of columns takes, ignoring case; "" when they take all three.
func rowidName(columns []string) string {
	for _, name := range []string{"rowid", "_rowid_", "oid"} {
		if !slices.ContainsFunc(columns, func(c string) bool { return SameName(c, name) }) {
			return name
		}
	}
	return ""
}

// How keys are told apart and ordered.

// appendKey encodes key values so that equal keys encode equally.
func appendKey(b []byte, key []any) []byte {
	for _, v := range key {
		switch v := v.(type) {
		case nil:
			b = append(b, 'n')
		case int64:
			b = binary.BigEndian.AppendUint64(append(b, 'i'), uint64(v))
		case float64:
			b = binary.BigEndian.AppendUint64(append(b, 'f'), math.Float64bits(v))
		case string:
			b = binary.BigEndian.AppendUint32(append(b, 't'), uint32(len(v)))
			b = append(b, v...)
		case []byte:
			b = binary.BigEndian.AppendUint32(append(b, 'b'), uint32(len(v)))
			b = append(b, v...)
		}
	}
	return b
}

// CompareKeys orders two KeyValues slices as SQLite sorts values: NULL before
// numbers (integers and reals compared by value), numbers before text (by
// bytes), text before blobs (by bytes). A slice that is a prefix of the other
// sorts first. Values may be nil, any int, uint or float kind, string or
// []byte; other types sort after blobs, by their printed form.
func CompareKeys(a, b []any) int {
	for i := range min(len(a), len(b)) {
		if c := compareValue(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

// value classes in SQLite's sort order.
const (
	classNull = iota
	classNumber
	classText
	classBlob
	classOther
)

// number is a numeric value: an integer when isInt, else a real.
type number struct {
	isInt bool
	i     int64
	f     float64
	big   uint64 // uint values above MaxInt64
}

func classify(v any) (int, number) {
	if v == nil {
		return classNull, number{}
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return classNumber, number{isInt: true, i: rv.Int()}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := rv.Uint()
		if u > math.MaxInt64 {
			return classNumber, number{f: float64(u), big: u}
		}
		return classNumber, number{isInt: true, i: int64(u)}
	case reflect.Float32, reflect.Float64:
		return classNumber, number{f: rv.Float()}
	case reflect.String:
		return classText, number{}
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return classBlob, number{}
		}
	}
	return classOther, number{}
}

func compareValue(a, b any) int {
	ca, na := classify(a)
	cb, nb := classify(b)
	if ca != cb {
		return cmp.Compare(ca, cb)
	}
	switch ca {
	case classNull:
		return 0
	case classNumber:
		return compareNumber(na, nb)
	case classText:
		return strings.Compare(reflect.ValueOf(a).String(), reflect.ValueOf(b).String())
	case classBlob:
		return bytes.Compare(reflect.ValueOf(a).Bytes(), reflect.ValueOf(b).Bytes())
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

func compareNumber(a, b number) int {
	switch {
	case a.isInt && b.isInt:
		return cmp.Compare(a.i, b.i)
	case a.isInt:
		return compareIntReal(a.i, b)
	case b.isInt:
		return -compareIntReal(b.i, a)
	case a.big != 0 && b.big != 0:
		return cmp.Compare(a.big, b.big)
	}
	return cmp.Compare(a.f, b.f)
}

// compareIntReal compares an integer with a real exactly, as SQLite does.
func compareIntReal(i int64, r number) int {
	if r.big != 0 {
		return -1 // r exceeds every int64
	}
	f := r.f
	switch {
	case math.IsNaN(f), f < -9223372036854775808.0:
		return 1
	case f >= 9223372036854775808.0:
		return -1
	}
	t := int64(f) // truncated toward zero, exact in range
	// i equals f's integral part: f's fraction decides.
	return cmp.Or(cmp.Compare(i, t), cmp.Compare(0, f-float64(t)))
}
