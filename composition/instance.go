package composition

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/sqlitestore"
)

// Options configures Open.
type Options struct {
	// Fixture is the id of a fixture in the root world's FixturesDir to start
	// from; "" is genesis (a blank store per node).
	Fixture string
	// FixturesDir overrides the root world's FixturesDir.
	FixturesDir string
	// Now is the clock's starting instant (RFC 3339); "" uses the fixture's
	// now, or DefaultNow for genesis.
	Now string
	// Seed seeds every node's id stream and SQL random().
	Seed int64
	// Startup holds broadcast keywords for every startup hook that names them.
	Startup map[string]any
	// ControlTools publishes the seahaven_control tool, listed last.
	ControlTools bool
	// ClockMode is frozen, step or wall; "" uses the root's default.
	ClockMode string
	// StepTick is the step-mode advance per agent call; 0 is DefaultStepTick.
	StepTick time.Duration
	// Dir is the directory to create the instance directory in; "" is the OS
	// temp dir. The instance directory is removed on Close unless KeepDir.
	Dir string
	// KeepDir keeps the instance directory after Close.
	KeepDir bool
	// EpisodeID is recorded in the state document.
	EpisodeID string
	// Pool caps open connections across instances; nil uses DefaultPool.
	Pool *sqlitestore.Pool
	// Logger receives one line per call and one per fixture repair (see
	// fixture.Recover); nil discards.
	Logger *slog.Logger
	// MinFree is the space, in bytes, that must stay free on the instance
	// directory's file system beyond the files the instance writes (its
	// fixture's files, written on first use): with less, Open fails with an
	// *env.InfraError of kind env.FaultDiskFull, so that a full disk fails
	// the reset rather than the agent's first call. Zero checks only that
	// the files fit; negative checks nothing.
	MinFree int64
	// MaxChangeLogBytes bounds the change log in memory: once its records
	// add up to more (values' bytes plus a fixed part per record and per
	// value), the oldest are dropped, and the state document says how many
	// (env.StateDoc.ChangeLogTruncated). Zero means
	// DefaultMaxChangeLogBytes; negative means no bound.
	MaxChangeLogBytes int64
	// Checkpoint, when set, is what the instance continues instead of
	// starting (see Checkpoint): its files, seed, startup keywords,
	// control tools, episode id, clock and step tick are the checkpoint's
	// (Fixture, FixturesDir, Now, Seed, Startup, ControlTools, EpisodeID,
	// ClockMode and StepTick are ignored), and no startup hook runs.
	Checkpoint *Checkpoint
}

// DefaultPool manages the SQLite connections of instances opened without
// Options.Pool: a connection unused for sqlitestore.DefaultIdleAfter is
// released, and so are the least recently used ones when more than
// DefaultMaxOpen are open. A released connection reopens on the next call.
// Servers size it from their limits with SetLimits.
var DefaultPool = sqlitestore.NewPool(DefaultMaxOpen)

// DefaultMaxOpen is the size of DefaultPool.
const DefaultMaxOpen = 2048

var discardLogger = slog.New(slog.DiscardHandler)

// nodeState is one node's live parts in an instance.
type nodeState struct {
	node  *Node
	store *sqlitestore.Store
	state map[string]any
	ids   *env.IDs
	// frames is the stack of open transaction frames on this store.
	frames []*frame
}

// Instance is one live composition: one store per node in one directory,
// one clock, one change log. It runs one call at a time: CallJSON, CallDef,
// Bulk, Freeze and the readers are safe for concurrent use and serialise on
// the instance's lock, and a call waits for it no longer than its context
// allows. A nested call made through a handle runs inside the call that
// made it, and a call made inside a Bulk block with the block's context,
// c.Context(), runs inside the block; neither takes the lock again.
//
// The instance runs against its root's tree as sealed at its first use
// after any registration anywhere in the process (see Seal): a tool
// registered after Open appears in Tools and can be called. A registration
// that breaks the tree fails Tools (a panic), every call, Bulk and Freeze
// with the seal's *env.WorldBug, as Open would; one that changes the tree's
// nodes fails them with a *env.WorldBug saying so, because the instance
// keeps the stores it opened with.
type Instance struct {
	world  *env.World
	sealed atomic.Pointer[Sealed] // the tree as last sealed; see reseal
	dir    string
	opts   Options
	clock  *clock
	now    func() time.Time // clock.Now, made once: every call's env.Ctx holds it
	log    *slog.Logger
	pool   *sqlitestore.Pool

	compRecords []env.CompositionRecord
	fixture     *env.FixtureRef

	// lock is the instance's lock: a call, a Bulk block, a Freeze or a
	// reader holds its one slot. A channel rather than a sync.Mutex, so that
	// a call waiting for it gives up at its deadline.
	lock chan struct{}
	// running is the activation holding lock, nil between activations. It
	// is read without the lock, to refuse a call that could only wait for
	// the activation it is made from.
	running atomic.Pointer[activation]

	// guarded by lock:
	nodes   []*nodeState
	calls   int // agent-level calls (activations that log), which are the steps
	changes changeLog
	view    *View
	closed  bool
}

// lockCtx takes the instance's lock for what (the operation, for the
// error), waiting no longer than ctx allows: the error is then ctx's. A
// wait that could never end is refused at once with a *env.WorldBug: with
// the running activation's own context (which only calls re-enter with),
// while a Bulk block runs with any context (the block holds the instance
// until it returns, and Go cannot tell a call made inside the block from
// one made beside it), and during any activation with a context derived
// from that activation's.
func (i *Instance) lockCtx(ctx context.Context, what string) error {
	if a := i.running.Load(); a != nil {
		switch {
		case ctx == a.ctx:
			// Only calls re-enter with it (see callRoute).
			where := "a Bulk block"
			if a.kind != kindBulk {
				where = fmt.Sprintf("the call of %s", a.tool)
			}
			return env.Bugf("%s cannot run inside %s: it holds the instance until it returns", what, where)
		case a.kind == kindBulk:
			return env.Bugf("%s while the instance runs a Bulk block: a call made inside the block must pass the block's context, c.Context(); "+
				"the block holds the instance until it returns, so any other context would wait for it forever", what)
		case activationFrom(ctx) == a:
			return env.Bugf("%s with a context derived from the running call of %s: a call made inside a call must pass that call's own context, c.Context(); "+
				"any other context would wait for the call forever", what, a.tool)
		}
	}
	select {
	case i.lock <- struct{}{}:
		return nil
	default:
	}
	select {
	case i.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// lockWait takes the instance's lock, however long that takes: for readers
// with no context and no error to return.
func (i *Instance) lockWait() { i.lock <- struct{}{} }

// unlock releases the instance's lock.
func (i *Instance) unlock() { <-i.lock }

// reseal returns the tree the instance runs against, sealed again first
// when a registration happened anywhere since it was last sealed: the
// seal's error then, or a *env.WorldBug when the tree's nodes changed. It
// takes no lock: a tree that seals again with the same nodes differs only
// in its surface, and the instance's nodes stay exact.
func (i *Instance) reseal() (*Sealed, error) {
	s := i.sealed.Load()
	if s.Generation == env.Generation() {
		return s, nil
	}
	now, err := Seal(i.world)
	if err != nil {
		return nil, err
	}
	if err := sameNodes(s, now); err != nil {
		return nil, err
	}
	i.sealed.Store(now)
	return now, nil
}

// sameNodes returns a *env.WorldBug naming every difference between the
// nodes of two seals of one root: added, removed, or of another world,
// scope, position or set of aliases.
func sameNodes(was, now *Sealed) error {
	scopeText := func(p *string) string {
		if p == nil {
			return "null"
		}
		return strconv.Quote(*p)
	}
	var problems []string
	for _, n := range now.Nodes {
		old, ok := was.Node(n.Path)
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("node added: %s (world %s, scope %s)", n.Path, n.World.Name(), scopeText(n.Scope)))
		case old.World != n.World || scopeText(old.Scope) != scopeText(n.Scope) || old.Index != n.Index || !slices.Equal(old.Aliases, n.Aliases):
			problems = append(problems, fmt.Sprintf("shape changed: node %s was world %s, scope %s, aliases [%s] and is now world %s, scope %s, aliases [%s]",
				n.Path, old.World.Name(), scopeText(old.Scope), strings.Join(old.Aliases, ", "), n.World.Name(), scopeText(n.Scope), strings.Join(n.Aliases, ", ")))
		}
	}
	for _, n := range was.Nodes {
		if _, ok := now.Node(n.Path); !ok {
			problems = append(problems, fmt.Sprintf("node removed: %s (world %s)", n.Path, n.World.Name()))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return env.Bugf("%s's tree changed after this instance opened (%s): an instance keeps the stores it opened with; open a new instance", now.Root.Name(), strings.Join(problems, "; "))
}

// Open creates an instance of world: from a fixture when opts.Fixture is
// set, else genesis. Startup hooks run depth first with every node's
// transaction open; a hook that fails rolls every node back and leaves no
// instance. Open refuses to run inside a call: the child name is the only
// door to another world.
//
// A failure of the host (a full disk, no file descriptors left, an instance
// directory that cannot be made) is an *env.InfraError whose message names
// no path; a fixture that does not exist is an error wrapping
// fixture.ErrNotFound.
func Open(ctx context.Context, world *env.World, opts Options) (*Instance, error) {
	inst, err := open(ctx, world, opts)
	if err != nil && !errors.Is(err, fixture.ErrNotFound) {
		if ie := infraError(err, "no instance was opened"); ie != nil {
			return nil, ie
		}
	}
	return inst, err
}

func open(ctx context.Context, world *env.World, opts Options) (*Instance, error) {
	if a := activationFrom(ctx); a != nil {
		return nil, env.Bugf("composition.Open: an instance cannot be made inside a call; reach added worlds through ctx.Worlds")
	}
	sealed, err := Seal(world)
	if err != nil {
		return nil, err
	}
	var resumed *runState
	var records []logRecord
	var src *source
	if cp := opts.Checkpoint; cp != nil {
		if resumed, records, err = cp.decode(); err != nil {
			return nil, err
		}
		if err := checkRunState(resumed, sealed); err != nil {
			return nil, err
		}
		if src, err = cp.source(); err != nil {
			return nil, err
		}
		if err := CompareShape(ctx, src.sidecar, sealed); err != nil {
			return nil, err
		}
		opts = resumeOptions(opts, resumed)
	}
	if err := checkStartupKeys(sealed, opts.Startup); err != nil {
		return nil, err
	}
	mode := opts.ClockMode
	if mode == "" {
		mode = world.Spec().DefaultClockMode
	}
	inst := &Instance{world: world, opts: opts, log: opts.Logger, pool: opts.Pool, lock: make(chan struct{}, 1)}
	inst.sealed.Store(sealed)
	inst.changes.max = opts.MaxChangeLogBytes
	if inst.changes.max == 0 {
		inst.changes.max = DefaultMaxChangeLogBytes
	}
	if inst.log == nil {
		inst.log = discardLogger
	}
	if inst.pool == nil {
		inst.pool = DefaultPool
	}
	if opts.Fixture != "" {
		if src, err = loadSource(world, sealed, opts); err != nil {
			return nil, err
		}
	}
	now := DefaultNow
	if src != nil {
		now = src.now
	}
	if opts.Now != "" {
		if now, err = ParseTime(opts.Now); err != nil {
			return nil, err
		}
	}
	if resumed != nil {
		now = resumed.Now
	}
	if inst.clock, err = newClock(mode, now, opts.StepTick); err != nil {
		return nil, err
	}
	inst.now = inst.clock.Now
	if inst.dir, err = os.MkdirTemp(opts.Dir, "seahaven-inst-"); err != nil {
		return nil, fmt.Errorf("composition: instance directory: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			inst.closeStores()
			os.RemoveAll(inst.dir)
		}
	}()
	if err := checkSpace(inst.dir, src, opts.MinFree); err != nil {
		return nil, err
	}
	if err := inst.openStores(ctx, src, resumed); err != nil {
		return nil, err
	}
	if resumed != nil {
		err = inst.resume(resumed, records)
	} else {
		err = inst.runStartup(ctx)
	}
	if err != nil {
		return nil, err
	}
	ok = true
	return inst, nil
}

// checkSpace fails with an *env.InfraError when the file system of dir has
// less free space than src's files (none for genesis, whose stores are
// written now) and minFree together.
func checkSpace(dir string, src *source, minFree int64) error {
	if minFree < 0 {
		return nil
	}
	free, ok := sqlitestore.FreeSpace(dir)
	if !ok {
		return nil
	}
	need := minFree
	if src != nil {
		for _, b := range src.files {
			need += int64(len(b))
		}
	}
	if free >= need {
		return nil
	}
	return &env.InfraError{Kind: env.FaultDiskFull, Message: "the server's disk is full; no instance was opened",
		Err: fmt.Errorf("composition: %s has %d bytes free, fewer than the %d the instance needs (its files and a reserve of %d)", dir, free, need, minFree)}
}

func checkStartupKeys(s *Sealed, kw map[string]any) error {
	var unknown []string
	for k := range kw {
		if !slices.Contains(s.StartupKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	accepted := "none"
	if len(s.StartupKeys) > 0 {
		accepted = strings.Join(s.StartupKeys, ", ")
	}
	return env.Bugf("unknown startup keyword %q: no startup hook of %s's tree accepts it (accepted: %s)", strings.Join(unknown, `", "`), s.Root.Name(), accepted)
}

func (i *Instance) storeOptions(n *Node) sqlitestore.Options {
	s1, _ := env.StreamSeed(i.opts.Seed, n.Path, "sql")
	return sqlitestore.Options{
		Path:      filepath.Join(i.dir, n.File),
		Seed:      s1,
		Clock:     i.clock.Now,
		Untracked: n.World.Spec().UntrackedTables,
		Pool:      i.pool,
		// Calls and the inspection view take turns under the instance's
		// lock; the view yields the stores' locks before it reads.
		ExclusiveLock: true,
	}
}

// openStores opens every node's store: from src's files, or genesis when
// src is nil; with the random() streams where resumed (a checkpoint's
// state, or nil) left them.
func (i *Instance) openStores(ctx context.Context, src *source, resumed *runState) error {
	for _, n := range i.sealed.Load().Nodes {
		ns := &nodeState{node: n, state: map[string]any{}, ids: env.NewIDs(i.opts.Seed, n.Path)}
		opts := i.storeOptions(n)
		if resumed != nil {
			opts.RandomState = resumed.Nodes[n.Index].Random
		}
		var err error
		if src == nil {
			ns.store, err = sqlitestore.Create(ctx, n.World.Spec().Schema, opts)
			if err != nil {
				err = fmt.Errorf("composition: genesis of node %s: %w", n.Path, err)
			}
		} else {
			ns.store, err = src.materialise(ctx, n, opts)
		}
		if err != nil {
			return err
		}
		i.nodes = append(i.nodes, ns)
		scope := (*string)(nil)
		if n.Scope != nil {
			s := *n.Scope
			scope = &s
		}
		rec := env.CompositionRecord{
			Path: n.Path, World: n.World.Name(), WorldVersion: n.World.Version(), Scope: scope,
			Aliases: append([]string{}, n.Aliases...),
		}
		if src != nil {
			rec.SchemaHash, rec.FrozenWorldVersion = src.nodeRecord(n)
		} else if rec.SchemaHash, err = schemaHash(ctx, n.World); err != nil {
			return err
		}
		i.compRecords = append(i.compRecords, rec)
	}
	if src != nil {
		i.fixture = src.ref
	}
	return nil
}

func (i *Instance) closeStores() {
	for _, ns := range i.nodes {
		ns.store.Close()
	}
}

// runStartup runs every node's hooks in startup order inside one activation
// with every node's transaction open.
func (i *Instance) runStartup(ctx context.Context) error {
	order := i.sealed.Load().StartupOrder
	hooksExist := false
	for _, n := range order {
		if len(n.World.Hooks()) > 0 {
			hooksExist = true
		}
	}
	if !hooksExist {
		return nil
	}
	i.lockWait()
	defer i.unlock()
	return i.activate(ctx, "startup", kindStartup, func(a *activation) error {
		a.startGroup()
		for _, n := range order {
			for _, h := range n.World.Hooks() {
				kw := map[string]any{}
				for _, k := range h.Keys {
					if v, ok := n.Bound[k]; ok {
						kw[k] = v
					} else if v, ok := i.opts.Startup[k]; ok {
						kw[k] = v
					}
				}
				v, _ := a.push(nil, i.nodes[n.Index], nil)
				err := guard(func() error { return h.Run(v.ctx, kw) })
				a.pop(v)
				if err != nil {
					// No source location: the message reaches clients,
					// and the world and node name the hook.
					return a.endGroup(fmt.Errorf("startup hook of %s (node %s): %w", n.World.Name(), n.Path, err))
				}
			}
		}
		return a.endGroup(nil)
	})
}

// Tools returns the agent surface: the root's own tools, then each added
// world's contribution in AddWorld order, then seahaven_control when the
// instance has control tools. It panics with the *env.WorldBug a call would
// return when a registration since the instance's last seal broke its tree
// (see Instance).
func (i *Instance) Tools() []env.ToolInfo {
	s, err := i.reseal()
	if err != nil {
		panic(err)
	}
	out := s.Tools()
	if i.opts.ControlTools {
		out = append(out, controlDef.Info(env.ControlTool))
	}
	return out
}

// World returns the root world.
func (i *Instance) World() *env.World { return i.world }

// Sealed returns the composition the instance runs against, as last sealed.
func (i *Instance) Sealed() *Sealed { return i.sealed.Load() }

// Dir returns the instance directory.
func (i *Instance) Dir() string { return i.dir }

// StatePath returns the root store's file.
func (i *Instance) StatePath() string { return filepath.Join(i.dir, i.sealed.Load().Nodes[0].File) }

// Now returns the instance clock's time.
func (i *Instance) Now() time.Time { return i.clock.Now() }

// CallJSON calls a tool of the agent surface by its published name with JSON
// arguments and returns the tool's own Go value. Unknown names and bad
// arguments are *env.ToolError values (KindNotFound, KindInvalidArgs)
// returned before anything runs; a tool's error rolls its store back. A
// call that fails because the host failed it (a store's disk full, its files
// gone or unopenable, no file descriptors left) returns an *env.InfraError,
// whatever error the tool or a middleware made of it. A
// call that runs past its context's deadline, or waits that long for the
// instance, is a *env.ToolError of KindTimeout.
func (i *Instance) CallJSON(ctx context.Context, name string, args json.RawMessage) (any, error) {
	route, def, err := i.resolve(name)
	if err != nil {
		return nil, err
	}
	in, err := def.Decode(args)
	if err != nil {
		return nil, err
	}
	return i.callRoute(ctx, name, route, def, in, args)
}

// Call is CallJSON with arguments given as a Go value (a struct or a map).
func (i *Instance) Call(ctx context.Context, name string, args any) (any, error) {
	route, def, err := i.resolve(name)
	if err != nil {
		return nil, err
	}
	in, raw, err := def.AcceptJSON(args)
	if err != nil {
		return nil, err
	}
	return i.callRoute(ctx, name, route, def, in, raw)
}

func (i *Instance) resolve(name string) (*Route, *env.ToolDef, error) {
	s, err := i.reseal()
	if err != nil {
		return nil, nil, err
	}
	if name == env.ControlTool && i.opts.ControlTools {
		return nil, controlDef, nil
	}
	r, ok := s.Lookup(name)
	if !ok {
		return nil, nil, &env.ToolError{Kind: env.KindNotFound, Message: fmt.Sprintf("unknown tool %q", name)}
	}
	return r, r.Def, nil
}

// CallDef calls a tool by its definition, resolved over the whole agent
// surface: it reaches any tool the agent could call and nothing a list keeps
// off it. A tool whose world is a node of the tree twice is a *env.WorldBug
// naming every candidate. It makes *Instance an env.Caller.
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
	owners := map[*Node]bool{}
	for _, r := range found {
		owners[r.Owner] = true
	}
	if len(owners) > 1 {
		var cands []string
		for _, r := range found {
			cands = append(cands, fmt.Sprintf("%s at %s", r.Name, r.Owner.Path))
		}
		return nil, env.Bugf("%s is a tool of %s, which is a node of this tree more than once (%s): call it through the handle of the account you mean, ctx.Worlds.Get(name)", def.Name, def.World.Name(), strings.Join(cands, ", "))
	}
	if len(found) == 0 {
		return nil, &env.ToolError{Kind: env.KindNotFound, Message: fmt.Sprintf("tool %s of %s is not on %s's agent surface", def.Name, def.World.Name(), i.world.Name())}
	}
	in, raw, err := found[0].Def.AcceptJSON(args)
	if err != nil {
		return nil, err
	}
	return i.callRoute(ctx, found[0].Name, found[0], found[0].Def, in, raw)
}

func (i *Instance) callRoute(ctx context.Context, name string, route *Route, def *env.ToolDef, in any, raw json.RawMessage) (any, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	info := &env.CallInfo{Tool: name, Own: def.Name, Arguments: raw}
	if route != nil {
		info.Node = route.Owner.Path
	} else {
		info.Node = "main"
	}
	var out any
	run := func(a *activation, parent *turn) error {
		var err error
		if route == nil {
			out, err = a.control(in)
			return err
		}
		out, err = a.descend(parent, route, 0, info, in)
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
	if err := i.lockCtx(ctx, fmt.Sprintf("call of %q", name)); err != nil {
		return nil, timeoutError(ctx, err, "waited past its deadline for the instance's previous call; nothing ran", "was cancelled while it waited for the instance's previous call; nothing ran")
	}
	defer i.unlock()
	if i.closed {
		return nil, errClosed
	}
	var infra error
	err := i.activate(ctx, name, kindCall, func(a *activation) error {
		err := run(a, nil)
		infra = a.infra
		return err
	})
	i.clock.stepped()
	if err != nil {
		// A failure of the host is reported as such, whatever the world
		// made of it: never as a tool's error the agent would learn from.
		if infra == nil {
			infra = err
		}
		if ie := infraError(infra, "the call could not complete"); ie != nil {
			return nil, ie
		}
	}
	return out, timeoutError(ctx, err, "ran past its deadline and was rolled back", "was cancelled and rolled back")
}

// timeoutError turns err, when it is ctx's own ending, into the
// *env.ToolError an agent sees: KindTimeout, "the call " + past, for a
// deadline (a context cancelled with context.DeadlineExceeded as its cause,
// as a server enforcing its own time limit does, has run out of time too),
// KindExecution, "the call " + cancelled, for any other cancellation.
// Other errors pass unchanged.
func timeoutError(ctx context.Context, err error, past, cancelled string) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	cause := context.Cause(ctx)
	if !errors.Is(err, ctx.Err()) && !errors.Is(err, cause) {
		return err
	}
	kind, msg := env.KindTimeout, "the call "+past
	if !errors.Is(cause, context.DeadlineExceeded) {
		kind, msg = env.KindExecution, "the call "+cancelled
	}
	return &env.ToolError{Kind: kind, Message: msg, Err: err}
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
	if ctx == nil {
		ctx = context.Background()
	}
	if _, err := i.reseal(); err != nil {
		return err
	}
	if err := i.lockCtx(ctx, "Bulk"); err != nil {
		return err
	}
	defer i.unlock()
	if i.closed {
		return errClosed
	}
	return i.activate(ctx, "bulk", kindBulk, func(a *activation) error {
		a.startGroup()
		v, _ := a.push(nil, i.nodes[0], nil)
		err := guard(func() error { return fn(v.ctx) })
		a.pop(v)
		return a.endGroup(err)
	})
}

// ChangeLog returns every change record so far, in call order; nil when
// there is none. The records and their maps are built on each call and are
// the caller's to keep or modify. When the log outgrew
// Options.MaxChangeLogBytes its oldest records are gone (ChangeLogDropped
// says how many) and the first record's Seq is one more than that.
func (i *Instance) ChangeLog() []env.ChangeRecord {
	i.lockWait()
	defer i.unlock()
	return i.changes.all()
}

// ChangeCount returns how many change records the instance has made so
// far, those dropped from the log included: the Seq of the newest record.
// It is cheap, for marking where a call's records start and end.
func (i *Instance) ChangeCount() int {
	i.lockWait()
	defer i.unlock()
	return i.changes.dropped + i.changes.n
}

// ChangeLogDropped returns how many of the oldest change records were
// dropped to keep the log within Options.MaxChangeLogBytes; zero when the
// log is whole.
func (i *Instance) ChangeLogDropped() int {
	i.lockWait()
	defer i.unlock()
	return i.changes.dropped
}

// Composition returns one record per node, in canonical order: what this
// instance runs against, as the files on disk describe it.
func (i *Instance) Composition() []env.CompositionRecord {
	out := make([]env.CompositionRecord, len(i.compRecords))
	for k, r := range i.compRecords {
		r.Aliases = slices.Clone(r.Aliases)
		out[k] = r
	}
	return out
}

// State returns the seahaven.state/1 document.
func (i *Instance) State() env.StateDoc {
	i.lockWait()
	defer i.unlock()
	doc := env.StateDoc{
		StepCount: i.calls, StateFormat: i.world.Spec().StateFormat,
		World: i.world.Name(), WorldVersion: i.world.Version(), Seed: i.opts.Seed,
		Now: i.clock.Now().Format(env.TimeFormat), ClockMode: i.clock.mode,
		Composition: map[string]env.CompositionRecord{},
		Fixture:     i.fixture,
		ChangeLog:   i.changes.all(),
	}
	if doc.ChangeLog == nil {
		doc.ChangeLog = []env.ChangeRecord{}
	}
	if i.changes.dropped > 0 {
		doc.ChangeLogTruncated = &env.ChangeLogTruncation{Dropped: i.changes.dropped, MaxBytes: i.changes.max}
	}
	if i.opts.EpisodeID != "" {
		id := i.opts.EpisodeID
		doc.EpisodeID = &id
	}
	for _, r := range i.Composition() {
		doc.Composition[r.Path] = r
	}
	return doc
}

// DB returns the root's store, for code outside any call. Statements
// autocommit one by one unless wrapped in Transaction.
func (i *Instance) DB() env.DB {
	return &instanceDB{inst: i}
}

// Close closes every store and the inspection view and removes the instance
// directory (unless KeepDir). It is safe to call more than once.
func (i *Instance) Close() error {
	i.lockWait()
	defer i.unlock()
	if i.closed {
		return nil
	}
	i.closed = true
	var errs []error
	if i.view != nil {
		errs = append(errs, i.view.close())
	}
	for _, ns := range i.nodes {
		errs = append(errs, ns.store.Close())
	}
	if !i.opts.KeepDir {
		errs = append(errs, os.RemoveAll(i.dir))
	}
	return errors.Join(errs...)
}

// Release closes the instance's idle connections now; the next call reopens
// them. Servers call it for sessions that go quiet.
func (i *Instance) Release() {
	i.lockWait()
	defer i.unlock()
	for _, ns := range i.nodes {
		ns.store.Release()
	}
	if i.view != nil {
		i.view.close() // until the next query
	}
}
