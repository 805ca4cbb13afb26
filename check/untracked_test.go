package check_test

import (
	"context"
	"testing"

	"github.com/seahaven/seahaven/check"
	"github.com/seahaven/seahaven/env"
)

// TestWorld_Untracked: a name in UntrackedTables that the schema does not
// create is SH303, a warning at its world's NewWorld line, also for a world
// added by another; names compare as SQLite's do, so another case and a
// view are no finding.
func TestWorld_Untracked(t *testing.T) {
	crm := env.NewWorld(env.WorldSpec{Name: "crm", Version: "1.0.0", UntrackedTables: []string{"Audit", "audits", "recent"},
		Schema: `CREATE TABLE customers (id TEXT PRIMARY KEY) STRICT;
CREATE TABLE audit (seq INTEGER PRIMARY KEY, tool TEXT NOT NULL) STRICT;
CREATE VIEW recent AS SELECT * FROM audit ORDER BY seq DESC LIMIT 10;`})
	root := newWorld("company")
	root.AddWorld(crm)
	want := `world crm: UntrackedTables names "audits", which its schema does not create (it creates: audit, customers, recent); a misspelt name leaves the table it meant in the change log`
	for _, w := range []*env.World{crm, root} {
		got := check.World(context.Background(), w)
		if len(got) != 1 || got[0].Code != "SH303" || got[0].Pos != crm.Where()+":1" || got[0].Severity != check.SeverityWarning || got[0].Message != want {
			t.Errorf("check %s: findings:\n%s\nwant one SH303 warning at %s:1: %s", w.Name(), check.Format(got), crm.Where(), want)
		}
	}
}
