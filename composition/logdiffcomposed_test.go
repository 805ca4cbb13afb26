package composition_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/env"
)

// The differential test of the change log on a composed world: a host, a
// world "shop" added to it, a world "acct" added both to the host and to
// shop (two routes to one store) and again in the store scope "eu", each
// with a middleware that writes. Its tools write what worlds' authors write
// (upserts, REPLACE, UPDATE ... FROM, RETURNING, INSERT ... SELECT,
// conflict clauses, triggers that RAISE, foreign keys that CASCADE, SET
// NULL or are deferred, WITHOUT ROWID, composite keys, STRICT, generated
// columns, edge values), call each other nested and re-entrant through the
// middleware, write directly to an added world's store, in transactions
// and savepoints, fail, panic and run past their deadline; checkpoints are
// forked and connections released between calls, under frozen and step
// clocks and a bounded log. Each call's records are chained row by row
// (chainLog) and checked for order and numbering, and a fork for the same
// log and rows.

// raceBuild is set in a build with the race detector, which makes the
// differential tests about ten times slower.
var raceBuild bool

// composedDiffSchema is every world's schema.
const composedDiffSchema = `
CREATE TABLE charges (id INTEGER PRIMARY KEY, cust TEXT, amount INTEGER, fee REAL,
  net REAL GENERATED ALWAYS AS (amount - fee) STORED,
  v INTEGER GENERATED ALWAYS AS (amount * 2) VIRTUAL);
CREATE TABLE ledger (acct TEXT NOT NULL, n INTEGER NOT NULL, bal REAL, PRIMARY KEY (acct, n)) WITHOUT ROWID;
CREATE TABLE items (cid INTEGER REFERENCES charges (id) ON DELETE CASCADE, note TEXT);
CREATE TABLE refunds (id INTEGER PRIMARY KEY, cid INTEGER REFERENCES charges (id) ON DELETE SET NULL, v BLOB);
CREATE TABLE audit (id INTEGER PRIMARY KEY AUTOINCREMENT, tool TEXT, node TEXT, phase TEXT);
CREATE TABLE kv (k TEXT PRIMARY KEY, v ANY) STRICT;
CREATE TABLE tot (cust TEXT NOT NULL PRIMARY KEY, sum INTEGER NOT NULL DEFAULT 0);
CREATE TRIGGER ch_ins AFTER INSERT ON charges BEGIN
  INSERT INTO ledger VALUES (coalesce(NEW.cust, '?'), NEW.id, NEW.amount) ON CONFLICT DO UPDATE SET bal = bal + excluded.bal;
  INSERT INTO tot (cust, sum) VALUES (coalesce(NEW.cust, '?'), coalesce(NEW.amount, 0)) ON CONFLICT (cust) DO UPDATE SET sum = sum + excluded.sum;
END;
CREATE TRIGGER ch_del AFTER DELETE ON charges BEGIN
  UPDATE tot SET sum = sum - coalesce(OLD.amount, 0) WHERE cust = coalesce(OLD.cust, '?');
END;
CREATE TRIGGER rf_raise BEFORE INSERT ON refunds WHEN typeof(NEW.v) = 'text' BEGIN
  SELECT CASE NEW.v WHEN 'rollback' THEN RAISE(ROLLBACK, 'refund rolled back') WHEN 'fail' THEN RAISE(FAIL, 'refund failed')
    WHEN 'abort' THEN RAISE(ABORT, 'refund aborted') WHEN 'ignore' THEN RAISE(IGNORE) END;
END;
CREATE TABLE dfk (id INTEGER PRIMARY KEY, cid INTEGER REFERENCES charges (id) DEFERRABLE INITIALLY DEFERRED);`

// composedDiffStores are the paths of the stores: the host's, acct's,
// which its two routes share, shop's, and acct_eu's, in the scope "eu".
var composedDiffStores = []string{"main", "acct", "shop", "acct_eu"}

// composedDiffTools are the host's tools, by the world each runs in.
var composedDiffTools = []struct{ name, world string }{
	{"run", "host"}, {"a_run", "acct"}, {"a_run2", "acct"}, {"s_run", "shop"}, {"eu_run", "acct"},
}

// composedDiffChildren are the worlds added to each world, by name.
var composedDiffChildren = map[string][]struct{ name, world string }{
	"host": {{"acct", "acct"}, {"shop", "shop"}, {"acct_eu", "acct"}},
	"shop": {{"acct", "acct"}},
}

// composedDiffValues are the values written, edge ones included. The
// integer -2^63 and the real -2^63.0, which SQLite finds equal, are keys
// of ledger too (see composedDiffSQL).
var composedDiffValues = []string{
	"0", "1", "2", "-1", "2.5", "-0.0", "0.1", "1e308", "-1e308 * 10",
	"9223372036854775807", "-9223372036854775808", "-9223372036854775808.0", "NULL",
	"'a'", "''", "'a' || char(0) || 'b'", "CAST(x'ff00' AS TEXT)", "x'00ff'", "x''", "zeroblob(0)",
}

// composedDiffArgs are a tool's arguments: the ops it runs (see
// composedDiff.run).
type composedDiffArgs struct {
	Ops []string `json:"ops"`
}

// composedDiff is the test on one seed: its world, whose tools and
// middleware keep their state here, and the instance they run on.
type composedDiff struct {
	host *env.World
	// inst is the instance "self" calls again: a fork replaces it.
	inst *composition.Instance
	// cancel ends the running call's context as its deadline would.
	cancel context.CancelCauseFunc
	// outcomes counts the ops' outcomes by the op's kind and "ok" or the
	// start of its error: statements fail by design, as SQLite refuses
	// them, or as a RAISE, a deadline or a failed transaction ends them.
	outcomes map[string]int
	// bad is an op the test wrote that could not be read.
	bad error
}

// newComposedDiff returns the test with its world built.
func newComposedDiff() *composedDiff {
	d := &composedDiff{outcomes: map[string]int{}}
	world := func(name, node string, tools ...string) *env.World {
		w := env.NewWorld(env.WorldSpec{Name: name, Version: "1.0.0", Schema: composedDiffSchema})
		w.Use(d.middleware(node))
		for _, tool := range tools {
			env.Tool(w, tool, "Run ops.", func(c *env.Ctx, in composedDiffArgs) (any, error) {
				return nil, d.run(c, in.Ops)
			})
		}
		return w
	}
	acct := world("cdacct", "acct", "run", "run2")
	shop := world("cdshop", "shop", "run")
	shop.AddWorld(acct, env.Name("acct"), env.ToolPrefix("x_"))
	d.host = world("cdhost", "host", "run")
	for _, a := range []struct {
		child *env.World
		opts  []env.AddOption
	}{
		{acct, []env.AddOption{env.Name("acct"), env.ToolPrefix("a_")}},
		{shop, []env.AddOption{env.Name("shop"), env.ToolPrefix("s_"), env.ToolAllowList("run")}},
		{acct, []env.AddOption{env.Name("acct_eu"), env.Store("eu"), env.ToolPrefix("eu_")}},
	} {
		d.host.AddWorld(a.child, a.opts...)
	}
	return d
}

// note counts an op's outcome.
func (d *composedDiff) note(kind string, err error) {
	if err == nil {
		d.outcomes[kind+" ok"]++
		return
	}
	m := err.Error()
	if len(m) > 60 {
		m = m[:60]
	}
	d.outcomes[kind+" "+m]++
}

// decode reads the ops of a nested op; one that cannot be read is the
// test's own error, kept in d.bad.
func (d *composedDiff) decode(op, sub string) []string {
	var ops []string
	if err := json.Unmarshal([]byte(sub), &ops); err != nil {
		d.bad = cmp.Or(d.bad, fmt.Errorf("op %q: %w", op, err))
	}
	return ops
}

// run runs ops in c: "sql:SQL" and "rows:SQL" through c.DB's Exec and
// Rows, "call:CHILD:TOOL:OPS" a nested call of an added world's tool,
// "db:CHILD:SQL" directly on an added world's store, "dbtx:CHILD:SQLS"
// and "dbtxfail:CHILD:SQLS" there in a transaction that commits or fails,
// "tx:OPS" and "txfail:OPS" in one on c.DB, "self:TOOL:OPS" a re-entrant
// call of the host's tool, "fail" and "panic" end the call so, "cancel"
// ends its context as its deadline would; "mwswallow:NODE" and
// "mwfail:NODE" tell NODE's middleware (see middleware). OPS and SQLS are
// JSON lists. Statements and nested calls that fail are counted.
func (d *composedDiff) run(c *env.Ctx, ops []string) error {
	for _, op := range ops {
		kind, arg, _ := strings.Cut(op, ":")
		switch kind {
		case "sql":
			_, err := c.DB.Exec(arg)
			d.note(kind, err)
		case "rows":
			_, err := c.DB.Rows(arg)
			d.note(kind, err)
		case "call":
			child, rest, _ := strings.Cut(arg, ":")
			tool, sub, _ := strings.Cut(rest, ":")
			_, err := c.Worlds.Get(child).Call(tool, composedDiffArgs{Ops: d.decode(op, sub)})
			d.note(kind, err)
		case "db":
			child, q, _ := strings.Cut(arg, ":")
			_, err := c.Worlds.Get(child).DB().Exec(q)
			d.note(kind, err)
		case "dbtx", "dbtxfail":
			child, sub, _ := strings.Cut(arg, ":")
			db := c.Worlds.Get(child).DB()
			err := db.Transaction(func() error {
				for _, q := range d.decode(op, sub) {
					_, err := db.Exec(q)
					d.note("db", err)
				}
				if kind == "dbtxfail" {
					return errors.New("dbtxfail fails")
				}
				return nil
			})
			d.note("dbtx", err)
		case "tx", "txfail":
			err := c.DB.Transaction(func() error {
				if err := d.run(c, d.decode(op, arg)); err != nil {
					return err
				}
				if kind == "txfail" {
					return errors.New("txfail fails")
				}
				return nil
			})
			d.note("tx", err)
		case "self":
			tool, sub, _ := strings.Cut(arg, ":")
			_, err := d.inst.Call(c.Context(), tool, composedDiffArgs{Ops: d.decode(op, sub)})
			d.note(kind, err)
		case "fail":
			return errors.New("fails")
		case "panic":
			panic("panics")
		case "cancel":
			d.cancel(context.DeadlineExceeded)
		case "mwswallow", "mwfail":
			// Read by the middleware.
		default:
			d.bad = cmp.Or(d.bad, fmt.Errorf("op %q: no such op", op))
		}
	}
	return nil
}

// middleware returns node's middleware: it writes an audit row before
// next and marks it after, and writes another when next failed. When the
// call's arguments hold "mwswallow:NODE" it swallows next's error, and
// when they hold "mwfail:NODE" it fails after next succeeded.
func (d *composedDiff) middleware(node string) env.Middleware {
	return func(c *env.Ctx, next func() (any, error)) (any, error) {
		args := string(c.Call.Arguments)
		_, err := c.DB.Exec("INSERT INTO audit (tool, node, phase) VALUES (?, ?, ?)", c.Call.Tool, c.Call.Node, node+":pre")
		d.note("mw", err)
		out, err := next()
		if err != nil {
			if strings.Contains(args, "mwswallow:"+node) {
				_, err := c.DB.Exec("UPDATE audit SET phase = phase || ':swallowed' WHERE id = (SELECT max(id) FROM audit)")
				d.note("mw", err)
				return nil, nil
			}
			_, werr := c.DB.Exec("INSERT INTO audit (tool, node, phase) VALUES (?, ?, ?)", c.Call.Tool, c.Call.Node, node+":err")
			d.note("mw", werr)
			return nil, err
		}
		_, err = c.DB.Exec("UPDATE audit SET phase = phase || ':ok' WHERE id = (SELECT max(id) FROM audit)")
		d.note("mw", err)
		if strings.Contains(args, "mwfail:"+node) {
			return nil, errors.New("middleware fails")
		}
		return out, nil
	}
}

// composedDiffSQL returns a random statement, as a "sql:" or "rows:" op.
func composedDiffSQL(r *rand.Rand) string {
	val := func() string { return composedDiffValues[r.IntN(len(composedDiffValues))] }
	cust := func() string { return fmt.Sprintf("'c%d'", r.IntN(3)) }
	id := func() int { return r.IntN(5) }
	conflict := func() string { return []string{"FAIL", "ROLLBACK", "ABORT", "IGNORE", "REPLACE"}[r.IntN(5)] }
	edge := func() string {
		return []string{"9223372036854775807", "-9223372036854775808", "-9223372036854775808.0", "9223372036854775806", "0"}[r.IntN(5)]
	}
	switch r.IntN(33) {
	case 0:
		return fmt.Sprintf("sql:INSERT INTO charges (id, cust, amount, fee) VALUES (%d, %s, %d, %s) ON CONFLICT (id) DO UPDATE SET amount = amount + excluded.amount, fee = excluded.fee", id(), cust(), r.IntN(100), val())
	case 1:
		return fmt.Sprintf("sql:INSERT OR REPLACE INTO charges (id, cust, amount, fee) VALUES (%d, %s, %d, %s)", id(), cust(), r.IntN(100), val())
	case 2:
		return fmt.Sprintf("sql:REPLACE INTO kv VALUES ('k%d', %s)", r.IntN(3), val())
	case 3:
		return "sql:UPDATE charges SET amount = tot.sum FROM tot WHERE tot.cust = charges.cust"
	case 4:
		return fmt.Sprintf("rows:DELETE FROM charges WHERE id = %d RETURNING *", id())
	case 5:
		return "sql:INSERT INTO items (cid, note) SELECT id, cust FROM charges"
	case 6:
		return fmt.Sprintf("sql:INSERT INTO refunds (cid, v) VALUES (%d, %s)", id(), val())
	case 7:
		return fmt.Sprintf("sql:DELETE FROM charges WHERE cust = %s", cust())
	case 8:
		return fmt.Sprintf("sql:UPDATE charges SET id = id + 10 WHERE id = %d", id())
	case 9:
		return fmt.Sprintf("sql:INSERT INTO kv VALUES ('k%d', %s) ON CONFLICT DO NOTHING", r.IntN(3), val())
	case 10:
		return fmt.Sprintf("sql:UPDATE kv SET v = %s", val())
	case 11:
		return fmt.Sprintf("rows:UPDATE ledger SET bal = %s WHERE n = %d RETURNING acct", val(), id())
	case 12:
		return "sql:DELETE FROM items WHERE rowid IN (SELECT min(rowid) FROM items)"
	case 13:
		return fmt.Sprintf("sql:INSERT INTO ledger SELECT cust, id + 100, fee FROM charges WHERE true ON CONFLICT DO UPDATE SET bal = %s", val())
	case 14:
		return fmt.Sprintf("sql:UPDATE refunds SET v = %s WHERE cid IS NULL", val())
	case 15:
		return []string{"sql:SAVEPOINT a", "sql:ROLLBACK TO a", "sql:RELEASE a"}[r.IntN(3)]
	case 16:
		return fmt.Sprintf("sql:INSERT INTO charges (cust, amount, fee) VALUES (%s, %d, %s)", cust(), r.IntN(100), val())
	case 17:
		return "sql:DELETE FROM tot"
	case 18:
		return fmt.Sprintf("sql:UPDATE kv SET v = v || %s WHERE k = 'k%d'", val(), r.IntN(3))
	case 19:
		return "sql:INSERT OR REPLACE INTO tot SELECT cust, count(*) FROM charges GROUP BY cust"
	case 20:
		return fmt.Sprintf("sql:UPDATE charges SET fee = %s", val())
	case 21:
		return fmt.Sprintf("sql:DELETE FROM refunds WHERE id = %d", id())
	case 22:
		return fmt.Sprintf("sql:INSERT INTO refunds (cid, v) SELECT id, %s FROM charges", []string{"'rollback'", "'fail'", "'abort'", "'ignore'", "'x'"}[r.IntN(5)])
	case 23:
		return fmt.Sprintf("sql:INSERT OR %s INTO kv SELECT 'k' || (id %% 3), id FROM charges", conflict())
	case 24:
		return fmt.Sprintf("sql:UPDATE OR %s charges SET id = %d WHERE id >= %d", conflict(), id(), id())
	case 25:
		if r.IntN(3) != 0 {
			return "sql:DELETE FROM dfk"
		}
		return fmt.Sprintf("sql:INSERT INTO dfk (cid) VALUES (%d)", 10+id())
	case 26:
		return fmt.Sprintf("sql:INSERT OR REPLACE INTO kv VALUES (%s, %s)", []string{"'a' || char(0) || 'b'", "'a'", "x'00'", "'a' || char(0)"}[r.IntN(4)], val())
	case 27, 28:
		return fmt.Sprintf("sql:INSERT OR REPLACE INTO ledger VALUES ('x', %s, %s)", edge(), val())
	case 29:
		return fmt.Sprintf("sql:INSERT INTO items (cid, note) VALUES (%d, datetime('now') || random())", id())
	case 30:
		return "sql:DELETE FROM dfk WHERE cid NOT IN (SELECT id FROM charges)"
	case 31:
		return fmt.Sprintf("sql:UPDATE OR %s ledger SET n = %s WHERE acct = 'x' AND n = %s", conflict(), edge(), edge())
	default:
		return fmt.Sprintf("sql:INSERT INTO charges (id, cust, amount, fee) VALUES (%d, %s, %s, %s) ON CONFLICT DO NOTHING", id(), cust(), val(), val())
	}
}

// composedDiffOps returns random ops for a tool of world (host, shop or
// acct), depth levels of nesting at most.
func composedDiffOps(r *rand.Rand, world string, depth int) []string {
	nested := func(world string) string {
		b, err := json.Marshal(composedDiffOps(r, world, depth-1))
		if err != nil {
			panic(err) // a list of strings
		}
		return string(b)
	}
	children := composedDiffChildren[world]
	ops := []string{} // never null in JSON
	for range 1 + r.IntN(5) {
		var op string
		switch k := r.IntN(20); {
		case k < 10:
			op = composedDiffSQL(r)
		case k < 12 && depth > 0 && len(children) > 0:
			ch := children[r.IntN(len(children))]
			tool := "run"
			if ch.world == "acct" && r.IntN(2) == 0 {
				tool = "run2"
			}
			op = "call:" + ch.name + ":" + tool + ":" + nested(ch.world)
		case k < 14 && len(children) > 0:
			ch := children[r.IntN(len(children))]
			q := func() string {
				_, q, _ := strings.Cut(composedDiffSQL(r), ":")
				return q
			}
			if r.IntN(2) == 0 {
				op = "db:" + ch.name + ":" + q()
			} else {
				b, err := json.Marshal([]string{q(), q()})
				if err != nil {
					panic(err) // a list of strings
				}
				op = []string{"dbtx:", "dbtxfail:"}[r.IntN(2)] + ch.name + ":" + string(b)
			}
		case k < 16 && depth > 0:
			op = []string{"tx:", "txfail:"}[r.IntN(2)] + nested(world)
		case k == 16:
			if r.IntN(3) == 0 {
				op = []string{"fail", "panic", "cancel"}[r.IntN(3)]
			}
		case k == 17:
			op = "mwswallow:" + []string{"host", "shop", "acct"}[r.IntN(3)]
		case k == 18:
			if r.IntN(6) == 0 {
				op = "mwfail:" + []string{"host", "shop", "acct"}[r.IntN(3)]
			}
		case k == 19 && depth > 0 && r.IntN(2) == 0:
			tool := composedDiffTools[r.IntN(len(composedDiffTools))]
			op = "self:" + tool.name + ":" + nested(tool.world)
		default:
			op = composedDiffSQL(r)
		}
		if op != "" {
			ops = append(ops, op)
		}
	}
	return ops
}

// snapshot reads every row of every store (see logDiffSnapshot).
func (d *composedDiff) snapshot(t *testing.T) map[string]map[string]any {
	t.Helper()
	return logDiffSnapshot(t, d.inst, composedDiffStores...)
}

// composedDiffOrder checks that records are numbered from seq on, all
// of call, and sorted by world, then table.
func composedDiffOrder(records []env.ChangeRecord, seq, call int) error {
	var errs []error
	for k, r := range records {
		if r.Seq != seq+k {
			errs = append(errs, fmt.Errorf("record %d has seq %d", seq+k, r.Seq))
		}
		if r.Call != call {
			errs = append(errs, fmt.Errorf("record %d is of call %d, the call is %d", r.Seq, r.Call, call))
		}
		if k > 0 {
			p := records[k-1]
			if p.World > r.World || p.World == r.World && p.Table > r.Table {
				errs = append(errs, fmt.Errorf("records %d and %d are out of order", p.Seq, r.Seq))
			}
		}
	}
	return errors.Join(errs...)
}

// TestChangeLog_DifferentialComposed runs the differential test of the
// change log on a composed world on the first 40 seeds (6 under -short or
// the race detector).
func TestChangeLog_DifferentialComposed(t *testing.T) {
	n := 40
	if testing.Short() || raceBuild {
		n = 6
	}
	total := map[string]int{}
	for seed := range uint64(n) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			for k, v := range composedDiffSeed(t, seed) {
				total[k] += v
			}
		})
		if t.Failed() {
			return
		}
	}
	// The seeds exercised what the test is about: statements, nested calls
	// and direct writes that succeed and fail.
	for _, kind := range []string{"sql", "call", "db", "tx", "dbtx"} {
		ok := total[kind+" ok"]
		failed := 0
		for k, v := range total {
			if strings.HasPrefix(k, kind+" ") && k != kind+" ok" {
				failed += v
			}
		}
		if ok == 0 || failed == 0 {
			t.Errorf("%q ops: %d succeeded, %d failed", kind, ok, failed)
		}
	}
	if t.Failed() {
		t.Logf("outcomes: %v", total)
	}
}

// FuzzChangeLog_DifferentialComposed runs the differential test of the
// change log on a composed world on the seed a fuzz input holds.
func FuzzChangeLog_DifferentialComposed(f *testing.F) {
	for _, s := range []uint64{0, 1, 2, 3} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed uint64) { composedDiffSeed(t, seed) })
}

// composedDiffSeed runs the test on one seed: a dozen and a half calls of
// random ops and forks, and returns the ops' outcomes. A failure logs the
// seed and the calls, which it replays.
func composedDiffSeed(t *testing.T, seed uint64) map[string]int {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 7))
	d := newComposedDiff()
	opts := composition.Options{
		Seed:              int64(seed),
		ClockMode:         []string{"frozen", "step"}[seed%2],
		MaxChangeLogBytes: []int64{0, 0, 6000}[seed%3],
	}
	d.inst = compositiontest.Open(t, d.host, opts)
	rows := d.snapshot(t) // as the last call or fork left them
	var calls []string
	defer func() {
		if t.Failed() {
			t.Logf("seed %d, calls:\n%s", seed, strings.Join(calls, "\n"))
		}
	}()
	for range 14 {
		if r.IntN(7) == 0 {
			rows = d.fork(t, opts, rows)
			calls = append(calls, "Fork")
			continue
		}
		tool := composedDiffTools[r.IntN(len(composedDiffTools))]
		b, err := json.Marshal(composedDiffArgs{Ops: composedDiffOps(r, tool.world, 2)})
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, tool.name+" "+string(b))
		before, prev := rows, d.inst.ChangeCount()
		cctx, cancel := context.WithCancelCause(ctx)
		d.cancel = cancel
		_, err = d.inst.CallJSON(cctx, tool.name, b)
		cancel(nil)
		if err != nil {
			calls = append(calls, "  -> "+err.Error())
		}
		if d.bad != nil {
			t.Fatalf("call %s %s: %v", tool.name, b, d.bad)
		}
		after := d.snapshot(t)
		rows = after
		all, dropped := d.inst.ChangeLogAndDropped()
		if count := d.inst.ChangeCount(); count != dropped+len(all) {
			t.Fatalf("call %s %s: the change count is %d, with %d records dropped and %d kept", tool.name, b, count, dropped, len(all))
		}
		if r.IntN(4) == 0 {
			d.inst.Release()
			calls = append(calls, "Release")
		}
		if dropped > prev {
			// The bound dropped records of this call: there is no chain.
			calls = append(calls, "  (records of the call dropped)")
			continue
		}
		log := all[prev-dropped:]
		if err := cmp.Or(composedDiffOrder(log, prev+1, d.inst.State().StepCount), chainLog(before, after, log, recordKey, sameRow)); err != nil {
			t.Fatalf("call %s %s:\n%v\nrecords:\n%s", tool.name, b, err, formatLog(log))
		}
	}
	return d.outcomes
}

// fork checkpoints d's instance, whose rows are rows, opens a fork of it
// with opts, checks that the fork has the same log, count of dropped
// records and rows, replaces d's instance with it and returns its rows.
func (d *composedDiff) fork(t *testing.T, opts composition.Options, rows map[string]map[string]any) map[string]map[string]any {
	t.Helper()
	cp, err := d.inst.Checkpoint(context.Background())
	if err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	opts.Checkpoint = cp
	fork := compositiontest.Open(t, d.host, opts)
	if got, want := fork.ChangeLogDropped(), d.inst.ChangeLogDropped(); got != want {
		t.Fatalf("the fork dropped %d records, the instance %d", got, want)
	}
	if got, want := fork.ChangeCount(), d.inst.ChangeCount(); got != want {
		t.Fatalf("the fork counts %d changes, the instance %d", got, want)
	}
	if got, want := fork.ChangeLog(), d.inst.ChangeLog(); !reflect.DeepEqual(got, want) {
		t.Fatalf("the fork's log differs:\n%s\nthe instance's:\n%s", formatLog(got), formatLog(want))
	}
	old := d.inst
	d.inst = fork
	forked := d.snapshot(t)
	if !maps.EqualFunc(forked, rows, sameRow) {
		t.Fatalf("the fork's rows differ:\n%v\nthe instance's:\n%v", forked, rows)
	}
	if err := old.Close(); err != nil {
		t.Fatalf("closing the forked instance: %v", err)
	}
	return forked
}
