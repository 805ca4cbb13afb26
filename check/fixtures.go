package check

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/sqlitestore"
	"github.com/seahaven/seahaven/task"
)

// sqliteHeader is how every SQLite database file begins.
const sqliteHeader = "SQLite format 3\x00"

// fixtureFindings checks every fixture of the world's own (SH401–SH406):
// those in its FixturesDir, or, when it has none, those of its embedded
// Fixtures file system. Directories whose names are not fixture ids, and
// directories without a sidecar, are not fixtures and are skipped, as
// fixture.List skips them.
func fixtureFindings(ctx context.Context, w *env.World, sealed *composition.Sealed, fsys fs.FS, root string) []Finding {
	if fsys == nil {
		return nil
	}
	ids, err := fixture.DirsFS(fsys)
	if err != nil {
		return []Finding{finding(root+":1:1", "SH401", "the fixtures directory of %s cannot be read: %v", w.Name(), err)}
	}
	hashes := schemaHashes{}
	var out []Finding
	for _, id := range ids {
		data, err := readRegular(fsys, path.Join(id, fixture.SidecarName))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		fc := &fixtureCheck{ctx: ctx, w: w, sealed: sealed, id: id, fsys: fsys, path: filepath.Join(root, id, fixture.SidecarName), hashes: hashes}
		if err != nil {
			out = append(out, finding(fc.pos(0), "SH401", "fixture %s: the sidecar cannot be read: %v", id, err))
			continue
		}
		out = append(out, fc.run(data)...)
	}
	return out
}

// readRegular is fs.ReadFile for a file of a world's directory that must be
// a regular file: anything else is refused before it is opened, since
// reading a named pipe would wait forever and a device might never end.
func readRegular(fsys fs.FS, name string) ([]byte, error) {
	fi, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %w (%v)", name, errNotRegular, fi.Mode().Type())
	}
	return fs.ReadFile(fsys, name)
}

// errNotRegular is the error readRegular wraps for a file it refuses.
var errNotRegular = errors.New("not a regular file")

// fixturesOf returns the world's own fixtures directory as a file system
// — its FixturesDir, else its embedded Fixtures, else nil — and the
// directory findings about it are positioned in.
func fixturesOf(w *env.World) (fsys fs.FS, root string) {
	spec := w.Spec()
	switch {
	case spec.FixturesDir != "":
		return os.DirFS(spec.FixturesDir), spec.FixturesDir
	case spec.Fixtures != nil:
		return spec.Fixtures, embeddedRoot(w, spec.Fixtures)
	}
	return nil, ""
}

// embeddedRoot returns the directory findings about a world's embedded
// fixtures are positioned in: the source directory they were embedded from
// — a directory at or below the one of the world's NewWorld line that holds
// the same first sidecar (else tasks file) as the file system (say its
// fixtures/ of `//go:embed fixtures` and fs.Sub) — or, when none is found,
// "<world> embedded fixtures", so a position still names the fixture and
// its file.
func embeddedRoot(w *env.World, fsys fs.FS) string {
	fallback := w.Name() + " embedded fixtures"
	file, _, _ := SplitPos(w.Where())
	if !filepath.IsAbs(file) {
		return fallback
	}
	ids, _ := fixture.DirsFS(fsys)
	var candidates []string
	for _, id := range ids {
		candidates = append(candidates, path.Join(id, fixture.SidecarName))
	}
	var ref string // a file of fsys, to find on disk
	var want []byte
	for _, p := range append(candidates, task.FileName) {
		if b, err := readRegular(fsys, p); err == nil {
			ref, want = p, b
			break
		}
	}
	if ref == "" {
		return fallback
	}
	pkgDir := filepath.Dir(file)
	found := ""
	filepath.WalkDir(pkgDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if p != pkgDir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if rel, _ := filepath.Rel(pkgDir, p); strings.Count(rel, string(filepath.Separator)) >= maxEmbedDepth {
			return filepath.SkipDir
		}
		if b, err := os.ReadFile(filepath.Join(p, filepath.FromSlash(ref))); err == nil && bytes.Equal(b, want) {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	return cmp.Or(found, fallback)
}

// maxEmbedDepth bounds how deep below a world's package directory
// embeddedRoot looks for the source of its embedded fixtures.
const maxEmbedDepth = 3

// schemaHashes caches the normalised hash of each schema text for one run.
type schemaHashes map[string]hashResult

type hashResult struct {
	hash string
	err  error
}

func (h schemaHashes) of(ctx context.Context, w *env.World) (string, error) {
	schema := w.Spec().Schema
	if r, ok := h[schema]; ok {
		return r.hash, r.err
	}
	hash, err := sqlitestore.SchemaHash(ctx, schema)
	h[schema] = hashResult{hash, err}
	return hash, err
}

// fixtureCheck checks one fixture.
type fixtureCheck struct {
	ctx    context.Context
	w      *env.World
	sealed *composition.Sealed
	id     string
	fsys   fs.FS  // the fixtures directory, holding the fixture's at id
	path   string // its sidecar, for positions
	hashes schemaHashes
	lines  sidecarLines
	out    []Finding
}

func (fc *fixtureCheck) pos(line int) string {
	return fmt.Sprintf("%s:%d:1", fc.path, max(line, 1))
}

func (fc *fixtureCheck) add(line int, code, format string, args ...any) {
	fc.out = append(fc.out, finding(fc.pos(line), code, "fixture %s: "+format, append([]any{fc.id}, args...)...))
}

func (fc *fixtureCheck) run(data []byte) []Finding {
	m := topMapping(data)
	fc.lines = findLines(m)
	nowBad := fc.checkNow(m)
	s, err := fixture.Parse(data)
	se, _ := errors.AsType[*fixture.SidecarError](err)
	switch {
	case se != nil && se.Key == "now":
		if !nowBad {
			fc.add(se.Line, "SH404", "now is not a valid instant: %s", se.Msg)
		}
		return fc.out
	case se != nil:
		fc.add(se.Line, "SH401", "the sidecar does not parse: %s", sidecarProblem(se))
		return fc.out
	case err != nil:
		fc.add(1, "SH401", "the sidecar does not parse: %v", err)
		return fc.out
	}
	if s.ID != fc.id {
		fc.add(fc.lines.top["id"], "SH401", "the sidecar's id %q does not match its directory name %q", s.ID, fc.id)
		return fc.out
	}
	root := fixture.Node{Path: fixture.RootPath, World: s.World, File: fixture.RootFile, FileSHA256: s.FileSHA256, SchemaHash: s.SchemaHash}
	nodes := append([]fixture.Node{root}, s.Nodes...)
	// current holds each node's current schema hash, for nodes whose world
	// is known; hashFailed is set when a world's schema does not apply.
	current := map[string]string{}
	hashFailed := false
	for _, n := range nodes {
		fc.checkFile(n)
		nw := fc.worldOf(n)
		if nw == nil {
			continue
		}
		h, err := fc.hashes.of(fc.ctx, nw)
		if err != nil {
			hashFailed = true
			fc.add(fc.lines.key(n.Path, "schema_hash"), "SH403", "node %s: the schema of world %s %s does not apply, so its hash cannot be compared: %v", n.Path, nw.Name(), nw.Version(), err)
			continue
		}
		current[n.Path] = h
		if h != n.SchemaHash {
			fc.add(fc.lines.key(n.Path, "schema_hash"), "SH403", "node %s: the sidecar records schema hash %s, but world %s %s now hashes to %s: the schema drifted since the fixture was frozen",
				n.Path, short(n.SchemaHash), nw.Name(), nw.Version(), short(h))
		}
	}
	if fc.sealed != nil && !hashFailed {
		fc.checkShape(s, current)
	}
	if fc.sealed != nil && len(fc.out) == 0 {
		if err := openable(fc.ctx, fc.w, fc.id); err != nil {
			fc.add(0, "SH409", "an instance cannot be made from it, so every reset from it fails: %v", err)
		}
	}
	return fc.out
}

// openable makes an instance of w from its fixture id (genesis for ""),
// with no startup keywords, as a reset naming none does, and closes it:
// the tree's startup hooks run on it. The instance's directory is made in
// the OS temp dir and removed; the fixture's files are only read. It
// returns why the instance cannot be made.
func openable(ctx context.Context, w *env.World, id string) error {
	inst, err := composition.Open(ctx, w, composition.Options{Fixture: id})
	if err != nil {
		return err
	}
	return inst.Close()
}

// genesisFindings reports SH409 when an instance of a world with no
// DefaultFixture, which a reset naming no fixture makes from genesis,
// cannot be made: most often a startup hook fails on blank stores. A
// world that does not seal is SH504's.
func genesisFindings(ctx context.Context, w *env.World, sealed *composition.Sealed) []Finding {
	if sealed == nil || w.Spec().DefaultFixture != "" {
		return nil
	}
	if err := openable(ctx, w, ""); err != nil {
		return []Finding{finding(at("", w), "SH409", "world %s: an instance cannot be made from genesis, where a reset naming no fixture starts as the world has no DefaultFixture, so every such reset fails: %v", w.Name(), err)}
	}
	return nil
}

// worldOf returns the world a fixture node belongs to now: the root world
// for main, else the sealed node at the same path, when it is of the world
// the sidecar records (otherwise the node's shape changed, which is SH406's).
func (fc *fixtureCheck) worldOf(n fixture.Node) *env.World {
	if n.Path == fixture.RootPath {
		if n.World == fc.w.Name() {
			return fc.w
		}
		return nil
	}
	if fc.sealed == nil {
		return nil
	}
	sn, ok := fc.sealed.Node(n.Path)
	if !ok || sn.World.Name() != n.World {
		return nil
	}
	return sn.World
}

// topMapping returns a sidecar's top-level YAML mapping, nil when the text
// is not one.
func topMapping(data []byte) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	return doc.Content[0]
}

// checkNow reports SH404 when the sidecar's now is missing or not an
// instant in the sidecar's time format. It reads the sidecar's mapping m
// itself, so a broken now is reported even when another key fails to parse
// first. It returns whether it reported.
func (fc *fixtureCheck) checkNow(m *yaml.Node) bool {
	if m == nil {
		return false // not a mapping at all: SH401's
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != "now" {
			continue
		}
		v := m.Content[i+1]
		switch {
		case v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str":
			fc.add(v.Line, "SH404", "now must be a quoted instant like '2026-06-01T09:00:00.000Z', not %s; an instance has one clock, which starts at now", describeYAML(v))
		case fixture.ValidTime(v.Value) != nil:
			fc.add(v.Line, "SH404", "now %q is not a valid instant (UTC with milliseconds, like 2026-06-01T09:00:00.000Z); an instance has one clock, which starts at now", v.Value)
		default:
			return false
		}
		return true
	}
	fc.add(m.Line, "SH404", "now is missing; an instance has one clock, which starts at the fixture's now")
	return true
}

func describeYAML(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.ShortTag() == "!!null":
		return "null"
	}
	return fmt.Sprintf("the unquoted %s", n.Value)
}

// sidecarProblem is a SidecarError without its "fixture.yaml: line N: "
// prefix, which the finding's position already says.
func sidecarProblem(se *fixture.SidecarError) string {
	e := *se
	e.Line = 0
	return strings.TrimPrefix(e.Error(), fixture.SidecarName+": ")
}

// checkFile reports SH405 for a node file that is missing or not a
// readable SQLite database, and SH402 for one whose sha256 is not the
// sidecar's.
func (fc *fixtureCheck) checkFile(n fixture.Node) {
	fileLine := fc.lines.key(n.Path, "file")
	if n.Path == fixture.RootPath {
		fileLine = fc.lines.key(n.Path, "file_sha256")
	}
	data, err := readRegular(fc.fsys, path.Join(fc.id, n.File)) // as the engine reads a fixture's files
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fc.add(fileLine, "SH405", "node %s: %s is missing", n.Path, n.File)
		return
	case errors.Is(err, errNotRegular):
		fc.add(fileLine, "SH405", "node %s: %s is not a regular file", n.Path, n.File)
		return
	case err != nil:
		fc.add(fileLine, "SH405", "node %s: %s cannot be read: %v", n.Path, n.File, err)
		return
	}
	if got := fixture.HashBytes(data); got != n.FileSHA256 {
		fc.add(fc.lines.key(n.Path, "file_sha256"), "SH402", "node %s: %s has sha256 %s, the sidecar records %s", n.Path, n.File, short(got), short(n.FileSHA256))
	}
	if err := readableSQLite(fc.ctx, data); err != nil {
		fc.add(fileLine, "SH405", "node %s: %s is not a readable SQLite database: %v", n.Path, n.File, err)
	}
}

// readableSQLite checks that a frozen file's bytes are a SQLite database SQLite can
// read: the header, then, on a private copy (a frozen file is never opened
// by SQLite, which may write to it), the schema and a quick integrity check.
func readableSQLite(ctx context.Context, data []byte) error {
	if !bytes.HasPrefix(data, []byte(sqliteHeader)) {
		return errors.New("it does not begin with the SQLite header")
	}
	tmp, err := os.MkdirTemp("", "seahaven-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cp := filepath.Join(tmp, "copy.sqlite")
	if err := os.WriteFile(cp, data, 0o600); err != nil {
		return err
	}
	st, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: cp})
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Query(ctx, "SELECT count(*) FROM sqlite_schema"); err != nil {
		return err
	}
	rows, err := st.Query(ctx, "PRAGMA quick_check")
	if err != nil {
		return err
	}
	var problems []string
	for _, r := range rows.Values {
		if len(r) > 0 {
			if s, ok := r[0].(string); ok && s != "ok" {
				problems = append(problems, s)
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("quick_check: %s", strings.Join(problems, "; "))
	}
	return nil
}

// checkShape reports SH406 when the sidecar's nodes — their set, worlds,
// scopes and aliases — disagree with the world's composition, in the
// sentence instance creation refuses with. Schema drift is SH403's, so the
// comparison is made with each node's current schema hash in place.
func (fc *fixtureCheck) checkShape(s *fixture.Sidecar, current map[string]string) {
	c := *s
	c.Nodes = slices.Clone(s.Nodes)
	if h, ok := current[fixture.RootPath]; ok {
		c.SchemaHash = h
	}
	for i := range c.Nodes {
		if h, ok := current[c.Nodes[i].Path]; ok {
			c.Nodes[i].SchemaHash = h
		}
	}
	if err := composition.CompareShape(fc.ctx, &c, fc.sealed); err != nil {
		line := cmp.Or(fc.lines.top["nodes"], fc.lines.top["world"])
		fc.out = append(fc.out, finding(fc.pos(line), "SH406", "%v", err))
	}
}

// sidecarLines are the lines of a sidecar's keys, for positions.
type sidecarLines struct {
	top   map[string]int            // top-level key -> line
	nodes map[string]map[string]int // node path -> key -> line
}

// key returns the line of a node's key ("main" is the root, whose keys are
// top-level), the node's own line when it lacks the key, or 0.
func (l sidecarLines) key(path, key string) int {
	if path == fixture.RootPath {
		return l.top[key]
	}
	keys := l.nodes[path]
	return cmp.Or(keys[key], keys[""])
}

// findLines reads the lines of the keys of a sidecar's mapping m; nil
// yields none.
func findLines(m *yaml.Node) sidecarLines {
	l := sidecarLines{top: map[string]int{}, nodes: map[string]map[string]int{}}
	if m == nil {
		return l
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		l.top[k.Value] = k.Line
		if k.Value != "nodes" || v.Kind != yaml.SequenceNode {
			continue
		}
		for _, item := range v.Content {
			if item.Kind != yaml.MappingNode {
				continue
			}
			keys := map[string]int{"": item.Line}
			path := ""
			for j := 0; j+1 < len(item.Content); j += 2 {
				keys[item.Content[j].Value] = item.Content[j].Line
				if item.Content[j].Value == "path" {
					path = item.Content[j+1].Value
				}
			}
			if _, dup := l.nodes[path]; path != "" && !dup {
				l.nodes[path] = keys
			}
		}
	}
	return l
}

// short abbreviates a hash for messages.
func short(h string) string { return h[:min(len(h), 12)] }
