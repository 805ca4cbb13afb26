package sqlitestore

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/ncruces/go-sqlite3"
)

// bindArgs binds args by position to st, which has params parameters.
func bindArgs(st *sqlite3.Stmt, params int, args []any) error {
	if params != len(args) {
		return fmt.Errorf("sqlitestore: statement has %d parameters, got %d arguments", params, len(args))
	}
	for i, a := range args {
		if err := bindArg(st, i, a); err != nil {
			return err
		}
	}
	return nil
}

// bindArg binds one Go value: nil, bool, every int and uint kind, float32/64,
// string, []byte, time.Time (RFC 3339 text in UTC), json.RawMessage (text),
// named types of those kinds, and pointers to them (nil is NULL).
func bindArg(st *sqlite3.Stmt, i int, a any) error {
	p := i + 1
	switch v := a.(type) {
	case nil:
		return st.BindNull(p)
	case json.RawMessage:
		if v == nil {
			return st.BindNull(p)
		}
		return st.BindText(p, string(v))
	case time.Time:
		return st.BindText(p, v.UTC().Format(time.RFC3339Nano))
	}
	rv := reflect.ValueOf(a)
	switch rv.Kind() {
	case reflect.Bool:
		return st.BindBool(p, rv.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return st.BindInt64(p, rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := rv.Uint()
		if u > math.MaxInt64 {
			return fmt.Errorf("sqlitestore: argument %d: %d overflows a 64-bit signed integer", p, u)
		}
		return st.BindInt64(p, int64(u))
	case reflect.Float32, reflect.Float64:
		return st.BindFloat(p, rv.Float())
	case reflect.String:
		return st.BindText(p, rv.String())
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return st.BindBlob(p, rv.Bytes())
		}
	case reflect.Pointer:
		if rv.IsNil() {
			return st.BindNull(p)
		}
		return bindArg(st, i, rv.Elem().Interface())
	}
	return fmt.Errorf("sqlitestore: argument %d: unsupported type %T", p, a)
}

// readRow copies the current row: nil, int64, float64, string or []byte.
func readRow(st *sqlite3.Stmt, n int) []any {
	row := make([]any, n)
	for i := range n {
		row[i] = copyValue(st.ColumnValue(i))
	}
	return row
}

// copyValue copies a value that is only valid during a callback or until
// its statement steps on: nil, int64, float64, string or []byte.
func copyValue(v sqlite3.Value) any {
	switch v.Type() {
	case sqlite3.INTEGER:
		return v.Int64()
	case sqlite3.FLOAT:
		return v.Float()
	case sqlite3.TEXT:
		return v.Text()
	case sqlite3.BLOB:
		b := v.Blob(nil)
		if b == nil {
			b = []byte{}
		}
		return b
	}
	return nil
}

// RowSize is the size of a row as ReadLimit.MaxBytes counts it: the bytes
// of its text and blob values, and one for every other value. It is never
// more than the row's length in JSON (strings quoted, blobs in base64).
func RowSize(row []any) int64 {
	var n int64
	for _, v := range row {
		switch v := v.(type) {
		case string:
			n += int64(max(len(v), 1))
		case []byte:
			n += int64(max(len(v), 1))
		default:
			n++
		}
	}
	return n
}

// rowSize is RowSize of the statement's current row, read without copying
// a value.
func rowSize(st *sqlite3.Stmt, n int) int64 {
	var size int64
	for i := range n {
		switch st.ColumnType(i) {
		case sqlite3.TEXT:
			size += int64(max(len(st.ColumnRawText(i)), 1))
		case sqlite3.BLOB:
			size += int64(max(len(st.ColumnRawBlob(i)), 1))
		default:
			size++
		}
	}
	return size
}
