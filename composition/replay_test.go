package composition_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/sqlitestore"
)

// The replay property: an episode's change log, replayed onto copies of the
// stores' files as they were before the first call, gives the stores' final
// files, every tracked table row for row; each record's before-image is the
// row as the replay holds it when the record is reached; and a call that
// failed leaves no record of its own (only those of the nested calls that
// committed, and of the direct writes that committed, before it failed).
//
// Episodes are random programs over a composed world: a host with a rowid
// table without a primary key, a rowid alias with UNIQUE, CHECK and VIRTUAL
// and STORED generated columns, a WITHOUT ROWID composite key with
// foreign-key cascades, a STRICT table written by UPSERT and a trigger,
// triggers writing other tables, a trigger that RAISEs ROLLBACK, an
// untracked table and a middleware that writes before its tool and after
// it, whether the tool failed or not; and the same child world added twice
// (two nodes), with a composite key, cascades, a trigger, a CHECK a trigger
// can break, a trigger that RAISEs ROLLBACK, and a middleware of its own
// that writes before and after. Programs run statements (some failing,
// some failures ignored), savepoints (DB.Transaction, some rolled back),
// nested calls to a child's tool through a handle, direct writes on a
// child's store (some in a transaction, some rolled back, some holding
// nested calls to that child), both on the same child's rows in one call,
// statements that fail half-way (ABORT undoes their first rows, OR FAIL
// keeps them), statements that lose the whole transaction (RAISE(ROLLBACK),
// OR ROLLBACK: what runs after them in the frame must fail), transaction
// control (BEGIN, COMMIT, END, ROLLBACK: a WorldBug), savepoint statements
// of their own (SAVEPOINT, RELEASE, ROLLBACK TO, in any order, across
// savepoints and nested calls), DELETEs without WHERE
// whose statements were also prepared where nothing is captured (startup
// hooks, bulk blocks, the instance's DB, before and between calls), and
// calls whose deadline passes before they begin or at a step of a program
// (a cancel with DeadlineExceeded as its cause, no clock involved), and
// fail at the end or not.

const replayHostSchema = `
CREATE TABLE notes (body TEXT, n INTEGER);
CREATE TABLE items (
  id INTEGER PRIMARY KEY,
  sku TEXT UNIQUE,
  qty INTEGER NOT NULL CHECK (qty >= 0),
  twice INTEGER GENERATED ALWAYS AS (qty * 2) VIRTUAL,
  label TEXT GENERATED ALWAYS AS ('item-' || sku) STORED
);
CREATE TABLE tags (
  item INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE ON UPDATE CASCADE,
  tag TEXT NOT NULL,
  w REAL,
  PRIMARY KEY (item, tag)
) WITHOUT ROWID;
CREATE TABLE kv (k TEXT PRIMARY KEY, v ANY) STRICT;
CREATE TABLE audit (seq INTEGER PRIMARY KEY, what TEXT NOT NULL);
CREATE TABLE scratch (k, v);
CREATE TRIGGER items_ins AFTER INSERT ON items BEGIN INSERT INTO audit (what) VALUES ('ins ' || NEW.id); END;
CREATE TRIGGER items_del AFTER DELETE ON items BEGIN INSERT INTO audit (what) VALUES ('del ' || OLD.id); END;
CREATE TRIGGER kv_seven AFTER UPDATE OF v ON kv WHEN NEW.v = 7 BEGIN UPDATE kv SET v = 70 WHERE k = NEW.k; END;
CREATE TRIGGER notes_five BEFORE INSERT ON notes WHEN NEW.n = 5 BEGIN SELECT RAISE(ROLLBACK, 'no note 5'); END;
`

const replayChildSchema = `
CREATE TABLE acct (id TEXT PRIMARY KEY, bal INTEGER NOT NULL DEFAULT 0 CHECK (bal >= -100)) STRICT;
CREATE TABLE moves (
  acct TEXT NOT NULL REFERENCES acct (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  amt INTEGER NOT NULL,
  PRIMARY KEY (acct, seq)
);
CREATE TABLE log (id INTEGER PRIMARY KEY, msg TEXT);
CREATE TRIGGER moves_apply AFTER INSERT ON moves BEGIN UPDATE acct SET bal = bal + NEW.amt WHERE id = NEW.acct; END;
CREATE TRIGGER log_eight BEFORE INSERT ON log WHEN NEW.msg = 'm8' BEGIN SELECT RAISE(ROLLBACK, 'no m8'); END;
`

// replayChildren are the host's child names: one world added twice.
var replayChildren = []string{"child", "b"}

// Step kinds of a replay program.
const (
	stepSQL    = iota // run sql on the tool's own store
	stepTx            // run steps inside DB.Transaction
	stepCall          // call the child's run tool with program sub
	stepDirect        // run sql, or steps in a transaction, on the child's store directly
	stepExpire        // the call's deadline passes
)

// rstep is one step of a replay program.
type rstep struct {
	kind  int
	sql   string
	args  []any
	ctl   bool    // sql begins, commits or rolls back a transaction: a WorldBug
	must  bool    // a failing step fails the tool (else its error is ignored)
	steps []rstep // stepTx, stepDirect in a transaction
	undo  bool    // stepTx, stepDirect: roll the transaction back
	child string  // stepCall, stepDirect
	sub   int     // stepCall
}

// rprog is a program a run tool executes.
type rprog struct {
	steps []rstep
	fail  bool // fail after the steps
}

// replayArgs names the program a run tool executes.
type replayArgs struct {
	P int `json:"p"`
}

// errUndo rolls a savepoint back.
var errUndo = errors.New("undo")

// The statements that delete every row of a table (no WHERE, which SQLite
// would run as a truncation), per store. Each also runs where no change is
// captured (startup hooks, bulk blocks, the instance's DB), so a captured
// call may reuse the statement prepared there.
var (
	replayHostDeleteAll  = []string{`DELETE FROM notes`, `DELETE FROM kv`, `DELETE FROM audit`, `DELETE FROM tags`, `DELETE FROM items`}
	replayChildDeleteAll = []string{`DELETE FROM log`, `DELETE FROM moves`, `DELETE FROM acct`}
)

// replayControl are transaction-control statements a careless tool may run.
var replayControl = []string{`BEGIN`, `BEGIN IMMEDIATE`, `COMMIT`, `END`, `ROLLBACK`}

// replaySavepoint are savepoint statements a tool may run itself.
var replaySavepoint = []string{`SAVEPOINT u`, `RELEASE u`, `ROLLBACK TO u`}

// replayWorld is the composed world of the replay property and the
// programs its tools run.
type replayWorld struct {
	host  *env.World
	progs []rprog

	// Set for each agent call.
	ctx    context.Context
	expire context.CancelCauseFunc // passes the call's deadline
	direct map[string]bool         // the children whose stores the call wrote directly
	called map[string]bool         // the children whose tools the call called
	// bad is the first thing a tool saw go wrong that is no store's
	// business to allow: transaction control that was not a WorldBug.
	bad error
	replayCounts
}

// replayCounts counts what the programs met.
type replayCounts struct {
	lost      int // statements refused after SQLite rolled their transaction back
	ctl       int // transaction-control statements refused
	deleteAll int // DELETEs without WHERE that deleted rows in a call
}

func newReplayWorld() *replayWorld {
	r := &replayWorld{}
	child := env.NewWorld(env.WorldSpec{Name: "ledger", Version: "1.0.0", Schema: replayChildSchema})
	child.Use(func(c *env.Ctx, next func() (any, error)) (any, error) {
		if _, err := c.DB.Exec(`INSERT INTO log (msg) VALUES (?)`, "mw "+c.Call.Tool); err != nil {
			return nil, err
		}
		out, err := next()
		// Written whatever the tool did: after a lost transaction this
		// fails rather than autocommit.
		if _, werr := c.DB.Exec(`INSERT INTO log (msg) VALUES ('mw done')`); err == nil {
			err = werr
		}
		return out, err
	})
	env.Tool(child, "run", "Run a program.", r.run)
	env.OnStartup(child, func(c *env.Ctx, _ struct{}) error { return execAll(c.DB, replayChildDeleteAll) })
	r.host = env.NewWorld(env.WorldSpec{Name: "host", Version: "1.0.0", Schema: replayHostSchema, UntrackedTables: []string{"scratch"}})
	r.host.Use(func(c *env.Ctx, next func() (any, error)) (any, error) {
		res, err := c.DB.Exec(`INSERT INTO audit (what) VALUES (?)`, "mw "+c.Call.Tool)
		if err != nil {
			return nil, err
		}
		out, err := next()
		what := " ok"
		if err != nil {
			what = " failed"
		}
		if _, werr := c.DB.Exec(`UPDATE audit SET what = what || ? WHERE seq = ?`, what, res.LastInsertID); err == nil {
			err = werr
		}
		return out, err
	})
	env.Tool(r.host, "run", "Run a program.", r.run)
	env.OnStartup(r.host, func(c *env.Ctx, _ struct{}) error { return execAll(c.DB, replayHostDeleteAll) })
	r.host.AddWorld(child, env.Name("child"), env.ToolPrefix("c_"))
	r.host.AddWorld(child, env.Name("b"), env.Store("b"), env.ToolPrefix("b_"))
	return r
}

// execAll runs each statement of sqls on db.
func execAll(db env.DB, sqls []string) error {
	for _, q := range sqls {
		if _, err := db.Exec(q); err != nil {
			return err
		}
	}
	return nil
}

// run is the tool of both worlds: it executes program in.P.
func (r *replayWorld) run(c *env.Ctx, in replayArgs) (string, error) {
	p := r.progs[in.P]
	if err := r.steps(c, c.DB, p.steps); err != nil {
		return "", err
	}
	if p.fail {
		return "", env.Errorf("program %d fails", in.P)
	}
	return "ok", nil
}

// transaction runs steps in db.Transaction, rolled back when undo.
func (r *replayWorld) transaction(c *env.Ctx, db env.DB, steps []rstep, undo bool) error {
	err := db.Transaction(func() error {
		if err := r.steps(c, db, steps); err != nil {
			return err
		}
		if undo {
			return errUndo
		}
		return nil
	})
	if errors.Is(err, errUndo) {
		err = nil
	}
	return err
}

func (r *replayWorld) steps(c *env.Ctx, db env.DB, steps []rstep) error {
	for _, s := range steps {
		var err error
		switch s.kind {
		case stepSQL:
			live := r.ctx.Err() == nil
			var res env.Result
			res, err = db.Exec(s.sql, s.args...)
			var bug *env.WorldBug
			switch {
			case s.ctl && live && !errors.As(err, &bug):
				if r.bad == nil {
					r.bad = fmt.Errorf("%s: err = %v, want a WorldBug", s.sql, err)
				}
			case s.ctl && live:
				r.ctl++
			case errors.Is(err, sqlitestore.ErrRolledBack):
				r.lost++
			case err == nil && res.RowsAffected > 0 && !strings.Contains(s.sql, "WHERE") && strings.HasPrefix(s.sql, "DELETE"):
				r.deleteAll++
			}
		case stepTx:
			err = r.transaction(c, db, s.steps, s.undo)
		case stepCall:
			r.called[s.child] = true
			_, err = c.Worlds.Get(s.child).Call("run", replayArgs{P: s.sub})
		case stepDirect:
			r.direct[s.child] = true
			db := c.Worlds.Get(s.child).DB()
			if s.steps == nil {
				_, err = db.Exec(s.sql, s.args...)
				break
			}
			// A transaction of direct writes (and nested calls on the same
			// child), whole or rolled back.
			err = r.transaction(c, db, s.steps, s.undo)
		case stepExpire:
			r.expire(context.DeadlineExceeded)
		}
		if err != nil && s.must {
			return err
		}
	}
	return nil
}

// replayGen makes random programs.
type replayGen struct {
	rnd *rand.Rand
	w   *replayWorld
}

func (g *replayGen) n(k int) int64 { return int64(g.rnd.IntN(k)) }

func (g *replayGen) value() any {
	switch g.rnd.IntN(6) {
	case 0:
		return nil
	case 1:
		return g.n(10)
	case 2:
		return 7.0
	case 3:
		return float64(g.n(10)) / 4
	case 4:
		return fmt.Sprintf("v%d", g.n(5))
	}
	return []byte{byte(g.n(3)), 0xff}
}

func (g *replayGen) hostSQL() (string, []any) {
	id, sku := g.n(10)+1, fmt.Sprintf("s%d", g.n(6))
	switch g.rnd.IntN(22) {
	case 0:
		// n = 5 fires a RAISE(ROLLBACK): the whole transaction is lost.
		return `INSERT INTO notes (body, n) VALUES (?, ?)`, []any{fmt.Sprintf("b%d", g.n(4)), g.n(6)}
	case 1:
		return `UPDATE notes SET n = n + 1 WHERE n % 3 = ?`, []any{g.n(3)}
	case 2:
		return `DELETE FROM notes WHERE n = ?`, []any{g.n(6)}
	case 3:
		return `INSERT INTO items (id, sku, qty) VALUES (?, ?, ?)`, []any{id, sku, g.n(6) - 1}
	case 4:
		return `INSERT OR REPLACE INTO items (id, sku, qty) VALUES (?, ?, ?)`, []any{id, sku, g.n(5)}
	case 5:
		return `INSERT INTO items (id, sku, qty) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET qty = qty + excluded.qty`, []any{id, sku, g.n(5)}
	case 6:
		return `UPDATE items SET qty = qty - 1 WHERE id = ?`, []any{id}
	case 7:
		return `UPDATE items SET id = id + 10 WHERE id = ?`, []any{id}
	case 8:
		return `DELETE FROM items WHERE id = ?`, []any{id}
	case 9:
		return `INSERT INTO tags VALUES (?, ?, ?)`, []any{id, fmt.Sprintf("t%d", g.n(3)), float64(g.n(8)) / 2}
	case 10:
		return `INSERT OR IGNORE INTO tags VALUES (?, ?, ?)`, []any{id, fmt.Sprintf("t%d", g.n(3)), g.n(4)}
	case 11:
		return `UPDATE tags SET w = w * 2 WHERE item = ?`, []any{id}
	case 12:
		return `DELETE FROM tags WHERE tag = ?`, []any{fmt.Sprintf("t%d", g.n(3))}
	case 13:
		return `INSERT INTO kv VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v`, []any{fmt.Sprintf("k%d", g.n(5)), g.value()}
	case 14:
		return `UPDATE kv SET v = ? WHERE k = ?`, []any{g.value(), fmt.Sprintf("k%d", g.n(5))}
	case 15:
		return `DELETE FROM kv WHERE k = ?`, []any{fmt.Sprintf("k%d", g.n(5))}
	case 16:
		return `INSERT INTO scratch VALUES (?, ?)`, []any{g.n(5), g.value()}
	case 17:
		// The second row may break the CHECK: the statement's first row is
		// undone.
		return `INSERT INTO items (id, sku, qty) VALUES (?, ?, 1), (?, ?, ?)`, []any{id, sku, id + 1, sku + "x", g.n(3) - 1}
	case 18:
		// OR FAIL keeps the rows written before the failing one (a taken
		// id or sku, or the last row's qty of -1).
		return `INSERT OR FAIL INTO items (id, sku, qty) SELECT ?1 + value, 'f' || (?1 + value), ?2 - value FROM generate_series(0, 3)`, []any{id, g.n(3) + 1}
	case 19:
		// A taken key rolls the whole transaction back.
		return `INSERT OR ROLLBACK INTO kv VALUES (?, ?)`, []any{fmt.Sprintf("k%d", g.n(12)), g.n(4)}
	case 20:
		return replayHostDeleteAll[g.rnd.IntN(len(replayHostDeleteAll))], nil
	}
	return `UPDATE items SET qty = qty + 1 WHERE id IN (SELECT item FROM tags WHERE tag = ?)`, []any{fmt.Sprintf("t%d", g.n(3))}
}

func (g *replayGen) childSQL() (string, []any) {
	acct := fmt.Sprintf("a%d", g.n(4))
	switch g.rnd.IntN(10) {
	case 0:
		return `INSERT INTO acct (id, bal) VALUES (?, ?)`, []any{acct, g.n(50)}
	case 1:
		return `INSERT OR REPLACE INTO acct (id, bal) VALUES (?, ?)`, []any{acct, g.n(50)}
	case 2, 3:
		return `INSERT INTO moves (acct, seq, amt) VALUES (?, ?, ?)`, []any{acct, g.n(6), g.n(120) - 80}
	case 4:
		return `UPDATE acct SET bal = bal + ? WHERE id = ?`, []any{g.n(60) - 40, acct}
	case 5:
		return `DELETE FROM acct WHERE id = ?`, []any{acct}
	case 6:
		return `DELETE FROM moves WHERE amt < ?`, []any{g.n(40) - 30}
	case 7:
		// A taken key rolls the whole transaction back.
		return `INSERT OR ROLLBACK INTO acct (id, bal) VALUES (?, ?)`, []any{fmt.Sprintf("a%d", g.n(12)), g.n(50)}
	case 8:
		return replayChildDeleteAll[g.rnd.IntN(len(replayChildDeleteAll))], nil
	}
	// m8 fires a RAISE(ROLLBACK).
	return `INSERT INTO log (msg) VALUES (?)`, []any{fmt.Sprintf("m%d", g.n(9))}
}

// prog adds a random program and returns its index: a host program may
// call and write directly each child, in any order, a child program only
// runs statements and savepoints.
func (g *replayGen) prog(host bool) int {
	p := rprog{steps: g.steps(host, "", 0), fail: g.rnd.IntN(6) == 0}
	g.w.progs = append(g.w.progs, p)
	return len(g.w.progs) - 1
}

// steps makes the steps of a program (host: a host program) or of a
// transaction in one. direct names the child whose store the steps run on
// directly, whose tool they may call too; "" for a tool's own store.
func (g *replayGen) steps(host bool, direct string, depth int) []rstep {
	var out []rstep
	for range 1 + g.rnd.IntN(5) {
		s := rstep{must: g.rnd.IntN(2) == 0}
		switch k := g.rnd.IntN(100); {
		case k < 8 && depth < 2:
			s.kind, s.steps, s.undo = stepTx, g.steps(host, direct, depth+1), g.rnd.IntN(3) == 0
		case k < 30 && host && depth <= 1:
			s.child = replayChildren[g.rnd.IntN(len(replayChildren))]
			switch g.rnd.IntN(8) {
			case 0, 1, 2, 3:
				s.kind, s.sub = stepCall, g.prog(false)
			case 4:
				s.kind = stepDirect
				s.steps, s.undo = g.steps(false, s.child, depth+1), g.rnd.IntN(3) == 0
			default:
				s.kind = stepDirect
				s.sql, s.args = g.childSQL()
			}
		case k < 30 && direct != "":
			s.kind, s.child, s.sub = stepCall, direct, g.prog(false)
		case k == 30:
			s.sql, s.ctl = replayControl[g.rnd.IntN(len(replayControl))], true
		case k == 31:
			s.kind = stepExpire
		case k < 35:
			s.sql = replaySavepoint[g.rnd.IntN(len(replaySavepoint))]
		case host:
			s.sql, s.args = g.hostSQL()
		default:
			s.sql, s.args = g.childSQL()
		}
		out = append(out, s)
	}
	return out
}

// replayTable is what the replay knows of one table.
type replayTable struct {
	key   []string        // primary-key columns in key order; nil: keyed by rowid
	cols  []string        // the columns a change record holds (all but VIRTUAL generated)
	store map[string]bool // cols a replay writes (all but generated)
}

// replayStore is one node's file opened for the replay or the comparison.
type replayStore struct {
	s      *sqlitestore.Store
	tables map[string]*replayTable
	names  []string // tracked tables, sorted
}

func openReplayStore(t testing.TB, path string, untracked ...string) *replayStore {
	t.Helper()
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: path})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	rs := &replayStore{s: s, tables: map[string]*replayTable{}}
	rows := mustRows(t, s, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	for _, r := range rows {
		name := r[0].(string)
		if slices.Contains(untracked, name) {
			continue
		}
		rt := &replayTable{store: map[string]bool{}}
		type pk struct {
			pos  int64
			name string
		}
		var pks []pk
		for _, c := range mustRows(t, s, `SELECT name, pk, hidden FROM pragma_table_xinfo(?)`, name) {
			col, pos, hidden := c[0].(string), c[1].(int64), c[2].(int64)
			if hidden != 2 {
				rt.cols = append(rt.cols, col)
			}
			if hidden == 0 {
				rt.store[col] = true
			}
			if pos > 0 {
				pks = append(pks, pk{pos, col})
			}
		}
		slices.SortFunc(pks, func(a, b pk) int { return int(a.pos - b.pos) })
		for _, p := range pks {
			rt.key = append(rt.key, p.name)
		}
		rs.tables[name] = rt
		rs.names = append(rs.names, name)
	}
	return rs
}

func mustRows(t testing.TB, s *sqlitestore.Store, sql string, args ...any) [][]any {
	t.Helper()
	rows, err := s.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return rows.Values
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// where returns the condition and arguments selecting a record's row.
func (rt *replayTable) where(key map[string]any) (string, []any) {
	if rt.key == nil {
		return "rowid = ?", []any{key["rowid"]}
	}
	var conds []string
	var args []any
	for _, k := range rt.key {
		conds = append(conds, quoteIdent(k)+" IS ?")
		args = append(args, key[k])
	}
	return strings.Join(conds, " AND "), args
}

// row reads the row at key as a change record would hold it; nil when there
// is none.
func (rs *replayStore) row(t testing.TB, table string, key map[string]any) map[string]any {
	rt := rs.tables[table]
	cols := make([]string, len(rt.cols))
	for i, c := range rt.cols {
		cols[i] = quoteIdent(c)
	}
	cond, args := rt.where(key)
	rows := mustRows(t, rs.s, "SELECT "+strings.Join(cols, ", ")+" FROM "+quoteIdent(table)+" WHERE "+cond, args...)
	if len(rows) == 0 {
		return nil
	}
	m := map[string]any{}
	for i, c := range rt.cols {
		m[c] = rows[0][i]
	}
	return m
}

// dump returns every row of every tracked table, in key order, with the
// rowid of a table keyed by it.
func (rs *replayStore) dump(t testing.TB) map[string][][]any {
	out := map[string][][]any{}
	for _, name := range rs.names {
		rt := rs.tables[name]
		order := "rowid"
		sel := "rowid, *"
		if rt.key != nil {
			var ks []string
			for _, k := range rt.key {
				ks = append(ks, quoteIdent(k))
			}
			order, sel = strings.Join(ks, ", "), "*"
		}
		out[name] = mustRows(t, rs.s, "SELECT "+sel+" FROM "+quoteIdent(name)+" ORDER BY "+order)
	}
	return out
}

// replayCall applies one call's records to the starting copies: each
// record's before-image must be the row as the replay holds it (the copy,
// or an earlier record of the call); then every row the call touched is
// deleted and its last after-image inserted, which no constraint between
// rows can refuse, as the final rows satisfied them all.
func replayCall(t testing.TB, dbs map[string]*replayStore, recs []env.ChangeRecord) {
	t.Helper()
	ctx := context.Background()
	type touched struct {
		rec     env.ChangeRecord // the first record of the row
		existed bool
		last    map[string]any
	}
	seen := map[string]*touched{}
	var order []*touched
	for _, r := range recs {
		db := dbs[r.World]
		rt := db.tables[r.Table]
		if db == nil || rt == nil {
			t.Fatalf("record %d names %s.%s, which is not a tracked table", r.Seq, r.World, r.Table)
		}
		id := r.World + "\x00" + r.Table + "\x00" + fmt.Sprintf("%#v", keyValues(rt, r.Key))
		tc := seen[id]
		if tc == nil {
			cur := db.row(t, r.Table, r.Key)
			tc = &touched{rec: r, existed: cur != nil, last: cur}
			seen[id] = tc
			order = append(order, tc)
		}
		if !reflect.DeepEqual(tc.last, r.Before) {
			t.Fatalf("record %d (%s %s.%s %v): before %v, but the row is %v", r.Seq, r.Op, r.World, r.Table, r.Key, r.Before, tc.last)
		}
		switch {
		case r.Op == env.OpInsert && r.Before == nil && r.After != nil:
		case r.Op == env.OpDelete && r.Before != nil && r.After == nil:
		case r.Op == env.OpUpdate && r.Before != nil && r.After != nil && !reflect.DeepEqual(r.Before, r.After):
		default:
			t.Fatalf("record %d: op %s with before %v and after %v", r.Seq, r.Op, r.Before, r.After)
		}
		tc.last = r.After
	}
	for _, tc := range order {
		if tc.existed {
			rt := dbs[tc.rec.World].tables[tc.rec.Table]
			cond, args := rt.where(tc.rec.Key)
			if _, err := dbs[tc.rec.World].s.Exec(ctx, "DELETE FROM "+quoteIdent(tc.rec.Table)+" WHERE "+cond, args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range order {
		if tc.last == nil {
			continue
		}
		rt := dbs[tc.rec.World].tables[tc.rec.Table]
		var cols, marks []string
		var args []any
		if rt.key == nil {
			cols, marks, args = append(cols, "rowid"), append(marks, "?"), append(args, tc.rec.Key["rowid"])
		}
		for _, c := range rt.cols {
			if rt.store[c] {
				cols, marks, args = append(cols, quoteIdent(c)), append(marks, "?"), append(args, tc.last[c])
			}
		}
		sql := "INSERT INTO " + quoteIdent(tc.rec.Table) + " (" + strings.Join(cols, ", ") + ") VALUES (" + strings.Join(marks, ", ") + ")"
		if _, err := dbs[tc.rec.World].s.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("replay of %s.%s %v: %v", tc.rec.World, tc.rec.Table, tc.rec.Key, err)
		}
	}
}

func keyValues(rt *replayTable, key map[string]any) []any {
	if rt.key == nil {
		return []any{key["rowid"]}
	}
	out := make([]any, len(rt.key))
	for i, k := range rt.key {
		out[i] = key[k]
	}
	return out
}

// copyNodeFiles copies every node's file of inst into dir and returns the
// copies by node path.
func copyNodeFiles(t testing.TB, inst *composition.Instance, dir string) map[string]string {
	t.Helper()
	inst.Release()
	out := map[string]string{}
	for _, n := range inst.Sealed().Nodes {
		b, err := os.ReadFile(filepath.Join(inst.Dir(), n.File))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, n.File)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out[n.Path] = p
	}
	return out
}

// replayStats counts what an episode exercised.
type replayStats struct {
	records, internal, failed, direct int
	expired                           int // calls that ran past their deadline
	mixed                             int // calls that wrote a child's store directly and called its tool
	replayCounts
}

// errPrepared rolls back a bulk block that only prepared statements.
var errPrepared = errors.New("prepared")

// prepareDeleteAll runs the DELETEs without WHERE where nothing is captured,
// changing nothing: in a bulk block that rolls back, and through the
// instance's DB on the root's tables that are empty. A call that runs one
// then reuses the statement prepared here.
func prepareDeleteAll(t testing.TB, inst *composition.Instance) {
	t.Helper()
	err := inst.Bulk(context.Background(), func(c *env.Ctx) error {
		if err := execAll(c.DB, replayHostDeleteAll); err != nil {
			return err
		}
		for _, child := range replayChildren {
			if err := execAll(c.Worlds.Get(child).DB(), replayChildDeleteAll); err != nil {
				return err
			}
		}
		return errPrepared
	})
	if !errors.Is(err, errPrepared) {
		t.Fatalf("bulk: %v", err)
	}
	for _, q := range replayHostDeleteAll {
		table := strings.TrimPrefix(q, "DELETE FROM ")
		row, err := inst.DB().One("SELECT count(*) AS n FROM " + table)
		if err != nil {
			t.Fatal(err)
		}
		if row["n"] == int64(0) {
			if _, err := inst.DB().Exec(q); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// runReplayEpisode runs one random episode of calls from seed and checks
// the replay property.
func runReplayEpisode(t *testing.T, w *replayWorld, seed uint64, calls int) (st replayStats) {
	ctx := context.Background()
	w.progs = nil
	g := &replayGen{rnd: rand.New(rand.NewPCG(seed, 0x5eed)), w: w}
	dir := t.TempDir()
	inst, err := composition.Open(ctx, w.host, composition.Options{Dir: dir, KeepDir: true, Seed: int64(seed)})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	// A starting state, which is not logged.
	if err := inst.Bulk(ctx, func(c *env.Ctx) error {
		if err := execAll(c.DB, replayHostDeleteAll); err != nil {
			return err
		}
		for _, child := range replayChildren {
			if err := execAll(c.Worlds.Get(child).DB(), replayChildDeleteAll); err != nil {
				return err
			}
		}
		for i := range int64(4) {
			for _, st := range []struct {
				sql  string
				args []any
			}{
				{`INSERT INTO items (id, sku, qty) VALUES (?, ?, 2)`, []any{i + 1, fmt.Sprintf("seed%d", i)}},
				{`INSERT INTO tags VALUES (?, 't0', 1.5)`, []any{i + 1}},
				{`INSERT INTO notes (body, n) VALUES ('seed', ?)`, []any{i}},
				{`INSERT INTO kv VALUES (?, 1)`, []any{fmt.Sprintf("k%d", i)}},
			} {
				if _, err := c.DB.Exec(st.sql, st.args...); err != nil {
					return err
				}
			}
			for _, child := range replayChildren {
				db := c.Worlds.Get(child).DB()
				if _, err := db.Exec(`INSERT INTO acct (id, bal) VALUES ('a' || ?, 10)`, i); err != nil {
					return err
				}
				if _, err := db.Exec(`INSERT INTO moves VALUES ('a' || ?, 9, 1)`, i); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	start := copyNodeFiles(t, inst, t.TempDir())

	type callResult struct {
		failed bool
		direct map[string]bool // the children whose stores the call wrote directly
		tool   string
	}
	var results []callResult
	w.replayCounts = replayCounts{}
	for range calls {
		if g.rnd.IntN(3) == 0 {
			prepareDeleteAll(t, inst)
		}
		tool := "run"
		host := true
		switch g.rnd.IntN(4) {
		case 0:
			tool, host = "c_run", false
		case 1:
			tool, host = "b_run", false
		}
		p := g.prog(host)
		// The deadline passes when a program says so (stepExpire), or
		// before the call begins, as a server's time limit would: no clock
		// is involved.
		w.ctx, w.expire = context.WithCancelCause(ctx)
		if g.rnd.IntN(40) == 0 {
			w.expire(context.DeadlineExceeded)
		}
		w.direct, w.called = map[string]bool{}, map[string]bool{}
		_, err := inst.Call(w.ctx, tool, replayArgs{P: p})
		if w.bad != nil {
			t.Fatalf("call %d (%s): %v", len(results)+1, tool, w.bad)
		}
		if w.ctx.Err() != nil {
			st.expired++
		}
		for c := range w.direct {
			if w.called[c] {
				st.mixed++
				break
			}
		}
		w.expire(nil)
		results = append(results, callResult{failed: err != nil, direct: w.direct, tool: tool})
	}
	st.replayCounts = w.replayCounts
	log := inst.ChangeLog()
	if _, err := json.Marshal(inst.State()); err != nil {
		t.Fatalf("the state document cannot be written: %v", err)
	}
	final := copyNodeFiles(t, inst, t.TempDir())

	byCall := map[int][]env.ChangeRecord{}
	for i, r := range log {
		if r.Seq != i+1 || r.Call < 1 || r.Call > calls || (i > 0 && r.Call < log[i-1].Call) {
			t.Fatalf("record %d: seq %d call %d out of order", i, r.Seq, r.Call)
		}
		byCall[r.Call] = append(byCall[r.Call], r)
	}
	st.records = len(log)
	for _, r := range log {
		if r.Internal {
			st.internal++
		}
	}
	for i, res := range results {
		if len(res.direct) > 0 {
			st.direct++
		}
		if !res.failed {
			continue
		}
		st.failed++
		// A failed call keeps the records of its nested calls and of its
		// direct writes, which committed: nothing of its own frames.
		for _, r := range byCall[i+1] {
			if !r.Internal && !res.direct[r.World] {
				t.Fatalf("call %d (%s) failed, but record %d is its own: %+v", i+1, res.tool, r.Seq, r)
			}
		}
	}

	dbs := map[string]*replayStore{}
	for path, p := range start {
		var untracked []string
		if path == "main" {
			untracked = []string{"scratch"}
		}
		dbs[path] = openReplayStore(t, p, untracked...)
		if _, err := dbs[path].s.Exec(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
			t.Fatal(err)
		}
		for _, r := range mustRows(t, dbs[path].s, `SELECT name FROM sqlite_schema WHERE type = 'trigger'`) {
			if _, err := dbs[path].s.Exec(ctx, "DROP TRIGGER "+quoteIdent(r[0].(string))); err != nil {
				t.Fatal(err)
			}
		}
	}
	for call := 1; call <= calls; call++ {
		replayCall(t, dbs, byCall[call])
	}
	for path, p := range final {
		var untracked []string
		if path == "main" {
			untracked = []string{"scratch"}
		}
		got, want := dbs[path].dump(t), openReplayStore(t, p, untracked...).dump(t)
		for table := range want {
			if !reflect.DeepEqual(got[table], want[table]) {
				t.Fatalf("node %s table %s: replayed\n%v\nfinal\n%v", path, table, got[table], want[table])
			}
		}
	}
	return st
}

// TestChangeLog_Replay checks the replay property on random episodes from a
// fixed seed.
func TestChangeLog_Replay(t *testing.T) {
	w := newReplayWorld()
	episodes := 40
	if testing.Short() {
		episodes = 8
	}
	var total replayStats
	for seed := range uint64(episodes) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			st := runReplayEpisode(t, w, seed, 16)
			total.records += st.records
			total.internal += st.internal
			total.failed += st.failed
			total.direct += st.direct
			total.expired += st.expired
			total.mixed += st.mixed
			total.lost += st.lost
			total.ctl += st.ctl
			total.deleteAll += st.deleteAll
		})
	}
	// The episodes exercised what the property is about.
	if total.records < 10*episodes || total.internal == 0 || total.failed == 0 || total.direct == 0 ||
		total.expired == 0 || total.mixed == 0 || total.lost == 0 || total.ctl == 0 || total.deleteAll == 0 {
		t.Fatalf("the episodes exercised too little: %+v", total)
	}
	t.Logf("%+v", total)
}

// FuzzChangeLog_Replay checks the replay property on the episode a fuzz
// input seeds.
func FuzzChangeLog_Replay(f *testing.F) {
	// 1<<40 + 26 released, from a nested call, a savepoint its host opened
	// directly on the child's store.
	for _, s := range []uint64{1, 2, 3, 1 << 40, 1<<40 + 26} {
		f.Add(s)
	}
	w := newReplayWorld()
	f.Fuzz(func(t *testing.T, seed uint64) { runReplayEpisode(t, w, seed, 16) })
}
