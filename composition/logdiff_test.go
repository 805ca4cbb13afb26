package composition_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
)

// The differential test of the change log: random calls on a composed
// world (direct writes to an added world, nested and re-entrant calls,
// transactions, failures, panics, the raw connection, releases,
// checkpoints restored and forked), each call's records chained row by row
// against full reads of every store before and after it.

type logDiffArgs struct {
	Ops []string `json:"ops"`
}

// logDiffWorld is a host with tables of several key kinds and an added
// world "kv", which has a table of the host's name h; the host's tool "run"
// runs ops (see runOps).
func logDiffWorld() *env.World {
	kv := env.NewWorld(env.WorldSpec{Name: "ldkv", Version: "1.0.0", Schema: `
CREATE TABLE kv (id TEXT PRIMARY KEY, v INTEGER NOT NULL) STRICT;
CREATE TABLE c (id INTEGER PRIMARY KEY, kid TEXT REFERENCES kv (id) ON DELETE CASCADE, r REAL);
CREATE TABLE h (id INTEGER PRIMARY KEY, v TEXT);
CREATE TRIGGER kv_up AFTER UPDATE ON kv WHEN NEW.v = 3 BEGIN INSERT INTO c (kid, r) VALUES (NEW.id, 3); END;`})
	env.Tool(kv, "bump", "Add one to every row.", func(c *env.Ctx, _ noArgs) (any, error) {
		_, err := c.DB.Exec("UPDATE kv SET v = v + 1")
		return nil, err
	})
	env.Tool(kv, "put_fail", "Write, then fail.", func(c *env.Ctx, _ noArgs) (any, error) {
		c.DB.Exec("INSERT OR REPLACE INTO kv VALUES ('f', 1)")
		return nil, errors.New("put_fail fails")
	})
	env.Tool(kv, "txput", "Write in a transaction that fails, write, and write in one that commits.", func(c *env.Ctx, _ noArgs) (any, error) {
		c.DB.Transaction(func() error {
			c.DB.Exec("INSERT OR REPLACE INTO h VALUES (9, 'tx')")
			return errors.New("txput's transaction fails")
		})
		c.DB.Exec("INSERT OR REPLACE INTO kv VALUES ('t', 2)")
		return nil, c.DB.Transaction(func() error {
			_, err := c.DB.Exec("UPDATE h SET v = v || 'ok'")
			return err
		})
	})
	env.Tool(kv, "put_panic", "Write, then panic.", func(c *env.Ctx, _ noArgs) (any, error) {
		c.DB.Exec("DELETE FROM kv WHERE v > 1")
		panic("put_panic panics")
	})
	host := env.NewWorld(env.WorldSpec{Name: "ldhost", Version: "1.0.0", Schema: `
CREATE TABLE h (id INTEGER PRIMARY KEY, v TEXT, r REAL);
CREATE TABLE n (a INTEGER, b TEXT);
CREATE TABLE w (k TEXT NOT NULL, j INTEGER NOT NULL, v, PRIMARY KEY (k, j)) WITHOUT ROWID;`})
	host.AddWorld(kv, env.Name("kv"))
	return host
}

// logDiffInst is the instance "run" runs on: a fork swaps it.
var logDiffInst *composition.Instance

func init() {
	// Registered once: the world is sealed by its first instance.
	logDiffHost = logDiffWorld()
	env.Tool(logDiffHost, "run", "Run ops.", func(c *env.Ctx, in logDiffArgs) (any, error) {
		return nil, runOps(c, in.Ops)
	})
}

var logDiffHost *env.World

// runOps runs ops in c: "h:SQL" on the host's store, "k:SQL" on kv's
// directly, "raw:SQL" on the raw connection of kv's store and "rawh:SQL"
// on the host's, "call:TOOL" a nested call of kv, "self:JSON" a re-entrant
// call of run with the ops in JSON, "tx:JSON" and "txfail:JSON" the ops in
// JSON inside a transaction on kv that commits or fails, "txh:JSON" inside
// one on the host that commits, "fail" and "panic" end the call so.
// Statements that fail, and nested calls that do, are ignored.
func runOps(c *env.Ctx, ops []string) error {
	kv := c.Worlds.Get("kv")
	for _, op := range ops {
		kind, arg, _ := strings.Cut(op, ":")
		var sub []string
		if strings.HasPrefix(arg, "[") {
			if err := json.Unmarshal([]byte(arg), &sub); err != nil {
				return err
			}
		}
		switch kind {
		case "h":
			c.DB.Exec(arg)
		case "k":
			kv.DB().Exec(arg)
		case "raw":
			conn, err := kv.DB().Conn()
			if err != nil {
				return err
			}
			conn.(*sqlite3.Conn).Exec(arg)
		case "rawh":
			conn, err := c.DB.Conn()
			if err != nil {
				return err
			}
			conn.(*sqlite3.Conn).Exec(arg)
		case "txh":
			c.DB.Transaction(func() error { return runOps(c, sub) })
		case "call":
			kv.Call(arg, map[string]any{})
		case "self":
			logDiffInst.Call(c.Context(), "run", logDiffArgs{Ops: sub})
		case "tx", "txfail":
			kv.DB().Transaction(func() error {
				if err := runOps(c, sub); err != nil {
					return err
				}
				if kind == "txfail" {
					return errors.New("txfail fails")
				}
				return nil
			})
		case "fail":
			return errors.New("run fails")
		case "panic":
			panic("run panics")
		}
	}
	return nil
}

var logDiffValues = []string{"0", "1", "2", "3", "-1", "1.0", "2.5", "-0.0", "'a'", "'b'", "NULL", "x'61'"}

// logDiffOps returns random ops, depth levels of nesting at most; wide
// ones draw from more ops: kv's table h, which the host's name shares,
// savepoints, the host's raw connection and transactions, kv's tool txput,
// keys changed, and a table kz created on kv's raw connection (CREATE
// TABLE ... AS SELECT) and dropped through Exec.
func logDiffOps(r *rand.Rand, depth int, wide bool) []string {
	v := func() string { return logDiffValues[r.IntN(len(logDiffValues))] }
	var ops []string
	for range 1 + r.IntN(5) {
		var op string
		k := 20
		if wide {
			k = 31
		}
		switch r.IntN(k) {
		case 0:
			op = fmt.Sprintf("h:INSERT OR REPLACE INTO h VALUES (%d, %s, %s)", r.IntN(4), v(), v())
		case 1:
			op = fmt.Sprintf("h:UPDATE h SET r = %s, v = %s WHERE id = %d", v(), v(), r.IntN(4))
		case 2:
			op = fmt.Sprintf("h:DELETE FROM h WHERE id = %d", r.IntN(4))
		case 3:
			op = fmt.Sprintf("h:INSERT INTO n VALUES (%s, %s), (%s, %s)", v(), v(), v(), v())
		case 4:
			op = fmt.Sprintf("h:DELETE FROM n WHERE a = %s", v())
		case 5:
			op = fmt.Sprintf("h:INSERT INTO w VALUES ('k%d', %d, %s) ON CONFLICT DO UPDATE SET v = excluded.v, j = j + 1", r.IntN(3), r.IntN(3), v())
		case 6:
			op = "h:DELETE FROM w"
		case 7:
			op = fmt.Sprintf("k:INSERT OR REPLACE INTO kv VALUES ('%c', %d)", 'a'+r.IntN(3), r.IntN(4))
		case 8:
			op = fmt.Sprintf("k:DELETE FROM kv WHERE id = '%c'", 'a'+r.IntN(3))
		case 9:
			op = fmt.Sprintf("k:INSERT INTO c (kid, r) VALUES ('%c', %s)", 'a'+r.IntN(3), v())
		case 10:
			op = fmt.Sprintf("raw:UPDATE kv SET v = v * 2 WHERE id = '%c'", 'a'+r.IntN(3))
		case 11, 12:
			op = "call:" + []string{"bump", "put_fail", "put_panic"}[r.IntN(3)]
		case 13, 14:
			if depth > 0 {
				b, _ := json.Marshal(logDiffOps(r, depth-1, wide))
				op = "self:" + string(b)
			}
		case 15, 16:
			if depth > 0 {
				b, _ := json.Marshal(logDiffOps(r, depth-1, wide))
				op = []string{"tx:", "txfail:"}[r.IntN(2)] + string(b)
			}
		case 17:
			if r.IntN(3) == 0 {
				op = []string{"fail", "panic"}[r.IntN(2)]
			}
		case 18:
			op = fmt.Sprintf("h:UPDATE h SET id = id + %d", 1+r.IntN(2))
		case 19:
			op = fmt.Sprintf("k:UPDATE kv SET v = %d", r.IntN(4))
		case 20, 21:
			op = fmt.Sprintf("k:INSERT OR REPLACE INTO h VALUES (%d, %s)", r.IntN(4), v())
		case 22:
			op = []string{"h:", "k:"}[r.IntN(2)] + []string{"SAVEPOINT s", "ROLLBACK TO s", "RELEASE s"}[r.IntN(3)]
		case 23:
			if depth > 0 {
				b, _ := json.Marshal(logDiffOps(r, depth-1, wide))
				op = "txh:" + string(b)
			}
		case 24:
			op = fmt.Sprintf("rawh:UPDATE h SET v = v || 'r' WHERE id = %d", r.IntN(4))
		case 25:
			op = "call:txput"
		case 26:
			op = fmt.Sprintf("k:UPDATE kv SET id = id || 'x' WHERE id = '%c'", 'a'+r.IntN(3))
		case 28:
			op = "raw:CREATE TABLE IF NOT EXISTS kz AS SELECT id, v FROM kv"
		case 29:
			op = "k:DROP TABLE IF EXISTS kz"
		case 30:
			op = fmt.Sprintf("raw:INSERT INTO kz VALUES ('%c', %s)", 'a'+r.IntN(3), v())
		default:
			op = fmt.Sprintf("h:INSERT INTO h (v, r) VALUES (%s, %s) RETURNING id", v(), v())
		}
		if op != "" {
			ops = append(ops, op)
		}
	}
	return ops
}

// logDiffSnapshot reads every row of every store through the inspection
// view, by world, table and key (see sqlfFlat).
func logDiffSnapshot(t *testing.T, inst *composition.Instance, worlds ...string) map[string]map[string]any {
	t.Helper()
	return sqlfFlat(sqlfSnapshotView(t, inst, worlds...), nil, nil, nil)
}

// recordKey is a record's row as logDiffSnapshot names it.
func recordKey(r env.ChangeRecord) string { return sqlfRecordKey(r, nil) }

// sameRow compares two images of a row, either nil for none, value by
// value, types and float bits included.
func sameRow(a, b map[string]any) bool {
	return (a == nil) == (b == nil) && len(a) == len(b) && sqlfSame(a, b)
}

// chainLog chains the records of one call, row by row in log order, from
// the rows before it to the rows after it: each record's before-image is
// the row as the records before it left it, and the rows they end at are
// the rows after it. key names a record's row as the reads do, "" leaving
// the record out; same compares two images of a row, either nil for none.
// An update whose images are the same is an error.
func chainLog(before, after map[string]map[string]any, records []env.ChangeRecord, key func(env.ChangeRecord) string, same func(a, b map[string]any) bool) error {
	var errs []error
	cur := map[string]map[string]any{}
	touched := map[string]bool{}
	for _, r := range records {
		k := key(r)
		if k == "" {
			continue
		}
		row := cur[k]
		if !touched[k] {
			row = before[k]
			touched[k] = true
		}
		if !same(row, r.Before) {
			errs = append(errs, fmt.Errorf("record %d (%s %s %s %s %v): before %v, but the row was %v", r.Seq, r.Tool, r.Op, r.World, r.Table, r.Key, r.Before, row))
		}
		if r.Before != nil && r.After != nil && len(r.Before) == len(r.After) && same(r.Before, r.After) {
			errs = append(errs, fmt.Errorf("record %d (%s %s %s %s %v): an update that changes nothing", r.Seq, r.Tool, r.Op, r.World, r.Table, r.Key))
		}
		cur[k] = r.After
	}
	for k, row := range cur {
		if !same(row, after[k]) {
			errs = append(errs, fmt.Errorf("%q: the records end at %v, the row is %v", k, row, after[k]))
		}
	}
	for k, row := range after {
		if !touched[k] && !same(row, before[k]) {
			errs = append(errs, fmt.Errorf("%q: no record, but the row went from %v to %v", k, before[k], row))
		}
	}
	for k, row := range before {
		if !touched[k] && after[k] == nil {
			errs = append(errs, fmt.Errorf("%q: no record, but the row %v is gone", k, row))
		}
	}
	return errors.Join(errs...)
}

func TestChangeLog_Differential(t *testing.T) { runLogDiff(t, false) }

// TestChangeLog_DifferentialWide is TestChangeLog_Differential with the
// wider ops (see logDiffOps).
func TestChangeLog_DifferentialWide(t *testing.T) { runLogDiff(t, true) }

func runLogDiff(t *testing.T, wide bool) {
	n := 40
	if testing.Short() {
		n = 8
	}
	for seed := range uint64(n) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { logDiffSeed(t, seed, wide) })
		if t.Failed() {
			return
		}
	}
}

// logDiffSeed runs the differential test of the change log on one seed.
func logDiffSeed(t *testing.T, seed uint64, wide bool) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 1))
	inst := openLogDiff(t, composition.Options{Seed: int64(seed)})
	var calls []string
	defer func() {
		if t.Failed() {
			t.Logf("calls:\n%s", strings.Join(calls, "\n"))
		}
	}()
	for range 12 {
		switch r.IntN(6) {
		case 0:
			inst.Release()
			calls = append(calls, "Release")
			continue
		case 1:
			cp, err := inst.Checkpoint(ctx)
			if err != nil {
				t.Fatal(err)
			}
			fork, err := composition.Open(ctx, logDiffHost, composition.Options{Checkpoint: cp, Seed: int64(seed)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { fork.Close() })
			if got, want := len(fork.ChangeLog()), len(inst.ChangeLog()); got != want {
				t.Fatalf("the fork's log holds %d records, the checkpointed instance's %d", got, want)
			}
			inst = fork
			calls = append(calls, "Fork")
			continue
		}
		ops := logDiffOps(r, 2, wide)
		b, _ := json.Marshal(logDiffArgs{Ops: ops})
		calls = append(calls, string(b))
		before := logDiffSnapshot(t, inst, "main", "kv")
		prev := len(inst.ChangeLog())
		logDiffInst = inst
		_, err := inst.CallJSON(ctx, "run", b)
		if err != nil {
			calls = append(calls, "  -> "+err.Error())
		}
		after := logDiffSnapshot(t, inst, "main", "kv")
		log := inst.ChangeLog()[prev:]
		if err := chainLog(before, after, log, recordKey, sameRow); err != nil {
			t.Fatalf("call %s:\n%v\nrecords:\n%s", b, err, formatLog(log))
		}
	}
}

func openLogDiff(t *testing.T, opts composition.Options) *composition.Instance {
	t.Helper()
	opts.Dir = t.TempDir()
	inst, err := composition.Open(context.Background(), logDiffHost, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close() })
	return inst
}
