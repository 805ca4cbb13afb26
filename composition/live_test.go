package composition_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/testfs"
)

func toolNames(tools []env.ToolInfo) []string {
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return names
}

func TestInstance_Reseal(t *testing.T) {
	ctx := context.Background()
	t.Run("NewToolAppears", func(t *testing.T) {
		host := newWorld("rs_host")
		child := newWorld("rs_child")
		addTool(child, "c_one")
		host.AddWorld(child, env.ToolPrefix("k_"))
		inst := compositiontest.Open(t, host, composition.Options{})
		if got := toolNames(inst.Tools()); !slices.Equal(got, []string{"k_c_one"}) {
			t.Fatalf("tools %v", got)
		}
		// Registered after the instance opened, on the host and on the child.
		addTool(host, "h_late")
		addTool(child, "c_late")
		if got, want := toolNames(inst.Tools()), []string{"h_late", "k_c_one", "k_c_late"}; !slices.Equal(got, want) {
			t.Fatalf("tools %v, want %v", got, want)
		}
		if out := compositiontest.Call(t, inst, "k_c_late", `{}`); out != "c_late" {
			t.Fatalf("k_c_late returned %v", out)
		}
		if out := compositiontest.Call(t, inst, "h_late", `{}`); out != "h_late" {
			t.Fatalf("h_late returned %v", out)
		}
	})
	t.Run("BrokenTreeIsTheSealsWorldBug", func(t *testing.T) {
		host := newWorld("rb_host")
		child := newWorld("rb_child")
		addTool(child, "list")
		host.AddWorld(child, env.ToolPrefix("c_"))
		addTool(host, "own")
		inst := compositiontest.Open(t, host, composition.Options{})
		compositiontest.Call(t, inst, "own", `{}`)
		// The host now registers the name the child contributes: the tree
		// no longer seals.
		addTool(host, "c_list")
		_, openErr := composition.Open(ctx, host, composition.Options{})
		var want *env.WorldBug
		if !errors.As(openErr, &want) || !strings.Contains(want.Message, `two routes produce the tool name "c_list"`) {
			t.Fatalf("Open: %v", openErr)
		}
		check := func(what string, err error) {
			t.Helper()
			var bug *env.WorldBug
			if !errors.As(err, &bug) || bug.Message != want.Message || bug.Where != want.Where {
				t.Fatalf("%s: %v, want the seal's WorldBug %q", what, err, want.Message)
			}
		}
		_, err := inst.CallJSON(ctx, "own", []byte(`{}`))
		check("CallJSON", err)
		_, err = inst.Call(ctx, "own", noArgs{})
		check("Call", err)
		_, err = inst.Freeze(ctx, "broken", "", composition.FreezeOptions{FixturesDir: t.TempDir()})
		check("Freeze", err)
		check("Bulk", inst.Bulk(ctx, func(c *env.Ctx) error { return nil }))
		check("Tools", func() (err error) {
			defer func() { err, _ = recover().(error) }()
			inst.Tools()
			return nil
		}())
	})
	t.Run("NodeAddedIsAWorldBug", func(t *testing.T) {
		host := newWorld("rn_host")
		addTool(host, "own")
		inst := compositiontest.Open(t, host, composition.Options{})
		late := newWorld("rn_late")
		host.AddWorld(late)
		_, err := inst.CallJSON(ctx, "own", []byte(`{}`))
		var bug *env.WorldBug
		if !errors.As(err, &bug) || !strings.Contains(bug.Message, "node added: rn_late (world rn_late, scope null)") ||
			!strings.Contains(bug.Message, "open a new instance") {
			t.Fatalf("err = %v", err)
		}
		// A new instance has the new tree.
		fresh := compositiontest.Open(t, host, composition.Options{})
		if n := len(fresh.Composition()); n != 2 {
			t.Fatalf("new instance has %d nodes", n)
		}
	})
	t.Run("AliasAddedIsAWorldBug", func(t *testing.T) {
		host, mid, p := newWorld("ra_host"), newWorld("ra_mid"), newWorld("ra_p")
		addTool(host, "own")
		host.AddWorld(p)
		host.AddWorld(mid)
		inst := compositiontest.Open(t, host, composition.Options{})
		// The same nodes, and one of them reached by a second route.
		mid.AddWorld(p)
		_, err := inst.CallJSON(ctx, "own", []byte(`{}`))
		var bug *env.WorldBug
		if !errors.As(err, &bug) || !strings.Contains(bug.Message, "shape changed: node ra_p was world ra_p, scope null, aliases [] and is now world ra_p, scope null, aliases [ra_mid/ra_p]") {
			t.Fatalf("err = %v", err)
		}
	})
}

// slowTree is a host whose tool "wait" signals entered and waits for
// release, and a child whose tool of the same name does the same.
type slowTree struct {
	host, child *env.World
	entered     chan struct{}
	release     chan struct{}
	once        sync.Once
}

// done releases every waiting tool for good. Register it with t.Cleanup
// after the instance's, so a failing test does not leave Close waiting.
func (st *slowTree) done() { st.once.Do(func() { close(st.release) }) }

func newSlowTree(prefix string) *slowTree {
	st := &slowTree{host: newWorld(prefix + "_host"), child: newWorld(prefix + "_child"),
		entered: make(chan struct{}, 8), release: make(chan struct{})}
	wait := func(c *env.Ctx, _ noArgs) (string, error) {
		st.entered <- struct{}{}
		<-st.release
		return "waited", nil
	}
	env.Tool(st.child, "wait", "Wait for the test.", wait)
	st.host.AddWorld(st.child, env.ToolPrefix("c_"))
	env.Tool(st.host, "wait", "Wait for the test.", wait)
	return st
}

func wantStale(t *testing.T, what string, err error) {
	t.Helper()
	var bug *env.WorldBug
	if !errors.As(err, &bug) || err.Error() != env.StaleHandle {
		t.Fatalf("%s: %v, want the stale-handle WorldBug", what, err)
	}
}

func TestHandle_Stale(t *testing.T) {
	ctx := context.Background()
	t.Run("UsedWhileItsCallIsInANestedCall", func(t *testing.T) {
		st := newSlowTree("hs_nested")
		used := make(chan error, 1)
		env.Tool(st.host, "fan_out", "Use a handle from another goroutine during a nested call.",
			func(c *env.Ctx, _ noArgs) (any, error) {
				h := c.Worlds.Get(st.child.Name())
				go func() {
					<-st.entered // the nested call below is running
					_, err := h.DB().One("SELECT 1 AS one")
					used <- err
					st.release <- struct{}{}
				}()
				return h.Call("wait", noArgs{})
			})
		inst := compositiontest.Open(t, st.host, composition.Options{})
		t.Cleanup(st.done)
		testfs.Within(t, "fan_out", func() { compositiontest.Call(t, inst, "fan_out", `{}`) })
		wantStale(t, "the goroutine's use", <-used)
	})
	t.Run("UsedAfterTheCallThatMadeItReturned", func(t *testing.T) {
		grand := newWorld("hs_after_grand")
		mid := newWorld("hs_after_mid")
		mid.AddWorld(grand)
		host := newWorld("hs_after_host")
		host.AddWorld(mid, env.ToolAllowList())
		var kept *env.Handle
		ready, used := make(chan struct{}), make(chan error)
		env.Tool(mid, "lend", "Hand a handle to a goroutine that outlives this call.",
			func(c *env.Ctx, _ noArgs) (string, error) {
				kept = c.Worlds.Get(grand.Name())
				go func() {
					<-ready
					_, err := kept.DB().Exec("INSERT INTO hs_after_grand_rows VALUES ('x')")
					used <- err
				}()
				return "lent", nil
			})
		env.Tool(host, "borrow", "Call lend, then let its goroutine run.",
			func(c *env.Ctx, _ noArgs) (string, error) {
				if _, err := c.Worlds.Get(mid.Name()).Call("lend", noArgs{}); err != nil {
					return "", err
				}
				// lend has returned; this call has not.
				ready <- struct{}{}
				if err := <-used; err != nil {
					return "", err
				}
				return "borrowed", nil
			})
		inst := compositiontest.Open(t, host, composition.Options{})
		_, err := inst.CallJSON(ctx, "borrow", nil)
		wantStale(t, "the goroutine's use", err)
		// The same goes for the code that called lend.
		env.Tool(host, "borrow_here", "Call lend, then use its handle.",
			func(c *env.Ctx, _ noArgs) (any, error) {
				if _, err := c.Worlds.Get(mid.Name()).Call("lend", noArgs{}); err != nil {
					return nil, err
				}
				close(ready) // lend's goroutine gets its turn too
				<-used
				return kept.DB().Rows("SELECT * FROM hs_after_grand_rows")
			})
		_, err = inst.CallJSON(ctx, "borrow_here", nil)
		wantStale(t, "borrow_here", err)
	})
	t.Run("KeptPastItsCall", func(t *testing.T) {
		// Every member of a handle kept past its call, and the call's own
		// context, fail alike.
		child, add := ledger("hs_kept_child")
		host := newWorld("hs_kept_host")
		host.AddWorld(child, env.Name("led"), env.ToolAllowList())
		addTool(host, "own")
		var kept *env.Handle
		var keptCtx context.Context
		env.Tool(host, "keep", "Keep the call's handle and context past the call.",
			func(c *env.Ctx, _ noArgs) (string, error) {
				kept, keptCtx = c.Worlds.Get("led"), c.Context()
				return "kept", nil
			})
		inst := compositiontest.Open(t, host, composition.Options{})
		compositiontest.Call(t, inst, "keep", `{}`)
		for _, tt := range []struct {
			name string       // the use
			use  func() error // makes it
		}{
			{"Call", func() error { _, err := kept.Call("add", amountArgs{1}); return err }},
			{"CallDef", func() error { _, err := env.Call(ctx, kept, add, amountArgs{1}); return err }},
			{"DB", func() error { _, err := kept.DB().Rows("SELECT * FROM entries"); return err }},
			{"State", func() (err error) {
				defer func() { err, _ = recover().(error) }()
				kept.State()
				return nil
			}},
			{"Worlds", func() error { _, err := kept.Worlds().Get("any").DB().Rows("SELECT 1"); return err }},
			{"TheCallsContext", func() error { _, err := inst.CallJSON(keptCtx, "own", []byte(`{}`)); return err }},
		} {
			t.Run(tt.name, func(t *testing.T) { wantStale(t, tt.name, tt.use()) })
		}
	})
	t.Run("BlockHandleWhileTheBlockCalls", func(t *testing.T) {
		st := newSlowTree("hs_bulk")
		inst := compositiontest.Open(t, st.host, composition.Options{})
		t.Cleanup(st.done)
		used := make(chan error, 1)
		testfs.Within(t, "Bulk", func() {
			err := inst.Bulk(ctx, func(c *env.Ctx) error {
				h := c.Worlds.Get(st.child.Name())
				go func() {
					<-st.entered
					_, err := h.DB().One("SELECT 1 AS one")
					used <- err
					st.release <- struct{}{}
				}()
				if _, err := inst.CallJSON(c.Context(), "wait", nil); err != nil {
					return err
				}
				// Back from the call, the block's handle is valid again.
				_, err := h.DB().One("SELECT 1 AS one")
				return err
			})
			if err != nil {
				t.Errorf("Bulk: %v", err)
			}
		})
		wantStale(t, "the goroutine's use", <-used)
	})
}

func TestInstance_LockWait(t *testing.T) {
	t.Run("DeadlineEndsTheWait", func(t *testing.T) {
		st := newSlowTree("lw")
		inst := compositiontest.Open(t, st.host, composition.Options{})
		t.Cleanup(st.done)
		first := make(chan error, 1)
		go func() {
			_, err := inst.CallJSON(context.Background(), "wait", nil)
			first <- err
		}()
		<-st.entered // the first call holds the instance
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		var err error
		testfs.Within(t, "the waiting call", func() { _, err = inst.CallJSON(ctx, "c_wait", nil) })
		te, ok := env.AsToolError(err)
		if !ok || te.Kind != env.KindTimeout || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("waiting call: %v, want a timeout", err)
		}
		select {
		case <-first:
			t.Fatal("the first call finished before the waiting call returned")
		default:
		}
		st.done()
		if err := <-first; err != nil {
			t.Fatalf("first call: %v", err)
		}
		if got := inst.State().StepCount; got != 1 {
			t.Fatalf("step count %d: the call that timed out waiting counted", got)
		}
	})
	t.Run("CancelEndsTheWait", func(t *testing.T) {
		st := newSlowTree("lc")
		inst := compositiontest.Open(t, st.host, composition.Options{})
		t.Cleanup(st.done)
		go inst.CallJSON(context.Background(), "wait", nil)
		<-st.entered
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var err error
		testfs.Within(t, "Bulk", func() { err = inst.Bulk(ctx, func(c *env.Ctx) error { return nil }) })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Bulk: %v, want context.Canceled", err)
		}
		st.done()
	})
}

// A tool that calls its own instance with a context other than its own
// waits for itself. The wait ends soon after the outer call's deadline,
// with a *env.WorldBug that names the mistake, and the instance serves the
// next call.
func TestInstance_SelfCallWithAnotherContext(t *testing.T) {
	w, _ := ledger("sc")
	var inst *composition.Instance
	inner := make(chan error, 1)
	env.Tool(w, "self", "Call add on this instance with a fresh context.", func(c *env.Ctx, _ noArgs) (string, error) {
		_, err := inst.CallJSON(context.Background(), "add", []byte(`{"amount": 1}`))
		inner <- err
		return "", err
	})
	inst = compositiontest.Open(t, w, composition.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var err error
	testfs.Within(t, "the outer call", func() { _, err = inst.CallJSON(ctx, "self", nil) })
	if err == nil {
		t.Fatal("the outer call succeeded")
	}
	var bug *env.WorldBug
	const want = `call of "add" waited for the call of self, which still held the instance 1s after its context ended: ` +
		"a call made inside a call must pass that call's own context, c.Context(), as any other context waits for the call forever, " +
		"and world code must return once its context ends"
	if err := <-inner; !errors.As(err, &bug) || bug.Message != want {
		t.Fatalf("inner call: %v\nwant the WorldBug %q", err, want)
	}
	if _, err := inst.CallJSON(context.Background(), "add", []byte(`{"amount": 2}`)); err != nil {
		t.Fatalf("the next call: %v", err)
	}
	row, _ := inst.Inspect().One(context.Background(), "SELECT count(*) AS n, sum(amount) AS s FROM entries")
	if row["n"] != int64(1) || row["s"] != int64(2) {
		t.Fatalf("entries %v, want only the next call's", row)
	}
}

func TestBulk_CallContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, _ := ledger("bc")
	inst := compositiontest.Open(t, w, composition.Options{})
	const want = `call of "add" while the instance runs a Bulk block: a call made inside the block must pass the block's context, c.Context();`
	for _, tc := range []struct {
		name string
		ctx  func(c *env.Ctx) (context.Context, context.CancelFunc) // the context the block calls with
	}{
		{"TheBulkCallersContext", func(*env.Ctx) (context.Context, context.CancelFunc) { return ctx, func() {} }},
		{"Background", func(*env.Ctx) (context.Context, context.CancelFunc) { return context.Background(), func() {} }},
		{"DerivedFromTheBlocks", func(c *env.Ctx) (context.Context, context.CancelFunc) { return context.WithCancel(c.Context()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			testfs.Within(t, "Bulk", func() {
				err = inst.Bulk(ctx, func(c *env.Ctx) error {
					cctx, cancel := tc.ctx(c)
					defer cancel()
					_, err := inst.Call(cctx, "add", amountArgs{1})
					return err
				})
			})
			var bug *env.WorldBug
			if !errors.As(err, &bug) || !strings.HasPrefix(bug.Message, want) {
				t.Fatalf("Bulk: %v, want a WorldBug starting %q", err, want)
			}
		})
	}
	t.Run("FreezeInsideTheBlock", func(t *testing.T) {
		var err error
		testfs.Within(t, "Bulk", func() {
			err = inst.Bulk(ctx, func(c *env.Ctx) error {
				_, err := inst.Freeze(c.Context(), "inside", "", composition.FreezeOptions{FixturesDir: t.TempDir()})
				return err
			})
		})
		var bug *env.WorldBug
		if !errors.As(err, &bug) || bug.Message != "Freeze cannot run inside a Bulk block: it holds the instance until it returns" {
			t.Fatalf("Bulk: %v", err)
		}
	})
	t.Run("TheBlocksContext", func(t *testing.T) {
		err := inst.Bulk(ctx, func(c *env.Ctx) error {
			_, err := inst.CallJSON(c.Context(), "add", []byte(`{"amount": 2}`))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		r, err := inst.Inspect().One(ctx, "SELECT count(*) AS n FROM entries")
		if err != nil || r["n"] != int64(1) {
			t.Fatalf("rows %v, %v", r, err)
		}
	})
	testfs.Within(t, "Close", func() { inst.Close() })
}
