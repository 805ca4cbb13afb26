package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"strings"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/task"
)

// GradeCommand re-grades recorded trajectories without an agent: it replays
// each file's calls from the same fixture and seed (or, for a restored
// episode, from the checkpoint it continues), grades the task, and reports
// every way the replay differed from the recording.
type GradeCommand struct {
	m *Main
}

// gradeReport is one file's outcome, as -json prints it.
type gradeReport struct {
	File        string            `json:"file"`
	Task        string            `json:"task"`
	EpisodeID   string            `json:"episode_id"`
	Calls       int               `json:"calls"`
	Result      *task.Result      `json:"result"`
	GradeError  string            `json:"grade_error,omitempty"`
	StateSHA256 map[string]string `json:"state_sha256"`
	Mismatches  []string          `json:"mismatches"`
	Warnings    []string          `json:"warnings"`
	Error       string            `json:"error,omitempty"`
}

// Run runs `seahaven grade`. It exits 1 when a file cannot be replayed or
// graded, or did not replay as recorded (a non-deterministic world, or a
// trajectory recorded against other fixtures), and 2 on a usage error.
func (c *GradeCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet(c.m, "grade")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: "+c.m.name()+" grade [flags] FILE...\n\nReplay recorded trajectories (JSONL, one per episode) from their fixture and seed, or from the checkpoint a restored episode continues (--checkpoints), grade each, and print per-check results and the reward.\n\nFlags:")
		fs.PrintDefaults()
	}
	worldName := fs.String("world", envOr("SEAHAVEN_WORLD", c.m.Default), "the world the trajectories were recorded on: "+strings.Join(c.m.names(), ", ")+" (env SEAHAVEN_WORLD)")
	fixturesDir := fs.String("fixtures", envOr("SEAHAVEN_FIXTURES", ""), "the fixtures directory, with its tasks.yaml (default: the world's own; env SEAHAVEN_FIXTURES)")
	checkpoints := fs.String("checkpoints", envOr("SEAHAVEN_CHECKPOINTS", ""), "the checkpoint store the server restored episodes from, for the trajectories of restored episodes (env SEAHAVEN_CHECKPOINTS)")
	asJSON := fs.Bool("json", false, "print one JSON object per file instead of text")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return &exitError{code: 2, err: errors.New("grade: no trajectory files given")}
	}
	w, err := c.m.world(*worldName)
	if err != nil {
		return err
	}
	tasks, err := task.ForWorldDir(w, *fixturesDir)
	if err != nil {
		return err
	}
	if *checkpoints != "" {
		if notDir(*checkpoints) != nil {
			return &exitError{code: 2, err: fmt.Errorf("grade: --checkpoints %s is not a directory (it names the server's checkpoint store, its --checkpoints)", *checkpoints)}
		}
	}
	broken, ungraded, differed := 0, 0, 0 // files that could not be replayed, whose grading failed, and that replayed otherwise
	enc := json.NewEncoder(c.m.Stdout)
	for _, file := range fs.Args() {
		r := c.gradeFile(file, func(tr *task.Trajectory) (*task.Replay, error) {
			opts := composition.Options{FixturesDir: *fixturesDir}
			id := tr.Header.Checkpoint
			if id == "" {
				return task.ReplayTrajectory(ctx, w, tasks, tr, opts)
			}
			if *checkpoints == "" {
				return nil, fmt.Errorf("continues checkpoint %s: pass --checkpoints to replay it", id)
			}
			cp, saved, err := app.ReadCheckpoint(*checkpoints, id)
			if errors.Is(err, iofs.ErrNotExist) {
				return nil, fmt.Errorf("continues checkpoint %s, which is not in %s", id, *checkpoints)
			}
			if err != nil {
				return nil, fmt.Errorf("continues checkpoint %s: %w", id, err)
			}
			return task.ReplayResumed(ctx, w, tasks, tr, cp, saved, opts)
		})
		switch {
		case r.Error != "":
			broken++
		case len(r.Mismatches) > 0:
			differed++
		case r.GradeError != "":
			ungraded++
		}
		if *asJSON {
			if err := enc.Encode(r); err != nil {
				return err
			}
			continue
		}
		c.print(r)
	}
	if broken+ungraded+differed > 0 {
		var parts []string
		if broken > 0 {
			parts = append(parts, fmt.Sprintf("%d could not be replayed", broken))
		}
		if ungraded > 0 {
			parts = append(parts, fmt.Sprintf("%d could not be graded", ungraded))
		}
		if differed > 0 {
			parts = append(parts, fmt.Sprintf("%d did not replay as recorded", differed))
		}
		return &exitError{code: 1, err: fmt.Errorf("grade: of the %s given, %s", plural(fs.NArg(), "file"), strings.Join(parts, " and "))}
	}
	return nil
}

func (c *GradeCommand) gradeFile(file string, replay func(*task.Trajectory) (*task.Replay, error)) gradeReport {
	r := gradeReport{File: file, Mismatches: []string{}, Warnings: []string{}}
	tr, err := task.ReadTrajectoryFile(file)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Task, r.EpisodeID = tr.Header.Task, tr.Header.EpisodeID
	rep, err := replay(tr)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Calls, r.Result, r.GradeError, r.StateSHA256 = rep.Calls, rep.Result, rep.GradeError, rep.StateSHA256
	r.Mismatches = append(r.Mismatches, rep.Mismatches...)
	r.Warnings = append(r.Warnings, rep.Warnings...)
	return r
}

func (c *GradeCommand) print(r gradeReport) {
	out := c.m.Stdout
	if r.Error != "" {
		fmt.Fprintf(out, "%s: ERROR %s\n", r.File, r.Error)
		return
	}
	what := "no task"
	if r.Task != "" {
		what = "task " + r.Task
	}
	fmt.Fprintf(out, "%s: %s, episode %s, %s replayed\n", r.File, what, r.EpisodeID, plural(r.Calls, "call"))
	for _, w := range r.Warnings {
		fmt.Fprintf(out, "  warning: %s\n", w)
	}
	for _, m := range r.Mismatches {
		fmt.Fprintf(out, "  NON-DETERMINISTIC: %s\n", m)
	}
	if r.GradeError != "" {
		fmt.Fprintf(out, "  GRADING FAILED: %s\n", r.GradeError)
	}
	if r.Result != nil {
		r.Result.WriteText(out)
	}
}
