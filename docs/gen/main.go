// Command gen regenerates the generated parts of Seahaven's guides: the
// state document's field tables in docs/eval.md, from schemas/state.json.
// Run it from anywhere in the module:
//
//	go run ./docs/gen
//
// The docs/examples tests fail when the tables differ from what it writes.
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/seahaven/seahaven/docs/internal/docgen"
	"github.com/seahaven/seahaven/schemas"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	schema, err := schemas.Get("state")
	if err != nil {
		return err
	}
	tables, err := docgen.StateTables(schema, docgen.Notes)
	if err != nil {
		return err
	}
	path := filepath.Join(root, "docs", "eval.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := docgen.Splice(string(doc), docgen.StateBegin, docgen.StateEnd, tables)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if out == string(doc) {
		return nil
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

// moduleRoot returns the nearest directory at or above the working
// directory that holds a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod at or above the working directory")
		}
		dir = parent
	}
}
