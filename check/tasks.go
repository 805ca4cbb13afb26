package check

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/task"
)

// taskFindings reports SH407 for the world's tasks: the tasks file beside
// its fixtures (fsys, positioned in root) when it does not load, at the
// line at fault; and each task, declared in Go or in the file, whose id is
// declared twice, that names a fixture the world's fixtures directory does
// not hold, or that does not fit the composition (a tool not on the
// surface, a startup keyword no hook accepts, a table pattern naming no
// node), at the line that declares it. The fit is checked only when the
// world seals.
func taskFindings(w *env.World, sealed *composition.Sealed, fsys fs.FS, root string) []Finding {
	var out []Finding
	fixtures := fixtureIDs(fsys)
	var fileTasks []env.Task
	file := filepath.Join(root, task.FileName)
	if fsys != nil {
		data, err := task.ReadFile(fsys)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			out = append(out, finding(file+":1:1", "SH407", "the tasks file cannot be read: %v", err))
		default:
			fileTasks, err = task.Parse(file, data)
			fe, _ := errors.AsType[*task.FileError](err)
			switch {
			case fe != nil:
				msg := fe.Msg
				if fe.Key != "" {
					msg = fe.Key + ": " + msg
				}
				out = append(out, finding(fmt.Sprintf("%s:%d:1", file, max(fe.Line, 1)), "SH407", "the tasks file does not load: %s", msg))
			case err != nil:
				out = append(out, finding(file+":1:1", "SH407", "the tasks file does not load: %v", err))
			}
		}
	}
	seen := map[string]string{} // task id -> its Source
	check := func(t env.Task, pos string) {
		if prev, dup := seen[t.ID]; dup {
			out = append(out, finding(pos, "SH407", "task %q is declared twice (%s and %s)", t.ID, prev, t.Source))
			return
		}
		seen[t.ID] = t.Source
		if t.Fixture != "" && !slices.Contains(fixtures, t.Fixture) {
			have := "it has none"
			if len(fixtures) > 0 {
				have = "its fixtures: " + strings.Join(fixtures, ", ")
			}
			out = append(out, finding(pos, "SH407", "task %s: fixture: %q is not a fixture of %s (%s), so every reset of the task fails", t.ID, t.Fixture, w.Name(), have))
		}
		if sealed == nil {
			return // SH504's
		}
		if err := task.Fits(sealed, t); err != nil {
			out = append(out, finding(pos, "SH407", "task %s: %v", t.ID, err))
		}
	}
	for _, t := range w.Tasks() {
		check(t, goTaskPos(w, t))
	}
	for _, t := range fileTasks {
		_, line, _ := SplitPos(t.Source) // "tasks.yaml:9"
		check(t, fmt.Sprintf("%s:%d:1", file, max(line, 1)))
	}
	return out
}

// defaultFixtureFindings reports SH408, at the world's NewWorld line, when
// its DefaultFixture is not one of the fixtures of fsys, its fixtures
// directory: a server of the world would refuse to start.
func defaultFixtureFindings(w *env.World, fsys fs.FS) []Finding {
	id := w.Spec().DefaultFixture
	if id == "" {
		return nil
	}
	fixtures := fixtureIDs(fsys)
	if slices.Contains(fixtures, id) {
		return nil
	}
	have := "it has none"
	if len(fixtures) > 0 {
		have = "its fixtures: " + strings.Join(fixtures, ", ")
	}
	return []Finding{finding(at("", w), "SH408", "world %s: DefaultFixture %q is not one of its fixtures (%s), so a server of the world refuses to start", w.Name(), id, have)}
}

// fixtureIDs returns the ids of the fixtures of fsys, a world's fixtures
// directory: its directories that hold a sidecar, whole or not (a broken
// one is SH401's). A nil fsys holds none.
func fixtureIDs(fsys fs.FS) []string {
	if fsys == nil {
		return nil
	}
	ids, _ := fixture.DirsFS(fsys)
	var out []string
	for _, id := range ids {
		if _, err := fs.Stat(fsys, path.Join(id, fixture.SidecarName)); !errors.Is(err, fs.ErrNotExist) {
			out = append(out, id)
		}
	}
	return out
}

// goTaskPos positions a task declared with AddTask: its Source names the
// file's base name and line, found beside the world's NewWorld line when it
// is there, else the NewWorld line.
func goTaskPos(w *env.World, t env.Task) string {
	base, line, _ := SplitPos(t.Source)
	file, _, _ := SplitPos(w.Where())
	if p := filepath.Join(filepath.Dir(file), base); line > 0 && file != "" && !strings.ContainsRune(base, filepath.Separator) {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p + ":" + strconv.Itoa(line) + ":1"
		}
	}
	return at("", w)
}
