package sqlitestore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/sqlitestore"
)

// keyShapes are the primary-key shapes KeyProblems must judge, one table
// each.
var keyShapes = []struct {
	name   string // subtest name
	schema string // one table, t
	column string // the KeyProblem's column; "-" when none is expected
	reason string // a phrase of the reason; "" when none is expected
}{
	// NULL keys: only a non-STRICT rowid table accepts them.
	{"TextKeyNullable", `CREATE TABLE t (code TEXT PRIMARY KEY, v)`, "code", "may hold NULL"},
	{"TextKeyNotNull", `CREATE TABLE t (code TEXT PRIMARY KEY NOT NULL, v)`, "-", ""},
	{"TextKeyStrict", `CREATE TABLE t (code TEXT PRIMARY KEY, v ANY) STRICT`, "-", ""},
	{"TextKeyWithoutRowid", `CREATE TABLE t (code TEXT PRIMARY KEY, v) WITHOUT ROWID`, "-", ""},
	{"CompositeOneNullable", `CREATE TABLE t (a TEXT NOT NULL, b INTEGER, v, PRIMARY KEY (a, b))`, "b", "may hold NULL"},
	{"CompositeNotNull", `CREATE TABLE t (a TEXT NOT NULL, b INTEGER NOT NULL, v, PRIMARY KEY (a, b))`, "-", ""},
	{"CompositeWithoutRowid", `CREATE TABLE t (a TEXT, b INTEGER, v, PRIMARY KEY (a, b)) WITHOUT ROWID`, "-", ""},
	// INTEGER PRIMARY KEY DESC is not a rowid alias: it may hold NULL.
	{"IntegerKeyDesc", `CREATE TABLE t (id INTEGER PRIMARY KEY DESC, v)`, "id", "may hold NULL"},
	{"RowidAlias", `CREATE TABLE t (id INTEGER PRIMARY KEY, v)`, "-", ""},
	{"RowidAliasTableConstraint", `CREATE TABLE t (id INTEGER, v, PRIMARY KEY (id DESC))`, "-", ""},
	{"IntKeyNotAlias", `CREATE TABLE t (id INT PRIMARY KEY, v)`, "id", "may hold NULL"},
	// Keys SQLite finds equal though they differ.
	{"UntypedKey", `CREATE TABLE t (k PRIMARY KEY NOT NULL, v)`, "k", "no type affinity"},
	{"BlobKey", `CREATE TABLE t (k BLOB PRIMARY KEY NOT NULL, v)`, "k", "no type affinity"},
	{"UntypedKeyWithoutRowid", `CREATE TABLE t (k PRIMARY KEY, v) WITHOUT ROWID`, "k", "no type affinity"},
	{"AnyKeyStrict", `CREATE TABLE t (k ANY PRIMARY KEY, v ANY) STRICT`, "k", "no type affinity"},
	{"BlobKeyStrict", `CREATE TABLE t (k BLOB PRIMARY KEY, v ANY) STRICT`, "-", ""},
	{"RealKey", `CREATE TABLE t (k REAL PRIMARY KEY NOT NULL, v)`, "-", ""},
	{"NumericKey", `CREATE TABLE t (k DECIMAL(10,2) PRIMARY KEY NOT NULL, v)`, "-", ""},
	{"VarcharKey", `CREATE TABLE t (k VARCHAR(20) PRIMARY KEY NOT NULL, v)`, "-", ""},
	{"NocaseKey", `CREATE TABLE t (k TEXT PRIMARY KEY NOT NULL COLLATE NOCASE, v)`, "k", "COLLATE NOCASE"},
	{"RtrimKeyInConstraint", `CREATE TABLE t (a TEXT, b TEXT, v ANY, PRIMARY KEY (a, b COLLATE RTRIM)) STRICT`, "b", "COLLATE RTRIM"},
	{"NocaseUniqueNotKey", `CREATE TABLE t (k TEXT PRIMARY KEY NOT NULL, e TEXT UNIQUE COLLATE NOCASE)`, "-", ""},
	// A rowid with no free name.
	{"RowidNamesTaken", `CREATE TABLE t (rowid TEXT, OID TEXT, _rowid_ TEXT)`, "", "no primary key"},
	{"RowidTwoNamesTaken", `CREATE TABLE t (rowid TEXT, oid TEXT, v TEXT)`, "-", ""},
	{"RowidNamesTakenWithKey", `CREATE TABLE t (rowid TEXT, oid TEXT, _rowid_ TEXT PRIMARY KEY NOT NULL)`, "-", ""},
}

func TestKeyProblems(t *testing.T) {
	ctx := context.Background()
	for _, tc := range keyShapes {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sqlitestore.KeyProblems(ctx, tc.schema, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.reason == "" {
				if len(got) != 0 {
					t.Fatalf("KeyProblems = %v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Table != "t" || got[0].Column != tc.column || !strings.Contains(got[0].Reason, tc.reason) {
				t.Fatalf("KeyProblems = %v, want one on t.%s saying %q", got, tc.column, tc.reason)
			}
		})
	}
	t.Run("Untracked", func(t *testing.T) {
		got, err := sqlitestore.KeyProblems(ctx, `CREATE TABLE T (code TEXT PRIMARY KEY)`, []string{"t"})
		if err != nil || len(got) != 0 {
			t.Fatalf("KeyProblems = %v, %v; want none for an untracked table", got, err)
		}
	})
	t.Run("Ordered", func(t *testing.T) {
		got, err := sqlitestore.KeyProblems(ctx, `CREATE TABLE b (k PRIMARY KEY); CREATE TABLE a (k TEXT PRIMARY KEY); CREATE TABLE c (k TEXT PRIMARY KEY NOT NULL)`, nil)
		if err != nil || len(got) != 2 || got[0].Table != "a" || got[1].Table != "b" {
			t.Fatalf("KeyProblems = %v, %v; want a then b", got, err)
		}
	})
	t.Run("SchemaFails", func(t *testing.T) {
		if _, err := sqlitestore.KeyProblems(ctx, `CREATE TABLE t (`, nil); err == nil {
			t.Fatal("KeyProblems of a broken schema succeeded")
		}
	})
}

// TestCapture_KeyProblem runs, for each refused shape, the statements that
// made the capture describe the rows wrongly, and checks that the capture
// fails instead (naming the table), while an exact shape captures them.
func TestCapture_KeyProblem(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		schema string
		setup  string // before the capture
		act    string // inside it
	}{
		// Two rows keyed NULL: both records would be keyed {code: null}.
		{"NullKeys", `CREATE TABLE t (code TEXT PRIMARY KEY, v TEXT)`, ``,
			`INSERT INTO t VALUES (NULL, 'a'); INSERT INTO t VALUES (NULL, 'b')`},
		// 1.0 replaces 1: read back by key, both keys find the new row.
		{"OneAndOnePointZero", `CREATE TABLE t (k PRIMARY KEY NOT NULL, v TEXT)`, `INSERT INTO t VALUES (1, 'a')`,
			`REPLACE INTO t VALUES (1.0, 'b'); SAVEPOINT s; ROLLBACK TO s`},
		// 'A' replaces 'a' under NOCASE.
		{"Nocase", `CREATE TABLE t (k TEXT PRIMARY KEY NOT NULL COLLATE NOCASE, v TEXT)`, `INSERT INTO t VALUES ('a', 'a')`,
			`REPLACE INTO t VALUES ('A', 'b'); SAVEPOINT s; ROLLBACK TO s`},
		// Keyed by rowid, read back by no name.
		{"RowidNamesTaken", `CREATE TABLE t (rowid TEXT, oid TEXT, _rowid_ TEXT)`, ``,
			`INSERT INTO t VALUES ('a', 'b', 'c'); SAVEPOINT s; ROLLBACK TO s`},
		// A table created inside the capture is judged too.
		{"CreatedInCapture", `CREATE TABLE u (id INTEGER PRIMARY KEY)`, ``,
			`CREATE TABLE t (code TEXT PRIMARY KEY); INSERT INTO t VALUES (NULL)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := MustCreate(t, tc.schema, sqlitestore.Options{})
			if tc.setup != "" {
				if err := s.ExecScript(ctx, tc.setup); err != nil {
					t.Fatal(err)
				}
			}
			c := s.StartCapture()
			f, err := s.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.ExecScript(ctx, tc.act); err != nil {
				t.Fatal(err)
			}
			got, err := c.Finish(ctx)
			f.Rollback()
			var kp *sqlitestore.KeyProblem
			if !errors.As(err, &kp) || kp.Table != "t" {
				t.Fatalf("Finish = %v, %v; want an error wrapping the KeyProblem of t", got, err)
			}
		})
	}
	t.Run("ExactShapeCaptures", func(t *testing.T) {
		s := MustCreate(t, `CREATE TABLE t (k REAL PRIMARY KEY NOT NULL, v TEXT)`, sqlitestore.Options{})
		MustExec(t, s, `INSERT INTO t VALUES (1, 'a')`)
		c := s.StartCapture()
		MustExec(t, s, `REPLACE INTO t VALUES (1.0, 'b')`)
		got, err := c.Finish(ctx)
		if err != nil || len(got) != 1 || got[0].Op != sqlitestore.OpUpdate || got[0].After["v"] != "b" {
			t.Fatalf("Finish = %v, %v; want one update of key 1.0", got, err)
		}
	})
}
