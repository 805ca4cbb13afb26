package company_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/fixture"
)

// The company world from its acme fixture: the flat surface, a host tool
// calling an added world, and the accounts configured by startup keywords.
func Example() {
	ctx := context.Background()
	inst, err := composition.Open(ctx, company.World, composition.Options{Fixture: company.AcmeID, Seed: 7,
		Startup: map[string]any{"plan": "enterprise"}})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	var names []string
	for _, t := range inst.Tools() {
		names = append(names, t.Name)
	}
	fmt.Println(strings.Join(names, " "))
	out, err := inst.CallJSON(ctx, "invoice", []byte(`{"amount": 500}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(out.(company.Invoice).Amount)
	accounts, _ := inst.CallJSON(ctx, "accounts", nil)
	fmt.Println(accounts)
	for _, r := range inst.ChangeLog() {
		fmt.Println(r.Call, r.World, r.Table, r.Op, r.Internal)
	}
	// Output:
	// invoice accounts hire list_staff pay_create_charge pay_refund_charge pay_list_charges shop_place_order shop_list_orders eu_create_charge eu_refund_charge eu_list_charges chat_send_message chat_read_channel
	// 500
	// map[payments:us payments_eu:eu plan:enterprise]
	// 1 main invoices insert false
	// 1 payments charges insert true
}

// TestAcmeIsReproducible rebuilds the acme fixture from its generator and
// checks that every file hashes as the committed sidecar says.
func TestAcmeIsReproducible(t *testing.T) {
	dir := t.TempDir()
	if err := company.BuildAcme(context.Background(), dir, false); err != nil {
		t.Fatal(err)
	}
	built, err := fixture.Read(dir, company.AcmeID)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := fixture.Read(compositiontest.FixturesDir(t, company.World), company.AcmeID)
	if err != nil {
		t.Fatal(err)
	}
	if built.FileSHA256 != committed.FileSHA256 {
		t.Errorf("root file: built %s, committed %s (regenerate with go generate ./examples/worlds/company)", built.FileSHA256, committed.FileSHA256)
	}
	for i, n := range built.Nodes {
		if n.FileSHA256 != committed.Nodes[i].FileSHA256 {
			t.Errorf("node %s: built %s, committed %s", n.Path, n.FileSHA256, committed.Nodes[i].FileSHA256)
		}
	}
}

// TestAcme_CommonSeedsDoNotReplayItsIds resets from acme with the seeds
// training loops count episodes by and writes on every node: none collides
// with acme's own rows, which AcmeSeed generated.
func TestAcme_CommonSeedsDoNotReplayItsIds(t *testing.T) {
	ctx := context.Background()
	for seed := int64(0); seed <= 16; seed++ {
		inst, err := composition.Open(ctx, company.World, composition.Options{Fixture: company.AcmeID, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ tool, args string }{
			{"hire", `{"name": "Edsger Dijkstra"}`},
			{"invoice", `{"amount": 500}`},
			{"shop_place_order", `{"total": 100}`},
			{"eu_create_charge", `{"amount": 100}`},
			{"chat_send_message", `{"channel": "general", "text": "hi", "author": "Edsger Dijkstra"}`},
		} {
			if _, err := inst.CallJSON(ctx, c.tool, []byte(c.args)); err != nil {
				t.Errorf("seed %d: %s: %v", seed, c.tool, err)
			}
		}
		inst.Close()
	}
	// The build seed itself replays acme's ids: the trap AcmeSeed avoids.
	inst, err := composition.Open(ctx, company.World, composition.Options{Fixture: company.AcmeID, Seed: company.AcmeSeed})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	if _, err := inst.CallJSON(ctx, "hire", []byte(`{"name": "Edsger Dijkstra"}`)); err == nil || !strings.Contains(err.Error(), "UNIQUE") {
		t.Errorf("hire with acme's own seed = %v, want a UNIQUE constraint failure", err)
	}
}
