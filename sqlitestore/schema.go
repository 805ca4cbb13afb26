package sqlitestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"

	"github.com/ncruces/go-sqlite3"
)

// SchemaHash returns the SHA-256 (hex) of a schema's normalised form: the
// schema is applied to an empty in-memory store, then the sql of every
// sqlite_schema row (sqlite_* internal objects excluded) is sorted and joined
// by "\n". A failing schema returns SQLite's message naming the statement.
func SchemaHash(ctx context.Context, schema string) (string, error) {
	var h string
	err := probe(ctx, schema, func(cn *conn) (err error) {
		h, err = hashSchema(cn)
		return err
	})
	return h, err
}

// SchemaTables returns the names of the tables and views a schema creates
// in its main schema (sqlite_* internal tables excluded), sorted: the
// schema is applied to an empty in-memory store. A failing schema returns
// SQLite's message naming the statement.
func SchemaTables(ctx context.Context, schema string) ([]string, error) {
	var names []string
	err := probe(ctx, schema, func(cn *conn) error {
		rows, err := cn.query(`SELECT name FROM pragma_table_list WHERE schema = 'main' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`, nil)
		if err != nil {
			return err
		}
		for _, r := range rows.Values {
			names = append(names, r[0].(string))
		}
		slices.Sort(names)
		return nil
	})
	return names, err
}

// probe applies schema to an empty in-memory connection and runs fn on it.
// SQLite's errors, fn's included, become package errors.
func probe(ctx context.Context, schema string, fn func(*conn) error) error {
	if ctx.Err() != nil {
		return contextError(ctx)
	}
	return guard(func() error {
		cn, err := openConn(ctx, ":memory:", 0, nil, nil)
		if err != nil {
			return err
		}
		defer cn.close()
		old := cn.c.SetInterrupt(ctx)
		defer cn.c.SetInterrupt(old)
		if err := cn.script(schema, nil, nil, nil); err != nil {
			return formatError(ctx, err)
		}
		return formatError(ctx, fn(cn))
	})
}

// hashSQL reads the schema that SchemaHash hashes.
const hashSQL = `SELECT sql FROM main.sqlite_schema
WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`

func hashSchema(cn *conn) (string, error) {
	rows, err := cn.query(hashSQL, nil)
	if err != nil {
		return "", err
	}
	stmts := make([]string, len(rows.Values))
	for i, r := range rows.Values {
		stmts[i] = r[0].(string)
	}
	slices.Sort(stmts)
	sum := sha256.Sum256([]byte(strings.Join(stmts, "\n")))
	return hex.EncodeToString(sum[:]), nil
}

// AttachLimit reports the maximum number of databases one connection can
// ATTACH in this build of SQLite (10 here). It is probed once and cached; it
// is 0 if SQLite cannot open an in-memory connection at all.
func AttachLimit() int { return attachLimit() }

var attachLimit = sync.OnceValue(func() int {
	c, err := sqlite3.Open(":memory:")
	if err != nil {
		return 0
	}
	defer c.Close()
	return c.Limit(sqlite3.LIMIT_ATTACHED, -1)
})

// SQLite compares names (of tables, columns, savepoints, schemas)
// ignoring the case of ASCII letters only: "É" and "é" are two tables, and
// so are "kv" and "\u212Av" (a Kelvin sign, which Unicode folds to k). The
// store compares them so too.

// foldASCII returns name with its ASCII letters in lower case.
func foldASCII(name string) string {
	b := []byte(name)
	for i, c := range b {
		b[i] = lowerASCII(c)
	}
	return string(b)
}

// SameName reports whether a and b name the same table, column,
// savepoint or schema to SQLite, which ignores the case of ASCII letters
// only.
func SameName(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

// hasPrefixFold reports whether s begins with prefix, ignoring the case of
// ASCII letters.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && SameName(s[:len(prefix)], prefix)
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
