package composition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/seahaven/seahaven/env"
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
	// Logger receives one line per call, at debug level, one per
	// fixture repair (see fixture.Recover), and one per panic of world code
	// (a tool, a middleware layer, a startup hook, a Bulk block, a
	// Transaction's function), at error level with its stack; nil discards.
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
	// recorded names the tables the records the running activation kept
	// of this store name (see activation.startCapture).
	recorded []string
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
// from that activation's. A wait also ends, with a *env.WorldBug, when the
// activation holding the lock has not returned stuckAfter after its own
// context ended: a call made inside a call with another context waits for
// itself, until the outer call's deadline and no longer.
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
	for {
		a := i.running.Load()
		var ended <-chan struct{}
		if a != nil {
			ended = a.ctx.Done()
		}
		select {
		case i.lock <- struct{}{}:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-ended:
		}
		// The holder's context ended: it has stuckAfter to return.
		t := time.NewTimer(stuckAfter)
		select {
		case i.lock <- struct{}{}:
			t.Stop()
			return nil
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
		if i.running.Load() == a {
			return env.Bugf("%s waited for the call of %s, which still held the instance %v after its context ended: "+
				"a call made inside a call must pass that call's own context, c.Context(), as any other context waits for the call forever, "+
				"and world code must return once its context ends", what, a.tool, stuckAfter)
		}
	}
}

// stuckAfter is how long a call waiting for the instance gives the
// activation holding it to return once that activation's context has
// ended, before it fails with a *env.WorldBug. A tool that calls its own
// instance with a context other than c.Context() waits for itself: this
// ends that wait soon after the outer call's deadline.
const stuckAfter = time.Second

// lockOpen takes the instance's lock as lockCtx does, and returns
// errClosed, the lock released, when the instance is closed.
func (i *Instance) lockOpen(ctx context.Context, what string) error {
	if err := i.lockCtx(ctx, what); err != nil {
		return err
	}
	if i.closed {
		i.unlock()
		return errClosed
	}
	return nil
}

// lockWait takes the instance's lock, however long that takes: for readers
// with no context and no error to return.
func (i *Instance) lockWait() { i.lock <- struct{}{} }

// lockFor is lockWait for the method what of the instance's user. Used
// inside a call, a startup hook or a Bulk block, on its goroutine, it
// would wait for its own activation forever: it panics with a
// *env.WorldBug saying so, which the activation returns as its error.
func (i *Instance) lockFor(what string) {
	select {
	case i.lock <- struct{}{}:
		return
	default:
	}
	if i.running.Load() != nil && inActivation() {
		panic(env.Bugf("composition: Instance.%s cannot be used inside a call, a startup hook or a Bulk block, which holds the instance: it would wait for itself forever; read the stores through ctx.DB and ctx.Worlds", what))
	}
	i.lockWait()
}

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

// ChangeLog returns every change record so far, in call order; nil when
// there is none. The records and their maps are built on each call and are
// the caller's to keep or modify. When the log outgrew
// Options.MaxChangeLogBytes its oldest records are gone (ChangeLogDropped
// says how many) and the first record's Seq is one more than that.
func (i *Instance) ChangeLog() []env.ChangeRecord {
	i.lockFor("ChangeLog")
	defer i.unlock()
	return i.changes.all()
}

// ChangeLogAndDropped returns ChangeLog and ChangeLogDropped of one moment,
// read under one hold of the instance's lock. Read one after the other, a
// call between the two could add records and drop older ones: the records
// of before it with the count of after it, or the other way round, which
// describe no log the instance ever held.
func (i *Instance) ChangeLogAndDropped() ([]env.ChangeRecord, int) {
	i.lockFor("ChangeLogAndDropped")
	defer i.unlock()
	return i.changes.all(), i.changes.dropped
}

// ChangeCount returns how many change records the instance has made so
// far, those dropped from the log included: the Seq of the newest record.
// It is cheap, for marking where a call's records start and end.
func (i *Instance) ChangeCount() int {
	i.lockFor("ChangeCount")
	defer i.unlock()
	return i.changes.made()
}

// ChangeLogDropped returns how many of the oldest change records were
// dropped to keep the log within Options.MaxChangeLogBytes; zero when the
// log is whole. ChangeLogAndDropped reads it with the records.
func (i *Instance) ChangeLogDropped() int {
	i.lockFor("ChangeLogDropped")
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
	i.lockFor("State")
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
		doc.EpisodeID = new(i.opts.EpisodeID)
	}
	for _, r := range i.Composition() {
		doc.Composition[r.Path] = r
	}
	return doc
}

// DB returns the root's store, for code outside any call. Statements
// autocommit one by one unless wrapped in Transaction.
func (i *Instance) DB() env.DB {
	return instanceDB{inst: i}
}

// Close closes every store and the inspection view and removes the instance
// directory (unless KeepDir). It is safe to call more than once.
func (i *Instance) Close() error {
	i.lockFor("Close")
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
		errs = append(errs, i.removeDir())
	}
	return errors.Join(errs...)
}

// removeDir removes the instance directory. os.RemoveAll opens the
// directory and its parent, which fails while the process has no file
// descriptor left; the directory then holds at most the nodes' files, so
// it removes those and the directory by name, which takes none, instead of
// leaving them on disk until the process ends.
func (i *Instance) removeDir() error {
	err := os.RemoveAll(i.dir)
	if err == nil {
		return nil
	}
	for _, n := range i.sealed.Load().Nodes {
		os.Remove(filepath.Join(i.dir, n.File))
	}
	if os.Remove(i.dir) == nil {
		return nil
	}
	return err
}

// Release closes the instance's idle connections now; the next call reopens
// them. Servers call it for sessions that go quiet.
func (i *Instance) Release() {
	i.lockFor("Release")
	defer i.unlock()
	for _, ns := range i.nodes {
		ns.store.Release()
	}
	if i.view != nil {
		i.view.close() // until the next query
	}
}
