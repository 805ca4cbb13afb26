package composition_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/sqlitestore"
)

// TestSeal_KeyProblems: a world whose schema has a table the change log
// cannot key exactly is refused at the seal, root or added, with a WorldBug
// at its NewWorld line naming the world, the table and the fix; the same
// table made exact seals.
func TestSeal_KeyProblems(t *testing.T) {
	tests := []struct {
		name   string // case
		schema string // the added world's schema
		table  string // the table refused; "" when it seals
		want   string // a substring of the message
	}{
		{"NullableTextKey", `CREATE TABLE codes (code TEXT PRIMARY KEY, v TEXT);`, "codes", "primary-key column code may hold NULL"},
		{"NotNullTextKey", `CREATE TABLE codes (code TEXT PRIMARY KEY NOT NULL, v TEXT);`, "", ""},
		{"StrictTextKey", `CREATE TABLE codes (code TEXT PRIMARY KEY, v TEXT) STRICT;`, "", ""},
		{"UntypedKey", `CREATE TABLE n (k PRIMARY KEY NOT NULL, v TEXT);`, "n", "such as 1 and 1.0"},
		{"NocaseKey", `CREATE TABLE n (k TEXT PRIMARY KEY COLLATE NOCASE, v TEXT) STRICT;`, "n", "COLLATE NOCASE"},
		{"RowidNamesTaken", `CREATE TABLE r (rowid TEXT, oid TEXT, _rowid_ TEXT);`, "r", "rename one of those columns or declare a primary key"},
		{"RowidAlias", `CREATE TABLE r (id INTEGER PRIMARY KEY, v TEXT);`, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			child := env.NewWorld(env.WorldSpec{Name: "legacy", Version: "1.0.0", Schema: tc.schema})
			root := newWorld("host")
			root.AddWorld(child)
			_, err := composition.Seal(root)
			if tc.table == "" {
				if err != nil {
					t.Fatalf("Seal: %v", err)
				}
				return
			}
			var bug *env.WorldBug
			var kp *sqlitestore.KeyProblem
			if !errors.As(err, &bug) || !errors.As(err, &kp) {
				t.Fatalf("Seal = %v, want a WorldBug wrapping a KeyProblem", err)
			}
			wantMsg := "world legacy: the change log cannot key the rows of table " + tc.table + ": "
			if !strings.HasPrefix(bug.Message, wantMsg) || !strings.Contains(bug.Message, tc.want) {
				t.Fatalf("message %q, want it to start %q and say %q", bug.Message, wantMsg, tc.want)
			}
			if bug.Where != child.Where() || kp.Table != tc.table {
				t.Fatalf("Where %q, table %q; want %q, %q", bug.Where, kp.Table, child.Where(), tc.table)
			}
			// The instance is refused with the same error.
			if _, err := composition.Open(context.Background(), root, composition.Options{Dir: t.TempDir()}); !errors.As(err, &kp) {
				t.Fatalf("Open = %v, want the KeyProblem", err)
			}
		})
	}
	t.Run("Untracked", func(t *testing.T) {
		w := env.NewWorld(env.WorldSpec{Name: "cache", Version: "1.0.0", UntrackedTables: []string{"Scratch"},
			Schema: `CREATE TABLE scratch (k PRIMARY KEY, v);`})
		if _, err := composition.Seal(w); err != nil {
			t.Fatalf("Seal: %v, want an untracked table left alone", err)
		}
	})
	t.Run("EveryTable", func(t *testing.T) {
		w := env.NewWorld(env.WorldSpec{Name: "legacy", Version: "1.0.0",
			Schema: `CREATE TABLE b (k TEXT PRIMARY KEY); CREATE TABLE a (k PRIMARY KEY NOT NULL); CREATE TABLE c (k TEXT PRIMARY KEY NOT NULL);`})
		_, err := composition.Seal(w)
		j, ok := err.(interface{ Unwrap() []error })
		if !ok || len(j.Unwrap()) != 2 || !strings.Contains(j.Unwrap()[0].Error(), "table a:") || !strings.Contains(j.Unwrap()[1].Error(), "table b:") {
			t.Fatalf("Seal = %v, want two WorldBugs, a then b", err)
		}
	})
}

// TestSeal_SchemaDoesNotApply: a world whose schema does not apply is
// refused at the seal, root or added, with a WorldBug at its NewWorld line
// wrapping a *SchemaError that holds SQLite's error, so no server starts
// with it.
func TestSeal_SchemaDoesNotApply(t *testing.T) {
	broken := env.NewWorld(env.WorldSpec{Name: "broken", Version: "1.0.0",
		Schema: `CREATE TABLE b (id TEXT PRIMARY KEY, x INTEGR NOT NULL,) STRICT;`})
	root := newWorld("host")
	root.AddWorld(broken)
	want := `world broken: the schema does not apply: sqlitestore: near ")": syntax error (in statement: CREATE TABLE b (id TEXT PRIMARY KEY, x INTEGR NOT NULL,) STRICT;)`
	for _, w := range []*env.World{broken, root} {
		_, err := composition.Seal(w)
		var bug *env.WorldBug
		var se *composition.SchemaError
		if !errors.As(err, &bug) || !errors.As(err, &se) || bug.Message != want || bug.Where != broken.Where() || se.World != "broken" {
			t.Errorf("Seal(%s) = %v, want a WorldBug at %s wrapping a SchemaError: %s", w.Name(), err, broken.Where(), want)
		}
	}
}

// TestCheckKeys: CheckKeys reaches every world of the tree even when the
// tree does not seal for another reason.
func TestCheckKeys(t *testing.T) {
	bad := env.NewWorld(env.WorldSpec{Name: "legacy", Version: "1.0.0", Schema: `CREATE TABLE codes (code TEXT PRIMARY KEY);`})
	mid := newWorld("mid")
	mid.AddWorld(bad)
	root := newWorld("host")
	root.AddWorld(mid, env.ToolAllowList("nope"))
	if _, err := composition.Seal(root); err == nil || strings.Contains(err.Error(), "codes") {
		t.Fatalf("Seal = %v, want the allow-list error first", err)
	}
	err := composition.CheckKeys(root)
	var kp *sqlitestore.KeyProblem
	if !errors.As(err, &kp) || kp.Table != "codes" || kp.Column != "code" {
		t.Fatalf("CheckKeys = %v, want the KeyProblem of codes.code", err)
	}
	if err := composition.CheckKeys(mid.Clone()); err == nil {
		t.Fatal("CheckKeys of a clone found nothing")
	}
	if err := composition.CheckKeys(newWorld("clean")); err != nil {
		t.Fatalf("CheckKeys = %v, want nil", err)
	}
}

// TestInstance_StateInfinity: a REAL column holding an infinity is logged
// as the float64 infinity, and the state document encodes it as the JSON
// number 1e999 (or -1e999) instead of failing.
func TestInstance_StateInfinity(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "limits", Version: "1.0.0",
		Schema: `CREATE TABLE limits (id TEXT PRIMARY KEY, cap REAL NOT NULL) STRICT;`})
	env.Tool(w, "unlimit", "Lift the caps.", func(c *env.Ctx, _ struct{}) (string, error) {
		_, err := c.DB.Exec(`INSERT INTO limits VALUES ('up', 1e999), ('down', -1e999)`)
		return "ok", err
	})
	inst := compositiontest.Open(t, w, composition.Options{})
	if _, err := inst.CallJSON(context.Background(), "unlimit", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	log := inst.ChangeLog()
	if len(log) != 2 || !math.IsInf(log[0].After["cap"].(float64), -1) || !math.IsInf(log[1].After["cap"].(float64), 1) {
		t.Fatalf("log = %v, want the two infinities", log)
	}
	b, err := json.Marshal(inst.State())
	if err != nil {
		t.Fatalf("the state document cannot be written: %v", err)
	}
	for _, want := range []string{`"after":{"cap":-1e999,"id":"down"}`, `"after":{"cap":1e999,"id":"up"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("state document lacks %s:\n%s", want, b)
		}
	}
}

// TestInstance_KeyProblemAtRunTime: a table a tool creates in a shape the
// change log cannot key fails the call that writes it, which rolls back and
// leaves no record.
func TestInstance_KeyProblemAtRunTime(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "maker", Version: "1.0.0",
		Schema: `CREATE TABLE ok (id INTEGER PRIMARY KEY);`})
	env.Tool(w, "make", "Make a table and write it.", func(c *env.Ctx, _ struct{}) (string, error) {
		for _, s := range []string{
			`INSERT INTO ok VALUES (1)`,
			`CREATE TABLE codes (code TEXT PRIMARY KEY)`,
			`INSERT INTO codes VALUES (NULL), (NULL)`,
		} {
			if _, err := c.DB.Exec(s); err != nil {
				return "", err
			}
		}
		return "made", nil
	})
	inst := compositiontest.Open(t, w, composition.Options{})
	_, err := inst.CallJSON(context.Background(), "make", []byte(`{}`))
	var kp *sqlitestore.KeyProblem
	if !errors.As(err, &kp) || kp.Table != "codes" {
		t.Fatalf("call = %v, want the KeyProblem of codes", err)
	}
	if log := inst.ChangeLog(); len(log) != 0 {
		t.Fatalf("log = %v, want none", log)
	}
	if row, err := inst.Inspect().One(context.Background(), `SELECT (SELECT count(*) FROM ok) AS ok, (SELECT count(*) FROM sqlite_schema WHERE name = 'codes') AS codes`); err != nil || row["ok"] != int64(0) || row["codes"] != int64(0) {
		t.Fatalf("after the call: %v, %v; want nothing left", row, err)
	}
}
