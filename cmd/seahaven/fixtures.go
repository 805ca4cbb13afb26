package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/fixture"
)

// FixturesCommand builds, lists and verifies fixtures.
type FixturesCommand struct{ m *Main }

// builders generate the examples' fixtures reproducibly.
var builders = map[string]func(ctx context.Context, dir string, replace bool) error{
	"company": company.BuildAcme,
}

// Run runs `seahaven fixtures build|list|verify`.
func (c *FixturesCommand) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return &exitError{code: 2, err: errors.New("fixtures: want build, list or verify")}
	}
	fs := newFlagSet(c.m, "fixtures "+args[0])
	worldName := fs.String("world", envOr("SEAHAVEN_WORLD", "company"), "the world")
	dir := fs.String("dir", "", "the fixtures directory (default: the world's own)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	w, err := c.m.world(*worldName)
	if err != nil {
		return err
	}
	if *dir == "" {
		*dir = w.Spec().FixturesDir
	}
	switch args[0] {
	case "build":
		build, ok := builders[*worldName]
		if !ok {
			return fmt.Errorf("fixtures build: world %s has no fixture generator", *worldName)
		}
		if err := build(ctx, *dir, true); err != nil {
			return err
		}
		fmt.Fprintf(c.m.Stdout, "built fixtures of %s in %s\n", *worldName, *dir)
		return nil
	case "list", "verify":
		list, err := fixture.List(*dir)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(c.m.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tFORMAT\tWORLD\tNOW\tPARENT\tSTATUS\tDESCRIPTION")
		var bad error
		for _, s := range list {
			status := "-"
			if args[0] == "verify" {
				status = "ok"
				if err := verifyFixture(ctx, w.WithFixturesDir(*dir), s); err != nil {
					status = "FAILED"
					bad = errors.Join(bad, err)
				}
			}
			parent := "-"
			if s.ParentID != nil {
				parent = *s.ParentID
			}
			fmt.Fprintf(tw, "%s\tv%d\t%s %s\t%s\t%s\t%s\t%s\n", s.ID, s.FormatVersion, s.World, s.WorldVersion, s.Now, parent, status, s.Description)
		}
		tw.Flush()
		return bad
	}
	return &exitError{code: 2, err: fmt.Errorf("fixtures: unknown subcommand %q", args[0])}
}

// verifyFixture creates (and closes) an instance from the fixture: every
// hash and the node shape are checked on the way.
func verifyFixture(ctx context.Context, w *env.World, s *fixture.Sidecar) error {
	inst, err := composition.Open(ctx, w, composition.Options{Fixture: s.ID})
	if err != nil {
		return fmt.Errorf("fixture %s: %w", s.ID, err)
	}
	return inst.Close()
}
