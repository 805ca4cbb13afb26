package composition

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/nilerr"
	"github.com/seahaven/seahaven/sqlitestore"
)

// activationKey marks the context an activation hands to world code. It
// never lets a call re-enter the instance (only the activation's own context
// does, compared by identity in callRoute): it lets Open refuse to run
// inside a call, and a call made inside one with a context derived from it
// be refused rather than wait for it forever.
type activationKey struct{}

func activationFrom(ctx context.Context) *activation {
	if ctx == nil {
		return nil
	}
	a, _ := ctx.Value(activationKey{}).(*activation)
	return a
}

// activateFunc is the name the runtime gives Instance.activate, the frame
// below all world code of an activation.
var activateFunc = runtime.FuncForPC(reflect.ValueOf((*Instance).activate).Pointer()).Name()

// inActivation reports whether the calling goroutine runs inside an
// activation of some instance: whether activate is on its stack. It lets
// Open refuse to run inside a call it was not given the context of.
func inActivation() bool {
	pcs := make([]uintptr, 128)
	n := runtime.Callers(2, pcs)
	for n == len(pcs) { // a deep stack: take it whole
		pcs = make([]uintptr, 4*len(pcs))
		n = runtime.Callers(2, pcs)
	}
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if f.Function == activateFunc {
			return true
		}
		if !more {
			return false
		}
	}
}

// activationKind says what opened an activation.
type activationKind int

const (
	kindCall    activationKind = iota // an agent call: logged, one step
	kindBulk                          // a Bulk block
	kindStartup                       // the startup hooks of Open
	kindDB                            // a statement of Instance.DB
)

// activation is one outermost call (or a bulk block, or startup) of an
// instance. Handles made during it die when it ends.
type activation struct {
	inst  *Instance
	id    int
	ctx   context.Context
	tool  string // the call's published name ("bulk", "startup" for those)
	own   string // the called tool's own name, which direct writes are recorded under
	kind  activationKind
	ended atomic.Bool

	turnMu sync.Mutex // guards top, and busy and done of every turn of the activation
	top    *turn      // the innermost turn: the one whose code runs now

	pinned []*nodeState
	pinBuf [4]*nodeState // pinned's first backing array
	// loose holds each node's capture of statements run on it outside any
	// of its frames (a handle's DB used directly); a nil capture is one cut
	// by a frame or a transaction (see cutLoose), resumed when that ends.
	loose   map[*nodeState]*sqlitestore.Capture
	group   map[*nodeState]*frame // grouped mode: one frame per touched node
	records []logRecord
	// infra is the first failure of the host a store reported during the
	// activation (see Fault), kept even when world code replaced the
	// error with its own.
	infra error
}

// note records err when it is a failure of the host, and returns it.
func (a *activation) note(err error) error {
	if err != nil && a.infra == nil && Fault(err, "") != nil {
		a.infra = err
	}
	return err
}

// activate runs fn as a new activation. The caller holds the instance's
// lock.
func (i *Instance) activate(ctx context.Context, tool string, kind activationKind, fn func(a *activation) error) error {
	ctx = cmp.Or(ctx, context.Background())
	if kind == kindCall {
		i.calls++
	}
	a := &activation{inst: i, id: i.calls, tool: tool, kind: kind}
	a.pinned = a.pinBuf[:0]
	a.ctx = context.WithValue(ctx, activationKey{}, a)
	i.running.Store(a)
	err := fn(a)
	if lerr := a.finishLoose(); err == nil {
		err = lerr
	}
	if kind == kindCall {
		if oerr := a.commitUnowned(); err == nil {
			err = oerr
		}
	}
	a.ended.Store(true)
	i.running.Store(nil)
	for _, ns := range a.pinned {
		clear(ns.frames)
		ns.frames = ns.frames[:0] // the backing array serves the next activation
		ns.recorded = ns.recorded[:0]
		ns.store.Unpin()
	}
	if kind == kindCall {
		slices.SortStableFunc(a.records, func(x, y logRecord) int {
			return cmp.Or(strings.Compare(x.world, y.world), strings.Compare(x.row.Table, y.row.Table), sqlitestore.CompareKeys(x.row.KeyValues, y.row.KeyValues))
		})
		for _, r := range a.records {
			i.changes.add(r)
		}
	}
	return err
}

// A turn is one stretch of world code in an activation: a startup hook, a
// Bulk block, or one node's layer of a call (its middleware and its tool).
// What that code is handed (its Ctx's DB and Worlds, and the handles they
// make) is bound to its turn. Turns nest as calls do: while a layer's code
// waits in a nested call or in its next layer, the inner turn's code runs.
//
// Go has no goroutine identity, so a turn stands in for the spec's thread:
// a use of a turn's objects is refused with the stale-handle WorldBug
// unless the turn is the innermost one and no other use of it is in
// progress (which only another goroutine can cause), and after the turn
// has ended. A goroutine that uses them while the turn's own code only
// waits for it is indistinguishable from that code, and nothing else runs
// on the instance meanwhile.
type turn struct {
	parent *turn
	busy   bool // a use of the turn's objects, or a turn inside it, is in progress
	done   bool // the turn's code has returned
}

// staleErr is the WorldBug a stale turn's objects return.
func staleErr() error { return env.Bugf(env.StaleHandle) }

// enter starts a use of t's objects (see turn) and marks t busy until
// leave.
func (a *activation) enter(t *turn) error {
	a.turnMu.Lock()
	defer a.turnMu.Unlock()
	if a.ended.Load() || t.done || t != a.top || t.busy {
		return staleErr()
	}
	t.busy = true
	return nil
}

func (a *activation) leave(t *turn) {
	a.turnMu.Lock()
	t.busy = false
	a.turnMu.Unlock()
}

// check reports whether t's objects may be used now.
func (a *activation) check(t *turn) error {
	if err := a.enter(t); err != nil {
		return err
	}
	a.leave(t)
	return nil
}

// innermost returns the turn whose code runs now, nil before the first.
func (a *activation) innermost() *turn {
	a.turnMu.Lock()
	defer a.turnMu.Unlock()
	return a.top
}

// push opens the turn of code about to run for ns, inside parent (nil for
// the activation's first turn), and returns what that code sees. parent
// stays busy until pop: its objects wait, as its code does.
func (a *activation) push(parent *turn, ns *nodeState, info *env.CallInfo) (*nodeView, error) {
	if parent != nil {
		if err := a.enter(parent); err != nil {
			return nil, err
		}
	}
	v := &nodeView{}
	v.turn.parent = parent
	v.node = nodeTurn{a: a, ns: ns, t: &v.turn}
	v.ctx = env.NewCtx(a.ctx, a.inst.now, (*nodeDB)(&v.node), ns.state, ns.ids, env.NewWorlds((*worldsImpl)(&v.node)), info)
	a.turnMu.Lock()
	a.top = &v.turn
	a.turnMu.Unlock()
	return v, nil
}

// pop ends the turn push opened and hands control back to its parent.
func (a *activation) pop(v *nodeView) {
	a.turnMu.Lock()
	v.turn.done = true
	a.top = v.turn.parent
	if a.top != nil {
		a.top.busy = false
	}
	a.turnMu.Unlock()
}

// nodeView is what one turn's code sees of its node, in one allocation.
type nodeView struct {
	turn turn
	node nodeTurn
	ctx  *env.Ctx
}

// nodeTurn is one node as the code of one turn reaches it. That code's DB,
// Worlds and handles are a nodeTurn each, under the method sets of nodeDB,
// worldsImpl and handleImpl.
type nodeTurn struct {
	a  *activation
	ns *nodeState
	t  *turn
}

// descend runs the middleware of route.Path[k] and below, then the tool,
// inside parent (nil when the call opened the activation). A node's layers
// run in a turn of their own inside a transaction frame on that node; nodes
// with no middleware between the root and the owner are passed through.
func (a *activation) descend(parent *turn, route *Route, k int, info *env.CallInfo, in any) (any, error) {
	n := route.Path[k]
	ns := a.inst.nodes[n.Index]
	mws := n.World.Middleware()
	owner := k == len(route.Path)-1
	if len(mws) == 0 && !owner {
		return a.descend(parent, route, k+1, info, in)
	}
	inner := func(t *turn) (any, error) { return a.descend(t, route, k+1, info, in) }
	if owner {
		inner = nil
	}
	return a.layers(parent, ns, mws, route.Def, info, in, inner)
}

// layers runs one node's middleware around inner (or the tool, when inner
// is nil) in a turn inside parent and a frame on that node.
func (a *activation) layers(parent *turn, ns *nodeState, mws []env.Middleware, def *env.ToolDef, info *env.CallInfo, in any, inner func(t *turn) (any, error)) (out any, err error) {
	start := time.Now()
	if inner == nil {
		defer func() { a.logCall(info, start, err) }()
	}
	v, err := a.push(parent, ns, info)
	if err != nil {
		return nil, err
	}
	defer a.pop(v)
	if err := a.ensureGroup(ns); err != nil {
		return nil, err
	}
	f, err := a.begin(ns, info)
	if err != nil {
		return nil, err
	}
	c := v.ctx
	var next func(j int) (any, error)
	next = func(j int) (any, error) {
		if j < len(mws) {
			return mws[j](c, func() (any, error) { return next(j + 1) })
		}
		if inner != nil {
			return inner(&v.turn)
		}
		return def.Invoke(c, in)
	}
	out, err = a.guardValue(func() string { return "tool " + info.Tool + " on node " + info.Node }, func() (any, error) { return next(0) })
	if err == nil {
		// Code that ran past the call's deadline, or on after it was
		// cancelled, without looking: nothing of it commits.
		err = a.ctx.Err()
	}
	if err == nil && len(mws) > 0 && !def.Returns(out) {
		got := "nil"
		if out != nil {
			got = fmt.Sprintf("a %T", out)
		}
		err = env.Bugf("a middleware of %s returned %s for %s, whose result type is %v: a middleware returns what next returned, or a value of the tool's result type", ns.node.World.Name(), got, info.Tool, def.ResultType())
	}
	if err == nil && !info.Internal {
		err = checkResult(a.ctx, info, out)
	}
	err = a.end(f, err)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkResult runs the context's result check (env.WithResultCheck) on
// what a layer of an agent's call returned, before the layer commits.
func checkResult(ctx context.Context, info *env.CallInfo, out any) error {
	check := env.ResultCheck(ctx)
	if check == nil {
		return nil
	}
	if err := check(out); err != nil {
		return &env.ToolError{Kind: env.KindExecution, Err: err,
			Message: fmt.Sprintf("tool %q returned a result that cannot be encoded as JSON: %v", info.Tool, err)}
	}
	return nil
}

// logCall logs a call at debug level: a server logs what an operator needs
// of each (its session's failures) itself.
func (a *activation) logCall(info *env.CallInfo, start time.Time, err error) {
	if !a.inst.log.Enabled(a.ctx, slog.LevelDebug) {
		return
	}
	attrs := []any{"tool", info.Tool, "node", info.Node, "internal", info.Internal, "call", a.id,
		"duration_ms", float64(time.Since(start).Microseconds()) / 1000}
	if err != nil {
		attrs = append(attrs, "error", err.Error())
	}
	a.inst.log.Debug("call", attrs...)
}

// nested runs a tool of a node from host code running in turn t: only the
// owning world's chain, its own transaction, marked internal.
func (a *activation) nested(t *turn, ns *nodeState, def *env.ToolDef, args any) (any, error) {
	if err := a.check(t); err != nil {
		return nil, err
	}
	in, raw, err := def.AcceptJSON(args)
	if err != nil {
		return nil, err
	}
	info := &env.CallInfo{Tool: def.Name, Own: def.Name, Node: ns.node.Path, Internal: true, Arguments: raw}
	return a.layers(t, ns, ns.node.World.Middleware(), def, info, in, nil)
}

// guard runs fn, world code that what names, turning a panic into an error:
// a *env.WorldBug panic (a stale handle's State) is returned as is; any
// other is logged at error level with its stack (an agent sees only
// "internal error: " and the value) and returned as an execution_error
// whose cause keeps the stack too. what is called only on a panic, so a
// call that does not panic builds no name.
func (a *activation) guard(what func() string, fn func() error) (err error) {
	_, err = a.guardValue(what, func() (any, error) { return nil, fn() })
	return err
}

// guardValue is guard for code that returns a value.
func (a *activation) guardValue(what func() string, fn func() (any, error)) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			var bug *env.WorldBug
			if e, ok := r.(error); ok && errors.As(e, &bug) {
				err = e
				return
			}
			stack := debug.Stack()
			a.inst.log.ErrorContext(a.ctx, "composition: recovered a panic", "in", what(), "call", a.id,
				"panic", fmt.Sprint(r), "stack", string(stack))
			err = &env.ToolError{Kind: env.KindExecution, Message: fmt.Sprintf("internal error: %v", r),
				Err: fmt.Errorf("panic: %v\n%s", r, stack)}
		}
	}()
	out, err = fn()
	if nilerr.Is(err) {
		// Every method of it may dereference the nil pointer, and the
		// engine reads each error (errors.As) on its way out.
		return nil, env.Bugf("%s returned a nil %T as its error, which is not a nil error: return nil itself when nothing failed", what(), err)
	}
	return out, err
}

// worldsImpl is ctx.Worlds for one node in one turn of an activation.
type worldsImpl nodeTurn

func (w *worldsImpl) Get(name string) (env.HandleImpl, error) {
	if err := w.a.check(w.t); err != nil {
		return nil, err
	}
	for _, c := range w.ns.node.Children {
		if c.Edge.Name == name {
			return &handleImpl{a: w.a, ns: w.a.inst.nodes[c.Node.Index], t: w.t}, nil
		}
	}
	return nil, env.Bugf("ctx.Worlds.Get(%q): %s added no world named %q (it added: %s)", name, w.ns.node.World.Name(), name, strings.Join(w.Names(), ", "))
}

func (w *worldsImpl) Names() []string {
	var names []string
	for _, c := range w.ns.node.Children {
		names = append(names, c.Edge.Name)
	}
	return names
}

// handleImpl is a handle on one node, bound to the turn that made it.
type handleImpl nodeTurn

func (h *handleImpl) CallName(tool string, args any) (any, error) {
	if err := h.a.check(h.t); err != nil {
		return nil, err
	}
	def := h.ns.node.World.Tool(tool)
	if def == nil {
		return nil, env.Bugf("%s (node %s) has no tool %q", h.ns.node.World.Name(), h.ns.node.Path, tool)
	}
	return h.a.nested(h.t, h.ns, def, args)
}

func (h *handleImpl) CallDef(_ context.Context, def *env.ToolDef, args any) (any, error) {
	if err := h.a.check(h.t); err != nil {
		return nil, err
	}
	var owners []*Node
	seen := map[*Node]bool{}
	var walk func(n *Node)
	walk = func(n *Node) {
		if seen[n] {
			return
		}
		seen[n] = true
		if own := n.World.Tool(def.Name); own != nil && own.Same(def) {
			owners = append(owners, n)
		}
		for _, c := range n.Children {
			walk(c.Node)
		}
	}
	walk(h.ns.node)
	switch len(owners) {
	case 0:
		return nil, env.Bugf("%s is a tool of %s, which is not in the subtree of node %s", def.Name, def.World.Name(), h.ns.node.Path)
	case 1:
		return h.a.nested(h.t, h.a.inst.nodes[owners[0].Index], owners[0].World.Tool(def.Name), args)
	}
	var cands []string
	for _, n := range owners {
		cands = append(cands, fmt.Sprintf("%s at %s", def.Name, n.Path))
	}
	return nil, env.Bugf("%s is a tool of %s, which is a node of this subtree more than once (%s): call it through the handle of the account you mean", def.Name, def.World.Name(), strings.Join(cands, ", "))
}

func (h *handleImpl) DB() env.DB { return (*nodeDB)(h) }

func (h *handleImpl) State() (map[string]any, error) {
	if err := h.a.check(h.t); err != nil {
		return nil, err
	}
	return h.ns.state, nil
}

func (h *handleImpl) Worlds() *env.Worlds {
	return env.NewWorlds((*worldsImpl)(h))
}
