package composition_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/env"
)

type amountArgs struct {
	Amount int64 `json:"amount"`
}

// ledger is a small world: one table, a tool that inserts, one that fails
// after writing.
func ledger(name string) (*env.World, *env.ToolRef[amountArgs, string]) {
	w := env.NewWorld(env.WorldSpec{Name: name, Version: "1.0.0",
		Schema: "CREATE TABLE entries (id TEXT PRIMARY KEY, amount INTEGER NOT NULL, at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, salt BLOB DEFAULT (randomblob(8))) STRICT;"})
	add := env.Tool(w, "add", "Add an entry.", func(c *env.Ctx, in amountArgs) (string, error) {
		id := c.IDs.UUID()
		_, err := c.DB.Exec("INSERT INTO entries (id, amount) VALUES (?, ?)", id, in.Amount)
		return id, err
	})
	env.Tool(w, "add_then_fail", "Add an entry, then fail.", func(c *env.Ctx, in amountArgs) (string, error) {
		if _, err := c.DB.Exec("INSERT INTO entries (id, amount) VALUES (?, ?)", c.IDs.UUID(), in.Amount); err != nil {
			return "", err
		}
		return "", env.Errorf("refused after writing")
	})
	return w, add
}

func TestInstance_ToolErrorRollsBack(t *testing.T) {
	w, _ := ledger("solo")
	inst := compositiontest.Open(t, w, composition.Options{})
	_, err := inst.CallJSON(context.Background(), "add_then_fail", []byte(`{"amount": 3}`))
	te, ok := env.AsToolError(err)
	if !ok || te.Kind != env.KindExecution || te.Message != "refused after writing" {
		t.Fatalf("err = %v", err)
	}
	row, _ := inst.Inspect().One(context.Background(), "SELECT count(*) AS n FROM entries")
	if row["n"] != int64(0) {
		t.Fatalf("rows after a failed call: %v", row["n"])
	}
	if log := inst.ChangeLog(); len(log) != 0 {
		t.Fatalf("change records after a failed call: %+v", log)
	}
}

func TestInstance_BadArgumentsRefusedBeforeTheToolRuns(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "args", Version: "1", Schema: "CREATE TABLE t (x INTEGER) STRICT;"})
	ran := false
	env.Tool(w, "t", "T.", func(c *env.Ctx, in amountArgs) (int, error) { ran = true; return 0, nil })
	inst := compositiontest.Open(t, w, composition.Options{})
	for _, args := range []string{`{"amount": "x"}`, `{}`, `{"amount": 1, "extra": 2}`, `[1]`} {
		_, err := inst.CallJSON(context.Background(), "t", []byte(args))
		te, ok := env.AsToolError(err)
		if !ok || te.Kind != env.KindInvalidArgs {
			t.Fatalf("%s: err = %v, want invalid_args", args, err)
		}
	}
	if ran {
		t.Fatal("the tool ran on bad arguments")
	}
	_, err := inst.CallJSON(context.Background(), "nope", nil)
	if te, ok := env.AsToolError(err); !ok || te.Kind != env.KindNotFound {
		t.Fatalf("unknown tool: %v", err)
	}
}

func TestInstance_Deterministic(t *testing.T) {
	w, _ := ledger("det")
	host := env.NewWorld(env.WorldSpec{Name: "dethost", Version: "1", Schema: "CREATE TABLE h (id TEXT PRIMARY KEY) STRICT;"})
	host.AddWorld(w, env.Name("led"))
	run := func(seed int64) (ids []any, rows string) {
		inst := compositiontest.Open(t, host, composition.Options{Seed: seed})
		for _, a := range []string{`{"amount": 1}`, `{"amount": 2}`} {
			ids = append(ids, compositiontest.Call(t, inst, "add", a))
		}
		r, err := inst.Inspect().Rows(context.Background(), "SELECT id, amount, at, hex(salt) AS salt FROM led.entries ORDER BY amount")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r)
		return ids, string(b)
	}
	ids1, rows1 := run(7)
	ids2, rows2 := run(7)
	ids3, rows3 := run(8)
	if !slices.Equal(ids1, ids2) || rows1 != rows2 {
		t.Fatalf("same seed differs:\n%v %s\n%v %s", ids1, rows1, ids2, rows2)
	}
	if slices.Equal(ids1, ids3) || rows1 == rows3 {
		t.Fatal("different seeds give the same ids and rows")
	}
}

func TestInstance_IDStreamsSaltedByPath(t *testing.T) {
	// Adding a node never perturbs another node's ids; the root's stream is
	// the seed untouched.
	mk := func(extra bool) []any {
		w, _ := ledger("salted")
		host := env.NewWorld(env.WorldSpec{Name: "salthost", Version: "1", Schema: "CREATE TABLE h (id TEXT) STRICT;"})
		env.Tool(host, "rootid", "Root id.", func(c *env.Ctx, _ noArgs) (string, error) { return c.IDs.UUID(), nil })
		if extra {
			o, _ := ledger("other")
			host.AddWorld(o, env.ToolPrefix("o_"))
		}
		host.AddWorld(w, env.Name("led"))
		inst := compositiontest.Open(t, host, composition.Options{Seed: 42})
		return []any{compositiontest.Call(t, inst, "add", `{"amount":1}`), compositiontest.Call(t, inst, "rootid", `{}`)}
	}
	a, b := mk(false), mk(true)
	if !slices.Equal(a, b) {
		t.Fatalf("ids changed when a node was added: %v vs %v", a, b)
	}
	if env.NewIDs(42, "main").UUID() != a[1] {
		t.Fatal("the root's stream is not the seed untouched")
	}
	if env.NewIDs(42, "led").UUID() != a[0] || a[0] == a[1] {
		t.Fatalf("node led drew %v, the root %v: a node's stream is not its own, salted with its path", a[0], a[1])
	}
}

func TestInstance_Clock(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "clocked", Version: "1",
		Schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, at TEXT DEFAULT CURRENT_TIMESTAMP) STRICT;"})
	type out struct{ Default, Query, Ctx string }
	env.Tool(w, "stamp", "Stamp.", func(c *env.Ctx, _ noArgs) (out, error) {
		row, err := c.DB.One("INSERT INTO t DEFAULT VALUES RETURNING at, datetime('now') AS q")
		if err != nil {
			return out{}, err
		}
		return out{row["at"].(string), row["q"].(string), c.Now().Format(time.DateTime)}, nil
	})
	const start = "2026-06-01T09:00:00.000Z"
	for _, mode := range []string{env.ClockFrozen, env.ClockStep, env.ClockWall} {
		t.Run(mode, func(t *testing.T) {
			inst := compositiontest.Open(t, w, composition.Options{Now: start, ClockMode: mode, ControlTools: true})
			first := compositiontest.Call(t, inst, "stamp", `{}`).(out)
			if first.Default != "2026-06-01 09:00:00" || first.Query != first.Default || first.Ctx != first.Default {
				t.Fatalf("first call: %+v", first)
			}
			second := compositiontest.Call(t, inst, "stamp", `{}`).(out)
			switch mode {
			case env.ClockFrozen:
				if second.Default != first.Default {
					t.Fatalf("frozen clock moved: %+v", second)
				}
			case env.ClockStep:
				if second.Default != "2026-06-01 09:00:01" {
					t.Fatalf("step clock: %+v", second)
				}
			case env.ClockWall:
				if second.Default < first.Default {
					t.Fatalf("wall clock went back: %+v", second)
				}
			}
			compositiontest.Call(t, inst, env.ControlTool, `{"action":"set_clock","now":"2030-01-02T03:04:05.000Z"}`)
			compositiontest.Call(t, inst, env.ControlTool, `{"action":"advance_clock","seconds":60}`)
			third := compositiontest.Call(t, inst, "stamp", `{}`).(out)
			if !strings.HasPrefix(third.Default, "2030-01-02 03:05") {
				t.Fatalf("after the control tool: %+v", third)
			}
			if doc := inst.State(); !strings.HasPrefix(doc.Now, "2030-01-02T03:05") || doc.ClockMode != mode {
				t.Fatalf("state now %s mode %s", doc.Now, doc.ClockMode)
			}
		})
	}
}

func TestInstance_ControlToolOnlyWhenEnabled(t *testing.T) {
	w, _ := ledger("ctl")
	inst := compositiontest.Open(t, w, composition.Options{})
	if _, err := inst.CallJSON(context.Background(), env.ControlTool, []byte(`{"action":"advance_clock","seconds":1}`)); err == nil {
		t.Fatal("control tool callable without ControlTools")
	}
	for _, ti := range inst.Tools() {
		if ti.Name == env.ControlTool {
			t.Fatal("control tool listed without ControlTools")
		}
	}
	inst2 := compositiontest.Open(t, w, composition.Options{ControlTools: true})
	tools := inst2.Tools()
	if tools[len(tools)-1].Name != env.ControlTool {
		t.Fatal("control tool is not listed last")
	}
}

func TestMiddleware_RouteChains(t *testing.T) {
	var trace []string
	leaf := env.NewWorld(env.WorldSpec{Name: "leaf", Version: "1", Schema: "CREATE TABLE l (x INTEGER) STRICT;"})
	mid := env.NewWorld(env.WorldSpec{Name: "mid", Version: "1", Schema: "CREATE TABLE m (x INTEGER) STRICT;"})
	top := env.NewWorld(env.WorldSpec{Name: "top", Version: "1", Schema: "CREATE TABLE t (x INTEGER) STRICT;"})
	layer := func(name string) env.Middleware {
		return func(c *env.Ctx, next func() (any, error)) (any, error) {
			trace = append(trace, name+":"+c.State["who"].(string)+":"+c.Call.Node)
			return next()
		}
	}
	for _, w := range []*env.World{leaf, mid, top} {
		w.Use(layer(w.Name()))
		env.OnStartupMap(w, nil, func(c *env.Ctx, _ map[string]any) error { c.State["who"] = w.Name(); return nil })
	}
	top.Use(layer("top2")) // a world's own layers run in registration order, outermost first
	ping := env.Tool(leaf, "ping", "Ping.", func(c *env.Ctx, _ noArgs) (string, error) {
		trace = append(trace, "tool:"+c.State["who"].(string))
		return "pong", nil
	})
	mid.AddWorld(leaf, env.ToolPrefix("l_"))
	top.AddWorld(mid, env.ToolPrefix("m_"))
	env.Tool(top, "host", "Host.", func(c *env.Ctx, _ noArgs) (string, error) {
		return env.Call(c.Context(), c.Worlds.Get("mid"), ping, noArgs{})
	})
	var logs bytes.Buffer
	inst := compositiontest.Open(t, top, composition.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})

	compositiontest.Call(t, inst, "m_l_ping", `{}`)
	want := []string{"top:top:mid/leaf", "top2:top:mid/leaf", "mid:mid:mid/leaf", "leaf:leaf:mid/leaf", "tool:leaf"}
	if !slices.Equal(trace, want) {
		t.Fatalf("agent call trace %v, want %v", trace, want)
	}
	trace = nil
	compositiontest.Call(t, inst, "host", `{}`)
	// The host's chain wraps the host tool; the handle call runs only the
	// owning world's chain.
	want = []string{"top:top:main", "top2:top:main", "leaf:leaf:mid/leaf", "tool:leaf"}
	if !slices.Equal(trace, want) {
		t.Fatalf("handle call trace %v, want %v", trace, want)
	}
	if !strings.Contains(logs.String(), "node=mid/leaf internal=true") || !strings.Contains(logs.String(), "tool=host node=main internal=false") {
		t.Fatalf("log lines:\n%s", logs.String())
	}
}

func TestHandles_NoCrossWorldAtomicity(t *testing.T) {
	child, add := ledger("atom")
	host := env.NewWorld(env.WorldSpec{Name: "atomhost", Version: "1", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(child, env.Name("led"), env.ToolAllowList())
	env.Tool(host, "charge_then_fail", "Charge, write, fail.", func(c *env.Ctx, _ noArgs) (string, error) {
		if _, err := env.Call(c.Context(), c.Worlds.Get("led"), add, amountArgs{Amount: 5}); err != nil {
			return "", err
		}
		c.DB.Exec("INSERT INTO h VALUES (1)")
		return "", errors.New("host failed")
	})
	inst := compositiontest.Open(t, host, composition.Options{})
	if _, err := inst.CallJSON(context.Background(), "charge_then_fail", nil); err == nil {
		t.Fatal("no error")
	}
	v := inst.Inspect()
	h, _ := v.One(context.Background(), "SELECT count(*) AS n FROM h")
	l, _ := v.One(context.Background(), "SELECT count(*) AS n FROM led.entries")
	if h["n"] != int64(0) || l["n"] != int64(1) {
		t.Fatalf("host rows %v (want 0), child rows %v (want 1)", h["n"], l["n"])
	}
	log := inst.ChangeLog()
	if len(log) != 1 || log[0].World != "led" || !log[0].Internal || log[0].Tool != "add" {
		t.Fatalf("change log %+v", log)
	}
}

func TestHandles_Rules(t *testing.T) {
	p, add := ledger("hp")
	host := env.NewWorld(env.WorldSpec{Name: "hhost", Version: "1", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(p, env.Name("one"), env.ToolAllowList())
	host.AddWorld(p, env.Name("two"), env.Store("two"), env.ToolAllowList())
	env.Tool(host, "unknown_child", "U.", func(c *env.Ctx, _ noArgs) (any, error) {
		return c.Worlds.Get("nope").Call("add", amountArgs{1})
	})
	env.Tool(host, "hidden_by_name", "Lists shape the agent's surface only.", func(c *env.Ctx, _ noArgs) (any, error) {
		return c.Worlds.Get("one").Call("add", map[string]any{"amount": 2})
	})
	env.Tool(host, "open_inside", "Never make an instance inside a call.", func(c *env.Ctx, _ noArgs) (any, error) {
		_, err := composition.Open(c.Context(), host, composition.Options{})
		return nil, err
	})
	// Without the call's context too: Open knows its goroutine is in a call.
	env.Tool(host, "open_inside_background", "Never make an instance inside a call.", func(c *env.Ctx, _ noArgs) (any, error) {
		inst, err := composition.Open(context.Background(), host, composition.Options{})
		if inst != nil {
			inst.Close()
		}
		return nil, err
	})
	inst := compositiontest.Open(t, host, composition.Options{})
	var bug *env.WorldBug
	if _, err := inst.CallJSON(context.Background(), "unknown_child", nil); !errors.As(err, &bug) || !strings.Contains(bug.Message, `added no world named "nope"`) {
		t.Fatalf("unknown child: %v", err)
	}
	compositiontest.Call(t, inst, "hidden_by_name", `{}`)
	for _, tool := range []string{"open_inside", "open_inside_background"} {
		if _, err := inst.CallJSON(context.Background(), tool, nil); !errors.As(err, &bug) ||
			bug.Message != "composition.Open: an instance cannot be made inside a call; reach added worlds through ctx.Worlds" {
			t.Fatalf("%s: %v", tool, err)
		}
	}
	// In a Bulk block and a startup hook alike, whatever the context.
	err := inst.Bulk(context.Background(), func(c *env.Ctx) error {
		_, err := composition.Open(context.Background(), host, composition.Options{})
		return err
	})
	if !errors.As(err, &bug) {
		t.Fatalf("Open in a Bulk block: %v", err)
	}
	hooked := env.NewWorld(env.WorldSpec{Name: "hooked", Version: "1", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	env.OnStartup(hooked, func(c *env.Ctx, _ struct{}) error {
		_, err := composition.Open(context.Background(), host, composition.Options{})
		return err
	})
	if _, err := composition.Open(context.Background(), hooked, composition.Options{}); !errors.As(err, &bug) {
		t.Fatalf("Open in a startup hook: %v", err)
	}
	// p is a node twice: env.Call at the instance cannot pick one... and the
	// tool is not on the surface at all (both lists are empty).
	if _, err := env.Call(context.Background(), inst, add, amountArgs{1}); err == nil {
		t.Fatal("ambiguous typed call succeeded")
	}
}

func TestInstance_TypedCallAmbiguous(t *testing.T) {
	p, add := ledger("amb")
	host := env.NewWorld(env.WorldSpec{Name: "ambhost", Version: "1", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(p, env.Name("one"), env.ToolPrefix("one_"))
	host.AddWorld(p, env.Name("two"), env.Store("two"), env.ToolPrefix("two_"))
	inst := compositiontest.Open(t, host, composition.Options{})
	_, err := env.Call(context.Background(), inst, add, amountArgs{1})
	var bug *env.WorldBug
	if !errors.As(err, &bug) || !strings.Contains(bug.Message, "one_add at one") || !strings.Contains(bug.Message, "two_add at two") {
		t.Fatalf("err = %v", err)
	}
}

func TestStartup_Rules(t *testing.T) {
	var order []string
	child := env.NewWorld(env.WorldSpec{Name: "schild", Version: "1", Schema: "CREATE TABLE c (who TEXT) STRICT;"})
	host := env.NewWorld(env.WorldSpec{Name: "shost", Version: "1", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	type K struct {
		Fail bool `json:"fail,omitempty"`
	}
	env.OnStartup(host, func(c *env.Ctx, k K) error {
		order = append(order, "host")
		// A host hook writes into a child's store and state before the
		// child's own hooks run.
		c.Worlds.Get("schild").State()["seeded"] = true
		_, err := c.Worlds.Get("schild").DB().Exec("INSERT INTO c VALUES ('host')")
		if k.Fail {
			return errors.New("refused")
		}
		return err
	})
	env.OnStartup(child, func(c *env.Ctx, k K) error {
		order = append(order, "child")
		if c.State["seeded"] != true {
			return errors.New("the host's hook did not run first")
		}
		_, err := c.DB.Exec("INSERT INTO c VALUES ('child')")
		return err
	})
	host.AddWorld(child)
	inst := compositiontest.Open(t, host, composition.Options{})
	if !slices.Equal(order, []string{"host", "child"}) {
		t.Fatalf("order %v", order)
	}
	rows, _ := inst.Inspect().Rows(context.Background(), "SELECT who FROM schild.c ORDER BY who")
	if len(rows) != 2 {
		t.Fatalf("rows %v", rows)
	}

	// A hook that fails rolls everything back and leaves no instance.
	dir := t.TempDir()
	_, err := composition.Open(context.Background(), host, composition.Options{Dir: dir, Startup: map[string]any{"fail": true}})
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("err = %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a failed startup left %v", ents)
	}
	// An unknown broadcast keyword is refused before any file is touched.
	_, err = composition.Open(context.Background(), host, composition.Options{Dir: dir, Startup: map[string]any{"colour": 1}})
	var bug *env.WorldBug
	if !errors.As(err, &bug) || !strings.Contains(bug.Message, `unknown startup keyword "colour"`) {
		t.Fatalf("err = %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("an unknown keyword touched files: %v", ents)
	}
	// Several are each quoted, where the message quoted them as one
	// string ("colour\", \"size"), and a client's megabyte of keywords
	// is not repeated.
	for _, tt := range []struct {
		startup map[string]any
		want    string
	}{
		{map[string]any{"size": 1, "colour": 2}, `unknown startup keywords "colour", "size": no startup hook of shost's tree accepts them (accepted: fail)`},
		{map[string]any{strings.Repeat("k", 1<<20): 1}, `unknown startup keyword "` + strings.Repeat("k", 1023) + `… (1048578 bytes, not echoed): no startup hook`},
		// A value the hook would not decode is refused as early, with the
		// error the hook's run fails with.
		{map[string]any{"fail": "yes"}, `startup hook of shost (node main): startup keywords: invalid arguments: field "fail": expected boolean, got string`},
	} {
		_, err = composition.Open(context.Background(), host, composition.Options{Dir: dir, Startup: tt.startup})
		if !errors.As(err, &bug) || !errors.Is(err, composition.ErrStartupRefused) || !strings.HasPrefix(bug.Message, tt.want) {
			t.Errorf("err = %.2000v, want a WorldBug wrapping ErrStartupRefused starting %.2000s", err, tt.want)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("refused keywords touched files: %v", ents)
		}
	}
}

func TestStartup_BoundKeywordIsNotTheCallers(t *testing.T) {
	// A keyword bound on a node never reaches that node's hook from the
	// caller, so a broadcast value the hook would refuse refuses nothing.
	pay := env.NewWorld(env.WorldSpec{Name: "sbpay", Version: "1", Schema: "CREATE TABLE c (x INTEGER) STRICT;"})
	type K struct {
		Region string `json:"region,omitempty"`
	}
	env.OnStartup(pay, func(c *env.Ctx, k K) error { c.State["region"] = k.Region; return nil })
	host := env.NewWorld(env.WorldSpec{Name: "sbhost", Version: "1", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(pay, env.Name("pay"), env.Startup(map[string]any{"region": "eu"}))
	env.Tool(host, "region", "The payments account's region.", func(c *env.Ctx, _ noArgs) (any, error) {
		return c.Worlds.Get("pay").State()["region"], nil
	})
	inst := compositiontest.Open(t, host, composition.Options{Startup: map[string]any{"region": 5}})
	if got := compositiontest.Call(t, inst, "region", `{}`); got != "eu" {
		t.Fatalf("region %v, want the bound eu", got)
	}
}

func TestInstance_CompositionIsTheCallers(t *testing.T) {
	p, shop, host := newWorld("cc_p"), newWorld("cc_shop"), newWorld("cc_host")
	shop.AddWorld(p)
	host.AddWorld(p)
	host.AddWorld(shop)
	inst := compositiontest.Open(t, host, composition.Options{})
	got := inst.Composition()
	if got[1].Path != "cc_p" || !slices.Equal(got[1].Aliases, []string{"cc_shop/cc_p"}) {
		t.Fatalf("composition %+v", got)
	}
	got[1].Aliases[0] = "changed by the caller"
	if again := inst.Composition(); again[1].Aliases[0] != "cc_shop/cc_p" {
		t.Fatalf("the caller's change reached the instance: aliases %v", again[1].Aliases)
	}
	if doc := inst.State(); doc.Composition["cc_p"].Aliases[0] != "cc_shop/cc_p" {
		t.Fatalf("the caller's change reached the state document: %v", doc.Composition["cc_p"].Aliases)
	}
}

func TestInstance_FilesAndRootAccessors(t *testing.T) {
	tax := newWorld("tax")
	pay := newWorld("pay")
	pay.AddWorld(tax)
	root := newWorld("rooty")
	root.AddWorld(pay, env.Name("payments"))
	inst := compositiontest.Open(t, root, composition.Options{})
	var names []string
	ents, _ := os.ReadDir(inst.Dir())
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sqlite") {
			names = append(names, e.Name())
		}
	}
	want := []string{"state.payments.sqlite", "state.payments__tax.sqlite", "state.sqlite"}
	if !slices.Equal(names, want) {
		t.Fatalf("files %v, want %v", names, want)
	}
	if inst.StatePath() != filepath.Join(inst.Dir(), "state.sqlite") {
		t.Fatal("StatePath is not the root's")
	}
	if _, err := inst.DB().Exec("INSERT INTO rooty_rows VALUES ('r')"); err != nil {
		t.Fatal(err)
	}
	if _, err := inst.Inspect().One(context.Background(), "SELECT * FROM payments__tax.tax_rows"); err != nil {
		t.Fatal(err)
	}
	dir := inst.Dir()
	inst.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("Close left the instance directory")
	}
}

func TestBulk_FailureSemantics(t *testing.T) {
	child := env.NewWorld(env.WorldSpec{Name: "bchild", Version: "1", Schema: `CREATE TABLE p (id INTEGER PRIMARY KEY);
CREATE TABLE c (id INTEGER PRIMARY KEY, p INTEGER REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED);`})
	host := env.NewWorld(env.WorldSpec{Name: "bhost", Version: "1", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(child)
	inst := compositiontest.Open(t, host, composition.Options{})
	ctx := context.Background()
	count := func(sql string) int64 {
		r, err := inst.Inspect().One(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		return r["n"].(int64)
	}
	// The block fails: every node rolls back.
	err := inst.Bulk(ctx, func(c *env.Ctx) error {
		c.DB.Exec("INSERT INTO h VALUES (1)")
		c.Worlds.Get("bchild").DB().Exec("INSERT INTO p VALUES (1)")
		return errors.New("generator failed")
	})
	if err == nil || count("SELECT count(*) AS n FROM h") != 0 || count("SELECT count(*) AS n FROM bchild.p") != 0 {
		t.Fatalf("failed block kept rows (err %v)", err)
	}
	// A node's commit fails on a deferred foreign key: the root commits last,
	// so it rolls back.
	err = inst.Bulk(ctx, func(c *env.Ctx) error {
		c.DB.Exec("INSERT INTO h VALUES (2)")
		_, err := c.Worlds.Get("bchild").DB().Exec("INSERT INTO c VALUES (1, 99)")
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "node bchild: commit") {
		t.Fatalf("err = %v", err)
	}
	if count("SELECT count(*) AS n FROM h") != 0 {
		t.Fatal("the root committed before a failing node")
	}
	// The failing node rolled back too, and takes the next block afresh.
	if err := inst.Bulk(ctx, func(c *env.Ctx) error {
		_, err := c.Worlds.Get("bchild").DB().Exec("INSERT INTO p VALUES (3)")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if count("SELECT count(*) AS n FROM bchild.c") != 0 || count("SELECT count(*) AS n FROM bchild.p") != 1 {
		t.Fatal("the failing node kept its block's rows")
	}
}

func TestInstance_CancelledContextInterrupts(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "spin", Version: "1", Schema: "CREATE TABLE t (x INTEGER) STRICT;"})
	env.Tool(w, "spin", "Run forever.", func(c *env.Ctx, _ noArgs) (any, error) {
		return c.DB.One("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r) SELECT count(*) FROM r")
	})
	env.Tool(w, "ok", "Fine.", func(c *env.Ctx, _ noArgs) (any, error) { return c.DB.Exec("INSERT INTO t VALUES (1)") })
	inst := compositiontest.Open(t, w, composition.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := inst.CallJSON(ctx, "spin", nil)
	if te, ok := env.AsToolError(err); !ok || te.Kind != env.KindTimeout {
		t.Fatalf("err = %v, want a timeout", err)
	}
	compositiontest.Call(t, inst, "ok", `{}`)
}

// productError is an added world's own error type, shaped by its own error
// handler middleware.
type productError struct{ Code string }

func (e *productError) Error() string { return "product error " + e.Code }

func TestMiddleware_ChildErrorsPropagateUnwrapped(t *testing.T) {
	child := env.NewWorld(env.WorldSpec{Name: "product", Version: "1", Schema: "CREATE TABLE p (x INTEGER) STRICT;"})
	child.Use(func(c *env.Ctx, next func() (any, error)) (any, error) {
		out, err := next()
		if err != nil {
			return nil, &productError{Code: "E42"}
		}
		return out, nil
	})
	failing := env.Tool(child, "fail", "Fails.", func(c *env.Ctx, _ noArgs) (any, error) { return nil, errors.New("raw") })
	host := env.NewWorld(env.WorldSpec{Name: "producthost", Version: "1", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(child, env.ToolPrefix("p_"))
	var seen error
	env.Tool(host, "wrap", "Calls the product.", func(c *env.Ctx, _ noArgs) (any, error) {
		_, err := env.Call(c.Context(), c.Worlds.Get("product"), failing, noArgs{})
		seen = err
		return nil, err
	})
	inst := compositiontest.Open(t, host, composition.Options{})
	_, err := inst.CallJSON(context.Background(), "wrap", nil)
	var pe *productError
	if !errors.As(seen, &pe) || pe.Code != "E42" || !errors.As(err, &pe) {
		t.Fatalf("host saw %v, agent saw %v; want the product's own error", seen, err)
	}
	_, err = inst.CallJSON(context.Background(), "p_fail", nil)
	if !errors.As(err, &pe) {
		t.Fatalf("agent call: %v", err)
	}
}

func TestClone_TypedCallsReachTheCopy(t *testing.T) {
	p, add := ledger("clonedp")
	root := env.NewWorld(env.WorldSpec{Name: "clonedroot", Version: "1", Schema: "CREATE TABLE r (x INTEGER) STRICT;"})
	own := env.Tool(root, "own", "Own.", func(c *env.Ctx, _ noArgs) (string, error) {
		return env.Call(c.Context(), c.Worlds.Get("led"), add, amountArgs{Amount: 3})
	})
	root.AddWorld(p, env.Name("led"), env.ToolPrefix("l_"))
	// Copy the root, as a test pointing a world at another fixtures dir does.
	copied := root.WithFixturesDir(t.TempDir())
	inst := compositiontest.Open(t, copied, composition.Options{})
	if _, err := env.Call(context.Background(), inst, own, noArgs{}); err != nil {
		t.Fatalf("the original's tool on the copy: %v", err)
	}
	if _, err := env.Call(context.Background(), inst, add, amountArgs{Amount: 4}); err != nil {
		t.Fatalf("a dependency's tool through the copy: %v", err)
	}
	row, _ := inst.Inspect().One(context.Background(), "SELECT count(*) AS n FROM led.entries")
	if row["n"] != int64(2) {
		t.Fatalf("entries = %v, want 2", row["n"])
	}
}

// TestInstance_ChangeLogIsTheCallers reads a log spanning several chunks:
// records numbered in order, maps built afresh on every read, so a caller
// changing them changes nothing kept.
func TestInstance_ChangeLogIsTheCallers(t *testing.T) {
	w, _ := ledger("logcopy")
	inst := compositiontest.Open(t, w, composition.Options{})
	if log := inst.ChangeLog(); log != nil {
		t.Fatalf("empty log = %#v, want nil", log)
	}
	if log := inst.State().ChangeLog; log == nil || len(log) != 0 {
		t.Fatalf("empty state log = %#v, want empty, not nil", log)
	}
	const n = 600 // more than two chunks
	for k := range n {
		compositiontest.Call(t, inst, "add", `{"amount": `+strconv.Itoa(k)+`}`)
	}
	log := inst.ChangeLog()
	if len(log) != n {
		t.Fatalf("%d records, want %d", len(log), n)
	}
	for k, r := range log {
		if r.Seq != k+1 || r.Call != k+1 || r.Tool != "add" || r.World != "main" || r.Table != "entries" || r.Op != env.OpInsert ||
			r.Before != nil || r.After["amount"] != int64(k) || r.Key["id"] != r.After["id"] || len(r.Key) != 1 {
			t.Fatalf("record %d: %+v", k, r)
		}
	}
	want, _ := json.Marshal(log)
	for _, r := range log {
		r.Key["id"], r.After["amount"], r.After["extra"] = "changed", -1, true
	}
	got, _ := json.Marshal(inst.ChangeLog())
	if !bytes.Equal(got, want) {
		t.Fatal("changing the maps ChangeLog returned changed the log")
	}
	if got, _ := json.Marshal(inst.State().ChangeLog); !bytes.Equal(got, want) {
		t.Fatal("State's change log differs from ChangeLog")
	}
}

func TestInstance_ControlToolBounds(t *testing.T) {
	w, _ := ledger("bounds")
	const start = "2026-06-01T09:00:00.000Z"
	tests := []struct {
		name  string
		calls []string // control tool arguments, the last one checked
		err   string   // part of the last call's error; "" when it succeeds
		now   string   // the clock after the calls
	}{
		{name: "AdvanceHuge", calls: []string{`{"action":"advance_clock","seconds":1e10}`},
			err: `invalid arguments: field "seconds": advance_clock needs 0 <= seconds <= 3153600000 (100 years)`, now: start},
		{name: "AdvancePastDuration", calls: []string{`{"action":"advance_clock","seconds":9.3e9}`},
			err: `field "seconds": advance_clock needs 0 <= seconds <= 3153600000`, now: start},
		{name: "AdvanceNegative", calls: []string{`{"action":"advance_clock","seconds":-1}`},
			err: `field "seconds": advance_clock needs 0 <= seconds <= 3153600000`, now: start},
		{name: "AdvanceMaxThreeTimes", calls: []string{
			`{"action":"advance_clock","seconds":3153600000}`,
			`{"action":"advance_clock","seconds":3153600000}`,
			`{"action":"advance_clock","seconds":3153600000}`,
		}, now: "2326-03-21T09:00:00.000Z"}, // 300 years of 365 days: 73 leap days short
		{name: "AdvancePastMax", calls: []string{
			`{"action":"set_clock","now":"8999-12-31T00:00:00Z"}`,
			`{"action":"advance_clock","seconds":172800}`,
		}, err: `invalid arguments: field "seconds": advance_clock would move the clock to 9000-01-02T00:00:00.000Z, past its maximum 9000-01-01T00:00:00.000Z`,
			now: "8999-12-31T00:00:00.000Z"},
		{name: "AdvanceToMax", calls: []string{
			`{"action":"set_clock","now":"8999-12-31T00:00:00Z"}`,
			`{"action":"advance_clock","seconds":86400}`,
		}, now: "9000-01-01T00:00:00.000Z"},
		{name: "SetPastSQLite", calls: []string{`{"action":"set_clock","now":"9999-12-31T00:00:00Z"}`},
			err: `invalid arguments: field "now": composition: now "9999-12-31T00:00:00Z" is outside the clock's range, 1000-01-01T00:00:00.000Z to 9000-01-01T00:00:00.000Z`,
			now: start},
		// RFC 3339 allows a lower-case t and z.
		{name: "SetLowerCase", calls: []string{`{"action":"set_clock","now":"2030-02-03t04:05:06.5z"}`},
			now: "2030-02-03T04:05:06.500Z"},
		{name: "SetTooEarly", calls: []string{`{"action":"set_clock","now":"0999-12-31T23:59:59Z"}`},
			err: `field "now": composition: now "0999-12-31T23:59:59Z" is outside the clock's range`, now: start},
		// A megabyte of a client's text is not repeated: the error was
		// the size of the argument.
		{name: "SetHuge", calls: []string{`{"action":"set_clock","now":"` + strings.Repeat("k", 1<<20) + `"}`},
			err: `field "now": composition: now "` + strings.Repeat("k", 1024) + `… (1048576 bytes, not echoed)" is not an RFC 3339 time such as 2026-06-01T09:00:00.000Z`, now: start},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst := compositiontest.Open(t, w, composition.Options{Now: start, ControlTools: true})
			last := len(tt.calls) - 1
			for _, args := range tt.calls[:last] {
				compositiontest.Call(t, inst, env.ControlTool, args)
			}
			_, err := inst.CallJSON(context.Background(), env.ControlTool, []byte(tt.calls[last]))
			var te *env.ToolError
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("%s: %v", tt.calls[last], err)
			case tt.err != "" && (!errors.As(err, &te) || te.Kind != env.KindInvalidArgs || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("%s: %v, want an invalid-args error with %q", tt.calls[last], err, tt.err)
			}
			if got := inst.State().Now; got != tt.now {
				t.Errorf("clock %s, want %s", got, tt.now)
			}
			// SQLite's date functions still work from the clock.
			row, err := inst.DB().One("SELECT datetime('now', '+1 year') AS d")
			if err != nil || row["d"] == nil {
				t.Errorf("datetime('now', '+1 year') = %v, %v; want a date", row, err)
			}
		})
	}
}

func TestOpen_NowOutOfRange(t *testing.T) {
	w, _ := ledger("nowrange")
	for _, now := range []string{"9999-12-31T00:00:00Z", "0001-01-01T00:00:00Z"} {
		_, err := composition.Open(context.Background(), w, composition.Options{Now: now})
		want := `composition: now "` + now + `" is outside the clock's range, 1000-01-01T00:00:00.000Z to 9000-01-01T00:00:00.000Z`
		if err == nil || err.Error() != want {
			t.Errorf("Open with now %s: %v, want %q", now, err, want)
		}
	}
}

// TestHandles_CallMessages checks the WorldBugs of calls through a handle
// that cannot be made, word for word: a tool the handle's world does not
// have, a typed call to a world outside the handle's subtree, and one to
// a world that is a node of it more than once.
func TestHandles_CallMessages(t *testing.T) {
	led, ledAdd := ledger("hm_led")
	other, otherAdd := ledger("hm_other")
	mid := env.NewWorld(env.WorldSpec{Name: "hm_mid", Version: "1", Schema: "CREATE TABLE m (x INTEGER) STRICT;"})
	mid.AddWorld(led, env.Name("a"), env.ToolAllowList())
	mid.AddWorld(led, env.Name("b"), env.Store("b"), env.ToolAllowList())
	host := env.NewWorld(env.WorldSpec{Name: "hm_host", Version: "1", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(mid, env.Name("shop"), env.ToolAllowList())
	host.AddWorld(other, env.Name("other"), env.ToolAllowList())
	host.AddWorld(led, env.Name("solo"), env.Store("solo"), env.ToolPrefix("solo_"), env.ToolAllowList("add"))
	host.AddWorld(led, env.Name("duo"), env.Store("duo"), env.ToolPrefix("duo_"), env.ToolAllowList("add"))
	// A subtree reaching one account by two routes: shop/a, as shared/led
	// and shared/inner/led, both aliases.
	inner := env.NewWorld(env.WorldSpec{Name: "hm_inner", Version: "1", Schema: "CREATE TABLE i (x INTEGER) STRICT;"})
	inner.AddWorld(led, env.Name("led"))
	shared := env.NewWorld(env.WorldSpec{Name: "hm_shared", Version: "1", Schema: "CREATE TABLE s (x INTEGER) STRICT;"})
	shared.AddWorld(led, env.Name("led"))
	shared.AddWorld(inner, env.Name("inner"), env.ToolAllowList())
	host.AddWorld(shared, env.Name("shared"), env.ToolAllowList())
	type which struct {
		Case string `json:"case"`
	}
	env.Tool(host, "try", "Make a call that cannot be made.", func(c *env.Ctx, w which) (any, error) {
		shop := c.Worlds.Get("shop")
		switch w.Case {
		case "by_name":
			return shop.Call("nope", nil)
		case "outside":
			return env.Call(c.Context(), shop, otherAdd, amountArgs{1})
		case "twice":
			return env.Call(c.Context(), shop, ledAdd, amountArgs{1})
		case "once":
			return env.Call(c.Context(), shop.Worlds().Get("b"), ledAdd, amountArgs{1})
		case "shared":
			return env.Call(c.Context(), c.Worlds.Get("shared"), ledAdd, amountArgs{1})
		}
		return nil, nil
	})
	inst := compositiontest.Open(t, host, composition.Options{})
	for _, tt := range []struct{ name, want string }{
		{"by_name", `hm_mid (node shop) has no tool "nope"`},
		{"outside", `add is a tool of hm_other, which is not in the subtree of node shop`},
		{"twice", `add is a tool of hm_led, which is a node of this subtree more than once (add at shop/a, add at shop/b): call it through the handle of the account you mean`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := inst.CallJSON(context.Background(), "try", []byte(`{"case":"`+tt.name+`"}`))
			var bug *env.WorldBug
			if !errors.As(err, &bug) || bug.Message != tt.want {
				t.Fatalf("err = %v\nwant a WorldBug %q", err, tt.want)
			}
		})
	}
	if _, err := inst.CallJSON(context.Background(), "try", []byte(`{"case":"once"}`)); err != nil {
		t.Fatalf("a typed call through the handle of one account: %v", err)
	}
	if _, err := inst.CallJSON(context.Background(), "try", []byte(`{"case":"shared"}`)); err != nil {
		t.Fatalf("a typed call through a handle whose subtree reaches one account twice: %v", err)
	}
	// At the instance, a tool of four accounts, two of them on the surface,
	// names all four.
	_, err := env.Call(context.Background(), inst, ledAdd, amountArgs{1})
	var bug *env.WorldBug
	want := `add is a tool of hm_led, which is a node of this tree more than once (solo_add at solo, duo_add at duo, add at shop/a, add at shop/b): call it through the handle of the account you mean, ctx.Worlds.Get(name)`
	if !errors.As(err, &bug) || bug.Message != want {
		t.Fatalf("typed call at the instance: %v\nwant a WorldBug %q", err, want)
	}
}

// TestCall_TypedAtTheInstanceNodeTwice: a tool's world added twice names no
// one store at the instance, though a list keeps one account, or both, off
// the agent surface: the WorldBug names every account, by its published
// name when it has one, and nothing runs.
func TestCall_TypedAtTheInstanceNodeTwice(t *testing.T) {
	for _, tt := range []struct {
		name  string
		eu    []env.AddOption // the second account's options besides its name and store
		us    []env.AddOption
		cands string
	}{
		{"OneHidden", []env.AddOption{env.ToolAllowList()}, []env.AddOption{env.ToolPrefix("pay_")}, "pay_add at payments, add at payments_eu"},
		{"OneBlocked", []env.AddOption{env.ToolBlockList("add")}, []env.AddOption{env.ToolPrefix("pay_")}, "pay_add at payments, add at payments_eu"},
		{"BothHidden", []env.AddOption{env.ToolAllowList()}, []env.AddOption{env.ToolAllowList()}, "add at payments, add at payments_eu"},
		// A clone (env.World.Clone) is another node of the same tools:
		// the call ran on the first account, where it was refused
		// through a handle.
		{"Clone", []env.AddOption{env.ToolPrefix("eu_")}, []env.AddOption{env.ToolPrefix("pay_")}, "pay_add at payments, eu_add at payments_eu"},
		{"CloneTwice", []env.AddOption{env.ToolPrefix("eu_")}, []env.AddOption{env.ToolPrefix("pay_")}, "pay_add at payments, eu_add at payments_eu"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, add := ledger("twice_" + strings.ToLower(tt.name))
			root := newWorld("twiceroot_" + strings.ToLower(tt.name))
			first, second := p, p
			switch tt.name {
			case "Clone":
				second = p.Clone()
			case "CloneTwice":
				first = p.Clone()
				second = first
			}
			root.AddWorld(first, append([]env.AddOption{env.Name("payments")}, tt.us...)...)
			root.AddWorld(second, append([]env.AddOption{env.Name("payments_eu"), env.Store("eu")}, tt.eu...)...)
			inst := compositiontest.Open(t, root, composition.Options{})
			_, err := env.Call(context.Background(), inst, add, amountArgs{Amount: 1})
			want := "add is a tool of " + p.Name() + ", which is a node of this tree more than once (" + tt.cands + "): call it through the handle of the account you mean, ctx.Worlds.Get(name)"
			var bug *env.WorldBug
			if !errors.As(err, &bug) || bug.Message != want {
				t.Fatalf("err = %v\nwant the WorldBug %q", err, want)
			}
			if len(inst.ChangeLog()) != 0 {
				t.Errorf("the refused call wrote: %v", inst.ChangeLog())
			}
		})
	}
}

// TestCall_CommitErrorNamesNoNode fails the COMMIT of a contributed tool's
// transaction (a deferred foreign key left dangling): the error the agent
// reads is the store's own, the same as for a world added nowhere, and
// names neither the node nor the name it was added under.
func TestCall_CommitErrorNamesNoNode(t *testing.T) {
	orphans := func() *env.World {
		w := env.NewWorld(env.WorldSpec{Name: "orphans", Version: "1", Schema: `
			CREATE TABLE parents (id INTEGER PRIMARY KEY) STRICT;
			CREATE TABLE kids (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED) STRICT;`})
		env.Tool(w, "orphan", "Add a kid whose parent does not exist.", func(c *env.Ctx, _ noArgs) (any, error) {
			return c.DB.Exec("INSERT INTO kids (id, parent) VALUES (1, 99)")
		})
		return w
	}
	host := env.NewWorld(env.WorldSpec{Name: "cehost", Version: "1", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(orphans(), env.Name("secretnode"), env.ToolPrefix("x_"))
	composed := compositiontest.Open(t, host, composition.Options{})
	alone := compositiontest.Open(t, orphans(), composition.Options{})
	_, err := composed.CallJSON(context.Background(), "x_orphan", []byte(`{}`))
	_, want := alone.CallJSON(context.Background(), "orphan", []byte(`{}`))
	if err == nil || want == nil || err.Error() != want.Error() || strings.Contains(err.Error(), "secretnode") {
		t.Fatalf("composed: %v\nalone:    %v\nwant the same error, naming no node", err, want)
	}
	if !strings.Contains(err.Error(), "FOREIGN KEY constraint failed") {
		t.Errorf("error %v, want the store's own", err)
	}
}

// TestCall_ResultCheck runs agent calls under env.WithResultCheck: the
// layer's result (its middleware's, around its tool) is checked before its
// transaction commits, the last one checked is the call's result, and a refused result fails the call with
// a ToolError and rolls back what it wrote.
func TestCall_ResultCheck(t *testing.T) {
	w, _ := ledger("rcheck")
	w.Use(func(c *env.Ctx, next func() (any, error)) (any, error) {
		out, err := next()
		if s, ok := out.(string); ok {
			return "wrapped " + s, err
		}
		return out, err
	})
	inst := compositiontest.Open(t, w, composition.Options{})
	var checked []any
	ctx := env.WithResultCheck(context.Background(), func(v any) error {
		checked = append(checked, v)
		return nil
	})
	out, err := inst.CallJSON(ctx, "add", []byte(`{"amount": 1}`))
	// One node, one layer: its middleware and its tool share a transaction.
	if s, _ := out.(string); err != nil || len(checked) != 1 || !reflect.DeepEqual(checked[0], out) || !strings.HasPrefix(s, "wrapped ") {
		t.Fatalf("out %v, err %v, checked %v: want the node's one layer checked, its value the result", out, err, checked)
	}
	refuse := env.WithResultCheck(context.Background(), func(any) error { return errors.New("cannot send") })
	_, err = inst.CallJSON(refuse, "add", []byte(`{"amount": 2}`))
	var te *env.ToolError
	if !errors.As(err, &te) || te.Kind != env.KindExecution || te.Message != `tool "add" returned a result that cannot be encoded as JSON: cannot send` {
		t.Fatalf("err %v, want an execution ToolError saying the result cannot be encoded", err)
	}
	if row, _ := inst.Inspect().One(context.Background(), "SELECT count(*) AS n FROM entries"); row["n"] != int64(1) {
		t.Errorf("%v entries, want the first call's only", row["n"])
	}
}

// TestDeadline_CodeThatDoesNotLook runs a tool, a startup hook and a Bulk
// block that write and then sleep past their context's deadline without
// looking at it: none of their writes commits, and each fails with the
// deadline, not success.
func TestDeadline_CodeThatDoesNotLook(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "sleepy", Version: "1", Schema: "CREATE TABLE t (x INTEGER) STRICT;"})
	env.Tool(w, "nap", "Write, then sleep.", func(c *env.Ctx, _ noArgs) (any, error) {
		c.DB.Exec("INSERT INTO t VALUES (1)")
		time.Sleep(200 * time.Millisecond)
		return "rested", nil
	})
	type napArgs struct {
		Nap bool `json:"nap,omitempty"`
	}
	env.OnStartup(w, func(c *env.Ctx, k napArgs) error {
		c.DB.Exec("INSERT INTO t VALUES (0)")
		if k.Nap {
			time.Sleep(200 * time.Millisecond)
		}
		return nil
	})
	short := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	inst := compositiontest.Open(t, w, composition.Options{})
	if late, err := composition.Open(short(), w, composition.Options{Startup: map[string]any{"nap": true}}); !errors.Is(err, context.DeadlineExceeded) {
		if late != nil {
			late.Close()
		}
		t.Fatalf("Open with a startup hook past the deadline: %v, want the deadline", err)
	}
	count := func() any {
		row, err := inst.Inspect().One(context.Background(), "SELECT count(*) AS n FROM t")
		if err != nil {
			t.Fatal(err)
		}
		return row["n"]
	}
	_, err := inst.CallJSON(short(), "nap", []byte(`{}`))
	var te *env.ToolError
	if !errors.As(err, &te) || te.Kind != env.KindTimeout {
		t.Fatalf("a tool past the deadline: %v, want a timeout ToolError", err)
	}
	err = inst.Bulk(short(), func(c *env.Ctx) error {
		c.DB.Exec("INSERT INTO t VALUES (2)")
		time.Sleep(200 * time.Millisecond)
		return nil
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a Bulk block past the deadline: %v, want the deadline", err)
	}
	if n := count(); n != int64(1) {
		t.Errorf("%v rows, want only the startup hook's", n)
	}
}

// startupBase is embedded in TestStartup_EmbeddedKeywords's keywords.
type startupBase struct {
	Region string `json:"region"`
}

// TestStartup_EmbeddedKeywords: an embedded struct's fields are keywords
// of the hook, as its decoder reads them, for Open and for AddWorld's
// bound keywords alike.
func TestStartup_EmbeddedKeywords(t *testing.T) {
	type K struct {
		startupBase
		Plan string `json:"plan,omitempty"`
	}
	child := env.NewWorld(env.WorldSpec{Name: "embchild", Version: "1", Schema: "CREATE TABLE c (x INTEGER) STRICT;"})
	var got []K
	env.OnStartup(child, func(c *env.Ctx, k K) error { got = append(got, k); return nil })
	if keys := child.StartupKeys(); !slices.Equal(keys, []string{"plan", "region"}) {
		t.Fatalf("StartupKeys() = %v, want [plan region]", keys)
	}
	compositiontest.Open(t, child, composition.Options{Startup: map[string]any{"region": "eu", "plan": "pro"}})
	if want := (K{startupBase{"eu"}, "pro"}); len(got) != 1 || got[0] != want {
		t.Fatalf("the hook got %+v, want %+v", got, want)
	}

	host := env.NewWorld(env.WorldSpec{Name: "embhost", Version: "1", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(child, env.Startup(map[string]any{"region": "us"}))
	got = nil
	compositiontest.Open(t, host, composition.Options{})
	if len(got) != 1 || got[0].Region != "us" {
		t.Fatalf("the hook got %+v, want region us bound by AddWorld", got)
	}

	defer func() {
		bug, ok := recover().(*env.WorldBug)
		if !ok || !strings.Contains(bug.Message, "the startup keywords bound here do not fit the startup hook of embchild") || !strings.Contains(bug.Message, "region") {
			t.Fatalf("AddWorld with a bad embedded keyword: %v", bug)
		}
	}()
	other := env.NewWorld(env.WorldSpec{Name: "embother", Version: "1", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	other.AddWorld(child, env.Startup(map[string]any{"region": 7}))
}

// TestMiddleware_ResultOfAnotherType: a middleware that swaps a tool's
// result for a value of another type fails the call, naming both types,
// since the result would contradict the tool's output schema; one that
// returns a value of the tool's type, or nil where the type has one, is
// served.
func TestMiddleware_ResultOfAnotherType(t *testing.T) {
	type counted struct{ N int }
	var swap any
	w := env.NewWorld(env.WorldSpec{Name: "swapper", Version: "1", Schema: "CREATE TABLE s (x INTEGER) STRICT;"})
	w.Use(func(c *env.Ctx, next func() (any, error)) (any, error) {
		out, err := next()
		if err != nil || swap == "keep" {
			return out, err
		}
		return swap, nil
	})
	env.Tool(w, "count", "Counts.", func(c *env.Ctx, _ noArgs) (counted, error) { return counted{N: 1}, nil })
	env.Tool(w, "list", "Lists.", func(c *env.Ctx, _ noArgs) ([]int, error) { return []int{1}, nil })
	inst := compositiontest.Open(t, w, composition.Options{})
	for _, tc := range []struct {
		tool string
		swap any
		want string // "" when the call is served
	}{
		{"count", "keep", ""},
		{"count", counted{N: 2}, ""},
		{"count", "cached", "a middleware of swapper returned a string for count, whose result type is composition_test.counted: a middleware returns what next returned, or a value of the tool's result type"},
		{"count", nil, "a middleware of swapper returned nil for count, whose result type is composition_test.counted: a middleware returns what next returned, or a value of the tool's result type"},
		{"count", &counted{N: 2}, "a middleware of swapper returned a *composition_test.counted for count, whose result type is composition_test.counted: a middleware returns what next returned, or a value of the tool's result type"},
		{"list", nil, ""},
		{"list", []int{2}, ""},
		{"list", []string{"x"}, "a middleware of swapper returned a []string for list, whose result type is []int: a middleware returns what next returned, or a value of the tool's result type"},
	} {
		swap = tc.swap
		before := len(inst.ChangeLog())
		_, err := inst.CallJSON(context.Background(), tc.tool, nil)
		var bug *env.WorldBug
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s swapped for %#v: %v", tc.tool, tc.swap, err)
		case tc.want != "" && (!errors.As(err, &bug) || bug.Message != tc.want):
			t.Errorf("%s swapped for %#v: err = %v, want the WorldBug %q", tc.tool, tc.swap, err, tc.want)
		}
		if len(inst.ChangeLog()) != before {
			t.Errorf("%s: the change log grew", tc.tool)
		}
	}
}

// TestInstance_OneClockEveryNode pins the spec's one clock: every node's SQL
// and ctx.Now read the instance clock, in the root's clock mode (an added
// world's own DefaultClockMode is not used), and the root's control tool
// moves it for every node.
func TestInstance_OneClockEveryNode(t *testing.T) {
	child := env.NewWorld(env.WorldSpec{Name: "stepper", Version: "1", DefaultClockMode: env.ClockStep,
		Schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, at TEXT DEFAULT CURRENT_TIMESTAMP) STRICT;"})
	stamp := func(c *env.Ctx, _ noArgs) (string, error) {
		row, err := c.DB.One("SELECT datetime('now') AS q")
		if err != nil {
			return "", err
		}
		return row["q"].(string) + " " + c.Now().Format(time.DateTime), nil
	}
	childStamp := env.Tool(child, "stamp", "Stamp.", stamp)
	host := env.NewWorld(env.WorldSpec{Name: "clockhost", Version: "1", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(child, env.ToolPrefix("c_"))
	env.Tool(host, "both", "The host's clock, then the child's through its handle.", func(c *env.Ctx, in noArgs) (string, error) {
		mine, err := stamp(c, in)
		if err != nil {
			return "", err
		}
		theirs, err := env.Call(c.Context(), c.Worlds.Get("stepper"), childStamp, noArgs{})
		return mine + " | " + theirs, err
	})
	inst := compositiontest.Open(t, host, composition.Options{Now: "2026-06-01T09:00:00.000Z", ControlTools: true})
	const at = "2026-06-01 09:00:00"
	for range 2 { // frozen, the root's mode: the child's step mode would move it
		if got := compositiontest.Call(t, inst, "c_stamp", `{}`); got != at+" "+at {
			t.Fatalf("c_stamp = %v, want %s twice", got, at)
		}
	}
	if got := compositiontest.Call(t, inst, "both", `{}`); got != at+" "+at+" | "+at+" "+at {
		t.Fatalf("both = %v, want one time", got)
	}
	if doc := inst.State(); doc.ClockMode != env.ClockFrozen {
		t.Fatalf("clock mode %s, want the root's, frozen", doc.ClockMode)
	}
	compositiontest.Call(t, inst, env.ControlTool, `{"action":"set_clock","now":"2030-01-02T03:04:05.000Z"}`)
	const moved = "2030-01-02 03:04:05"
	if got := compositiontest.Call(t, inst, "both", `{}`); got != moved+" "+moved+" | "+moved+" "+moved {
		t.Fatalf("both after set_clock = %v, want %s on every node", got, moved)
	}
}

// TestInstance_SQLRandomPerNode pins the spec's seeded SQL random per node: a
// DEFAULT (randomblob(8)) replays under the same seed, and two accounts of one
// world draw different streams, salted with their paths.
func TestInstance_SQLRandomPerNode(t *testing.T) {
	led, _ := ledger("salts")
	host := env.NewWorld(env.WorldSpec{Name: "saltshost", Version: "1",
		Schema: "CREATE TABLE h (id INTEGER PRIMARY KEY, salt BLOB DEFAULT (randomblob(8))) STRICT;"})
	env.Tool(host, "salt", "Insert a host row.", func(c *env.Ctx, _ noArgs) (any, error) {
		return c.DB.Exec("INSERT INTO h DEFAULT VALUES")
	})
	host.AddWorld(led, env.Name("a"), env.ToolPrefix("a_"))
	host.AddWorld(led, env.Name("b"), env.Store("b"), env.ToolPrefix("b_"))
	salts := func(seed int64) []string {
		inst := compositiontest.Open(t, host, composition.Options{Seed: seed})
		compositiontest.Call(t, inst, "salt", `{}`)
		compositiontest.Call(t, inst, "a_add", `{"amount": 1}`)
		compositiontest.Call(t, inst, "b_add", `{"amount": 1}`)
		rows, err := inst.Inspect().Rows(context.Background(),
			"SELECT hex(salt) AS s FROM h UNION ALL SELECT hex(salt) FROM a.entries UNION ALL SELECT hex(salt) FROM b.entries")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rows {
			out = append(out, r["s"].(string))
		}
		return out
	}
	first := salts(5)
	if len(first) != 3 || first[0] == first[1] || first[1] == first[2] || first[0] == first[2] {
		t.Fatalf("salts of main, a and b: %v, want three different values", first)
	}
	if again := salts(5); !slices.Equal(again, first) {
		t.Fatalf("seed 5 drew %v, then %v", first, again)
	}
}

// TestMiddleware_SharedNodeEachRoutesChain pins the spec's rule for a shared
// node's tool on the surface under two names by two routes: each name runs
// its own route's middleware, both owned by the one node.
func TestMiddleware_SharedNodeEachRoutesChain(t *testing.T) {
	var trace []string
	layer := func(name string) env.Middleware {
		return func(c *env.Ctx, next func() (any, error)) (any, error) {
			trace = append(trace, name+"("+c.Call.Tool+" on "+c.Call.Node+")")
			return next()
		}
	}
	pay, shop, company := newWorld("sharedpay"), newWorld("sharedshop"), newWorld("sharedco")
	pay.Use(layer("pay"))
	addTool(pay, "charge")
	shop.Use(layer("shop"))
	shop.AddWorld(pay, env.Name("pay"), env.ToolPrefix("s_"))
	company.Use(layer("company"))
	company.AddWorld(pay, env.Name("pay"), env.ToolPrefix("pay_"))
	company.AddWorld(shop, env.Name("shop"), env.ToolPrefix("shop_"))
	inst := compositiontest.Open(t, company, composition.Options{})
	for _, tt := range []struct{ tool, want string }{
		{"pay_charge", "company(pay_charge on pay) pay(pay_charge on pay)"},
		{"shop_s_charge", "company(shop_s_charge on pay) shop(shop_s_charge on pay) pay(shop_s_charge on pay)"},
	} {
		trace = nil
		compositiontest.Call(t, inst, tt.tool, `{}`)
		if got := strings.Join(trace, " "); got != tt.want {
			t.Errorf("%s descends %s, want %s", tt.tool, got, tt.want)
		}
	}
}

// TestHandles_ValidAcrossNestedCalls pins the spec's rule that a handle
// stays valid across a nested handle call, and across a call made from
// inside a Bulk block with the block's context: neither opens a new
// activation.
func TestHandles_ValidAcrossNestedCalls(t *testing.T) {
	led, _ := ledger("across")
	host := env.NewWorld(env.WorldSpec{Name: "acrosshost", Version: "1", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(led, env.Name("p"), env.ToolPrefix("p_"))
	env.Tool(host, "twice", "Call, then write through the same handle.", func(c *env.Ctx, _ noArgs) (any, error) {
		h := c.Worlds.Get("p")
		if _, err := h.Call("add", amountArgs{Amount: 1}); err != nil {
			return nil, err
		}
		return h.DB().Exec("INSERT INTO entries (id, amount) VALUES ('direct', 2)")
	})
	inst := compositiontest.Open(t, host, composition.Options{})
	compositiontest.Call(t, inst, "twice", `{}`)
	err := inst.Bulk(context.Background(), func(c *env.Ctx) error {
		h := c.Worlds.Get("p")
		if _, err := inst.CallJSON(c.Context(), "p_add", []byte(`{"amount": 3}`)); err != nil {
			return err
		}
		_, err := h.DB().Exec("INSERT INTO entries (id, amount) VALUES ('bulk', 4)")
		return err
	})
	if err != nil {
		t.Fatalf("a handle used after a call made inside its Bulk block: %v", err)
	}
	row, err := inst.Inspect().One(context.Background(), "SELECT group_concat(amount, ',') AS a FROM (SELECT amount FROM p.entries ORDER BY amount)")
	if err != nil || row["a"] != "1,2,3,4" {
		t.Fatalf("amounts %v, %v; want 1,2,3,4", row, err)
	}
}

// TestInstance_AccessorInsideCall: the instance's own methods that wait
// for it (its change log, state, inspection view, Close, Release), used
// inside a call or a Bulk block, fail it with a WorldBug saying why, where
// they waited for the call that holds the instance forever.
func TestInstance_AccessorInsideCall(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "accessors", Version: "1", Schema: "CREATE TABLE t (x INTEGER) STRICT;"})
	var inst *composition.Instance
	uses := map[string]func(){
		"ChangeLog":           func() { inst.ChangeLog() },
		"ChangeLogAndDropped": func() { inst.ChangeLogAndDropped() },
		"ChangeCount":         func() { inst.ChangeCount() },
		"ChangeLogDropped":    func() { inst.ChangeLogDropped() },
		"State":               func() { inst.State() },
		"Inspect":             func() { inst.Inspect() },
		"Release":             func() { inst.Release() },
		"Close":               func() { inst.Close() },
	}
	type useArgs struct {
		Method string `json:"method"`
	}
	env.Tool(w, "use", "Use a method of the instance inside the call.", func(c *env.Ctx, in useArgs) (any, error) {
		uses[in.Method]()
		return nil, nil
	})
	inst = compositiontest.Open(t, w, composition.Options{})
	for method := range uses {
		want := "composition: Instance." + method + " cannot be used inside a call, a startup hook or a Bulk block, which holds the instance: it would wait for itself forever; read the stores through ctx.DB and ctx.Worlds"
		done := make(chan error, 1)
		go func() {
			_, err := inst.CallJSON(context.Background(), "use", json.RawMessage(`{"method":"`+method+`"}`))
			done <- err
		}()
		select {
		case err := <-done:
			var bug *env.WorldBug
			if !errors.As(err, &bug) || bug.Message != want {
				t.Errorf("%s inside a call: %v, want the WorldBug %q", method, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s inside a call: still waiting after 10s", method)
		}
		err := inst.Bulk(context.Background(), func(*env.Ctx) error {
			uses[method]()
			return nil
		})
		var bug *env.WorldBug
		if !errors.As(err, &bug) || bug.Message != want {
			t.Errorf("%s inside a Bulk block: %v, want the WorldBug %q", method, err, want)
		}
	}
	// Outside any call they wait for the instance as before.
	if n := len(inst.State().ChangeLog); n != 0 {
		t.Errorf("%d change records, want none", n)
	}
}
