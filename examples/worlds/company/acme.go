package company

import (
	"context"
	"fmt"

	"github.com/seahaven/seahaven/composition"
)

//go:generate go run ../../../cmd/seahaven fixtures build --world company --dir fixtures

// AcmeID is the id of the company's default fixture.
const AcmeID = "acme"

// AcmeNow is the instant the acme fixture is frozen at.
const AcmeNow = "2026-06-01T09:00:00.000Z"

// AcmeSeed is the seed acme is built with. An instance draws the same ids as
// the instance that built its fixture when it is reset with the same seed,
// and its first insert then collides with the fixture's rows; so acme uses
// a seed no one picks by counting episodes from 0 or 1.
const AcmeSeed = 0x5EA4A7E

func init() { World.SetFixtureGenerator(BuildAcme) }

// BuildAcme generates the acme fixture into fixturesDir: three staff, an
// invoice and a charge on the company account, an order through the shop
// (charged to the same account), a charge on the EU account, and a few chat
// messages. It runs the worlds' own tools on a fixed seed (AcmeSeed) and
// clock, so the frozen files are the same on every run.
func BuildAcme(ctx context.Context, fixturesDir string, replace bool) error {
	inst, err := composition.Open(ctx, World, composition.Options{Now: AcmeNow, Seed: AcmeSeed, FixturesDir: fixturesDir})
	if err != nil {
		return err
	}
	defer inst.Close()
	steps := []struct{ tool, args string }{
		{"hire", `{"name": "Ada Lovelace", "role": "founder"}`},
		{"hire", `{"name": "Grace Hopper", "role": "engineer"}`},
		{"hire", `{"name": "Alan Turing", "role": "engineer"}`},
		{"invoice", `{"amount": 120000}`},
		{"shop_place_order", `{"total": 4999}`},
		{"eu_create_charge", `{"amount": 2500}`},
		{"chat_send_message", `{"channel": "general", "text": "Invoice for the Q2 retainer is out.", "author": "Ada Lovelace"}`},
		{"chat_send_message", `{"channel": "engineering", "text": "Deploy is green.", "author": "Grace Hopper"}`},
	}
	for _, s := range steps {
		if _, err := inst.CallJSON(ctx, s.tool, []byte(s.args)); err != nil {
			return fmt.Errorf("acme: %s: %w", s.tool, err)
		}
	}
	_, err = inst.Freeze(ctx, AcmeID, "Acme Corp: three staff, an invoice, a shop order, an EU charge and some chat.",
		composition.FreezeOptions{Replace: replace, FixturesDir: fixturesDir})
	return err
}
