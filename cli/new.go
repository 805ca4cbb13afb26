package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/seahaven/seahaven/internal/scaffold"
)

// NewCommand is `seahaven new world NAME`: it writes a new world's package.
type NewCommand struct{ m *Main }

// Run runs `seahaven new world [--dir DIR] [--import PATH] NAME`.
func (c *NewCommand) Run(_ context.Context, args []string) error {
	if len(args) == 0 || args[0] != "world" {
		return &exitError{code: 2, err: fmt.Errorf("new: want %q", c.m.name()+" new world NAME")}
	}
	fs := newFlagSet(c.m, "new world")
	dir := fs.String("dir", "", "the directory to write the world into (default ./NAME); it must not exist or be empty")
	importPath := fs.String("import", "", "the Go import path of that directory (default: derived from the go.mod above it)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: "+c.m.name()+" new world [--dir DIR] [--import PATH] NAME")
		fmt.Fprintln(fs.Output(), "Writes a new world: a schema, typed tools, an error handler that passes tool errors through, tests, a fixture generator and a task.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		err := fmt.Errorf("new world takes one NAME, got %d arguments", fs.NArg())
		if fs.NArg() > 1 && slices.ContainsFunc(fs.Args()[1:], func(a string) bool { return strings.HasPrefix(a, "-") }) {
			// Parsing stops at the first argument that is no flag.
			err = fmt.Errorf("new world takes one NAME, got %d arguments: flags go before NAME (%s new world --dir DIR %s)", fs.NArg(), c.m.name(), fs.Arg(0))
		}
		return &exitError{code: 2, err: err}
	}
	name := fs.Arg(0)
	if *dir == "" {
		*dir = name
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	if *importPath == "" {
		if *importPath, err = importPathOf(abs); err != nil {
			return fmt.Errorf("new world: %w; pass --import, or run `go mod init` first", err)
		}
	}
	files, err := scaffold.World(abs, name, *importPath)
	if err != nil {
		return fmt.Errorf("new world: %w", err)
	}
	fmt.Fprintf(c.m.Stdout, "wrote world %s (%s) into %s:\n", name, *importPath, *dir)
	for _, f := range files {
		fmt.Fprintf(c.m.Stdout, "  %s\n", f)
	}
	pkgs := packagePattern(abs)
	// The new package imports what the module does not require yet, so
	// go generate stops at "updates to go.mod needed" until it is tidied.
	fmt.Fprintf(c.m.Stdout, "next: go mod tidy && go generate %s && go test %s\n", pkgs, pkgs)
	fmt.Fprintf(c.m.Stdout, "then: build a binary of your own, func main() { cli.Run(%s.World) } (docs/authoring.md, \"Your own binary\"), and run its check %s\n",
		name, pkgs)
	return nil
}

// packagePattern returns the go package pattern of dir and every package
// below it, as the user types it in the current directory: "./..." for the
// current directory, "./rel/..." below it, else dir's absolute path.
func packagePattern(dir string) string {
	wd, err := os.Getwd()
	rel, inside := within(wd, dir)
	switch {
	case err != nil || !inside:
		return filepath.ToSlash(dir) + "/..."
	case rel == ".":
		return "./..."
	}
	return "./" + filepath.ToSlash(rel) + "/..."
}

// importPathOf returns the import path dir has in the module whose go.mod
// is in dir or the nearest directory above it.
func importPathOf(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			mod := modfile.ModulePath(data)
			if mod == "" {
				return "", fmt.Errorf("%s has no module line", filepath.Join(d, "go.mod"))
			}
			rel, err := filepath.Rel(d, dir)
			if err != nil {
				return "", err
			}
			if rel == "." {
				return mod, nil
			}
			return mod + "/" + filepath.ToSlash(rel), nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod in %s or above it", strings.TrimSuffix(dir, string(filepath.Separator)))
		}
	}
}
