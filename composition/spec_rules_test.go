package composition_test

// Rules of the spec (composition.md) that other tests come near but do not
// pin exactly: each test names the rule's line there.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/env"
)

// TestSpec_BulkEarlierNodesKeepRows (composition.md, line 350): if a node's
// commit fails, bulk() raises and the nodes that committed before it keep
// their rows.
func TestSpec_BulkEarlierNodesKeepRows(t *testing.T) {
	ok := env.NewWorld(env.WorldSpec{Name: "aok", Version: "1", Schema: "CREATE TABLE r (id INTEGER PRIMARY KEY) STRICT;"})
	bad := env.NewWorld(env.WorldSpec{Name: "abad", Version: "1", Schema: `CREATE TABLE p (id INTEGER PRIMARY KEY);
CREATE TABLE c (id INTEGER PRIMARY KEY, p INTEGER REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED);`})
	host := env.NewWorld(env.WorldSpec{Name: "ahost", Version: "1", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(ok)
	host.AddWorld(bad)
	inst := compositiontest.Open(t, host, composition.Options{})
	ctx := context.Background()
	err := inst.Bulk(ctx, func(c *env.Ctx) error {
		if _, err := c.DB.Exec("INSERT INTO h VALUES (1)"); err != nil {
			return err
		}
		if _, err := c.Worlds.Get("aok").DB().Exec("INSERT INTO r VALUES (1)"); err != nil {
			return err
		}
		_, err := c.Worlds.Get("abad").DB().Exec("INSERT INTO c VALUES (1, 99)")
		return err
	})
	if err == nil {
		t.Fatal("bulk with a deferred FK violation succeeded")
	}
	n := func(sql string) int64 {
		r, err := inst.Inspect().One(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		return r["n"].(int64)
	}
	if got := n("SELECT count(*) AS n FROM aok.r"); got != 1 {
		t.Errorf("aok committed before abad failed: rows = %d, want 1", got)
	}
	if got := n("SELECT count(*) AS n FROM abad.c"); got != 0 {
		t.Errorf("abad rows = %d", got)
	}
	if got := n("SELECT count(*) AS n FROM h"); got != 0 {
		t.Errorf("root rows = %d, want 0 (root last)", got)
	}
}

// TestSpec_ChangeLogSortedPathTableKey (composition.md, line 421): the
// records of one call are sorted by path, then table, then key.
func TestSpec_ChangeLogSortedPathTableKey(t *testing.T) {
	mk := func(name string) *env.World {
		return env.NewWorld(env.WorldSpec{Name: name, Version: "1", Schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT) STRICT; CREATE TABLE b (id TEXT PRIMARY KEY) STRICT;"})
	}
	host := mk("srt")
	a, z := mk("aa"), mk("zz")
	host.AddWorld(z)
	host.AddWorld(a)
	env.Tool(host, "go", "Write everywhere.", func(c *env.Ctx, _ noArgs) (any, error) {
		for _, db := range []env.DB{c.DB, c.Worlds.Get("zz").DB(), c.Worlds.Get("aa").DB()} {
			for _, s := range []string{"INSERT INTO t VALUES (10, 'x')", "INSERT INTO t VALUES (2, 'y')", "INSERT INTO b VALUES ('k')", "INSERT INTO t VALUES (-1, 'z')"} {
				if _, err := db.Exec(s); err != nil {
					return nil, err
				}
			}
		}
		return nil, nil
	})
	inst := compositiontest.Open(t, host, composition.Options{})
	compositiontest.Call(t, inst, "go", `{}`)
	var got []string
	for _, r := range inst.ChangeLog() {
		got = append(got, fmt.Sprintf("%s.%s %v", r.World, r.Table, r.Key))
	}
	want := []string{"aa.b map[id:k]", "aa.t map[id:-1]", "aa.t map[id:2]", "aa.t map[id:10]",
		"main.b map[id:k]", "main.t map[id:-1]", "main.t map[id:2]", "main.t map[id:10]",
		"zz.b map[id:k]", "zz.t map[id:-1]", "zz.t map[id:2]", "zz.t map[id:10]"}
	if !slices.Equal(got, want) {
		t.Errorf("order\n got %v\nwant %v", got, want)
	}
}

// TestSpec_ChangeLogNestedThenHostFails (composition.md, line 232): no
// cross-world atomicity, in the change log too.
func TestSpec_ChangeLogNestedThenHostFails(t *testing.T) {
	child := env.NewWorld(env.WorldSpec{Name: "nchild", Version: "1", Schema: "CREATE TABLE c (id INTEGER PRIMARY KEY) STRICT;"})
	env.Tool(child, "put", "Insert.", func(c *env.Ctx, _ noArgs) (any, error) {
		_, err := c.DB.Exec("INSERT INTO c VALUES (1)")
		return nil, err
	})
	env.Tool(child, "putfail", "Insert then fail.", func(c *env.Ctx, _ noArgs) (any, error) {
		if _, err := c.DB.Exec("INSERT INTO c VALUES (2)"); err != nil {
			return nil, err
		}
		return nil, env.Errorf("no")
	})
	host := env.NewWorld(env.WorldSpec{Name: "nhost", Version: "1", Schema: "CREATE TABLE h (id INTEGER PRIMARY KEY) STRICT;"})
	host.AddWorld(child)
	env.Tool(host, "then_fail", "Nested then fail.", func(c *env.Ctx, _ noArgs) (any, error) {
		if _, err := c.DB.Exec("INSERT INTO h VALUES (1)"); err != nil {
			return nil, err
		}
		if _, err := c.Worlds.Get("nchild").Call("put", noArgs{}); err != nil {
			return nil, err
		}
		if _, err := c.DB.Exec("INSERT INTO h VALUES (2)"); err != nil {
			return nil, err
		}
		return nil, env.Errorf("host fails")
	})
	env.Tool(host, "swallow", "Nested fails, host goes on.", func(c *env.Ctx, _ noArgs) (any, error) {
		if _, err := c.DB.Exec("INSERT INTO h VALUES (3)"); err != nil {
			return nil, err
		}
		if _, err := c.Worlds.Get("nchild").Call("putfail", noArgs{}); err == nil {
			return nil, errors.New("putfail succeeded")
		}
		_, err := c.DB.Exec("INSERT INTO h VALUES (4)")
		return nil, err
	})
	env.Tool(host, "direct_then_fail", "Direct write on child, then fail.", func(c *env.Ctx, _ noArgs) (any, error) {
		if _, err := c.Worlds.Get("nchild").DB().Exec("INSERT INTO c VALUES (7)"); err != nil {
			return nil, err
		}
		return nil, env.Errorf("host fails")
	})
	inst := compositiontest.Open(t, host, composition.Options{})
	if _, err := inst.CallJSON(context.Background(), "then_fail", nil); err == nil {
		t.Fatal("then_fail succeeded")
	}
	wantLog(t, inst, "1 put internal nchild c insert map[id:1] after=map[id:1]")
	compositiontest.Call(t, inst, "swallow", `{}`)
	wantLog(t, inst,
		"1 put internal nchild c insert map[id:1] after=map[id:1]",
		"2 swallow main h insert map[id:3] after=map[id:3]",
		"2 swallow main h insert map[id:4] after=map[id:4]",
	)
	if _, err := inst.CallJSON(context.Background(), "direct_then_fail", nil); err == nil {
		t.Fatal("direct_then_fail succeeded")
	}
	wantLog(t, inst,
		"1 put internal nchild c insert map[id:1] after=map[id:1]",
		"2 swallow main h insert map[id:3] after=map[id:3]",
		"2 swallow main h insert map[id:4] after=map[id:4]",
		"3 direct_then_fail nchild c insert map[id:7] after=map[id:7]",
	)
	rows := compositiontest.Rows(t, inst, "SELECT id FROM nchild.c ORDER BY id")
	if fmt.Sprint(rows) != "[map[id:1] map[id:7]]" {
		t.Errorf("child rows %v", rows)
	}
	rows = compositiontest.Rows(t, inst, "SELECT id FROM h ORDER BY id")
	if fmt.Sprint(rows) != "[map[id:3] map[id:4]]" {
		t.Errorf("host rows %v", rows)
	}
}

// TestSpec_StaleAfterBulkAndStartup (composition.md, line 228): a handle
// made in a bulk block dies when the block ends, with the exact message
// (l.269).
func TestSpec_StaleAfterBulkAndStartup(t *testing.T) {
	child := env.NewWorld(env.WorldSpec{Name: "schild2", Version: "1", Schema: "CREATE TABLE c (id INTEGER PRIMARY KEY) STRICT;"})
	host := env.NewWorld(env.WorldSpec{Name: "shost2", Version: "1", Schema: "CREATE TABLE h (id INTEGER PRIMARY KEY) STRICT;"})
	host.AddWorld(child)
	var fromHook *env.Handle
	env.OnStartup(host, func(c *env.Ctx, _ struct{}) error {
		fromHook = c.Worlds.Get("schild2")
		return nil
	})
	inst := compositiontest.Open(t, host, composition.Options{})
	var kept *env.Handle
	var keptDB env.DB
	if err := inst.Bulk(context.Background(), func(c *env.Ctx) error {
		kept = c.Worlds.Get("schild2")
		keptDB = c.DB
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{
		"bulk handle DB":   func() error { _, err := kept.DB().Rows("SELECT * FROM c"); return err }(),
		"bulk ctx DB":      func() error { _, err := keptDB.Rows("SELECT * FROM h"); return err }(),
		"startup handle":   func() error { _, err := fromHook.DB().Rows("SELECT * FROM c"); return err }(),
		"bulk handle call": func() error { _, err := kept.Call("nope", noArgs{}); return err }(),
	} {
		var bug *env.WorldBug
		if !errors.As(err, &bug) || err.Error() != "a world handle was used after the call it belongs to returned" {
			t.Errorf("%s: err = %v", what, err)
		}
	}
}

// TestSpec_InspectDeniesTemp (composition.md, line 420): writes denied on
// the inspection connection, temp schema too.
func TestSpec_InspectDeniesTemp(t *testing.T) {
	inst := compositiontest.Open(t, kvWorld("insp"), composition.Options{})
	for _, sql := range []string{
		"CREATE TEMP TABLE x (a)",
		"CREATE TEMP VIEW v AS SELECT 1",
		"INSERT INTO kv VALUES ('q', 1) RETURNING id",
		"WITH x AS (SELECT 1) INSERT INTO kv SELECT 'a', 1 FROM x",
		"REPLACE INTO kv VALUES ('a', 1)",
		"PRAGMA main.user_version = 3",
		"VACUUM",
		"VACUUM INTO '" + filepath.Join(t.TempDir(), "vacuumed.db") + "'",
		"REINDEX",
		"ANALYZE",
		"PRAGMA optimize",
		"PRAGMA wal_checkpoint(TRUNCATE)",
	} {
		if _, err := inst.Inspect().Rows(context.Background(), sql); err == nil {
			t.Errorf("%s: allowed on the inspection view", sql)
		}
	}
}

func specTree(prefix string) (*env.World, *env.World) {
	child := env.NewWorld(env.WorldSpec{Name: prefix + "pay", Version: "1", Schema: "CREATE TABLE charges (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL) STRICT;"})
	type A struct {
		Amount int `json:"amount"`
	}
	env.Tool(child, "create_charge", "Charge.", func(c *env.Ctx, in A) (int64, error) {
		r, err := c.DB.Exec("INSERT INTO charges (amount) VALUES (?)", in.Amount)
		return r.LastInsertID, err
	})
	host := env.NewWorld(env.WorldSpec{Name: prefix + "co", Version: "1", Schema: "CREATE TABLE invoices (id INTEGER PRIMARY KEY, charge INTEGER) STRICT;"})
	host.AddWorld(child, env.Name("payments"), env.ToolPrefix("pay_"))
	env.Tool(host, "invoice", "Invoice.", func(c *env.Ctx, in A) (int64, error) {
		id, err := c.Worlds.Get("payments").Call("create_charge", A{in.Amount})
		if err != nil {
			return 0, err
		}
		r, err := c.DB.Exec("INSERT INTO invoices (charge) VALUES (?)", id)
		return r.LastInsertID, err
	})
	return host, child
}

// TestSpec_BulkRaisesRollsBackNestedCalls (composition.md, line 350): if the
// block raises, every node rolls back, including what a nested tool call and
// an inst.call made inside the block wrote.
func TestSpec_BulkRaisesRollsBackNestedCalls(t *testing.T) {
	host, _ := specTree("bk")
	inst := compositiontest.Open(t, host, composition.Options{})
	err := inst.Bulk(context.Background(), func(c *env.Ctx) error {
		h := c.Worlds.Get("payments")
		if _, err := h.Call("create_charge", map[string]any{"amount": 1}); err != nil {
			return err
		}
		if _, err := inst.Call(c.Context(), "invoice", map[string]any{"amount": 2}); err != nil {
			return err
		}
		// l.228: the handle stays valid across an inst.call made inside the block.
		if _, err := h.DB().Exec("INSERT INTO charges (amount) VALUES (3)"); err != nil {
			return fmt.Errorf("handle after inst.call: %w", err)
		}
		return errors.New("generator failed")
	})
	if err == nil || err.Error() != "generator failed" {
		t.Fatalf("err = %v", err)
	}
	for _, sql := range []string{"SELECT count(*) AS n FROM payments.charges", "SELECT count(*) AS n FROM invoices"} {
		if r := compositiontest.Rows(t, inst, sql); r[0]["n"] != int64(0) {
			t.Errorf("%s = %v after the block raised", sql, r[0]["n"])
		}
	}
	if log := inst.ChangeLog(); len(log) != 0 {
		t.Errorf("log after failed bulk: %v", log)
	}
}

// TestSpec_StartupFailureRollsBackNestedCalls (composition.md, line 287): a
// hook that raises rolls all of them back (also what a hook did through a
// child's tool), and no instance is left behind.
func TestSpec_StartupFailureRollsBackNestedCalls(t *testing.T) {
	host, child := specTree("st")
	type K struct {
		Fail bool `json:"fail,omitempty"`
	}
	var ran []string
	env.OnStartup(host, func(c *env.Ctx, k K) error {
		ran = append(ran, "host")
		_, err := c.Worlds.Get("payments").Call("create_charge", map[string]any{"amount": 5})
		return err
	})
	env.OnStartup(child, func(c *env.Ctx, k K) error {
		ran = append(ran, "child")
		n, err := c.DB.One("SELECT count(*) AS n FROM charges")
		if err != nil {
			return err
		}
		if n["n"] != int64(1) {
			return fmt.Errorf("child hook sees %v charges, want the host's 1", n["n"])
		}
		if k.Fail {
			return errors.New("child refuses")
		}
		return nil
	})
	inst := compositiontest.Open(t, host, composition.Options{})
	if r := compositiontest.Rows(t, inst, "SELECT count(*) AS n FROM payments.charges"); r[0]["n"] != int64(1) {
		t.Fatalf("charges = %v", r[0]["n"])
	}
	if log := inst.ChangeLog(); len(log) != 0 {
		t.Errorf("startup writes are in the change log: %v", log)
	}
	dir := t.TempDir()
	_, err := composition.Open(context.Background(), host, composition.Options{Dir: dir, Startup: map[string]any{"fail": true}})
	if err == nil {
		t.Fatal("startup failure opened an instance")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a failed startup left %v", ents)
	}
	if want := "[host child host child]"; fmt.Sprint(ran) != want {
		t.Errorf("hooks ran %v, want %s", ran, want)
	}
}

// TestSpec_ChangeLogTags (composition.md, lines 421, 283): an agent call to
// a contributed tool is recorded under the owning node's path and is not
// internal; a host tool's nested call is internal; records of a call sorted
// by path.
func TestSpec_ChangeLogTags(t *testing.T) {
	host, _ := specTree("tg")
	inst := compositiontest.Open(t, host, composition.Options{})
	compositiontest.Call(t, inst, "invoice", `{"amount": 500}`)
	compositiontest.Call(t, inst, "pay_create_charge", `{"amount": 20}`)
	var got []string
	for _, r := range inst.ChangeLog() {
		got = append(got, fmt.Sprintf("%d %d %s %v %s %s %s", r.Seq, r.Call, r.Tool, r.Internal, r.World, r.Table, r.Op))
	}
	want := []string{
		"1 1 invoice false main invoices insert",
		"2 1 create_charge true payments charges insert",
		"3 2 create_charge false payments charges insert",
	}
	if !slices.Equal(got, want) {
		t.Errorf("log\n got %q\nwant %q", got, want)
	}
}

// TestSpec_NestedPath (composition.md, lines 341, 420, 421): nested path a/b
// is file state.a__b.sqlite, inspection schema a__b, and change-log world
// "a/b".
func TestSpec_NestedPath(t *testing.T) {
	tax := env.NewWorld(env.WorldSpec{Name: "ntax", Version: "1", Schema: "CREATE TABLE rates (id INTEGER PRIMARY KEY, r INTEGER) STRICT;"})
	env.Tool(tax, "set_rate", "Set.", func(c *env.Ctx, _ noArgs) (any, error) {
		_, err := c.DB.Exec("INSERT INTO rates VALUES (1, 20)")
		return nil, err
	})
	pay := env.NewWorld(env.WorldSpec{Name: "npay", Version: "1", Schema: "CREATE TABLE charges (id INTEGER PRIMARY KEY) STRICT;"})
	pay.AddWorld(tax, env.Name("tax"))
	host := env.NewWorld(env.WorldSpec{Name: "nco", Version: "1", Schema: "CREATE TABLE staff (id INTEGER PRIMARY KEY) STRICT;"})
	host.AddWorld(pay, env.Name("payments"), env.ToolPrefix("pay_"))
	dir := t.TempDir()
	inst := compositiontest.Open(t, host, composition.Options{Dir: dir})
	if got := toolNames(inst.Tools()); !slices.Equal(got, []string{"pay_set_rate"}) {
		t.Errorf("tools %v", got)
	}
	compositiontest.Call(t, inst, "pay_set_rate", `{}`)
	var files []string
	ents, _ := os.ReadDir(inst.Dir())
	for _, e := range ents {
		if filepath.Ext(e.Name()) == ".sqlite" {
			files = append(files, e.Name())
		}
	}
	if want := []string{"state.payments.sqlite", "state.payments__tax.sqlite", "state.sqlite"}; !slices.Equal(files, want) {
		t.Errorf("files %v, want %v", files, want)
	}
	rows := compositiontest.Rows(t, inst, "SELECT r FROM payments__tax.rates")
	if len(rows) != 1 || rows[0]["r"] != int64(20) {
		t.Errorf("rows %v", rows)
	}
	log := inst.ChangeLog()
	if len(log) != 1 || log[0].World != "payments/tax" || log[0].Internal {
		t.Errorf("log %+v", log)
	}
	var paths []string
	for _, r := range inst.Composition() {
		paths = append(paths, r.Path)
	}
	if fmt.Sprint(paths) != "[main payments payments/tax]" {
		t.Errorf("composition %v", paths)
	}
	st := inst.State()
	if _, ok := st.Composition["payments/tax"]; !ok {
		t.Errorf("state composition keys %v", st.Composition)
	}
}

// TestSpec_StartupOrderLive (composition.md, line 287): depth-first from the
// root, own hooks then added worlds in add_world order; a shared world after
// every world that adds it; once.
func TestSpec_StartupOrderLive(t *testing.T) {
	var ran []string
	mk := func(name string) *env.World {
		w := env.NewWorld(env.WorldSpec{Name: name, Version: "1", Schema: "CREATE TABLE t (id INTEGER PRIMARY KEY) STRICT;"})
		env.OnStartup(w, func(c *env.Ctx, _ struct{}) error {
			ran = append(ran, name)
			return nil
		})
		return w
	}
	root, a, b, c, s := mk("oroot"), mk("oa"), mk("ob"), mk("oc"), mk("os")
	// root adds a, b; a adds c and s; b adds s; c adds s.
	root.AddWorld(a)
	root.AddWorld(b)
	a.AddWorld(c)
	a.AddWorld(s)
	b.AddWorld(s)
	c.AddWorld(s)
	compositiontest.Open(t, root, composition.Options{})
	want := "[oroot oa oc ob os]"
	if fmt.Sprint(ran) != want {
		t.Errorf("ran %v, want %s", ran, want)
	}
}

// TestSpec_TypedAccessLists (composition.md, lines 471-473): inst.call(fn)
// reaches nothing a list keeps off the surface; a handle reaches everything,
// by function and by own name.
func TestSpec_TypedAccessLists(t *testing.T) {
	pay := env.NewWorld(env.WorldSpec{Name: "tpay", Version: "1", Schema: "CREATE TABLE charges (id INTEGER PRIMARY KEY) STRICT;"})
	hidden := env.Tool(pay, "hidden", "Hidden.", func(c *env.Ctx, _ noArgs) (string, error) { return "hidden", nil })
	shown := env.Tool(pay, "shown", "Shown.", func(c *env.Ctx, _ noArgs) (string, error) { return "shown", nil })
	host := env.NewWorld(env.WorldSpec{Name: "tco", Version: "1", Schema: "CREATE TABLE staff (id INTEGER PRIMARY KEY) STRICT;"})
	host.AddWorld(pay, env.Name("payments"), env.ToolPrefix("pay_"), env.ToolBlockList("hidden"))
	env.Tool(host, "via_handle", "Call the hidden one.", func(c *env.Ctx, _ noArgs) (string, error) {
		a, err := env.Call(c.Context(), c.Worlds.Get("payments"), hidden, noArgs{})
		if err != nil {
			return "", err
		}
		b, err := c.Worlds.Get("payments").Call("hidden", noArgs{})
		if err != nil {
			return "", err
		}
		return a + "," + b.(string), nil
	})
	inst := compositiontest.Open(t, host, composition.Options{})
	ctx := context.Background()
	if out, err := env.Call(ctx, inst, shown, noArgs{}); err != nil || out != "shown" {
		t.Errorf("inst shown: %v %v", out, err)
	}
	if out, err := env.Call(ctx, inst, hidden, noArgs{}); err == nil {
		t.Errorf("inst reached a blocked tool: %v", out)
	}
	if out := compositiontest.Call(t, inst, "via_handle", `{}`); out != "hidden,hidden" {
		t.Errorf("via_handle = %v", out)
	}
}
