package examples_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/payments"
	"github.com/seahaven/seahaven/fixture"
)

// newCompany declares a company that adds payments, with its fixtures in dir.
func newCompany(dir string) *env.World {
	company := env.NewWorld(env.WorldSpec{Name: "company", Version: "0.1.0", FixturesDir: dir,
		Schema: "CREATE TABLE staff (id TEXT PRIMARY KEY, name TEXT NOT NULL) STRICT;"})
	company.AddWorld(payments.World, env.ToolPrefix("pay_"))
	return company
}

// Genesis, bulk, freeze, create and fork, end to end.
func Example_fixturesLifecycle() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "fixtures-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	company := newCompany(dir)

	// Genesis: a blank store per node, on one clock.
	inst, err := composition.Open(ctx, company, composition.Options{Seed: 1, Now: "2026-06-01T09:00:00.000Z"})
	if err != nil {
		panic(err)
	}
	// Fill every store: the tools where they exist, Bulk for the rest.
	if _, err := inst.CallJSON(ctx, "pay_create_charge", []byte(`{"amount": 500}`)); err != nil {
		panic(err)
	}
	err = inst.Bulk(ctx, func(c *env.Ctx) error {
		_, err := c.DB.Exec("INSERT INTO staff (id, name) VALUES ('u1', 'Ada Lovelace')")
		return err
	})
	if err != nil {
		panic(err)
	}
	// Freeze: every node checked, vacuumed, hashed, published atomically.
	base, err := inst.Freeze(ctx, "base", "One person, one charge.", composition.FreezeOptions{})
	if err != nil {
		panic(err)
	}
	inst.Close()

	// Create: verify every hash and the shape, then start from private copies.
	inst, err = composition.Open(ctx, company, composition.Options{Fixture: "base"})
	if err != nil {
		panic(err)
	}
	inst.CallJSON(ctx, "pay_create_charge", []byte(`{"amount": 20}`))
	// Fork: create from a fixture, change it, freeze under a new id.
	forked, err := inst.Freeze(ctx, "base_refund", "The base, plus a second charge.", composition.FreezeOptions{})
	if err != nil {
		panic(err)
	}
	inst.Close()

	list, _ := composition.Fixtures(company)
	for _, s := range list {
		fmt.Println(s.ID, s.FormatVersion, s.ParentID != nil && *s.ParentID == "base")
	}
	files, _ := os.ReadDir(filepath.Join(dir, "base"))
	for _, f := range files {
		fmt.Println("base/" + f.Name())
	}
	fmt.Println(*forked.ParentID, base.Nodes[0].FileSHA256 != forked.Nodes[0].FileSHA256)
	// Output:
	// base 2 false
	// base_refund 2 true
	// base/fixture.yaml
	// base/state.payments.sqlite
	// base/state.sqlite
	// base true
}

// The sidecar a freeze writes: format_version 1 for a world that adds
// nothing, 2 with a nodes list for a composite.
func Example_fixturesSidecar() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "fixtures-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	for _, w := range []*env.World{payments.World.WithFixturesDir(dir), newCompany(dir)} {
		inst, err := composition.Open(ctx, w, composition.Options{Seed: 1, Now: "2026-06-01T09:00:00.000Z"})
		if err != nil {
			panic(err)
		}
		if _, err := inst.CallJSON(ctx, inst.Tools()[0].Name, []byte(`{"amount": 500}`)); err != nil {
			panic(err)
		}
		s, err := inst.Freeze(ctx, w.Name()+"_one_charge", "One charge.", composition.FreezeOptions{})
		inst.Close()
		if err != nil {
			panic(err)
		}
		s.CreatedAt = "2026-09-14T08:11:06.580Z" // wall time; pinned for this output
		b, _ := fixture.Marshal(s)
		fmt.Printf("# %s/fixture.yaml\n%s", s.ID, b)
	}
	// Output:
	// # payments_one_charge/fixture.yaml
	// format_version: 1
	// id: payments_one_charge
	// world: payments
	// world_version: 1.0.0
	// schema_hash: 0ab9a45400946dd87323c418887b9d89eff995178e7a69921db1a3fef9f543be
	// now: '2026-06-01T09:00:00.000Z'
	// parent_id: null
	// file_sha256: 2326773b9daa053e1846c6c18caf417a9989fdb7b07e38c5eb75831a9f4b22fc
	// created_at: '2026-09-14T08:11:06.580Z'
	// description: One charge.
	// # company_one_charge/fixture.yaml
	// format_version: 2
	// id: company_one_charge
	// world: company
	// world_version: 0.1.0
	// schema_hash: 5f514ab9b920178bb85e512adf4abd0b79bd35446fd4d1e59e6918ad802c2be9
	// now: '2026-06-01T09:00:00.000Z'
	// parent_id: null
	// file_sha256: 9d9a56c996f2ec259336a28b0d1acff6c0facd82dfa93d6477e2b315bfa27904
	// created_at: '2026-09-14T08:11:06.580Z'
	// description: One charge.
	// nodes:
	//   - path: payments
	//     world: payments
	//     world_version: 1.0.0
	//     schema_hash: 0ab9a45400946dd87323c418887b9d89eff995178e7a69921db1a3fef9f543be
	//     scope: null
	//     file: state.payments.sqlite
	//     file_sha256: 0cc919cfe863d1a870efac18dbf681492d82528d8a0efa5c319aa683a35d5d40
	//     aliases: []
}

// A node's file name is minted from its canonical path; a sidecar naming
// anything else is refused when it is read.
func Example_fixturesFileNames() {
	for _, path := range []string{"main", "payments", "payments_eu", "payments/tax", "shop/payments"} {
		fmt.Printf("%-14s %s\n", path, fixture.FileName(path))
	}
	for _, file := range []string{"state.payments__tax.sqlite", "../state.sqlite", "state.Payments.sqlite"} {
		path, err := fixture.PathOf(file)
		fmt.Printf("%q %v\n", path, err)
	}
	// Output:
	// main           state.sqlite
	// payments       state.payments.sqlite
	// payments_eu    state.payments_eu.sqlite
	// payments/tax   state.payments__tax.sqlite
	// shop/payments  state.shop__payments.sqlite
	// "payments/tax" <nil>
	// "" fixture: file name "../state.sqlite" contains a path separator
	// "" fixture: file name "state.Payments.sqlite" does not name a node path: "Payments" has segment "Payments", which does not start with a lowercase letter
}

// Why a create is refused: each sentence is the error composition.Open
// returns, naming what changed.
func Example_fixturesRefusals() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "fixtures-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	company := newCompany(dir)
	inst, err := composition.Open(ctx, company, composition.Options{Seed: 1, Now: "2026-06-01T09:00:00.000Z"})
	if err != nil {
		panic(err)
	}
	inst.CallJSON(ctx, "pay_create_charge", []byte(`{"amount": 500}`))
	if _, err := inst.Freeze(ctx, "acme", "One charge.", composition.FreezeOptions{}); err != nil {
		panic(err)
	}
	inst.Close()
	refusal := func(w *env.World) {
		_, err := composition.Open(ctx, w, composition.Options{Fixture: "acme"})
		fmt.Println(strings.ReplaceAll(fmt.Sprint(err), dir, "<fixtures>"))
	}

	// A node added: the tree now has a second account.
	added := newCompany(dir)
	added.AddWorld(payments.World, env.Name("payments_eu"), env.Store("eu"), env.ToolPrefix("eu_"))
	refusal(added)

	// A node removed: the tree no longer adds payments.
	refusal(env.NewWorld(env.WorldSpec{Name: "company", Version: "0.1.0", FixturesDir: dir,
		Schema: "CREATE TABLE staff (id TEXT PRIMARY KEY, name TEXT NOT NULL) STRICT;"}))

	// The shape changed: payments moved to another scope.
	moved := env.NewWorld(env.WorldSpec{Name: "company", Version: "0.1.0", FixturesDir: dir,
		Schema: "CREATE TABLE staff (id TEXT PRIMARY KEY, name TEXT NOT NULL) STRICT;"})
	moved.AddWorld(payments.World, env.Store("us"), env.ToolPrefix("pay_"))
	refusal(moved)

	// The schema drifted: a column was added to the company's table.
	drifted := env.NewWorld(env.WorldSpec{Name: "company", Version: "0.1.0", FixturesDir: dir,
		Schema: "CREATE TABLE staff (id TEXT PRIMARY KEY, name TEXT NOT NULL, role TEXT) STRICT;"})
	drifted.AddWorld(payments.World, env.ToolPrefix("pay_"))
	refusal(drifted)

	// A file's bytes changed after the freeze.
	file := filepath.Join(dir, "acme", "state.payments.sqlite")
	b, _ := os.ReadFile(file)
	b[len(b)-1] ^= 0xff
	os.WriteFile(file, b, 0o644)
	refusal(company)

	// No such fixture.
	_, err = composition.Open(ctx, company, composition.Options{Fixture: "acme_v2"})
	fmt.Println(strings.ReplaceAll(err.Error(), dir, "<fixtures>"))
	// Output:
	// fixture "acme" does not match company's composition: node added: payments_eu (world payments, scope "eu") (rebuild the fixture from the world's code: seahaven fixtures build, or the world's go generate)
	// fixture "acme" does not match company's composition: node removed: payments (world payments) (rebuild the fixture from the world's code: seahaven fixtures build, or the world's go generate)
	// fixture "acme" does not match company's composition: shape changed: node payments was world payments, scope null, aliases [] and is now world payments, scope "us", aliases [] (rebuild the fixture from the world's code: seahaven fixtures build, or the world's go generate)
	// fixture "acme" does not match company's composition: schema drifted: node main (world company 0.1.0) has schema hash 495cc4c96fc9, the fixture was frozen at 5f514ab9b920 (rebuild the fixture from the world's code: seahaven fixtures build, or the world's go generate)
	// fixture: hash mismatch: node "payments" file state.payments.sqlite: sidecar records 0cc919cfe863d1a870efac18dbf681492d82528d8a0efa5c319aa683a35d5d40, file has 8e32feecdcb2fdbf1cfa5a83c0f51c7a2bfc933145d38cd97642a8b173df2ffa
	// composition: company has no fixture "acme_v2" in <fixtures>
}

// Freeze checks every node against its own world's schema before it writes
// anything: a store changed behind its world's back mints nothing.
func Example_fixturesFreezeDrift() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "fixtures-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	inst, err := composition.Open(ctx, newCompany(dir), composition.Options{})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	err = inst.Bulk(ctx, func(c *env.Ctx) error {
		_, err := c.Worlds.Get("payments").DB().Exec("ALTER TABLE charges ADD COLUMN note TEXT")
		return err
	})
	fmt.Println(err)
	_, err = inst.Freeze(ctx, "acme", "Drifted.", composition.FreezeOptions{})
	fmt.Println(err)
	list, _ := composition.Fixtures(newCompany(dir))
	fmt.Println(len(list), "fixtures")
	// Output:
	// <nil>
	// freeze "acme": node payments has drifted from the schema of its world payments 1.0.0 (hash 9d24c88a752c, want 0ab9a4540094); nothing was published
	// 0 fixtures
}
