package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/task"
)

// FixturesCommand builds, lists and verifies fixtures.
type FixturesCommand struct{ m *Main }

// Run runs `seahaven fixtures build|list|verify`. Each first repairs what
// interrupted publishes left in the fixtures directory (fixture.Recover),
// logging each repair on standard error.
func (c *FixturesCommand) Run(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		out := c.m.Stdout
		if len(args) == 0 {
			out = c.m.Stderr
		}
		fmt.Fprint(out, "Usage: "+c.m.name()+` fixtures build|list|verify [--world W] [--dir DIR]

  build    run the world's fixture generator into DIR (the world's FixturesDir;
           a world that embeds its fixtures needs --dir, its source directory)
  list     list the fixtures of DIR (default: the world's own)
  verify   make an instance from each fixture: hashes, shape, named fixtures
           (a fixture of a world this binary does not serve: its hashes)

Worlds: `+strings.Join(c.m.names(), ", ")+"\n")
		if len(args) == 0 {
			return &exitError{code: 2, err: errors.New("fixtures: want build, list or verify")}
		}
		return nil
	}
	fs := newFlagSet(c.m, "fixtures "+args[0])
	worldName := fs.String("world", envOr("SEAHAVEN_WORLD", c.m.Default), "the world: "+strings.Join(c.m.names(), ", ")+" (env SEAHAVEN_WORLD)")
	dir := fs.String("dir", "", "the fixtures directory (default: the world's own)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	tasksDir := *dir // "": the world's own tasks file, perhaps embedded
	if !slices.Contains([]string{"build", "list", "verify"}, args[0]) {
		return &exitError{code: 2, err: fmt.Errorf("fixtures: unknown subcommand %q", args[0])}
	}
	w, err := c.m.world(*worldName)
	if err != nil {
		return err
	}
	if *dir == "" && args[0] == "build" {
		if *dir = w.Spec().FixturesDir; *dir == "" {
			return fmt.Errorf("fixtures build: world %s has no fixtures directory to build into (its fixtures are embedded in the binary, or it has none): give --dir, the source directory they are embedded from", w.Name())
		}
	}
	// shown is the fixtures directory as the author knows it: not the copy
	// on disk that embedded fixtures are read from.
	shown := *dir
	if *dir == "" {
		if *dir, err = composition.FixturesDir(w); err != nil {
			return err
		}
		if *dir == "" {
			return fmt.Errorf("fixtures %s: world %s has no fixtures (neither FixturesDir nor Fixtures)", args[0], w.Name())
		}
		shown = *dir
		if w.Spec().FixturesDir == "" {
			shown = "the fixtures embedded in world " + w.Name()
		}
	}
	if args[0] != "build" {
		// A mistyped --dir would otherwise list as an empty directory.
		if err := notDir(*dir); err != nil {
			return fmt.Errorf("fixtures %s: %w", args[0], err)
		}
	}
	logger := slog.New(slog.NewTextHandler(c.m.Stderr, nil))
	_, recoverErr := fixture.Recover(*dir, logger)
	if args[0] == "build" {
		if recoverErr != nil {
			return recoverErr
		}
		build := w.FixtureGenerator()
		if build == nil {
			return fmt.Errorf("fixtures build: world %s has no fixture generator (env.World.SetFixtureGenerator)", w.Name())
		}
		if err := build(ctx, *dir, true); err != nil {
			return err
		}
		fmt.Fprintf(c.m.Stdout, "built fixtures of %s in %s\n", *worldName, *dir)
		return nil
	}
	if recoverErr != nil {
		// Listing what is whole still helps; verify fails below.
		logger.Error("fixtures: recovery failed", "dir", *dir, "err", recoverErr)
	}
	// A broken sidecar affects only its own fixture: its row says so, and
	// the others are listed and verified.
	list, err := fixture.List(*dir)
	var le *fixture.ListError
	if err != nil && !errors.As(err, &le) {
		return err
	}
	broken := map[string]error{}
	if le != nil {
		for _, b := range le.Broken {
			broken[b.ID] = b.Err
		}
	}
	tw := tabwriter.NewWriter(c.m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tFORMAT\tWORLD\tNOW\tPARENT\tSTATUS\tDESCRIPTION")
	var bad error
	ids, _ := fixture.Dirs(*dir) // every fixture, whole or broken, in id order
	for _, id := range ids {
		if err, ok := broken[id]; ok {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\tFAILED\tthe sidecar does not parse\n", id)
			bad = errors.Join(bad, err)
			continue
		}
		i := slices.IndexFunc(list, func(s *fixture.Sidecar) bool { return s.ID == id })
		if i < 0 {
			continue // not a fixture: no sidecar
		}
		s := list[i]
		status := "-"
		if args[0] == "verify" {
			var err error
			status, err = c.verify(ctx, w, *dir, s)
			if err != nil {
				status = "FAILED"
				bad = errors.Join(bad, err)
			}
		}
		parent := "-"
		if s.ParentID != nil {
			parent = *s.ParentID
		}
		fmt.Fprintf(tw, "%s\tv%d\t%s %s\t%s\t%s\t%s\t%s\n", s.ID, s.FormatVersion, printable(s.World), printable(s.WorldVersion), printable(s.Now), printable(parent), status, printable(s.Description))
	}
	if args[0] == "verify" {
		bad = errors.Join(recoverErr, bad)
		named, reset, err := namedFixtures(w, tasksDir, list)
		bad = errors.Join(bad, err)
		for _, id := range slices.Sorted(maps.Keys(named)) {
			i := slices.IndexFunc(list, func(s *fixture.Sidecar) bool { return s.ID == id })
			by := strings.Join(named[id], ", ")
			switch _, isBroken := broken[id]; {
			case !isBroken && i < 0:
				fmt.Fprintf(tw, "%s\t-\t-\t-\t-\tMISSING\tnamed by %s\n", id, by)
				bad = errors.Join(bad, fmt.Errorf("fixture %s is missing from %s (named by %s)", id, shown, by))
			case i >= 0 && list[i].World != w.Name() && reset[id]:
				// A reset of w's names it: serve refuses it as another world's.
				bad = errors.Join(bad, fmt.Errorf("fixture %s is of world %s, not %s, which names it (%s): a reset from it is refused", id, list[i].World, w.Name(), by))
			}
		}
	}
	tw.Flush()
	return bad
}

// printable is a sidecar's text as a row of the table shows it: control
// and bidirectional formatting characters escaped (\u000D), so that a
// description cannot move the cursor back over the row's status or start
// a row of its own.
func printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			fmt.Fprintf(&b, `\u%04X`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// notDir says why path is not a directory: os.Stat's error, or that it
// is something else; nil when it is one.
func notDir(path string) error {
	fi, err := os.Stat(path)
	if err == nil && !fi.IsDir() {
		err = fmt.Errorf("%s is not a directory", path)
	}
	return err
}

// namedFixtures returns the fixtures that the world's default (the one
// serve uses), its tasks (task.ForWorldDir of tasksDir) and the listed sidecars'
// parent_id name, each with who names it, and those a reset of w's starts
// from (the default's and the tasks').
func namedFixtures(w *env.World, tasksDir string, list []*fixture.Sidecar) (by map[string][]string, reset map[string]bool, err error) {
	by, reset = map[string][]string{}, map[string]bool{}
	if id := w.Spec().DefaultFixture; id != "" {
		by[id] = append(by[id], "the world's default fixture")
		reset[id] = true
	}
	tasks, err := task.ForWorldDir(w, tasksDir)
	for _, t := range tasks {
		if t.Fixture != "" {
			by[t.Fixture] = append(by[t.Fixture], "task "+t.ID)
			reset[t.Fixture] = true
		}
	}
	for _, s := range list {
		if s.ParentID != nil {
			by[*s.ParentID] = append(by[*s.ParentID], "the parent_id of "+s.ID)
		}
	}
	return by, reset, err
}

// verify verifies the fixture s of dir, found while verifying world w's
// fixtures, and returns its status: a directory shared by several worlds
// holds fixtures of each, and one of another world is verified against
// that world when this binary serves it ("ok"), and by its files' hashes
// alone otherwise ("hashes ok").
func (c *FixturesCommand) verify(ctx context.Context, w *env.World, dir string, s *fixture.Sidecar) (string, error) {
	if s.World != w.Name() {
		ow, known := c.m.Worlds[s.World]
		if !known {
			fdir, err := fixture.Dir(dir, s.ID)
			if err == nil {
				err = fixture.Verify(fdir, s)
			}
			if err != nil {
				return "", fmt.Errorf("fixture %s (of world %s, not served by this binary): %w", s.ID, s.World, err)
			}
			return "hashes ok", nil
		}
		w = ow
	}
	return "ok", verifyFixture(ctx, w.WithFixturesDir(dir), s)
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
