package check_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/check"
	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/sqlitestore"
)

const (
	staffSchema    = "CREATE TABLE staff (id TEXT PRIMARY KEY) STRICT;"
	chargesSchema  = "CREATE TABLE charges (id TEXT PRIMARY KEY, amount INTEGER NOT NULL) STRICT;"
	chargesDrifted = "CREATE TABLE charges (id TEXT PRIMARY KEY, amount INTEGER NOT NULL, currency TEXT) STRICT;"
)

// shape says how to build the company world of TestWorld_Fixtures.
type shape struct {
	paymentsSchema string // the payments world's schema
	withChat       bool   // whether the company also adds chat
	scope          string // the scope payments is added under, or ""
	embedded       bool   // whether the fixtures are WorldSpec.Fixtures (os.DirFS(dir)), not FixturesDir
	defaultFixture string // the company's DefaultFixture
}

// buildCompany builds a company that adds payments (and maybe chat), with
// its fixtures in dir.
func buildCompany(s shape, dir string) *env.World {
	payments := env.NewWorld(env.WorldSpec{Name: "payments", Version: "1.0.0", Schema: s.paymentsSchema})
	spec := env.WorldSpec{Name: "company", Version: "0.1.0", Schema: staffSchema, FixturesDir: dir, DefaultFixture: s.defaultFixture}
	if s.embedded {
		spec.FixturesDir, spec.Fixtures = "", os.DirFS(dir)
	}
	company := env.NewWorld(spec)
	if s.scope != "" {
		company.AddWorld(payments, env.Store(s.scope))
	} else {
		company.AddWorld(payments)
	}
	if s.withChat {
		company.AddWorld(env.NewWorld(env.WorldSpec{Name: "chat", Version: "1.0.0", Schema: "CREATE TABLE messages (id TEXT PRIMARY KEY) STRICT;"}))
	}
	return company
}

// mustFreeze freezes a genesis instance of w as fixture id in w's
// FixturesDir.
func mustFreeze(tb testing.TB, w *env.World, id string) {
	tb.Helper()
	ctx := context.Background()
	inst, err := composition.Open(ctx, w, composition.Options{Dir: tb.TempDir(), Now: "2026-06-01T09:00:00.000Z"})
	if err != nil {
		tb.Fatal(err)
	}
	defer inst.Close()
	if _, err := inst.Freeze(ctx, id, "One company.", composition.FreezeOptions{}); err != nil {
		tb.Fatal(err)
	}
}

// copyDir copies a directory of plain files.
func copyDir(tb testing.TB, src, dst string) {
	tb.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// editSidecar replaces old with new in a fixture's sidecar.
func editSidecar(tb testing.TB, dir, old, new string) {
	tb.Helper()
	p := filepath.Join(dir, fixture.SidecarName)
	b, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		tb.Fatalf("the sidecar has no %q:\n%s", old, b)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// hashOf returns the normalised schema hash of a schema.
func hashOf(tb testing.TB, schema string) string {
	tb.Helper()
	h, err := sqlitestore.SchemaHash(context.Background(), schema)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// Lines of the canonical sidecar Freeze writes for the company of
// buildCompany (one node).
const (
	lineID         = 2
	lineWorld      = 3
	lineSchemaHash = 5
	lineNow        = 6
	lineFileSHA    = 8
	lineNodes      = 11
	lineNodeHash   = 15
	lineNodeFile   = 17
	lineNodeSHA    = 18
)

func TestWorld_Fixtures(t *testing.T) {
	base := shape{paymentsSchema: chargesSchema}
	frozen := t.TempDir()
	mustFreeze(t, buildCompany(base, frozen), "acme")
	acme := filepath.Join(frozen, "acme")
	s, err := fixture.Read(frozen, "acme")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		// check is the shape of the world checked against the fixture.
		check shape
		// mutate changes the copied fixture directory.
		mutate func(t *testing.T, dir string)
		// want are the expected findings: the sidecar line, the code and
		// the message after "fixture acme: ".
		want []want
	}{
		{name: "Clean", check: base},
		{
			name: "SH401NotYAML", check: base,
			mutate: func(t *testing.T, dir string) { editSidecar(t, dir, "world: company", "world: company: inc") },
			want:   []want{{lineWorld, "SH401", "the sidecar does not parse: not valid YAML: mapping values are not allowed in this context"}},
		},
		{
			name: "SH401UnknownKey", check: base,
			mutate: func(t *testing.T, dir string) { editSidecar(t, dir, "description:", "descripton:") },
			want:   []want{{10, "SH401", "the sidecar does not parse: descripton: unknown key (known keys: format_version, id, world, world_version, schema_hash, now, parent_id, file_sha256, created_at, description, nodes)"}},
		},
		{
			name: "SH401BadNodeFile", check: base,
			mutate: func(t *testing.T, dir string) {
				editSidecar(t, dir, "file: state.payments.sqlite", "file: ../state.payments.sqlite")
			},
			want: []want{{lineNodeFile, "SH401", `the sidecar does not parse: nodes[0].file (node "payments"): "../state.payments.sqlite" is not a plain file name: contains a path separator`}},
		},
		{
			name: "SH401IDIsNotTheDirectory", check: base,
			mutate: func(t *testing.T, dir string) { editSidecar(t, dir, "id: acme", "id: acme2") },
			want:   []want{{lineID, "SH401", `the sidecar's id "acme2" does not match its directory name "acme"`}},
		},
		{
			name: "SH402NodeFileReplaced", check: base,
			mutate: func(t *testing.T, dir string) {
				b, err := os.ReadFile(filepath.Join(dir, fixture.RootFile))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "state.payments.sqlite"), b, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			want: []want{{lineNodeSHA, "SH402", fmt.Sprintf("node payments: state.payments.sqlite has sha256 %s, the sidecar records %s", s.FileSHA256[:12], s.Nodes[0].FileSHA256[:12])}},
		},
		{
			name: "SH402AndSH405RootNotADatabase", check: base,
			mutate: func(t *testing.T, dir string) {
				if err := os.WriteFile(filepath.Join(dir, fixture.RootFile), []byte("not a database"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			want: []want{
				{lineFileSHA, "SH402", fmt.Sprintf("node main: state.sqlite has sha256 %s, the sidecar records %s", fmt.Sprintf("%x", sha256.Sum256([]byte("not a database")))[:12], s.FileSHA256[:12])},
				{lineFileSHA, "SH405", "node main: state.sqlite is not a readable SQLite database: it does not begin with the SQLite header"},
			},
		},
		{
			name: "SH405Missing", check: base,
			mutate: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "state.payments.sqlite")); err != nil {
					t.Fatal(err)
				}
			},
			want: []want{{lineNodeFile, "SH405", "node payments: state.payments.sqlite is missing"}},
		},
		{
			name: "SH403SchemaDrift", check: shape{paymentsSchema: chargesDrifted},
			want: []want{{lineNodeHash, "SH403", fmt.Sprintf("node payments: the sidecar records schema hash %s, but world payments 1.0.0 now hashes to %s: the schema drifted since the fixture was frozen",
				s.Nodes[0].SchemaHash[:12], hashOf(t, chargesDrifted)[:12])}},
		},
		{
			name: "SH403RootHashEdited", check: base,
			mutate: func(t *testing.T, dir string) {
				editSidecar(t, dir, "schema_hash: "+s.SchemaHash, "schema_hash: "+strings.Repeat("a", 64))
			},
			want: []want{{lineSchemaHash, "SH403", fmt.Sprintf("node main: the sidecar records schema hash aaaaaaaaaaaa, but world company 0.1.0 now hashes to %s: the schema drifted since the fixture was frozen", s.SchemaHash[:12])}},
		},
		{
			name: "SH404Invalid", check: base,
			mutate: func(t *testing.T, dir string) {
				editSidecar(t, dir, "now: '2026-06-01T09:00:00.000Z'", "now: '2026-06-31T09:00:00.000Z'")
			},
			want: []want{{lineNow, "SH404", `now "2026-06-31T09:00:00.000Z" is not a valid instant (UTC with milliseconds, like 2026-06-01T09:00:00.000Z); an instance has one clock, which starts at now`}},
		},
		{
			name: "SH404Unquoted", check: base,
			mutate: func(t *testing.T, dir string) {
				editSidecar(t, dir, "now: '2026-06-01T09:00:00.000Z'", "now: 2026-06-01T09:00:00.000Z")
			},
			want: []want{{lineNow, "SH404", "now must be a quoted instant like '2026-06-01T09:00:00.000Z', not the unquoted 2026-06-01T09:00:00.000Z; an instance has one clock, which starts at now"}},
		},
		{
			name: "SH404Missing", check: base,
			mutate: func(t *testing.T, dir string) {
				editSidecar(t, dir, "now: '2026-06-01T09:00:00.000Z'\n", "")
			},
			want: []want{{1, "SH404", "now is missing; an instance has one clock, which starts at the fixture's now"}},
		},
		{
			name: "SH404AndSH401", check: base,
			mutate: func(t *testing.T, dir string) {
				editSidecar(t, dir, "now: '2026-06-01T09:00:00.000Z'\n", "")
				editSidecar(t, dir, "description:", "descripton:")
			},
			want: []want{
				{1, "SH404", "now is missing; an instance has one clock, which starts at the fixture's now"},
				{9, "SH401", "the sidecar does not parse: descripton: unknown key (known keys: format_version, id, world, world_version, schema_hash, now, parent_id, file_sha256, created_at, description, nodes)"},
			},
		},
		{
			name: "SH406NodeAdded", check: shape{paymentsSchema: chargesSchema, withChat: true},
			want: []want{{lineNodes, "SH406", `fixture "acme" does not match company's composition: node added: chat (world chat, scope null) (rebuild the fixture from the world's code: seahaven fixtures build, or the world's go generate)`}},
		},
		{
			name: "SH406ScopeChangedAndDrift", check: shape{paymentsSchema: chargesDrifted, scope: "eu"},
			want: []want{
				{lineNodes, "SH406", `fixture "acme" does not match company's composition: shape changed: node payments was world payments, scope null, aliases [] and is now world payments, scope "eu", aliases [] (rebuild the fixture from the world's code: seahaven fixtures build, or the world's go generate)`},
				{lineNodeHash, "SH403", fmt.Sprintf("node payments: the sidecar records schema hash %s, but world payments 1.0.0 now hashes to %s: the schema drifted since the fixture was frozen",
					s.Nodes[0].SchemaHash[:12], hashOf(t, chargesDrifted)[:12])},
			},
		},
	} {
		for _, embedded := range []bool{false, true} {
			name := tt.name + "/Dir"
			if embedded {
				name = tt.name + "/Embedded"
			}
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				fdir := filepath.Join(dir, "acme")
				copyDir(t, acme, fdir)
				if tt.mutate != nil {
					tt.mutate(t, fdir)
				}
				sh := tt.check
				sh.embedded = embedded
				w := buildCompany(sh, dir)
				// Embedded fixtures whose source is not below the world's
				// package are named by the world and the fixture.
				sidecar := filepath.Join(fdir, fixture.SidecarName)
				if embedded {
					sidecar = filepath.Join("company embedded fixtures", "acme", fixture.SidecarName)
				}
				var expected []check.Finding
				for _, x := range tt.want {
					r, _ := check.Lookup(x.code)
					msg := "fixture acme: " + x.message
					if x.code == "SH406" {
						msg = x.message
					}
					expected = append(expected, check.Finding{Pos: fmt.Sprintf("%s:%d:1", sidecar, x.line), Code: x.code, Severity: r.Severity, Message: msg})
				}
				check.Sort(expected)
				expectFindings(t, check.World(context.Background(), w), expected)
			})
		}
	}
}

// want is one expected fixture finding.
type want struct {
	line    int    // the sidecar line
	code    string // the code
	message string // the message (after "fixture acme: ", but for SH406)
}

func TestWorld_FixtureSH406IsCreatesSentence(t *testing.T) {
	// SH406 says what creating an instance from the fixture says.
	ctx := context.Background()
	dir := t.TempDir()
	mustFreeze(t, buildCompany(shape{paymentsSchema: chargesSchema}, dir), "acme")
	w := buildCompany(shape{paymentsSchema: chargesSchema, withChat: true}, dir)
	_, err := composition.Open(ctx, w, composition.Options{Fixture: "acme", Dir: t.TempDir()})
	if err == nil {
		t.Fatal("creating from a fixture of another shape succeeded")
	}
	got := only(check.World(ctx, w), "SH406")
	if len(got) != 1 || got[0].Message != err.Error() {
		t.Errorf("SH406 findings:\n%s\nwant one saying %q", check.Format(got), err.Error())
	}
}

// TestWorld_SH409StartupHookFails checks a company whose startup hook
// fails on every instance: each of its fixtures is reported at its
// sidecar and, when it has no DefaultFixture, genesis at its NewWorld
// line, with the hook's error, where before check passed the world that
// every reset fails; nothing is left in the temp dir or written to the
// fixtures directory.
func TestWorld_SH409StartupHookFails(t *testing.T) {
	frozen := t.TempDir()
	mustFreeze(t, buildCompany(shape{paymentsSchema: chargesSchema}, frozen), "acme")
	const hookErr = "startup hook of company (node main): the staff table is empty"
	for _, tt := range []struct {
		name           string
		defaultFixture string
		genesis        bool // whether genesis is reported
	}{
		{name: "NoDefaultFixture", genesis: true},
		{name: "DefaultFixture", defaultFixture: "acme"},
	} {
		for _, embedded := range []bool{false, true} {
			name := tt.name + "/Dir"
			if embedded {
				name = tt.name + "/Embedded"
			}
			t.Run(name, func(t *testing.T) {
				tmp := t.TempDir()
				t.Setenv("TMPDIR", tmp)
				dir := t.TempDir()
				copyDir(t, filepath.Join(frozen, "acme"), filepath.Join(dir, "acme"))
				before := treeOf(t, dir)
				w := buildCompany(shape{paymentsSchema: chargesSchema, embedded: embedded, defaultFixture: tt.defaultFixture}, dir)
				env.OnStartupMap(w, nil, func(c *env.Ctx, kw map[string]any) error {
					return errors.New("the staff table is empty")
				})
				sidecar := filepath.Join(dir, "acme", fixture.SidecarName)
				if embedded {
					sidecar = filepath.Join("company embedded fixtures", "acme", fixture.SidecarName)
				}
				expected := []check.Finding{{Pos: sidecar + ":1:1", Code: "SH409", Severity: check.SeverityError,
					Message: "fixture acme: an instance cannot be made from it, so every reset from it fails: " + hookErr}}
				if tt.genesis {
					expected = append(expected, check.Finding{Pos: w.Where() + ":1", Code: "SH409", Severity: check.SeverityError,
						Message: "world company: an instance cannot be made from genesis, where a reset naming no fixture starts as the world has no DefaultFixture, so every such reset fails: " + hookErr})
				}
				check.Sort(expected)
				expectFindings(t, check.World(context.Background(), w), expected)
				if after := treeOf(t, dir); !slices.Equal(after, before) {
					t.Errorf("the fixtures directory changed:\n%v\nwant\n%v", after, before)
				}
				left, err := os.ReadDir(tmp)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range left {
					// An embedded fixture's copy the engine reuses is kept.
					if !embedded || !strings.HasPrefix(e.Name(), "seahaven-fixtures-") {
						t.Errorf("check left %s in the temp dir", e.Name())
					}
				}
			})
		}
	}
}

// treeOf lists the files below dir with their sizes and modification
// times, to see that nothing wrote to it.
func treeOf(tb testing.TB, dir string) []string {
	tb.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %v %d %s", p, fi.Mode(), fi.Size(), fi.ModTime()))
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func TestWorld_FixturesSkipped(t *testing.T) {
	dir := t.TempDir()
	// Not fixtures: a file, a directory whose name is not an id, a
	// publish's leftovers, a directory without a sidecar.
	for _, d := range []string{"Not An Id", ".tmp-acme-1", "empty"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if d != "empty" {
			if err := os.WriteFile(filepath.Join(dir, d, fixture.SidecarName), []byte("garbage: ["), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "notes"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, fixturesDir := range []string{dir, filepath.Join(dir, "absent"), ""} {
		w := buildCompany(shape{paymentsSchema: chargesSchema}, fixturesDir)
		if fs := check.World(context.Background(), w); len(fs) != 0 {
			t.Errorf("FixturesDir %q: findings:\n%s", fixturesDir, check.Format(fs))
		}
	}
}
