package composition_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/internal/testfs"
)

// mustInfra fails unless err is an *env.InfraError of one of kinds whose
// message names no path.
func mustInfra(tb testing.TB, err error, dir string, kinds ...string) *env.InfraError {
	tb.Helper()
	var ie *env.InfraError
	if !errors.As(err, &ie) {
		tb.Fatalf("error %v (%T), want an *env.InfraError", err, err)
	}
	if !slices.Contains(kinds, ie.Kind) {
		tb.Fatalf("kind %q (%v), want one of %q", ie.Kind, err, kinds)
	}
	if strings.Contains(ie.Message, dir) || strings.Contains(ie.Message, "/") {
		tb.Errorf("message %q names a path", ie.Message)
	}
	if _, ok := env.AsToolError(err); ok {
		tb.Errorf("%v is also a tool error", err)
	}
	return ie
}

// fillTo writes a file into dir's file system until only about left bytes
// are free.
func fillTo(tb testing.TB, dir string, left int64) {
	tb.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		tb.Fatal(err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if free <= left {
		tb.Fatalf("%d bytes free, want more than %d", free, left)
	}
	if err := os.WriteFile(filepath.Join(dir, "filler"), make([]byte, free-left), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// wrapAll is a world whose middleware turns every error into a tool error
// of its own words, dropping the cause, as a world's error handler may.
func wrapAll() *env.World {
	w := env.NewWorld(env.WorldSpec{Name: "wrapper", Version: "1.0.0",
		Schema: `CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB NOT NULL) STRICT;`})
	w.Use(func(c *env.Ctx, next func() (any, error)) (any, error) {
		out, err := next()
		if err != nil {
			return nil, env.Errorf("something went wrong, please try again")
		}
		return out, nil
	})
	env.Tool(w, "fill", "Insert rows of random bytes.", func(c *env.Ctx, in FillArgs) (int, error) {
		for i := range in.Rows {
			if _, err := c.DB.Exec("INSERT INTO blobs (data) VALUES (randomblob(?))", in.Size); err != nil {
				return i, err
			}
		}
		return in.Rows, nil
	})
	return w
}

// TestOpen_DiskFull opens instances on a file system without room for
// them. Open fails at once with an *env.InfraError of kind disk_full that
// names no path, instead of opening an instance whose first call fails.
func TestOpen_DiskFull(t *testing.T) {
	ctx := context.Background()
	t.Run("FixtureFilesDoNotFit", func(t *testing.T) {
		dir := testfs.MountTmpfs(t, "512k")
		fillTo(t, dir, 32<<10) // acme's files are larger
		inst, err := composition.Open(ctx, company.World, composition.Options{Fixture: company.AcmeID, Dir: dir})
		if err == nil {
			inst.Close()
			t.Fatal("Open on a full disk succeeded")
		}
		mustInfra(t, err, dir, env.FaultDiskFull)
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("Open left %v", ents)
		}
	})
	t.Run("BelowTheReserve", func(t *testing.T) {
		dir := testfs.MountTmpfs(t, "512k")
		_, err := composition.Open(ctx, company.World, composition.Options{Fixture: company.AcmeID, Dir: dir, MinFree: 1 << 20})
		mustInfra(t, err, dir, env.FaultDiskFull)
		inst, err := composition.Open(ctx, company.World, composition.Options{Fixture: company.AcmeID, Dir: dir, MinFree: 64 << 10})
		if err != nil {
			t.Fatalf("Open with room for the reserve: %v", err)
		}
		inst.Close()
	})
	t.Run("Genesis", func(t *testing.T) {
		dir := testfs.MountTmpfs(t, "512k")
		fillTo(t, dir, 0)
		_, err := composition.Open(ctx, company.World, composition.Options{Dir: dir})
		mustInfra(t, err, dir, env.FaultDiskFull)
	})
}

// TestCallJSON_InfraError runs calls into failures of the host. Each is an
// *env.InfraError naming no path, never a tool error, even when the world's
// middleware turned the store's error into a tool error of its own.
func TestCallJSON_InfraError(t *testing.T) {
	ctx := context.Background()
	t.Run("DiskFull", func(t *testing.T) {
		dir := testfs.MountTmpfs(t, "512k")
		inst := compositiontest.Open(t, fillerWorld, composition.Options{Dir: dir})
		// The rollback of the failed write gives the space back before the
		// store can ask why the write failed: either kind may come.
		_, err := inst.CallJSON(ctx, "fill", []byte(`{"rows":64,"size":16384}`))
		mustInfra(t, err, dir, env.FaultDiskFull, env.FaultStorage)
		if _, err := inst.CallJSON(ctx, "fill", []byte(`{"rows":1,"size":100}`)); err != nil {
			t.Fatalf("a small call after the failure: %v", err)
		}
	})
	t.Run("MiddlewareDropsTheCause", func(t *testing.T) {
		dir := testfs.MountTmpfs(t, "512k")
		inst := compositiontest.Open(t, wrapAll(), composition.Options{Dir: dir})
		// The rollback of the failed write gives the space back before the
		// store can ask why the write failed: either kind may come.
		_, err := inst.CallJSON(ctx, "fill", []byte(`{"rows":64,"size":16384}`))
		mustInfra(t, err, dir, env.FaultDiskFull, env.FaultStorage)
	})
	t.Run("InstanceDirectoryRemoved", func(t *testing.T) {
		root := t.TempDir()
		w, _ := ledger("solo")
		inst := compositiontest.Open(t, w, composition.Options{Dir: root})
		compositiontest.Call(t, inst, "add", `{"amount": 1}`)
		if err := os.RemoveAll(inst.Dir()); err != nil {
			t.Fatal(err)
		}
		inst.Release() // the next call reopens the store's file
		_, err := inst.CallJSON(ctx, "add", []byte(`{"amount": 2}`))
		mustInfra(t, err, root, env.FaultStorage)
		_, err = inst.Inspect().Query(ctx, "SELECT count(*) FROM entries")
		mustInfra(t, err, root, env.FaultStorage)
	})
	t.Run("UnknownFixtureIsNot", func(t *testing.T) {
		_, err := composition.Open(ctx, company.World, composition.Options{Fixture: "nope"})
		if !errors.Is(err, fixture.ErrNotFound) {
			t.Fatalf("Open(nope): %v, want fixture.ErrNotFound", err)
		}
		var ie *env.InfraError
		if errors.As(err, &ie) {
			t.Errorf("an unknown fixture is an infrastructure error: %v", err)
		}
	})
}

// TestCallJSON_TooManyOpenFiles runs a call that must reopen its store
// while the process has no file descriptor left: the call fails with an
// *env.InfraError of kind too_many_open_files that names no path, and the
// next call, with descriptors back, succeeds.
func TestCallJSON_TooManyOpenFiles(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	w, _ := ledger("solo")
	inst := compositiontest.Open(t, w, composition.Options{Dir: root})
	compositiontest.Call(t, inst, "add", `{"amount": 1}`)
	inst.Release() // the next call opens the store's file again

	// Below a low limit, take every free descriptor.
	restore := testfs.ExhaustFiles(t, 64, 0)
	_, callErr := inst.CallJSON(ctx, "add", []byte(`{"amount": 2}`))
	restore()
	mustInfra(t, callErr, root, env.FaultTooManyFiles)
	compositiontest.Call(t, inst, "add", `{"amount": 3}`)
	if n := inspectInt(t, inst, "SELECT count(*) FROM entries"); n != 2 {
		t.Errorf("%d entries, want the 2 written with descriptors to spare", n)
	}
}

// TestClose_TooManyOpenFiles closes an instance while the process has no
// file descriptor left: its directory is removed all the same, where
// os.RemoveAll, which opens it, failed and left it on disk for the life of
// the process.
func TestClose_TooManyOpenFiles(t *testing.T) {
	root := t.TempDir()
	w, _ := ledger("solo")
	inst, err := composition.Open(context.Background(), w, composition.Options{Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	compositiontest.Call(t, inst, "add", `{"amount": 1}`)
	inst.Release() // the store holds no descriptor to give back at Close

	restore := testfs.ExhaustFiles(t, 64, 0)
	closeErr := inst.Close()
	restore()
	if closeErr != nil {
		t.Errorf("Close: %v", closeErr)
	}
	if _, err := os.Stat(inst.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the instance directory is still there after Close (stat: %v)", err)
	}
}

// TestCallJSON_InfraErrorNoStep fails calls on the host, one before it
// changed anything and one after a nested call committed on a child. The
// first's *env.InfraError says NoStep, and the instance counts no call and
// moves no step-mode clock for it; the second's does not, and it is a step.
func TestCallJSON_InfraErrorNoStep(t *testing.T) {
	ctx := context.Background()
	child, add := ledger("nostep")
	host := env.NewWorld(env.WorldSpec{Name: "nostephost", Version: "1", Schema: "CREATE TABLE h (x INTEGER) STRICT;"})
	host.AddWorld(child, env.Name("led"), env.ToolAllowList())
	full := &os.PathError{Op: "write", Path: "/x/state.sqlite", Err: syscall.ENOSPC}
	env.Tool(host, "fail", "Fail on the host, having changed nothing.", func(c *env.Ctx, _ noArgs) (string, error) {
		return "", full
	})
	env.Tool(host, "add_then_fail", "Add an entry to the child, then fail on the host.", func(c *env.Ctx, _ noArgs) (string, error) {
		if _, err := env.Call(c.Context(), c.Worlds.Get("led"), add, amountArgs{Amount: 5}); err != nil {
			return "", err
		}
		return "", full
	})
	env.Tool(host, "draw_then_fail", "Draw an id and SQL random bytes, write, then fail on the host.", func(c *env.Ctx, _ noArgs) (string, error) {
		if _, err := c.DB.Exec("INSERT INTO h VALUES (length(randomblob(8)))"); err != nil {
			return "", err
		}
		return c.IDs.UUID(), full
	})
	env.Tool(host, "draw", "Draw an id and SQL random bytes.", func(c *env.Ctx, _ noArgs) (string, error) {
		row, err := c.DB.One("SELECT hex(randomblob(8)) AS r")
		if err != nil {
			return "", err
		}
		return c.IDs.UUID() + " " + row["r"].(string), nil
	})
	inst := compositiontest.Open(t, host, composition.Options{ClockMode: env.ClockStep})
	step := func() (int, string) {
		st := inst.State()
		return st.StepCount, st.Now
	}

	t.Run("ChangedNothing", func(t *testing.T) {
		steps, now := step()
		_, err := inst.CallJSON(ctx, "fail", nil)
		if ie := mustInfra(t, err, "/x", env.FaultDiskFull); !ie.NoStep {
			t.Errorf("NoStep is false for a call that changed nothing")
		}
		if s, n := step(); s != steps || n != now {
			t.Errorf("after the call: step %d at %s, want step %d at %s as before it", s, n, steps, now)
		}
	})
	t.Run("DrewFromTheStreams", func(t *testing.T) {
		inst := compositiontest.Open(t, host, composition.Options{ClockMode: env.ClockStep})
		want := compositiontest.Call(t, compositiontest.Open(t, host, composition.Options{ClockMode: env.ClockStep}), "draw", `{}`)
		if _, err := inst.CallJSON(ctx, "draw_then_fail", nil); !mustInfra(t, err, "/x", env.FaultDiskFull).NoStep {
			t.Fatalf("NoStep is false for a call that changed nothing")
		}
		if got := compositiontest.Call(t, inst, "draw", `{}`); got != want {
			t.Errorf("the retry drew %s, want %s as on a fresh instance", got, want)
		}
	})
	t.Run("ChangedSomething", func(t *testing.T) {
		steps, now := step()
		_, err := inst.CallJSON(ctx, "add_then_fail", nil)
		if ie := mustInfra(t, err, "/x", env.FaultDiskFull); ie.NoStep {
			t.Errorf("NoStep is true for a call whose nested call committed")
		}
		if s, n := step(); s != steps+1 || n == now {
			t.Errorf("after the call: step %d at %s, want step %d and the clock moved from %s", s, n, steps+1, now)
		}
		if log := inst.ChangeLog(); len(log) != 1 || log[0].Call != steps+1 {
			t.Errorf("change log %+v, want the child's entry as call %d", log, steps+1)
		}
	})
}

// waitingHost returns a host world over ledger(name), added as "led", whose
// tool write_then_wait ({"nested": true} first adds 5 to the ledger)
// writes a row of h, the SQL expression value of a new id, then waits for
// the call's end; started receives once it has written.
func waitingHost(name, value string) (*env.World, chan struct{}) {
	child, add := ledger(name)
	host := env.NewWorld(env.WorldSpec{Name: name + "host", Version: "1", Schema: "CREATE TABLE h (x TEXT) STRICT;"})
	host.AddWorld(child, env.Name("led"), env.ToolAllowList())
	started := make(chan struct{}, 1)
	env.Tool(host, "write_then_wait", "Write, then wait for the call's end.", func(c *env.Ctx, in struct {
		Nested bool `json:"nested,omitempty"`
	}) (string, error) {
		if in.Nested {
			if _, err := env.Call(c.Context(), c.Worlds.Get("led"), add, amountArgs{Amount: 5}); err != nil {
				return "", err
			}
		}
		if _, err := c.DB.Exec("INSERT INTO h VALUES ("+value+")", c.IDs.UUID()); err != nil {
			return "", err
		}
		started <- struct{}{}
		<-c.Context().Done()
		return "", c.Context().Err()
	})
	return host, started
}

// TestCallJSON_CancelledNoStep: a call its caller cancels before it changes
// anything is no step (env.ErrNoStep): its writes roll back, and the call
// count, the step clock and the id streams stay as they were, so the next
// call runs as it would have without it. One that its deadline ends, or
// whose nested call committed first, is a step.
func TestCallJSON_CancelledNoStep(t *testing.T) {
	host, started := waitingHost("cancelled", "?")
	env.Tool(host, "mint", "Write a new id.", func(c *env.Ctx, _ noArgs) (string, error) {
		id := c.IDs.UUID()
		_, err := c.DB.Exec("INSERT INTO h VALUES (?)", id)
		return id + " at " + c.Now().String(), err
	})
	fresh := compositiontest.Open(t, host, composition.Options{ClockMode: env.ClockStep})
	want := compositiontest.Call(t, fresh, "mint", `{}`)

	cancelled := func(inst *composition.Instance, args string, end func(context.Context) (context.Context, func())) error {
		ctx, stop := end(context.Background())
		defer stop()
		go func() { <-started; stop() }()
		_, err := inst.CallJSON(ctx, "write_then_wait", []byte(args))
		return err
	}
	byCaller := func(ctx context.Context) (context.Context, func()) { return context.WithCancel(ctx) }

	t.Run("ByItsCaller", func(t *testing.T) {
		inst := compositiontest.Open(t, host, composition.Options{ClockMode: env.ClockStep})
		err := cancelled(inst, `{}`, byCaller)
		if te, ok := env.AsToolError(err); !ok || te.Kind != env.KindExecution || te.Message != "the call was cancelled and rolled back" || !errors.Is(err, env.ErrNoStep) {
			t.Fatalf("err = %v, want the cancelled call's tool error wrapping env.ErrNoStep", err)
		}
		if st := inst.State(); st.StepCount != 0 || len(inst.ChangeLog()) != 0 {
			t.Errorf("after the call: step %d, change log %v; want no step and no change", st.StepCount, inst.ChangeLog())
		}
		if got := compositiontest.Call(t, inst, "mint", `{}`); got != want {
			t.Errorf("the next call returned %s, want %s as on a fresh instance", got, want)
		}
	})
	t.Run("ByItsDeadline", func(t *testing.T) {
		inst := compositiontest.Open(t, host, composition.Options{ClockMode: env.ClockStep})
		err := cancelled(inst, `{}`, func(ctx context.Context) (context.Context, func()) {
			ctx, cancel := context.WithCancelCause(ctx)
			return ctx, func() { cancel(context.DeadlineExceeded) }
		})
		if te, ok := env.AsToolError(err); !ok || te.Kind != env.KindTimeout || errors.Is(err, env.ErrNoStep) {
			t.Fatalf("err = %v, want a timeout that is a step", err)
		}
		if st := inst.State(); st.StepCount != 1 {
			t.Errorf("step %d after a timeout, want 1", st.StepCount)
		}
	})
	t.Run("AfterANestedCommit", func(t *testing.T) {
		inst := compositiontest.Open(t, host, composition.Options{ClockMode: env.ClockStep})
		err := cancelled(inst, `{"nested":true}`, byCaller)
		if te, ok := env.AsToolError(err); !ok || te.Message != "the call was cancelled and rolled back" || errors.Is(err, env.ErrNoStep) {
			t.Fatalf("err = %v, want the cancelled call's tool error, a step", err)
		}
		if st := inst.State(); st.StepCount != 1 || len(inst.ChangeLog()) != 1 {
			t.Errorf("after the call: step %d, change log %v; want step 1 and the nested entry", st.StepCount, inst.ChangeLog())
		}
	})
	t.Run("WhileWaitingForTheInstance", func(t *testing.T) {
		inst := compositiontest.Open(t, host, composition.Options{ClockMode: env.ClockStep})
		ctx, stop := context.WithCancel(context.Background())
		first := make(chan error, 1)
		go func() {
			_, err := inst.CallJSON(ctx, "write_then_wait", nil)
			first <- err
		}()
		<-started
		wctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := inst.CallJSON(wctx, "mint", nil)
		stop()
		<-first
		if te, ok := env.AsToolError(err); !ok || te.Kind != env.KindTimeout || !errors.Is(err, env.ErrNoStep) {
			t.Fatalf("err = %v, want a timeout wrapping env.ErrNoStep", err)
		}
		if got := compositiontest.Call(t, inst, "mint", `{}`); got != want {
			t.Errorf("the next call returned %s, want %s as on a fresh instance", got, want)
		}
	})
}

// TestCallJSON_TimeoutLeavesNoDraws: a call its deadline ends after it drew
// ids and SQL random values, having changed nothing, is a step (its number,
// the step clock's tick) and nothing more: the next call runs as after the
// same call cut off before it began (a context already past its deadline,
// as a replay makes it). One whose nested call committed first says that
// part of its work stays.
func TestCallJSON_TimeoutLeavesNoDraws(t *testing.T) {
	host, started := waitingHost("timedout", "? || hex(randomblob(8))")
	env.Tool(host, "mint", "Draw an id and SQL random bytes, and write them.", func(c *env.Ctx, _ noArgs) (string, error) {
		row, err := c.DB.One("SELECT hex(randomblob(8)) AS r")
		if err != nil {
			return "", err
		}
		id := c.IDs.UUID() + " " + row["r"].(string)
		_, err = c.DB.Exec("INSERT INTO h VALUES (?)", id)
		return id + " at " + c.Now().String(), err
	})
	timeout := func(inst *composition.Instance, args string, cutOff bool) error {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		if cutOff {
			cancel(context.DeadlineExceeded)
		} else {
			go func() { <-started; cancel(context.DeadlineExceeded) }()
		}
		_, err := inst.CallJSON(ctx, "write_then_wait", []byte(args))
		return err
	}
	after := func(inst *composition.Instance, args string, cutOff bool) any {
		t.Helper()
		err := timeout(inst, args, cutOff)
		if te, ok := env.AsToolError(err); !ok || te.Kind != env.KindTimeout || te.Message != composition.MsgTimedOut || errors.Is(err, env.ErrNoStep) {
			t.Fatalf("err = %v, want a timeout saying %q that is a step", err, composition.MsgTimedOut)
		}
		if st := inst.State(); st.StepCount != 1 || len(st.ChangeLog) != 0 {
			t.Fatalf("after the timeout: step %d, change log %v; want step 1 and no change", st.StepCount, st.ChangeLog)
		}
		return compositiontest.Call(t, inst, "mint", `{}`)
	}
	cut := after(compositiontest.Open(t, host, composition.Options{ClockMode: env.ClockStep, Seed: 7}), `{}`, true)
	ran := after(compositiontest.Open(t, host, composition.Options{ClockMode: env.ClockStep, Seed: 7}), `{}`, false)
	if ran != cut {
		t.Errorf("after a call cut off by its deadline midway, the next call returned %s; after one cut off before it began, %s", ran, cut)
	}

	inst := compositiontest.Open(t, host, composition.Options{ClockMode: env.ClockStep, Seed: 7})
	err := timeout(inst, `{"nested":true}`, false)
	if te, ok := env.AsToolError(err); !ok || te.Kind != env.KindTimeout || te.Message != composition.MsgTimedOutKept {
		t.Fatalf("err = %v, want a timeout saying %q", err, composition.MsgTimedOutKept)
	}
	if log := inst.ChangeLog(); len(log) != 1 || log[0].World != "led" {
		t.Errorf("change log %+v, want the nested call's entry", log)
	}
}

// TestCallJSON_EndedAfterUnloggedCommit: a call its deadline, its caller
// or a failure of the host ends after a nested call committed work the
// change log does not record (a row of an untracked table, a table
// created) changed something all the same: it is a step, a timeout says
// that part of its work stays, and it keeps the ids it drew, so the next
// call draws new ones.
func TestCallJSON_EndedAfterUnloggedCommit(t *testing.T) {
	child := env.NewWorld(env.WorldSpec{Name: "unlogged", Version: "1.0.0", UntrackedTables: []string{"audit"},
		Schema: "CREATE TABLE audit (id TEXT PRIMARY KEY) STRICT;"})
	env.Tool(child, "audit", "Write an audit row under a new id.", func(c *env.Ctx, _ noArgs) (string, error) {
		id := c.IDs.UUID()
		_, err := c.DB.Exec("INSERT INTO audit VALUES (?)", id)
		return id, err
	})
	env.Tool(child, "create", "Create a table, under a new id.", func(c *env.Ctx, _ noArgs) (string, error) {
		id := c.IDs.UUID()
		_, err := c.DB.Exec(`CREATE TABLE "` + id + `" (x TEXT PRIMARY KEY) STRICT`)
		return id, err
	})
	host := env.NewWorld(env.WorldSpec{Name: "unloggedhost", Version: "1.0.0", Schema: "CREATE TABLE h (x TEXT) STRICT;"})
	host.AddWorld(child, env.Name("led"), env.ToolAllowList())
	started := make(chan struct{}, 1)
	full := &os.PathError{Op: "write", Path: "/x/state.sqlite", Err: syscall.ENOSPC}
	env.Tool(host, "nested_then", "Call a tool of the child, then wait for the call's end, or fail on the host.", func(c *env.Ctx, in struct {
		Tool string `json:"tool"`
		Then string `json:"then,omitempty"`
	}) (string, error) {
		if _, err := c.Worlds.Get("led").Call(in.Tool, noArgs{}); err != nil {
			return "", err
		}
		switch in.Then {
		case "wait":
			started <- struct{}{}
			<-c.Context().Done()
			return "", c.Context().Err()
		case "fail":
			return "", full
		}
		return in.Tool, nil
	})
	for _, tool := range []string{"audit", "create"} {
		for _, end := range []string{"deadline", "caller", "host"} {
			t.Run(tool+"/"+end, func(t *testing.T) {
				inst := compositiontest.Open(t, host, composition.Options{ClockMode: env.ClockStep})
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				then := "wait"
				switch end {
				case "deadline":
					go func() { <-started; cancel(context.DeadlineExceeded) }()
				case "caller":
					go func() { <-started; cancel(context.Canceled) }()
				case "host":
					then = "fail"
				}
				_, err := inst.CallJSON(ctx, "nested_then", []byte(`{"tool": "`+tool+`", "then": "`+then+`"}`))
				if end == "host" {
					if ie := mustInfra(t, err, "/x", env.FaultDiskFull); ie.NoStep {
						t.Errorf("NoStep is true for a call whose nested call committed")
					}
				} else if te, ok := env.AsToolError(err); !ok || errors.Is(err, env.ErrNoStep) {
					t.Fatalf("err = %v, want a tool error that is a step", err)
				} else if end == "deadline" && te.Message != composition.MsgTimedOutKept {
					t.Fatalf("err = %v, want a timeout saying %q", err, composition.MsgTimedOutKept)
				}
				if st := inst.State(); st.StepCount != 1 {
					t.Errorf("step %d after the call, want 1", st.StepCount)
				}
				// The id the committed work holds is not drawn again.
				if _, err := inst.CallJSON(context.Background(), "nested_then", []byte(`{"tool": "`+tool+`"}`)); err != nil {
					t.Errorf("the next call: %v", err)
				}
			})
		}
	}
}
