package composition

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/internal/runecut"
	"github.com/seahaven/seahaven/sqlitestore"
)

// Open creates an instance of world: from a fixture when opts.Fixture is
// set, else genesis. Startup hooks run depth first with every node's
// transaction open; a hook that fails rolls every node back and leaves no
// instance. Open refuses to run inside a call, a Bulk block or a startup
// hook, with a WorldBug: the child name is the only door to another world.
// It knows it is inside one from its context (the call's, or one derived
// from it) or from its own goroutine's stack; a goroutine world code
// started, given a context of its own, is not recognised.
//
// A failure of the host (a full disk, no file descriptors left, an instance
// directory that cannot be made) is an *env.InfraError whose message names
// no path; a fixture that does not exist is an error wrapping
// fixture.ErrNotFound.
func Open(ctx context.Context, world *env.World, opts Options) (*Instance, error) {
	inst, err := open(ctx, world, opts)
	if err != nil && !errors.Is(err, fixture.ErrNotFound) {
		if ie := Fault(err, "no instance was opened"); ie != nil {
			return nil, ie
		}
	}
	return inst, err
}

func open(ctx context.Context, world *env.World, opts Options) (*Instance, error) {
	if activationFrom(ctx) != nil || inActivation() {
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
		if src, err = cp.source(); err != nil {
			return nil, err
		}
		if err := checkRunState(resumed, sealed, src.sidecar); err != nil {
			return nil, err
		}
		if err := compareShape(ctx, src.sidecar, sealed, "checkpoint", "taken"); err != nil {
			return nil, err
		}
		opts = resumeOptions(opts, resumed)
	}
	if err := sealed.CheckStartup(opts.Startup); err != nil {
		return nil, err
	}
	mode := cmp.Or(opts.ClockMode, world.Spec().DefaultClockMode)
	inst := &Instance{world: world, opts: opts, log: cmp.Or(opts.Logger, discardLogger), pool: cmp.Or(opts.Pool, DefaultPool), lock: make(chan struct{}, 1)}
	inst.sealed.Store(sealed)
	inst.changes.max = cmp.Or(opts.MaxChangeLogBytes, DefaultMaxChangeLogBytes)
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
			for _, ns := range inst.nodes {
				ns.store.Close()
			}
			inst.removeDir()
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

// ErrStartupRefused is wrapped by the *env.WorldBug Open returns for a
// startup keyword of Options.Startup that no startup hook of the world's
// tree accepts, or whose value does not fit the type of a hook that takes
// it: the caller's mistake, refused before any file is touched.
var ErrStartupRefused = errors.New("composition: startup keywords refused")

// CheckStartup refuses startup keywords kw (Options.Startup) no hook of
// the tree accepts, or whose values a hook taking them would not decode
// (one bound on the hook's node by AddWorld does not reach it), with a
// *env.WorldBug wrapping ErrStartupRefused: the error the hook's run would
// fail with, which Open returns before any file is touched.
func (s *Sealed) CheckStartup(kw map[string]any) error {
	unknown := slices.DeleteFunc(slices.Sorted(maps.Keys(kw)), func(k string) bool { return slices.Contains(s.StartupKeys, k) })
	if len(unknown) > 0 {
		accepted := cmp.Or(strings.Join(s.StartupKeys, ", "), "none")
		quoted := make([]string, len(unknown))
		for i, k := range unknown {
			quoted[i] = strconv.Quote(k)
		}
		// The keywords are the client's: the message repeats at most
		// runecut.MaxEcho bytes of them.
		names := runecut.Echo(strings.Join(quoted, ", "))
		bug := env.Bugf("unknown startup keywords %s: no startup hook of %s's tree accepts them (accepted: %s)", names, s.Root.Name(), accepted)
		if len(unknown) == 1 {
			bug = env.Bugf("unknown startup keyword %s: no startup hook of %s's tree accepts it (accepted: %s)", names, s.Root.Name(), accepted)
		}
		bug.Err = ErrStartupRefused
		return bug
	}
	for _, n := range s.StartupOrder {
		for _, h := range n.World.Hooks() {
			given := map[string]any{}
			for _, k := range h.Keys {
				if _, bound := n.Bound[k]; !bound {
					if v, ok := kw[k]; ok {
						given[k] = v
					}
				}
			}
			if err := h.CheckBound(given); err != nil {
				bug := env.Bugf("startup hook of %s (node %s): startup keywords: %v", n.World.Name(), n.Path, err)
				bug.Err = ErrStartupRefused
				return bug
			}
		}
	}
	return nil
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
		rec := env.CompositionRecord{
			Path: n.Path, World: n.World.Name(), WorldVersion: n.World.Version(), Scope: cloneScope(n.Scope),
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

// runStartup runs every node's hooks in startup order inside one activation
// with every node's transaction open.
func (i *Instance) runStartup(ctx context.Context) error {
	order := i.sealed.Load().StartupOrder
	if !slices.ContainsFunc(order, func(n *Node) bool { return len(n.World.Hooks()) > 0 }) {
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
				err := a.guard(func() string { return "a startup hook of " + n.World.Name() + " on node " + n.Path }, func() error { return h.Run(v.ctx, kw) })
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
