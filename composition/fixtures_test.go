package composition_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/fixture"
)

// tree builds a fresh company-like tree: root adds payments twice (one in
// scope "eu") and a shop that adds payments too.
type tree struct {
	root, payments, shop *env.World
	dir                  string
}

func newTree(t *testing.T) *tree {
	t.Helper()
	tr := &tree{dir: t.TempDir()}
	tr.payments = env.NewWorld(env.WorldSpec{Name: "payments", Version: "1.0.0",
		Schema: "CREATE TABLE charges (id TEXT PRIMARY KEY, amount INTEGER NOT NULL) STRICT;"})
	env.Tool(tr.payments, "create_charge", "Charge.", func(c *env.Ctx, in amountArgs) (string, error) {
		id := c.IDs.UUID()
		_, err := c.DB.Exec("INSERT INTO charges VALUES (?, ?)", id, in.Amount)
		return id, err
	})
	tr.shop = env.NewWorld(env.WorldSpec{Name: "shop", Version: "1.0.0",
		Schema: "CREATE TABLE orders (id TEXT PRIMARY KEY) STRICT;"})
	tr.shop.AddWorld(tr.payments, env.ToolAllowList())
	tr.root = tr.newRoot("company")
	tr.root.AddWorld(tr.payments, env.ToolPrefix("pay_"))
	tr.root.AddWorld(tr.shop, env.ToolPrefix("shop_"))
	return tr
}

// newRoot returns a root world of the tree's fixtures directory, named
// name, with the company's schema and nothing added.
func (tr *tree) newRoot(name string) *env.World {
	return env.NewWorld(env.WorldSpec{Name: name, Version: "0.1.0", FixturesDir: tr.dir,
		Schema: "CREATE TABLE staff (id TEXT PRIMARY KEY) STRICT;"})
}

func (tr *tree) freeze(t *testing.T, id string, seed int64) *fixture.Sidecar {
	t.Helper()
	inst := compositiontest.Open(t, tr.root, composition.Options{Seed: seed, Now: "2026-06-01T09:00:00.000Z"})
	compositiontest.Call(t, inst, "pay_create_charge", `{"amount": 500}`)
	s, err := inst.Freeze(context.Background(), id, "test", composition.FreezeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func wantRefusal(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("created an instance, want a refusal")
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q lacks %q", err, p)
		}
	}
}

func TestFreeze_SameSeedSameHashes(t *testing.T) {
	tr := newTree(t)
	a, b := tr.freeze(t, "a", 7), tr.freeze(t, "b", 7)
	if a.FileSHA256 != b.FileSHA256 || a.Nodes[0].FileSHA256 != b.Nodes[0].FileSHA256 {
		t.Fatalf("same seed and calls froze different files: %s/%s vs %s/%s", a.FileSHA256, a.Nodes[0].FileSHA256, b.FileSHA256, b.Nodes[0].FileSHA256)
	}
	c := tr.freeze(t, "c", 8)
	if c.Nodes[0].FileSHA256 == a.Nodes[0].FileSHA256 {
		t.Fatal("a different seed froze the same payments file")
	}
}

func TestFreeze_RefusesAnExistingID(t *testing.T) {
	tr := newTree(t)
	tr.freeze(t, "acme", 1)
	inst := compositiontest.Open(t, tr.root, composition.Options{})
	_, err := inst.Freeze(context.Background(), "acme", "again", composition.FreezeOptions{})
	if !errors.Is(err, fixture.ErrExists) {
		t.Fatalf("err = %v, want fixture.ErrExists", err)
	}
	if _, err := inst.Freeze(context.Background(), "acme", "again", composition.FreezeOptions{Replace: true}); err != nil {
		t.Fatal(err)
	}
}

func TestFork(t *testing.T) {
	tr := newTree(t)
	tr.freeze(t, "base", 1)
	inst := compositiontest.Open(t, tr.root, composition.Options{Fixture: "base"})
	compositiontest.Call(t, inst, "pay_create_charge", `{"amount": 9}`)
	s, err := inst.Freeze(context.Background(), "forked", "a fork", composition.FreezeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.ParentID == nil || *s.ParentID != "base" {
		t.Fatalf("parent_id = %v, want base", s.ParentID)
	}
	inst2 := compositiontest.Open(t, tr.root, composition.Options{Fixture: "forked"})
	row, _ := inst2.Inspect().One(context.Background(), "SELECT count(*) AS n FROM payments.charges")
	if row["n"] != int64(2) {
		t.Fatalf("forked fixture has %v charges, want 2", row["n"])
	}
	if doc := inst2.State(); doc.Fixture == nil || doc.Fixture.ID != "forked" || doc.Fixture.FileSHA256["payments"] != s.Nodes[0].FileSHA256 {
		t.Fatalf("state fixture = %+v", doc.Fixture)
	}
}

func TestCreate_Refusals(t *testing.T) {
	ctx := context.Background()
	t.Run("FlippedByte", func(t *testing.T) {
		tr := newTree(t)
		tr.freeze(t, "acme", 1)
		p := filepath.Join(tr.dir, "acme", "state.payments.sqlite")
		b, _ := os.ReadFile(p)
		b[len(b)-1] ^= 0xff
		os.WriteFile(p, b, 0o644)
		_, err := composition.Open(ctx, tr.root, composition.Options{Fixture: "acme"})
		wantRefusal(t, err, "payments", "state.payments.sqlite")
		if !errors.Is(err, fixture.ErrHashMismatch) {
			t.Fatalf("err = %v, want fixture.ErrHashMismatch", err)
		}
	})
	// A node's file gone (removed, or a link to nothing) is the fixture's
	// fault, naming the node and the file: no retry brings it back. It
	// was a storage failure of the host, naming neither.
	t.Run("FileMissing", func(t *testing.T) {
		for _, how := range []string{"removed", "dangling link"} {
			tr := newTree(t)
			tr.freeze(t, "acme", 1)
			p := filepath.Join(tr.dir, "acme", "state.payments.sqlite")
			os.Remove(p)
			if how == "dangling link" {
				os.Symlink(filepath.Join(tr.dir, "nowhere"), p)
			}
			_, err := composition.Open(ctx, tr.root, composition.Options{Fixture: "acme"})
			if ie := (*env.InfraError)(nil); errors.As(err, &ie) {
				t.Fatalf("%s: %v, a fault of the host; want the fixture's", how, err)
			}
			wantRefusal(t, err, "payments", "state.payments.sqlite")
			if strings.Contains(err.Error(), tr.dir) {
				t.Errorf("%s: %v names the fixtures directory", how, err)
			}
		}
	})
	// A file whose sidecar was rewritten to match it: the hash vouches
	// for the bytes, and the bytes are no whole database.
	for _, c := range []struct {
		name  string
		spoil func([]byte) []byte
		want  string
	}{
		{"CutMidPage", func(b []byte) []byte { return b[:len(b)-100] }, "is cut short"},
		{"CutAtPage", func(b []byte) []byte { return b[:4096] }, "is cut short: 4096 bytes, and its header counts"},
		{"CutInHeader", func(b []byte) []byte { return b[:50] }, "is cut short: 50 bytes, fewer than an SQLite database header"},
		{"NotSQLite", func(b []byte) []byte { return bytes.Repeat([]byte("x"), 4096) }, "is not an SQLite database"},
		// A file put in WAL mode: its store's connection would not open
		// it, and every call failed as a storage fault of the host.
		{"WALMode", func(b []byte) []byte { b[18], b[19] = 2, 2; return b }, "is in WAL mode (its header's file format versions are 2): a fixture's files are rollback-journal databases; convert it with PRAGMA journal_mode=DELETE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := newTree(t)
			s := tr.freeze(t, "acme", 1)
			p := filepath.Join(tr.dir, "acme", "state.payments.sqlite")
			b, _ := os.ReadFile(p)
			b = c.spoil(b)
			os.WriteFile(p, b, 0o644)
			s.Nodes[0].FileSHA256 = fixture.HashBytes(b)
			data, err := fixture.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(tr.dir, "acme", fixture.SidecarName), data, 0o644)
			_, err = composition.Open(ctx, tr.root, composition.Options{Fixture: "acme"})
			wantRefusal(t, err, `fixture "acme" node payments: file state.payments.sqlite `+c.want)
		})
	}
	t.Run("NodeAdded", func(t *testing.T) {
		tr := newTree(t)
		tr.freeze(t, "acme", 1)
		tr.root.AddWorld(tr.payments, env.Name("payments_eu"), env.Store("eu"), env.ToolPrefix("eu_"))
		_, err := composition.Open(ctx, tr.root, composition.Options{Fixture: "acme"})
		wantRefusal(t, err, `node added: payments_eu (world payments, scope "eu")`)
	})
	t.Run("NodeRemoved", func(t *testing.T) {
		tr := newTree(t)
		tr.root.AddWorld(tr.payments, env.Name("payments_eu"), env.Store("eu"), env.ToolPrefix("eu_"))
		tr.freeze(t, "acme", 1)
		// The same tree without payments_eu: a clone of the root's
		// registrations up to that point.
		smaller := tr.newRoot("company")
		smaller.AddWorld(tr.payments, env.ToolPrefix("pay_"))
		smaller.AddWorld(tr.shop, env.ToolPrefix("shop_"))
		_, err := composition.Open(ctx, smaller, composition.Options{Fixture: "acme"})
		wantRefusal(t, err, "node removed: payments_eu (world payments)")
	})
	t.Run("AliasEdgeChanged", func(t *testing.T) {
		tr := newTree(t)
		tr.freeze(t, "acme", 1)
		// A second shop-like world that also adds payments: a new alias.
		other := env.NewWorld(env.WorldSpec{Name: "other", Version: "1", Schema: "CREATE TABLE o (x INTEGER) STRICT;"})
		other.AddWorld(tr.payments, env.ToolAllowList())
		tr.root.AddWorld(other)
		_, err := composition.Open(ctx, tr.root, composition.Options{Fixture: "acme"})
		wantRefusal(t, err, "shape changed: node payments", "aliases [shop/payments]", "aliases [other/payments, shop/payments]")
	})
	t.Run("ScopeChanged", func(t *testing.T) {
		tr := newTree(t)
		tr.freeze(t, "acme", 1)
		// Every added node moves to "eu": the shop's payments is still the
		// company's, so only the scopes differ.
		moved := tr.newRoot("company")
		moved.AddWorld(tr.payments, env.ToolPrefix("pay_"), env.Store("eu"))
		moved.AddWorld(tr.shop, env.ToolPrefix("shop_"), env.Store("eu"))
		_, err := composition.Open(ctx, moved, composition.Options{Fixture: "acme"})
		wantRefusal(t, err, "shape changed: node payments", `scope null`, `scope "eu"`)
	})
	t.Run("OtherWorld", func(t *testing.T) {
		tr := newTree(t)
		tr.freeze(t, "acme", 1)
		// Another root with the same tree, pointed at company's fixtures.
		rival := tr.newRoot("rival")
		rival.AddWorld(tr.payments, env.ToolPrefix("pay_"))
		rival.AddWorld(tr.shop, env.ToolPrefix("shop_"))
		_, err := composition.Open(ctx, rival, composition.Options{Fixture: "acme"})
		wantRefusal(t, err, `fixture "acme" does not match rival's composition: the fixture is of world company, not rival; `)
	})
	t.Run("SchemaDrifted", func(t *testing.T) {
		tr := newTree(t)
		tr.freeze(t, "acme", 1)
		// A new build of shop with another schema under the same version.
		drifted := env.NewWorld(env.WorldSpec{Name: "shop", Version: "1.0.0",
			Schema: "CREATE TABLE orders (id TEXT PRIMARY KEY, total INTEGER) STRICT;"})
		drifted.AddWorld(tr.payments, env.ToolAllowList())
		root := tr.newRoot("company")
		root.AddWorld(tr.payments, env.ToolPrefix("pay_"))
		root.AddWorld(drifted, env.ToolPrefix("shop_"))
		_, err := composition.Open(ctx, root, composition.Options{Fixture: "acme"})
		wantRefusal(t, err, "schema drifted: node shop (world shop 1.0.0)")
	})
	t.Run("VersionOnlyIsReported", func(t *testing.T) {
		tr := newTree(t)
		tr.freeze(t, "acme", 1)
		bumped := env.NewWorld(env.WorldSpec{Name: "shop", Version: "1.1.0",
			Schema: "CREATE TABLE orders (id TEXT PRIMARY KEY) STRICT;"})
		bumped.AddWorld(tr.payments, env.ToolAllowList())
		root := tr.newRoot("company")
		root.AddWorld(tr.payments, env.ToolPrefix("pay_"))
		root.AddWorld(bumped, env.ToolPrefix("shop_"))
		inst := compositiontest.Open(t, root, composition.Options{Fixture: "acme"})
		for _, r := range inst.Composition() {
			if r.Path == "shop" && (r.FrozenWorldVersion == nil || *r.FrozenWorldVersion != "1.0.0" || r.WorldVersion != "1.1.0") {
				t.Fatalf("shop record %+v", r)
			}
			if r.Path == "payments" && r.FrozenWorldVersion != nil {
				t.Fatalf("payments record %+v", r)
			}
		}
	})
	t.Run("UnknownFixture", func(t *testing.T) {
		tr := newTree(t)
		_, err := composition.Open(ctx, tr.root, composition.Options{Fixture: "nope"})
		wantRefusal(t, err, `no fixture "nope"`)
		_, err = composition.Open(ctx, tr.root, composition.Options{Fixture: "../../etc/passwd"})
		wantRefusal(t, err, "invalid")
	})
}

func TestFreeze_DriftedNodeMintsNothing(t *testing.T) {
	tr := newTree(t)
	inst := compositiontest.Open(t, tr.root, composition.Options{})
	// Host code changes the shop's schema behind its world's back.
	err := inst.Bulk(context.Background(), func(c *env.Ctx) error {
		_, err := c.Worlds.Get("shop").DB().Exec("ALTER TABLE orders ADD COLUMN note TEXT")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = inst.Freeze(context.Background(), "acme", "x", composition.FreezeOptions{})
	wantRefusal(t, err, "node shop has drifted", "nothing was published")
	ents, _ := os.ReadDir(tr.dir)
	if len(ents) != 0 {
		t.Fatalf("a refused freeze left %v", ents)
	}
}

func TestFixtures_OnlyTheHostsOwn(t *testing.T) {
	tr := newTree(t)
	tr.freeze(t, "acme", 1)
	list, err := composition.Fixtures(tr.root)
	if err != nil || len(list) != 1 || list[0].ID != "acme" {
		t.Fatalf("Fixtures = %v, %v", list, err)
	}
	// An added world's own fixtures are never listed or reachable.
	if _, err := composition.Fixtures(tr.payments); err == nil {
		t.Fatal("payments has no fixtures dir, yet Fixtures succeeded")
	}
}

func TestInspect_DeniesWrites(t *testing.T) {
	tr := newTree(t)
	inst := compositiontest.Open(t, tr.root, composition.Options{})
	compositiontest.Call(t, inst, "pay_create_charge", `{"amount": 5}`)
	for _, sql := range []string{
		"INSERT INTO staff VALUES ('x')",
		"DELETE FROM payments.charges",
		"UPDATE payments.charges SET amount = 0",
		"ATTACH 'file:/tmp/x.db' AS x",
		"DETACH payments",
		"DROP TABLE staff",
		"PRAGMA user_version = 3",
	} {
		if _, err := inst.Inspect().Rows(context.Background(), sql); err == nil {
			t.Errorf("%s: allowed on the inspection view", sql)
		}
	}
	row, _ := inst.Inspect().One(context.Background(), "SELECT count(*) AS n FROM payments.charges")
	if row["n"] != int64(1) {
		t.Fatalf("charges = %v after refused writes", row["n"])
	}
}

// interruptPublish leaves in dir what a replace of fixture id killed between
// its two renames leaves (fixture's TestRecover_KilledBetweenRenames makes
// that state with a real SIGKILL): the fixture aside under an ".old-" name
// and the replacement, unfinished here, under a ".tmp-" name.
func interruptPublish(t *testing.T, dir, id string) {
	t.Helper()
	if err := os.Rename(filepath.Join(dir, id), filepath.Join(dir, ".old-"+id+"-0123456789abcdef")); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, ".tmp-"+id+"-42")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, fixture.RootFile), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// hidden returns the names in dir that start with a dot.
func hidden(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestFreeze_RecoversInterruptedPublish(t *testing.T) {
	tr := newTree(t)
	base := tr.freeze(t, "base", 1)
	interruptPublish(t, tr.dir, "base")

	var logged bytes.Buffer
	inst := compositiontest.Open(t, tr.root, composition.Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	// The old base is back before Freeze checks for it: no new base over it.
	_, err := inst.Freeze(context.Background(), "base", "again", composition.FreezeOptions{})
	if !errors.Is(err, fixture.ErrExists) {
		t.Fatalf("Freeze over an interrupted replace: %v, want fixture.ErrExists", err)
	}
	got, err := fixture.Read(tr.dir, "base")
	if err != nil || got.FileSHA256 != base.FileSHA256 {
		t.Fatalf("base after Freeze: %v, %v; want the one frozen first", got, err)
	}
	if left := hidden(t, tr.dir); len(left) != 0 {
		t.Errorf("Freeze left %q", left)
	}
	if !strings.Contains(logged.String(), "restored a fixture whose replacement was interrupted") {
		t.Errorf("no repair logged; the log holds:\n%s", logged.String())
	}
}

func TestOpen_RecoversInterruptedPublish(t *testing.T) {
	tr := newTree(t)
	tr.freeze(t, "base", 1)
	// Open once so the fixture is cached, as in a server that started
	// before another process's publish was killed.
	compositiontest.Open(t, tr.root, composition.Options{Fixture: "base"})
	interruptPublish(t, tr.dir, "base")

	inst := compositiontest.Open(t, tr.root, composition.Options{Fixture: "base"})
	row, err := inst.Inspect().One(context.Background(), "SELECT count(*) AS n FROM payments.charges")
	if err != nil || row["n"] != int64(1) {
		t.Fatalf("instance from the recovered fixture: %v, %v; want 1 charge", row, err)
	}
	if left := hidden(t, tr.dir); len(left) != 0 {
		t.Errorf("Open left %q", left)
	}
}

// TestCreate_UnknownEmbeddedFixture: an id naming none of a world's
// embedded fixtures is refused naming them so, where the error named the
// copy on disk they are read from, a directory nobody made.
func TestCreate_UnknownEmbeddedFixture(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "embedded", Version: "1", Fixtures: os.DirFS(t.TempDir()),
		Schema: "CREATE TABLE t (id INTEGER PRIMARY KEY) STRICT;"})
	dir, err := composition.FixturesDir(w)
	if err != nil {
		t.Fatal(err)
	}
	want := `composition: embedded has no fixture "nope" in the fixtures embedded in world embedded`
	for _, opts := range []composition.Options{{Fixture: "nope"}, {Fixture: "nope", FixturesDir: dir}} {
		_, err := composition.Open(context.Background(), w, opts)
		if err == nil || err.Error() != want || !errors.Is(err, fixture.ErrNotFound) {
			t.Errorf("Open(%+v) = %v, want %s", opts, err, want)
		}
	}
}

// TestFixtures_SharedDirOnlyTheHostsOwn: a host's fixtures are its own, where a
// fixtures directory it shares with a world it adds had that world's
// listed too (the spec: world.fixtures() on a host lists the host's own
// and nothing else).
func TestFixtures_SharedDirOnlyTheHostsOwn(t *testing.T) {
	dir := t.TempDir()
	pay := env.NewWorld(env.WorldSpec{Name: "fpay", Version: "1", FixturesDir: dir, Schema: "CREATE TABLE charges (id INTEGER PRIMARY KEY) STRICT;"})
	host := env.NewWorld(env.WorldSpec{Name: "fco", Version: "1", FixturesDir: dir, Schema: "CREATE TABLE staff (id INTEGER PRIMARY KEY) STRICT;"})
	host.AddWorld(pay, env.Name("payments"))
	ctx := context.Background()
	if _, err := compositiontest.Open(t, pay, composition.Options{}).Freeze(ctx, "pay_only", "A payments fixture.", composition.FreezeOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := compositiontest.Open(t, host, composition.Options{}).Freeze(ctx, "acme", "The host's.", composition.FreezeOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := composition.Fixtures(host)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != "acme" {
		var ids []string
		for _, s := range list {
			ids = append(ids, s.ID+" ("+s.World+")")
		}
		t.Errorf("Fixtures(host) = %v, want only acme", ids)
	}
}
