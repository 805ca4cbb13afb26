package composition

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/runecut"
)

// CallJSON calls a tool of the agent surface by its published name with JSON
// arguments and returns the tool's own Go value. Unknown names and bad
// arguments are *env.ToolError values (KindNotFound, KindInvalidArgs)
// returned before anything runs; a tool's error rolls its store back. A
// call that fails because the host failed it (a store's disk full, its files
// gone or unopenable, no file descriptors left) returns an *env.InfraError,
// whatever error the tool or a middleware made of it; when the call changed
// nothing its NoStep is set, and the instance counts no call and moves no
// step-mode clock for it. A call that runs past its context's deadline, or
// waits that long for the instance, is a *env.ToolError of KindTimeout. One
// that ran is a step: its number and the step-mode clock's tick stay, and
// when it changed nothing (MsgTimedOut) so does nothing else, not even the
// ids and SQL random values it drew; work it had committed in an added
// world before the deadline stays, and its message says so
// (MsgTimedOutKept).
func (i *Instance) CallJSON(ctx context.Context, name string, args json.RawMessage) (any, error) {
	return i.Call(ctx, name, args) // env.ToolDef.AcceptJSON decodes raw JSON as Decode does
}

// Call is CallJSON with arguments given as a Go value (a struct or a map).
func (i *Instance) Call(ctx context.Context, name string, args any) (any, error) {
	s, err := i.reseal()
	if err != nil {
		return nil, err
	}
	if name == env.ControlTool && i.opts.ControlTools {
		return i.callRoute(ctx, name, nil, controlDef, args)
	}
	r, ok := s.Lookup(name)
	if !ok {
		return nil, &env.ToolError{Kind: env.KindNotFound, Message: fmt.Sprintf("unknown tool %q", runecut.Echo(name))}
	}
	return i.callRoute(ctx, name, r, r.Def, args)
}

// CallDef calls a tool by its definition, resolved over the whole agent
// surface: it reaches any tool the agent could call and nothing a list keeps
// off it. A tool whose world is a node of the tree twice (on the surface or
// not) is a *env.WorldBug naming every candidate. It makes *Instance an
// env.Caller.
func (i *Instance) CallDef(ctx context.Context, def *env.ToolDef, args any) (any, error) {
	s, err := i.reseal()
	if err != nil {
		return nil, err
	}
	var found []*Route
	for _, r := range s.Surface {
		if r.Def.Same(def) {
			found = append(found, r)
		}
	}
	// The nodes of the tree of def's world, on the surface or kept off it
	// by a list: a call naming no one of them is refused, whichever of
	// them the agent sees.
	var cands []string
	for _, n := range s.Nodes {
		// A clone of def's world (env.World.Clone) is another node with
		// the same tools, as the surface's routes have it (Same).
		if own := n.World.Tool(def.Name); own == nil || !own.Same(def) {
			continue
		}
		name := def.Name
		for _, r := range found {
			if r.Owner == n {
				name = r.Name
			}
		}
		cands = append(cands, fmt.Sprintf("%s at %s", name, n.Path))
	}
	if len(cands) > 1 {
		return nil, env.Bugf("%s is a tool of %s, which is a node of this tree more than once (%s): call it through the handle of the account you mean, ctx.Worlds.Get(name)", def.Name, def.World.Name(), strings.Join(cands, ", "))
	}
	if len(found) == 0 {
		return nil, &env.ToolError{Kind: env.KindNotFound, Message: fmt.Sprintf("tool %s of %s is not on %s's agent surface", def.Name, def.World.Name(), i.world.Name())}
	}
	return i.callRoute(ctx, found[0].Name, found[0], found[0].Def, args)
}

// callRoute calls def, the tool of route (nil for the control tool), by its
// published name, with args accepted as def accepts them.
func (i *Instance) callRoute(ctx context.Context, name string, route *Route, def *env.ToolDef, args any) (any, error) {
	in, raw, err := def.AcceptJSON(args)
	if err != nil {
		return nil, err
	}
	ctx = cmp.Or(ctx, context.Background())
	info := &env.CallInfo{Tool: name, Own: def.Name, Node: "main", Arguments: raw}
	if route != nil {
		info.Node = route.Owner.Path
	}
	var out any
	run := func(a *activation, parent *turn) (err error) {
		if route == nil {
			out, err = a.control(in)
		} else {
			out, err = a.descend(parent, route, 0, info, in)
		}
		return err
	}
	if a := i.running.Load(); a != nil && ctx == a.ctx {
		// Made with the running activation's own context (a call from inside
		// a Bulk block): no new activation, no lock; the call runs inside
		// the innermost turn, whose code is the caller.
		parent := a.innermost()
		if parent == nil {
			return nil, staleErr()
		}
		if err := a.check(parent); err != nil {
			return nil, err
		}
		err := run(a, parent)
		return out, err
	}
	if a := activationFrom(ctx); a != nil && a.inst == i && a.ended.Load() {
		// The context of an activation that has ended: world code kept it.
		return nil, staleErr()
	}
	if err := i.lockOpen(ctx, fmt.Sprintf("call of %q", name)); err != nil {
		err = timeoutError(ctx, err, "the call waited past its deadline for the instance's previous call; nothing ran", "the call was cancelled while it waited for the instance's previous call; nothing ran")
		if te, ok := env.AsToolError(err); ok {
			te.Err = fmt.Errorf("%w: %w", env.ErrNoStep, te.Err)
		}
		return nil, err
	}
	defer i.unlock()
	var infra error
	records, streams, written := i.changes.made(), i.markStreams(), i.written()
	// changed reports whether the call committed work: rows the change
	// log records, or work it does not (a row of an untracked table, a
	// table created), which the stores' written pages tell.
	changed := func() bool { return i.changes.made() != records || i.written() != written }
	err = i.activate(ctx, name, kindCall, func(a *activation) error {
		a.own = def.Name
		err := run(a, nil)
		infra = a.infra
		return err
	})
	if err != nil {
		// A failure of the host is reported as such, whatever the world
		// made of it: never as a tool's error the agent would learn from.
		// One that left no change is no step of the episode: the call
		// count and the step-mode clock stay as they were, so a retry once
		// the host recovers runs as the call would have. The error says so
		// (NoStep), so no layer above compares counts again.
		if ie := Fault(cmp.Or(infra, err), "the call could not complete"); ie != nil {
			fail := *ie
			fail.NoStep = !changed()
			if fail.NoStep {
				i.takeBack(streams)
			} else {
				i.clock.stepped()
			}
			return nil, &fail
		}
	}
	if ctxEnded(ctx, err) && !deadline(ctx) && !changed() {
		// Cancelled by its caller, who is gone, before it changed
		// anything: no step, as for a host failure that changed nothing.
		i.takeBack(streams)
		return nil, &env.ToolError{Kind: env.KindExecution, Message: MsgCancelled, Err: fmt.Errorf("%w: %w", env.ErrNoStep, err)}
	}
	i.clock.stepped()
	past := MsgTimedOut
	if ctxEnded(ctx, err) && deadline(ctx) {
		// Past its deadline: a step the agent was told of, so its number
		// and the step clock's tick stay. Where the deadline struck is
		// chance, so a call that changed nothing also takes back the ids
		// and SQL random values it drew: the calls after it run as after
		// the same call cut off before it began, which is how a replay
		// makes it.
		if !changed() {
			i.restoreStreams(streams)
		} else {
			past = MsgTimedOutKept
		}
	}
	return out, timeoutError(ctx, err, past, MsgCancelled)
}

// Messages of the *env.ToolError a call ended by its context returns, which
// a trajectory records and its replay recognises.
const (
	// MsgTimedOut is the message of the KindTimeout error of a call that
	// ran past its deadline and changed nothing: its writes rolled back,
	// and its ids and SQL random values taken back.
	MsgTimedOut = "the call ran past its deadline and was rolled back"
	// MsgTimedOutKept is MsgTimedOut for a call that had committed part
	// of its work before its deadline (the work of a call it made into an
	// added world, a direct write on an added world's store): that part
	// stays, the rest rolled back.
	MsgTimedOutKept = "the call ran past its deadline and was rolled back, except the part of its work it had already committed"
	// MsgCancelled is the message of the KindExecution error of a call
	// cancelled by its caller; one that changed nothing is no step
	// (env.ErrNoStep), one that had committed part of its work keeps it.
	MsgCancelled = "the call was cancelled and rolled back"
)

// written returns how many pages the nodes' stores have written to their
// files (sqlitestore.Store.Written). The instance's lock must be held.
func (i *Instance) written() int64 {
	var n int64
	for _, ns := range i.nodes {
		n += ns.store.Written()
	}
	return n
}

// streams is where each node's id stream and SQL random stream stand: the
// states of both, node after node, in one slice. Every state has one
// length, a PCG's.
type streams []byte

// markStreams returns where the nodes' streams stand, for takeBack.
func (i *Instance) markStreams() streams {
	m := make(streams, 0, 64*len(i.nodes)) // room for two PCG states a node
	for _, ns := range i.nodes {
		m, _ = ns.ids.AppendBinary(m) // a PCG's never fails
		m = ns.store.AppendRandomState(m)
	}
	return m
}

// takeBack undoes a call that is no step (it changed nothing): its call
// number, and every id and SQL random value it drew, so that the next call
// runs as it would have without it. The instance's lock must be held.
func (i *Instance) takeBack(m streams) {
	i.calls--
	i.restoreStreams(m)
}

// restoreStreams puts every node's id stream and SQL random stream back
// where m says they stood. The instance's lock must be held.
func (i *Instance) restoreStreams(m streams) {
	n := len(m) / (2 * len(i.nodes)) // the length of one state
	for _, ns := range i.nodes {
		// Both states came from the same streams.
		_ = ns.ids.UnmarshalBinary(m[:n])
		_ = ns.store.SetRandomState(m[n : 2*n])
		m = m[2*n:]
	}
}

// ctxEnded reports whether err is ctx's own ending.
func ctxEnded(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil && (errors.Is(err, ctx.Err()) || errors.Is(err, context.Cause(ctx)))
}

// deadline reports whether ctx ended because time ran out: its deadline
// passed, or it was cancelled with context.DeadlineExceeded as its cause,
// as a server enforcing its own time limit does.
func deadline(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), context.DeadlineExceeded)
}

// timeoutError turns err, when it is ctx's own ending, into the
// *env.ToolError an agent sees: KindTimeout with message past for a
// deadline (a context cancelled with context.DeadlineExceeded as its cause,
// as a server enforcing its own time limit does, has run out of time too),
// KindExecution with message cancelled for any other cancellation.
// Other errors pass unchanged.
func timeoutError(ctx context.Context, err error, past, cancelled string) error {
	if !ctxEnded(ctx, err) {
		return err
	}
	if !deadline(ctx) {
		return &env.ToolError{Kind: env.KindExecution, Message: cancelled, Err: err}
	}
	return &env.ToolError{Kind: env.KindTimeout, Message: past, Err: err}
}

var errClosed = errors.New("composition: instance is closed")

// Bulk runs fn with the root's context and a live ctx.Worlds, inside one
// transaction per node. If fn fails every node rolls back; otherwise nodes
// commit one at a time, the root last. If a node's commit fails, Bulk
// returns the error and the nodes that committed before it keep their rows:
// do not freeze such an instance.
//
// The block holds the instance until it returns. A call made inside it must
// pass the block's context, c.Context(), and then runs inside the block;
// while the block runs, a call, Bulk, Freeze, DB() statement or view query
// with any other context fails at once with a *env.WorldBug saying so,
// rather than wait for the block forever. (State, ChangeLog, Close and the
// other methods without a context wait for the block: do not call them
// inside it.)
func (i *Instance) Bulk(ctx context.Context, fn func(c *env.Ctx) error) error {
	ctx = cmp.Or(ctx, context.Background())
	if _, err := i.reseal(); err != nil {
		return err
	}
	if err := i.lockOpen(ctx, "Bulk"); err != nil {
		return err
	}
	defer i.unlock()
	return i.activate(ctx, "bulk", kindBulk, func(a *activation) error {
		a.startGroup()
		v, _ := a.push(nil, i.nodes[0], nil)
		err := a.guard(func() string { return "a Bulk block" }, func() error { return fn(v.ctx) })
		a.pop(v)
		return a.endGroup(err)
	})
}
