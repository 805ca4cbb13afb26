package composition

import (
	"bytes"
	"cmp"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/sqlitestore"
)

// Checkpoint is an instance as it stands between calls: its stores' files,
// described by a fixture sidecar, and everything else that decides what its
// next calls do, encoded in State. Open with Options.Checkpoint restores
// it: the restored instance's next calls, state document and store files'
// contents are those the checkpointed instance would have produced. Any
// number of instances may restore one Checkpoint, at once: they share its
// files' bytes until each writes its own. WriteDir and ReadCheckpoint keep
// it on disk. A Checkpoint is safe for concurrent use; do not modify it.
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
	// State is the rest of the instance: the clock and its mode, each
	// node's id and random() streams, ctx.State and the options of its
	// startup, the step count and the change log.
	State []byte

	once   sync.Once
	src    *source // Files, verified against Sidecar
	srcErr error

	decodeOnce sync.Once
	run        *runState   // State, decoded; read-only
	records    []logRecord // run's change log; read-only
	runErr     error
}

// decode returns the checkpoint's State decoded, and its change log,
// decoding them the first time: every instance restored from the
// checkpoint shares them and changes neither.
func (cp *Checkpoint) decode() (*runState, []logRecord, error) {
	cp.decodeOnce.Do(func() {
		var st runState
		if err := jsonv2.Unmarshal(cp.State, &st); err != nil {
			cp.runErr = fmt.Errorf("composition: the checkpoint's state does not decode: %w", err)
			return
		}
		if st.Format != checkpointFormat {
			cp.runErr = fmt.Errorf("composition: the checkpoint's state is of format %d; this version reads format %d: restore it with the version that took it", st.Format, checkpointFormat)
			return
		}
		if st.Calls < 0 || st.Dropped < 0 {
			cp.runErr = fmt.Errorf("composition: the checkpoint's state counts %d calls and %d dropped changes", st.Calls, st.Dropped)
			return
		}
		for k, c := range st.Changes {
			if err := c.check(st.Shapes); err != nil {
				cp.runErr = fmt.Errorf("composition: the checkpoint's change %d: %w", k+1, err)
				return
			}
			sh := st.Shapes[c.Shape]
			row := sqlitestore.RowChange{Table: sh.Table, Op: c.Op, KeyNames: sh.KeyNames, Names: sh.Names,
				KeyValues: anyOf(c.Key), Before: anyOf(c.Before), After: anyOf(c.After)}
			cp.records = append(cp.records, logRecord{call: c.Call, tool: c.Tool, internal: c.Internal, world: c.World, row: row})
		}
		st.Changes, st.Shapes = nil, nil // kept as records
		cp.run = &st
	})
	return cp.run, cp.records, cp.runErr
}

// source returns the checkpoint's files as a source, verified against the
// sidecar's hashes the first time.
func (cp *Checkpoint) source() (*source, error) {
	cp.once.Do(func() {
		if cp.Sidecar == nil {
			cp.srcErr = errors.New("composition: the checkpoint has no sidecar")
			return
		}
		cp.src, cp.srcErr = newSource(cp.Sidecar, cp.Files, "checkpoint")
	})
	return cp.src, cp.srcErr
}

// checkpointFormat is the version of the encoded State; a checkpoint of
// another version is refused.
const checkpointFormat = 1

// runState is the encoded part of a Checkpoint, as JSON. Store values
// (change images) are values; ctx.State maps, which hold any Go values
// their worlds put there, are encoded with encoding/gob.
type runState struct {
	Format       int                     `json:"format"`
	World        string                  `json:"world"`
	Seed         int64                   `json:"seed"`
	Startup      json.RawMessage         `json:"startup,omitempty"` // JSON of Options.Startup
	ControlTools bool                    `json:"control_tools"`
	EpisodeID    string                  `json:"episode_id"`
	ClockMode    string                  `json:"clock_mode"`
	StepTickNS   int64                   `json:"step_tick_ns"`
	Now          time.Time               `json:"now"`
	Calls        int                     `json:"calls"`
	Fixture      *env.FixtureRef         `json:"fixture"`
	Composition  []env.CompositionRecord `json:"composition"`
	Nodes        []nodeRun               `json:"nodes"`
	Dropped      int                     `json:"dropped"`
	// Shapes are the tables and column lists the changes name, each once.
	Shapes  []changeShape `json:"shapes"`
	Changes []changeRun   `json:"changes"`
}

// nodeRun is one node's part of a runState.
type nodeRun struct {
	Path   string `json:"path"`
	IDs    []byte `json:"ids"`             // env.IDs state
	Random []byte `json:"random"`          // the store's random() state
	State  []byte `json:"state,omitempty"` // ctx.State, gob-encoded; none when empty
}

// changeShape is a table and the columns of its changes' keys and images.
type changeShape struct {
	Table    string   `json:"table"`
	KeyNames []string `json:"key_names"`
	Names    []string `json:"names"`
}

// changeRun is one change record of a runState.
type changeRun struct {
	Call     int     `json:"call"`
	Tool     string  `json:"tool"`
	Internal bool    `json:"internal,omitempty"`
	World    string  `json:"world"`
	Shape    int     `json:"shape"`
	Op       string  `json:"op"`
	Key      []value `json:"key"`
	Before   []value `json:"before"` // null for an insert
	After    []value `json:"after"`  // null for a delete
}

// check reports what makes c no change record of a store: a shape it
// does not name, an operation that is not one, or images that do not fit
// the shape's columns.
func (c *changeRun) check(shapes []changeShape) error {
	if c.Shape < 0 || c.Shape >= len(shapes) {
		return fmt.Errorf("it names shape %d of %d", c.Shape, len(shapes))
	}
	sh := shapes[c.Shape]
	before, after := c.Before != nil, c.After != nil
	switch {
	case sh.Table == "" || len(sh.KeyNames) == 0:
		return errors.New("its table or key columns are not named")
	case len(c.Key) != len(sh.KeyNames):
		return fmt.Errorf("its key has %d values for %d columns", len(c.Key), len(sh.KeyNames))
	case before && len(c.Before) != len(sh.Names) || after && len(c.After) != len(sh.Names):
		return fmt.Errorf("its images do not have the %d columns of %s", len(sh.Names), sh.Table)
	case c.Op == sqlitestore.OpInsert && (before || !after),
		c.Op == sqlitestore.OpUpdate && (!before || !after),
		c.Op == sqlitestore.OpDelete && (!before || after):
		return fmt.Errorf("its images do not fit a %s", c.Op)
	case c.Op != sqlitestore.OpInsert && c.Op != sqlitestore.OpUpdate && c.Op != sqlitestore.OpDelete:
		return fmt.Errorf("its operation %q is not insert, update or delete", c.Op)
	}
	return nil
}

// value is one store value, typed: exactly one field is set, none for
// NULL. A REAL is kept as its bits, so every float (infinities too)
// returns exactly, and a TEXT that is not UTF-8 (SQLite keeps what it is
// given) as its bytes, which JSON text cannot hold. The fields are omitted
// only when nil (omitzero): the empty text and the empty blob, which
// omitempty would drop, are values.
type value struct {
	I *int64  `json:"i,omitzero"`
	F *uint64 `json:"f,omitzero"`
	S *string `json:"s,omitzero"`
	T *[]byte `json:"t,omitzero"`
	B *[]byte `json:"b,omitzero"`
}

func valuesOf(vs []any) []value {
	if vs == nil {
		return nil
	}
	out := make([]value, len(vs))
	for k, v := range vs {
		switch v := v.(type) {
		case int64:
			out[k].I = &v
		case float64:
			out[k].F = new(math.Float64bits(v))
		case string:
			if utf8.ValidString(v) {
				out[k].S = &v
			} else {
				out[k].T = new([]byte(v))
			}
		case []byte:
			out[k].B = &v
		}
	}
	return out
}

func anyOf(vs []value) []any {
	if vs == nil {
		return nil
	}
	out := make([]any, len(vs))
	for k, v := range vs {
		switch {
		case v.I != nil:
			out[k] = *v.I
		case v.F != nil:
			out[k] = math.Float64frombits(*v.F)
		case v.S != nil:
			out[k] = *v.S
		case v.T != nil:
			out[k] = string(*v.T)
		case v.B != nil:
			out[k] = *v.B
		}
	}
	return out
}

// stateOpts encode a runState: a nil slice as null, so that an insert's
// before-image returns as nil.
var stateOpts = jsonv2.FormatNilSliceAsNull(true)

func init() {
	// The containers JSON decodes to, and times, in ctx.State.
	gob.Register([]any{})
	gob.Register(map[string]any{})
	gob.Register(time.Time{})
	gob.Register(json.Number(""))
}

// Checkpoint captures the instance between calls (see Checkpoint). It waits
// for the call in progress, as a call does, and changes nothing: the
// episode goes on as if it had not been taken. It fails with a
// *env.WorldBug when a node's ctx.State holds a value encoding/gob cannot
// carry (a function, a channel, a type not registered with gob.Register)
// or would give back as another type (a pointer), naming the node and key.
func (i *Instance) Checkpoint(ctx context.Context) (*Checkpoint, error) {
	ctx = cmp.Or(ctx, context.Background())
	if _, err := i.reseal(); err != nil {
		return nil, err
	}
	if err := i.lockOpen(ctx, "Checkpoint"); err != nil {
		return nil, err
	}
	defer i.unlock()
	st := runState{
		Format: checkpointFormat, World: i.world.Name(), Seed: i.opts.Seed,
		ControlTools: i.opts.ControlTools, EpisodeID: i.opts.EpisodeID, ClockMode: i.clock.mode,
		StepTickNS: int64(i.clock.tick), Now: i.clock.Now(), Calls: i.calls, Fixture: i.fixture,
		Composition: i.compRecords, Dropped: i.changes.dropped,
	}
	if i.opts.Startup != nil {
		b, err := json.Marshal(i.opts.Startup)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: startup keywords: %w", err)
		}
		st.Startup = b
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
		state, err := encodeState(ns.node.Path, ns.state)
		if err != nil {
			return nil, err
		}
		st.Nodes = append(st.Nodes, nodeRun{Path: ns.node.Path, IDs: ids, Random: ns.store.RandomState(), State: state})
	}
	shapes := map[string]int{}
	var records []logRecord
	i.changes.each(func(r logRecord) {
		records = append(records, r)
		key := r.row.Table + "\x00" + strings.Join(r.row.KeyNames, "\x00") + "\x01" + strings.Join(r.row.Names, "\x00")
		n, ok := shapes[key]
		if !ok {
			n = len(st.Shapes)
			shapes[key] = n
			st.Shapes = append(st.Shapes, changeShape{Table: r.row.Table, KeyNames: r.row.KeyNames, Names: r.row.Names})
		}
		st.Changes = append(st.Changes, changeRun{Call: r.call, Tool: r.tool, Internal: r.internal, World: r.world, Shape: n, Op: r.row.Op,
			Key: valuesOf(r.row.KeyValues), Before: valuesOf(r.row.Before), After: valuesOf(r.row.After)})
	})
	var err error
	if cp.State, err = jsonv2.Marshal(&st, stateOpts); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	cp.Sidecar = i.sidecar("", "checkpoint", hashes, nil)
	cp.Sidecar.Now = st.Now.Format(env.TimeFormat)
	// What State decodes to is at hand: restores in this process need
	// not decode it.
	cp.decodeOnce.Do(func() {
		st.Shapes, st.Changes = nil, nil
		cp.run, cp.records = &st, records
	})
	return cp, nil
}

// encodeState encodes a node's ctx.State with encoding/gob, nil when it is
// empty. A value gob cannot encode is a *env.WorldBug naming the key, and
// so is one that would decode to another type (a pointer, which gob
// carries as the value it points to): world code asserting the type it
// kept would panic after a restore.
func encodeState(path string, state map[string]any) ([]byte, error) {
	if len(state) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(state); err != nil {
		for _, k := range slices.Sorted(maps.Keys(state)) {
			v := state[k]
			if err := gob.NewEncoder(io.Discard).Encode(map[string]any{k: v}); err != nil {
				return nil, env.Bugf("checkpoint: node %s: ctx.State[%q] holds a %T, which a checkpoint cannot carry (%v): keep there values encoding/gob carries (strings, numbers, booleans, []byte and slices of those, time.Time, and []any and map[string]any of such values, as JSON decodes to); register any other type, a map[string]int or a struct, with gob.Register", path, k, v, err)
			}
		}
		return nil, env.Bugf("checkpoint: node %s: ctx.State cannot be encoded", path)
	}
	var back map[string]any
	if err := gob.NewDecoder(bytes.NewReader(buf.Bytes())).Decode(&back); err != nil {
		return nil, env.Bugf("checkpoint: node %s: ctx.State does not decode as it was encoded (%v)", path, err)
	}
	for _, k := range slices.Sorted(maps.Keys(state)) {
		if at, kept, got := typeChange(reflect.ValueOf(state[k]), reflect.ValueOf(back[k]), ""); kept != nil {
			return nil, env.Bugf("checkpoint: node %s: ctx.State[%q]%s holds a %s, which a restore would give back as a %s: encoding/gob carries a pointer as the value it points to, and decodes a registered type as the type gob.Register was given; keep %s values there, not %s", path, k, at, kept, got, got, kept)
		}
	}
	return buf.Bytes(), nil
}

// typeChange walks v, a value of ctx.State, beside d, what it decodes to,
// and returns the first place (a path of indexes and fields below the key)
// where their types differ, and both types; nil types when none does. Only
// the contents of interfaces can change type, so slices, arrays and maps
// of other element types are not walked element by element.
func typeChange(v, d reflect.Value, at string) (string, reflect.Type, reflect.Type) {
	if !v.IsValid() || !d.IsValid() {
		return "", nil, nil // nil, which gob refuses or returns as nil
	}
	if v.Type() != d.Type() {
		return at, v.Type(), d.Type()
	}
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() || d.IsNil() {
			return "", nil, nil
		}
		return typeChange(v.Elem(), d.Elem(), at)
	case reflect.Slice, reflect.Array:
		if !mayHoldInterface(v.Type().Elem()) {
			return "", nil, nil
		}
		for k := range min(v.Len(), d.Len()) {
			if at, kept, got := typeChange(v.Index(k), d.Index(k), fmt.Sprintf("%s[%d]", at, k)); kept != nil {
				return at, kept, got
			}
		}
	case reflect.Map:
		if !mayHoldInterface(v.Type().Elem()) {
			return "", nil, nil
		}
		for _, key := range v.MapKeys() {
			if at, kept, got := typeChange(v.MapIndex(key), d.MapIndex(key), fmt.Sprintf("%s[%#v]", at, key.Interface())); kept != nil {
				return at, kept, got
			}
		}
	case reflect.Struct:
		for k := range v.NumField() {
			if f := v.Type().Field(k); f.IsExported() {
				if at, kept, got := typeChange(v.Field(k), d.Field(k), at+"."+f.Name); kept != nil {
					return at, kept, got
				}
			}
		}
	}
	return "", nil, nil
}

// mayHoldInterface reports whether a value of type t may hold an
// interface, whose content gob may return as another type.
func mayHoldInterface(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Interface, reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map, reflect.Struct:
		return true
	}
	return false
}

// checkRunState checks a decoded checkpoint state against the sealed tree
// and the checkpoint's sidecar: its world, its nodes, and its composition
// records, which the restored instance reports as its own (the node, world,
// scope and aliases of each sealed node, and the schema hash the sidecar
// records for it).
func checkRunState(st *runState, s *Sealed, sidecar *fixture.Sidecar) error {
	if st.World != s.Root.Name() {
		return fmt.Errorf("composition: the checkpoint is of world %s, not %s", st.World, s.Root.Name())
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
		return fmt.Errorf("composition: the checkpoint's nodes (%s) are not %s's (%s)", strings.Join(paths, ", "), s.Root.Name(), strings.Join(want, ", "))
	}
	schemas := map[string]string{fixture.RootPath: sidecar.SchemaHash}
	for _, n := range sidecar.Nodes {
		schemas[n.Path] = n.SchemaHash
	}
	for k, n := range s.Nodes {
		r := st.Composition[k]
		if r.Path != n.Path || r.World != n.World.Name() || scopeText(r.Scope) != scopeText(n.Scope) ||
			!slices.Equal(slices.Sorted(slices.Values(r.Aliases)), slices.Sorted(slices.Values(n.Aliases))) {
			return fmt.Errorf("composition: the checkpoint's composition record %d (node %q, world %q, scope %s, aliases [%s]) is not %s's node %s (world %s, scope %s, aliases [%s])",
				k+1, r.Path, r.World, scopeText(r.Scope), strings.Join(r.Aliases, ", "), s.Root.Name(), n.Path, n.World.Name(), scopeText(n.Scope), strings.Join(n.Aliases, ", "))
		}
		if want, ok := schemas[n.Path]; !ok || r.SchemaHash != want {
			return fmt.Errorf("composition: the checkpoint's composition record of node %s has schema hash %q; its sidecar records %q", n.Path, r.SchemaHash, want)
		}
	}
	// The fixture the episode started from, which its state document names
	// and its next checkpoints and freezes record as their parent.
	if f := st.Fixture; f != nil {
		if err := fixture.ValidID(f.ID); err != nil {
			return fmt.Errorf("composition: the checkpoint's fixture: %w", err)
		}
		if got := slices.Sorted(maps.Keys(f.FileSHA256)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
			return fmt.Errorf("composition: the checkpoint's fixture %q has files of nodes %s, not of %s's nodes %s", f.ID, strings.Join(got, ", "), s.Root.Name(), strings.Join(want, ", "))
		}
	}
	return nil
}

// resume applies a decoded checkpoint state and change log to an instance
// being opened from the checkpoint's files, in place of the startup hooks.
func (i *Instance) resume(st *runState, records []logRecord) error {
	for k, ns := range i.nodes {
		n := st.Nodes[k]
		if err := ns.ids.UnmarshalBinary(n.IDs); err != nil {
			return fmt.Errorf("composition: the checkpoint's node %s: %w", n.Path, err)
		}
		if n.State != nil {
			ns.state = map[string]any{}
			if err := gob.NewDecoder(bytes.NewReader(n.State)).Decode(&ns.state); err != nil {
				return fmt.Errorf("composition: the checkpoint's node %s: ctx.State does not decode: %w", n.Path, err)
			}
		}
	}
	i.calls = st.Calls
	i.fixture = st.Fixture
	i.compRecords = slices.Clone(st.Composition)
	for k := range i.compRecords {
		// A world upgraded since, with the same schema, restores too: the
		// record says the version installed now, as a reset would, and the
		// version the fixture was frozen with when that differs.
		r, installed := &i.compRecords[k], i.nodes[k].node.World.Version()
		frozen := *cmp.Or(r.FrozenWorldVersion, &r.WorldVersion)
		r.WorldVersion, r.FrozenWorldVersion = installed, nil
		if i.fixture != nil && frozen != installed {
			r.FrozenWorldVersion = &frozen
		}
	}
	i.changes.dropped = st.Dropped
	for _, r := range records {
		i.changes.add(r)
	}
	return nil
}

// resumeOptions returns opts with what the checkpoint state fixes.
func resumeOptions(opts Options, st *runState) Options {
	opts.Seed, opts.ControlTools, opts.EpisodeID = st.Seed, st.ControlTools, st.EpisodeID
	opts.ClockMode, opts.StepTick, opts.Now, opts.Fixture = st.ClockMode, time.Duration(st.StepTickNS), "", ""
	opts.Startup = nil
	if st.Startup != nil {
		d := json.NewDecoder(bytes.NewReader(st.Startup))
		d.UseNumber()
		d.Decode(&opts.Startup) // it was encoded from such a map
	}
	return opts
}

// WriteDir writes the checkpoint's sidecar (fixture.yaml), whose ID must be
// set, and store files into dir, an existing directory, and returns the
// sidecar's bytes; ReadCheckpoint reads them back. WriteDir does not
// fsync, and State is the caller's to keep.
func (cp *Checkpoint) WriteDir(dir string) ([]byte, error) {
	data, err := fixture.Marshal(cp.Sidecar)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, fixture.SidecarName), data, 0o644); err != nil {
		return nil, err
	}
	for path, b := range cp.Files {
		if err := os.WriteFile(filepath.Join(dir, fixture.FileName(path)), b, 0o644); err != nil {
			return nil, err
		}
	}
	return data, nil
}

// ReadCheckpoint reads the checkpoint WriteDir wrote into dir: sidecar is
// its fixture.yaml's content, state its State. The store files are checked
// against the sidecar's hashes when the first instance opens from it; one
// that is not a regular file (a named pipe, a device) is refused now, with
// an error wrapping fixture.ErrNotRegular. Its errors name no directory,
// so a server can show them to a client.
func ReadCheckpoint(dir string, sidecar, state []byte) (*Checkpoint, error) {
	s, err := fixture.Parse(sidecar)
	if err != nil {
		return nil, err
	}
	cp := &Checkpoint{Sidecar: s, Files: map[string][]byte{}, State: state}
	for path := range s.FileHashes() {
		b, err := fixture.ReadFile(filepath.Join(dir, fixture.FileName(path)))
		if errors.Is(err, fixture.ErrNotRegular) {
			// Named without the directory, which is the server's.
			return nil, fmt.Errorf("composition: checkpoint %q: node %s: file %s: %w", s.ID, path, fixture.FileName(path), fixture.ErrNotRegular)
		}
		if err != nil {
			// Named without the directory too: the cause alone (a
			// missing file, an I/O error) is wrapped.
			if pe, ok := errors.AsType[*fs.PathError](err); ok {
				err = pe.Err
			}
			return nil, fmt.Errorf("composition: checkpoint %q: node %s: file %s: %w", s.ID, path, fixture.FileName(path), err)
		}
		cp.Files[path] = b
	}
	return cp, nil
}
