package crm

import (
	"context"
	"fmt"

	"github.com/seahaven/seahaven/composition"
)

// DemoID is the id of the fixture BuildDemo freezes.
const DemoID = "demo"

// BuildDemo freezes the demo fixture into fixturesDir: two customers, one of
// them charged. It runs the world's own tools on a fixed seed and clock, so
// every run writes the same node files. The seed is one no episode uses: an
// instance reset with a fixture's build seed draws the fixture's own ids.
func BuildDemo(ctx context.Context, fixturesDir string, replace bool) error {
	inst, err := composition.Open(ctx, World, composition.Options{
		Seed: 0x5EED_DE30, Now: "2026-06-01T09:00:00.000Z", FixturesDir: fixturesDir,
	})
	if err != nil {
		return err
	}
	defer inst.Close()
	steps := []struct{ tool, args string }{
		{"add_customer", `{"email": "ada@example.com", "plan": "pro", "seats": 3}`},
		{"add_customer", `{"email": "grace@example.com"}`},
	}
	for _, s := range steps {
		if _, err := inst.CallJSON(ctx, s.tool, []byte(s.args)); err != nil {
			return fmt.Errorf("demo: %s: %w", s.tool, err)
		}
	}
	ada, err := inst.DB().One("SELECT id FROM customers WHERE email = 'ada@example.com'")
	if err != nil {
		return err
	}
	if _, err := inst.Call(ctx, "charge_customer", ChargeCustomerArgs{CustomerID: ada["id"].(string), Amount: 12000}); err != nil {
		return fmt.Errorf("demo: charge_customer: %w", err)
	}
	_, err = inst.Freeze(ctx, DemoID, "Two customers; Ada is charged 120.00.",
		composition.FreezeOptions{Replace: replace, FixturesDir: fixturesDir})
	return err
}
