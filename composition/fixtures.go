package composition

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/sqlitestore"
)

var schemaHashes sync.Map // of schema text to hash

// schemaHash returns the normalised schema hash of a world's schema, cached
// by schema text.
func schemaHash(ctx context.Context, w *env.World) (string, error) {
	schema := w.Spec().Schema
	if h, ok := schemaHashes.Load(schema); ok {
		return h.(string), nil
	}
	h, err := sqlitestore.SchemaHash(ctx, schema)
	if err != nil && ctx.Err() != nil {
		// Interrupted: the schema may well apply.
		return "", fmt.Errorf("composition: hashing the schema of world %s: %w", w.Name(), ctx.Err())
	}
	if err != nil {
		return "", &env.WorldBug{Message: fmt.Sprintf("world %s: schema does not apply: %v", w.Name(), err), Where: w.Where(), Err: err}
	}
	schemaHashes.Store(schema, h)
	return h, nil
}

// fixturesDir returns where a root world's own fixtures live, as an
// absolute path: override when set, else the world's (FixturesDir).
func fixturesDir(w *env.World, override string) (string, error) {
	dir := override
	if dir == "" {
		var err error
		if dir, err = FixturesDir(w); err != nil {
			return "", err
		}
		if dir == "" {
			return "", fmt.Errorf("composition: world %s has no fixtures (neither FixturesDir nor Fixtures)", w.Name())
		}
	}
	return filepath.Abs(dir)
}

// materialized caches the directories Fixtures file systems were copied to,
// by file system.
var materialized = struct {
	sync.Mutex // guards m
	m          map[fs.FS]string
}{m: map[fs.FS]string{}}

// FixturesDir returns the directory of the world's own fixtures: its
// FixturesDir when set, else a copy on disk of its Fixtures file system,
// made on first use (fixture.Materialize) and kept for the process; ""
// when the world has neither.
func FixturesDir(w *env.World) (string, error) {
	spec := w.Spec()
	if spec.FixturesDir != "" || spec.Fixtures == nil {
		return spec.FixturesDir, nil
	}
	key := spec.Fixtures
	cacheable := reflect.TypeOf(key).Comparable()
	if cacheable {
		materialized.Lock()
		defer materialized.Unlock()
		if dir, ok := materialized.m[key]; ok {
			return dir, nil
		}
	}
	dir, err := fixture.Materialize(spec.Fixtures, w.Name())
	if err != nil {
		return "", err
	}
	if cacheable {
		materialized.m[key] = dir
	}
	return dir, nil
}

// Fixtures lists a world's own fixtures, sorted by id. An added world's
// fixtures are unreachable from a host: only the root's FixturesDir is read,
// and of its fixtures only those frozen of the root's world (a directory
// several worlds share holds others). Fixtures whose sidecars do not parse
// are named by a *fixture.ListError, returned beside the others (see
// fixture.List).
func Fixtures(w *env.World) ([]*fixture.Sidecar, error) {
	dir, err := fixturesDir(w, "")
	if err != nil {
		return nil, err
	}
	list, err := fixture.List(dir)
	return slices.DeleteFunc(list, func(s *fixture.Sidecar) bool { return s.World != w.Name() }), err
}

// CheckFixture reads fixture id of w from fixturesDir (the world's own
// fixtures when empty) and checks it as a reset opening it does: its files
// against their hashes and its sidecar against w's composition. Its error
// is the one such a reset would fail with; the fixture is then kept in
// memory for the resets that follow. It is safe for concurrent use.
func CheckFixture(w *env.World, fixturesDir, id string) error {
	sealed, err := Seal(w)
	if err != nil {
		return err
	}
	_, err = loadSource(w, sealed, Options{Fixture: id, FixturesDir: fixturesDir})
	return err
}

// source is a verified fixture, with its files' bytes cached in memory so an
// instance starts from private copies without reading or hashing again.
type source struct {
	sidecar *fixture.Sidecar
	now     time.Time
	ref     *env.FixtureRef
	files   map[string][]byte // by node path
	stamp   string
}

var sources sync.Map // of fixture directory to *source

// loadSource reads, verifies and checks a fixture against the sealed tree.
func loadSource(w *env.World, sealed *Sealed, opts Options) (*source, error) {
	root, err := fixturesDir(w, opts.FixturesDir)
	if err != nil {
		return nil, err
	}
	dir, err := fixture.Dir(root, opts.Fixture)
	if err != nil {
		return nil, err
	}
	names := []string{fixture.SidecarName}
	for _, n := range sealed.Nodes {
		names = append(names, n.File)
	}
	stamp, stampErr := fixture.Stamp(dir, names)
	cached, ok := sources.Load(dir)
	src, _ := cached.(*source)
	if ok && stampErr == nil && src.stamp == stamp {
		if err := CompareShape(context.Background(), src.sidecar, sealed); err != nil {
			return nil, err
		}
		return src, nil
	}
	s, err := fixture.Read(root, opts.Fixture)
	if errors.Is(err, fixture.ErrNotFound) {
		// A publish killed between its renames (by another process, perhaps
		// after this one started) leaves the fixture aside: put it back.
		if r, rerr := fixture.Recover(root, opts.Logger); rerr == nil && slices.Contains(r.Restored, opts.Fixture) {
			s, err = fixture.Read(root, opts.Fixture)
		}
	}
	if err != nil {
		if errors.Is(err, fixture.ErrNotFound) {
			where := root
			if own, _ := FixturesDir(w); w.Spec().FixturesDir == "" && own != "" && filepath.Clean(own) == root {
				// Not the copy on disk they are read from.
				where = "the fixtures embedded in world " + w.Name()
			}
			return nil, &notFoundError{fmt.Sprintf("composition: %s has no fixture %q in %s", w.Name(), opts.Fixture, where)}
		}
		return nil, err
	}
	if err := fixture.Verify(dir, s); err != nil {
		return nil, missingFile(err)
	}
	if err := CompareShape(context.Background(), s, sealed); err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, n := range sealed.Nodes {
		b, err := fixture.ReadFile(filepath.Join(dir, n.File))
		if err != nil {
			return nil, missingFile(fmt.Errorf("composition: fixture %q: node %s: %w", s.ID, n.Path, err))
		}
		files[n.Path] = b
	}
	// The bytes were read after Verify; newSource checks them against the
	// sidecar too, so a file swapped in between is never used.
	if src, err = newSource(s, files, "fixture"); err != nil {
		return nil, err
	}
	src.stamp = stamp
	if stampErr == nil {
		sources.Store(dir, src)
	}
	return src, nil
}

// missingFile is err, a fixture's file not read, as a fault of the
// fixture when the file is not there (removed, or a link to nothing): no
// retry brings it back, so it is not the host's storage failing (Fault).
// Its text names the node and the file, and no directory of the server's.
func missingFile(err error) error {
	pe, ok := errors.AsType[*fs.PathError](err)
	if !ok || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), pe.Path, filepath.Base(pe.Path)))
}

// newSource makes the source of a verified sidecar and its files' bytes,
// by node path, which it checks against the sidecar's hashes. what names
// the files' origin in a mismatch's error: "fixture" or "checkpoint".
func newSource(s *fixture.Sidecar, files map[string][]byte, what string) (*source, error) {
	now, err := ParseTime(s.Now)
	if err != nil {
		return nil, err
	}
	hashes := s.FileHashes()
	for _, path := range slices.Sorted(maps.Keys(hashes)) {
		if _, ok := files[path]; !ok {
			return nil, fmt.Errorf("%s: %s %q node %s: file %s is missing", what, what, s.ID, path, fixture.FileName(path))
		}
	}
	for path, b := range files {
		if got, want := fixture.HashBytes(b), hashes[path]; got != want {
			return nil, fmt.Errorf("%s: hash mismatch: %s %q node %s: file %s has sha256 %s, the sidecar says %s", what, what, s.ID, path, fixture.FileName(path), got, want)
		}
	}
	// The hashes vouch for the bytes, not for what they are: a file cut
	// short (or no database at all) whose sidecar was written to match
	// would fail its instance's first call as a fault of the server's disk.
	for _, path := range slices.Sorted(maps.Keys(files)) {
		if reason := databaseReason(files[path]); reason != "" {
			return nil, fmt.Errorf("%s: %s %q node %s: file %s %s", what, what, s.ID, path, fixture.FileName(path), reason)
		}
	}
	ref := &env.FixtureRef{ID: s.ID, FormatVersion: s.FormatVersion, FileSHA256: hashes}
	return &source{sidecar: s, now: now, ref: ref, files: files}, nil
}

// sqliteMagic opens every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// databaseReason says what makes b no whole SQLite database file, from its
// header, or "": not the SQLite magic, a page size SQLite never writes, a
// length that is not whole pages, or fewer pages than the header counts
// (when the count is valid: its change counters agree); or a file in WAL
// mode, whose pages may be in a -wal file beside it and which a store's
// connection does not open. An empty file is an empty database, as SQLite
// reads it.
func databaseReason(b []byte) string {
	const headerLen = 100
	switch {
	case len(b) == 0:
		return ""
	case len(b) < headerLen:
		return fmt.Sprintf("is cut short: %d bytes, fewer than an SQLite database header", len(b))
	case string(b[:len(sqliteMagic)]) != sqliteMagic:
		return "is not an SQLite database"
	}
	pageSize := int64(binary.BigEndian.Uint16(b[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize&(pageSize-1) != 0 {
		return fmt.Sprintf("is not an SQLite database: its header's page size is %d", pageSize)
	}
	if b[18] == 2 || b[19] == 2 { // the file format's write and read versions: 2 is WAL
		return "is in WAL mode (its header's file format versions are 2): a fixture's files are rollback-journal databases; convert it with PRAGMA journal_mode=DELETE"
	}
	size := int64(len(b))
	if size%pageSize != 0 {
		return fmt.Sprintf("is cut short: %d bytes, not a whole number of its %d-byte pages", size, pageSize)
	}
	pages := int64(binary.BigEndian.Uint32(b[28:32]))
	if valid := pages > 0 && binary.BigEndian.Uint32(b[24:28]) == binary.BigEndian.Uint32(b[92:96]); valid && pages*pageSize > size {
		return fmt.Sprintf("is cut short: %d bytes, and its header counts %d pages of %d bytes", size, pages, pageSize)
	}
	return ""
}

// materialise opens the node's store on a private copy of its frozen file
// in the instance directory, written when the store is first used (a reset
// writes no file for the nodes its episode never touches). Frozen files are
// never opened by SQLite.
// opts are the node's store options (Instance.storeOptions).
func (s *source) materialise(ctx context.Context, n *Node, opts sqlitestore.Options) (*sqlitestore.Store, error) {
	opts.Lazy = true // the bytes were verified against the sidecar's hash
	opts.Data = s.files[n.Path]
	// Copies of one frozen file share parked connections (see
	// sqlitestore.Options.ShareKey): the hash names the content.
	opts.ShareKey = s.ref.FileSHA256[n.Path]
	st, err := sqlitestore.Open(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("composition: open fixture node %s: %w", n.Path, err)
	}
	return st, nil
}

// nodeRecord returns a node's schema hash and frozen world version (nil when
// the installed version is the frozen one).
func (s *source) nodeRecord(n *Node) (string, *string) {
	hash, version := s.sidecar.SchemaHash, s.sidecar.WorldVersion
	for _, fn := range s.sidecar.Nodes {
		if fn.Path == n.Path {
			hash, version = fn.SchemaHash, fn.WorldVersion
		}
	}
	if version == n.World.Version() {
		return hash, nil
	}
	return hash, &version
}

// CompareShape checks a sidecar against what the world resolves to now: the
// set of nodes, their worlds, scopes and alias edges, and every node's
// schema hash. A mismatch is a *env.WorldBug naming what changed: node
// added, node removed, shape changed, schema drifted. A version-only change
// with an unchanged schema is not a mismatch.
func CompareShape(ctx context.Context, s *fixture.Sidecar, sealed *Sealed) error {
	return compareShape(ctx, s, sealed, "fixture", "frozen")
}

// compareShape is CompareShape for the sidecar of what (a fixture, or a
// checkpoint), which was made (frozen, taken) for the composition its
// sidecar describes.
func compareShape(ctx context.Context, s *fixture.Sidecar, sealed *Sealed, what, made string) error {
	type shape struct {
		world, scope, schema string
		aliases              []string
	}
	frozen := map[string]shape{"main": {world: s.World, scope: "null", schema: s.SchemaHash}}
	for _, n := range s.Nodes {
		frozen[n.Path] = shape{world: n.World, scope: scopeText(n.Scope), schema: n.SchemaHash, aliases: slices.Sorted(slices.Values(n.Aliases))}
	}
	var problems []string
	seen := map[string]bool{}
	for _, n := range sealed.Nodes {
		seen[n.Path] = true
		f, ok := frozen[n.Path]
		if !ok {
			problems = append(problems, fmt.Sprintf("node added: %s (world %s, scope %s)", n.Path, n.World.Name(), scopeText(n.Scope)))
			continue
		}
		a := slices.Sorted(slices.Values(n.Aliases))
		if f.world != n.World.Name() || f.scope != scopeText(n.Scope) || !slices.Equal(f.aliases, a) {
			problems = append(problems, fmt.Sprintf("shape changed: node %s was world %s, scope %s, aliases [%s] and is now world %s, scope %s, aliases [%s]",
				n.Path, f.world, f.scope, strings.Join(f.aliases, ", "), n.World.Name(), scopeText(n.Scope), strings.Join(a, ", ")))
			continue
		}
		h, err := schemaHash(ctx, n.World)
		if err != nil {
			return err
		}
		if h != f.schema {
			problems = append(problems, fmt.Sprintf("schema drifted: node %s (world %s %s) has schema hash %s, the %s was %s at %s", n.Path, n.World.Name(), n.World.Version(), short(h), what, made, short(f.schema)))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(frozen)) {
		if !seen[p] {
			problems = append(problems, fmt.Sprintf("node removed: %s (world %s)", p, frozen[p].world))
		}
	}
	if s.World != sealed.Root.Name() {
		problems = append([]string{fmt.Sprintf("the %s is of world %s, not %s", what, s.World, sealed.Root.Name())}, problems...)
	}
	if len(problems) == 0 {
		return nil
	}
	hint := ""
	if what == "fixture" {
		hint = rebuildHint
	}
	return env.Bugf("%s %q does not match %s's composition: %s%s", what, s.ID, sealed.Root.Name(), strings.Join(problems, "; "), hint)
}

// rebuildHint ends a fixture's shape refusal: what its author does about it.
const rebuildHint = " (rebuild the fixture from the world's code: seahaven fixtures build, or the world's go generate)"

// scopeText writes a node's scope for messages: quoted, or null.
func scopeText(p *string) string {
	if p == nil {
		return "null"
	}
	return strconv.Quote(*p)
}

// cloneScope returns a copy of a node's scope, so a record does not share it.
func cloneScope(p *string) *string {
	if p == nil {
		return nil
	}
	return new(*p)
}

// short returns the first 12 characters of a hash, for messages.
func short(h string) string { return h[:min(len(h), 12)] }

// FreezeOptions configures Freeze.
type FreezeOptions struct {
	// Replace replaces an existing fixture of the same id.
	Replace bool
	// ParentID overrides the parent recorded in the sidecar; by default it is
	// the fixture the instance was created from (a fork), or none.
	ParentID *string
	// FixturesDir overrides the root world's FixturesDir.
	FixturesDir string
}

// Freeze publishes the instance as a fixture: it repairs what interrupted
// publishes left in the fixtures directory (fixture.Recover, logged on
// Options.Logger), checks every node against its own world's schema before
// anything is written, then vacuums, hashes and publishes atomically. All
// or nothing: a drifted node mints nothing and the error names its path. An
// id that exists is refused unless opts.Replace (the error wraps
// fixture.ErrExists).
func (i *Instance) Freeze(ctx context.Context, id, description string, opts FreezeOptions) (*fixture.Sidecar, error) {
	if err := fixture.ValidID(id); err != nil {
		return nil, err
	}
	override := cmp.Or(opts.FixturesDir, i.opts.FixturesDir)
	if spec := i.world.Spec(); override == "" && spec.FixturesDir == "" && spec.Fixtures != nil {
		return nil, fmt.Errorf("freeze %q: world %s carries its fixtures as a file system (Fixtures), which is read-only: name the directory to write to (FreezeOptions.FixturesDir)", id, i.world.Name())
	}
	root, err := fixturesDir(i.world, override)
	if err != nil {
		return nil, err
	}
	// Repair what interrupted publishes left first, so that a fixture whose
	// replacement was killed midway is back before it is checked for.
	if _, err := fixture.Recover(root, i.log); err != nil {
		return nil, fmt.Errorf("freeze %q: %w", id, err)
	}
	if _, err := i.reseal(); err != nil {
		return nil, err
	}
	if err := i.lockCtx(ctx, "Freeze"); err != nil {
		return nil, fmt.Errorf("freeze %q: %w", id, err)
	}
	defer i.unlock()
	if i.closed {
		return nil, errClosed
	}
	s := i.sidecar(id, description, nil, opts.ParentID)
	for k, ns := range i.nodes {
		ns.store.Pin()
		defer ns.store.Unpin()
		want, err := schemaHash(ctx, ns.node.World)
		if err != nil {
			return nil, err
		}
		got, err := ns.store.SchemaHash(ctx)
		if err != nil {
			return nil, fmt.Errorf("freeze %q: node %s: %w", id, ns.node.Path, err)
		}
		if got != want {
			return nil, env.Bugf("freeze %q: node %s has drifted from the schema of its world %s %s (hash %s, want %s); nothing was published", id, ns.node.Path, ns.node.World.Name(), ns.node.World.Version(), short(got), short(want))
		}
		if k == 0 {
			s.SchemaHash = want
		} else {
			s.Nodes[k-1].SchemaHash = want
		}
	}
	err = fixture.Publish(root, s, opts.Replace, func(tmp string) error {
		for k, ns := range i.nodes {
			dst := filepath.Join(tmp, ns.node.File)
			if err := ns.store.VacuumInto(ctx, dst); err != nil {
				return fmt.Errorf("node %s: %w", ns.node.Path, err)
			}
			h, err := fixture.HashFile(dst)
			if err != nil {
				return err
			}
			if k == 0 {
				s.FileSHA256 = h
			} else {
				s.Nodes[k-1].FileSHA256 = h
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("freeze %q: %w", id, err)
	}
	return s, nil
}

// sidecar describes the instance's nodes as a fixture sidecar of id: their
// worlds, versions, scopes, files and aliases, the schema hashes it runs
// against and, when files is set, the files' hashes by node path. The
// parent is parent, or by default the fixture the instance started from.
// The caller holds the instance's lock.
func (i *Instance) sidecar(id, description string, files map[string]string, parent *string) *fixture.Sidecar {
	if parent == nil && i.fixture != nil {
		parent = new(i.fixture.ID)
	}
	rootNode := i.nodes[0].node
	s := &fixture.Sidecar{
		FormatVersion: 1, ID: id, World: rootNode.World.Name(), WorldVersion: rootNode.World.Version(),
		SchemaHash: i.compRecords[0].SchemaHash, FileSHA256: files["main"], Now: i.clock.Now().Format(env.TimeFormat), ParentID: parent,
		CreatedAt: time.Now().UTC().Format(env.TimeFormat), Description: description,
	}
	if len(i.nodes) > 1 {
		s.FormatVersion = 2
		s.Nodes = []fixture.Node{}
		for k, ns := range i.nodes[1:] {
			n := ns.node
			s.Nodes = append(s.Nodes, fixture.Node{
				Path: n.Path, World: n.World.Name(), WorldVersion: n.World.Version(), SchemaHash: i.compRecords[k+1].SchemaHash,
				Scope: cloneScope(n.Scope), File: n.File, Aliases: append([]string{}, n.Aliases...), FileSHA256: files[n.Path],
			})
		}
	}
	return s
}

// notFoundError is the error of a fixture id naming no fixture: its message
// names the world and the fixtures directory, and it wraps
// fixture.ErrNotFound.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

func (e *notFoundError) Unwrap() error { return fixture.ErrNotFound }
