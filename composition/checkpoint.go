package composition

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/sqlitestore"
)

// Checkpoint is an instance as it stands between calls: its stores' files,
// described by a fixture sidecar, and everything else that decides what its
// next calls do, encoded in State. Written out as a fixture directory (the
// sidecar and the files) with State beside it, it restores through Open
// with Options.Resume: the restored instance's next calls, state document
// and store files are those the checkpointed instance would have produced.
type Checkpoint struct {
	// Sidecar describes Files as a fixture sidecar does, with every file's
	// hash; its ID is "" until the caller names the checkpoint, and its
	// parent is the fixture the instance started from.
	Sidecar *fixture.Sidecar
	// Files holds each node's store file byte for byte (not vacuumed: a
	// compacted copy would lay out its next writes differently), by node
	// path ("main" for the root). Do not modify them: a node the instance
	// never wrote shares its fixture's bytes.
	Files map[string][]byte
	// State is the rest of the instance, for Options.Resume: the clock and
	// its mode, each node's id and random() streams, ctx.State and the
	// options of its startup, the step count and the change log.
	State []byte
}

// checkpointFormat is the version of the encoded State; a checkpoint of
// another version is refused.
const checkpointFormat = 1

// runState is the encoded part of a Checkpoint.
type runState struct {
	Format       int
	World        string
	Seed         int64
	Startup      map[string]any
	ControlTools bool
	EpisodeID    string
	ClockMode    string
	StepTick     time.Duration
	Now          time.Time
	Calls        int
	Fixture      *env.FixtureRef
	Composition  []env.CompositionRecord
	Nodes        []nodeRun
	Dropped      int
	Changes      []changeRun
}

// nodeRun is one node's part of a runState.
type nodeRun struct {
	Path   string
	IDs    []byte // env.IDs state
	Random []byte // the store's random() state
	State  map[string]any
}

// changeRun is one change record of a runState.
type changeRun struct {
	Call     int
	Tool     string
	Internal bool
	World    string
	Row      sqlitestore.RowChange
}

func init() {
	// JSON numbers in startup keywords (see openenv.OpenOptions.Startup)
	// and the containers JSON decodes to.
	gob.Register(json.Number(""))
	gob.Register([]any{})
	gob.Register(map[string]any{})
	gob.Register(time.Time{})
}

// Checkpoint captures the instance between calls (see Checkpoint). It waits
// for the call in progress, as a call does, and changes nothing: the
// episode goes on as if it had not been taken. It fails with a
// *env.WorldBug when a node's ctx.State holds a value encoding/gob cannot
// carry (a function, a channel, a type not registered with gob.Register),
// naming the node and key.
func (i *Instance) Checkpoint(ctx context.Context) (*Checkpoint, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if _, err := i.reseal(); err != nil {
		return nil, err
	}
	if err := i.lockCtx(ctx, "Checkpoint"); err != nil {
		return nil, err
	}
	defer i.unlock()
	if i.closed {
		return nil, errClosed
	}
	st := runState{
		Format: checkpointFormat, World: i.world.Name(), Seed: i.opts.Seed, Startup: i.opts.Startup,
		ControlTools: i.opts.ControlTools, EpisodeID: i.opts.EpisodeID, ClockMode: i.clock.mode,
		StepTick: i.clock.tick, Now: i.clock.Now(), Calls: i.calls, Fixture: i.fixture,
		Composition: i.compRecords, Dropped: i.changes.dropped,
	}
	cp := &Checkpoint{Files: map[string][]byte{}}
	hashes := map[string]string{}
	for _, ns := range i.nodes {
		b, err := ns.store.Snapshot(ctx)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: node %s: %w", ns.node.Path, err)
		}
		cp.Files[ns.node.Path] = b
		hashes[ns.node.Path] = fixture.HashBytes(b)
		ids, _ := ns.ids.MarshalBinary() // a PCG's never fails
		if err := encodable(ns.node.Path, ns.state); err != nil {
			return nil, err
		}
		st.Nodes = append(st.Nodes, nodeRun{Path: ns.node.Path, IDs: ids, Random: ns.store.RandomState(), State: ns.state})
	}
	i.changes.each(func(r *logRecord) {
		st.Changes = append(st.Changes, changeRun{Call: r.call, Tool: r.tool, Internal: r.internal, World: r.world, Row: r.row})
	})
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&st); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	cp.State = buf.Bytes()
	cp.Sidecar = i.sidecar("", "checkpoint", hashes, nil)
	cp.Sidecar.Now = st.Now.Format(env.TimeFormat)
	return cp, nil
}

// encodable checks that a node's ctx.State can be encoded, key by key, so
// the error names the key.
func encodable(path string, state map[string]any) error {
	keys := make([]string, 0, len(state))
	for k := range state {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := state[k]
		if err := gob.NewEncoder(discard{}).Encode(map[string]any{k: v}); err != nil {
			return env.Bugf("checkpoint: node %s: ctx.State[%q] holds a %T, which a checkpoint cannot carry (%v): keep values encoding/gob encodes there (strings, numbers, booleans, slices, maps and structs of them; register other types with gob.Register)", path, k, v, err)
		}
	}
	return nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// decodeRunState decodes a Checkpoint's State and checks it against the
// sealed tree.
func decodeRunState(b []byte, s *Sealed) (*runState, error) {
	var st runState
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&st); err != nil {
		return nil, fmt.Errorf("composition: the checkpoint's state does not decode: %w", err)
	}
	if st.Format != checkpointFormat {
		return nil, fmt.Errorf("composition: the checkpoint's state is of format %d; this version reads format %d", st.Format, checkpointFormat)
	}
	if st.World != s.Root.Name() {
		return nil, fmt.Errorf("composition: the checkpoint is of world %s, not %s", st.World, s.Root.Name())
	}
	var paths []string
	for _, n := range st.Nodes {
		paths = append(paths, n.Path)
	}
	var want []string
	for _, n := range s.Nodes {
		want = append(want, n.Path)
	}
	if !slices.Equal(paths, want) || len(st.Composition) != len(want) {
		return nil, fmt.Errorf("composition: the checkpoint's nodes (%s) are not %s's (%s)", strings.Join(paths, ", "), s.Root.Name(), strings.Join(want, ", "))
	}
	// Gob has no empty slices: put back those the state document shows.
	for k := range st.Composition {
		if st.Composition[k].Aliases == nil {
			st.Composition[k].Aliases = []string{}
		}
	}
	for k := range st.Changes {
		row := &st.Changes[k].Row
		for _, vs := range [...][]any{row.KeyValues, row.Before, row.After} {
			for j, v := range vs {
				if b, ok := v.([]byte); ok && b == nil {
					vs[j] = []byte{} // a store never reads a blob as nil
				}
			}
		}
	}
	return &st, nil
}

// resume applies a decoded checkpoint state to an instance being opened
// from the checkpoint's files, in place of the startup hooks.
func (i *Instance) resume(st *runState) error {
	for k, ns := range i.nodes {
		n := st.Nodes[k]
		if err := ns.ids.UnmarshalBinary(n.IDs); err != nil {
			return fmt.Errorf("composition: the checkpoint's node %s: %w", n.Path, err)
		}
		if n.State != nil {
			ns.state = n.State
		}
	}
	i.calls = st.Calls
	i.fixture = st.Fixture
	i.compRecords = st.Composition
	i.changes.dropped = st.Dropped
	for _, c := range st.Changes {
		i.changes.add(logRecord{call: c.Call, tool: c.Tool, internal: c.Internal, world: c.World, row: c.Row})
	}
	return nil
}

// resumeOptions returns opts with what the checkpoint state fixes.
func resumeOptions(opts Options, st *runState) Options {
	opts.Seed, opts.Startup, opts.ControlTools, opts.EpisodeID = st.Seed, st.Startup, st.ControlTools, st.EpisodeID
	opts.ClockMode, opts.StepTick, opts.Now = st.ClockMode, st.StepTick, ""
	return opts
}

// errResumeGenesis refuses Options.Resume without a checkpoint's files.
var errResumeGenesis = errors.New("composition: Options.Resume needs Options.Fixture, the checkpoint's files written as a fixture")

// WriteDir writes the checkpoint's sidecar (fixture.yaml) and store files
// into dir, an existing directory, so that dir is a fixture directory named
// by the sidecar's ID, which must be set: Open restores from it with
// Options.Fixture set to that ID, Options.FixturesDir to dir's parent and
// Options.Resume to State. WriteDir does not fsync, and State is the
// caller's to keep.
func (cp *Checkpoint) WriteDir(dir string) error {
	data, err := fixture.Marshal(cp.Sidecar)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, fixture.SidecarName), data, 0o644); err != nil {
		return err
	}
	for path, b := range cp.Files {
		if err := os.WriteFile(filepath.Join(dir, fixture.FileName(path)), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
