// Package scaffold writes the starting files of a new world: `seahaven new
// world NAME`. The files are Go templates embedded in the binary; the world
// they make passes `seahaven check` and its own tests.
package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"go/format"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"github.com/seahaven/seahaven/env"
)

//go:embed world
var worldFiles embed.FS

// validName is what a world's name may be: a Go package name and a world
// name at once.
var validName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// World writes a new world named name into dir, a directory that must not
// exist, be empty, or hold only a module's go.mod and go.sum. The name must
// be a Go package name and a world name env.NewWorld accepts
// (env.CheckName); otherwise World writes nothing. importPath is the Go import path dir has in its module
// (the test and the fixture generator import the world by it). It returns
// the paths of the files written, relative to dir.
func World(dir, name, importPath string) ([]string, error) {
	if !validName.MatchString(name) || token.IsKeyword(name) {
		return nil, fmt.Errorf("world name %q: want a lower-case Go package name (a letter, then letters, digits or _, at most 63) that is not a Go keyword", name)
	}
	if err := env.CheckName(name); err != nil {
		// What env.NewWorld would panic with when the package loads.
		return nil, fmt.Errorf("world %w", err)
	}
	if importPath == "" {
		return nil, errors.New("no import path for the world's package")
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		// A module's root, just made by go mod init, is a directory of its own.
		if n := e.Name(); n != "go.mod" && n != "go.sum" {
			return nil, fmt.Errorf("%s is not empty: a new world needs a directory of its own (or one holding only go.mod and go.sum)", dir)
		}
	}
	data := struct{ Name, ImportPath string }{name, importPath}
	var written []string
	err = fs.WalkDir(worldFiles, "world", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(p, "world/"), ".tmpl")
		base := path.Base(rel)
		if strings.HasPrefix(base, "world") {
			rel = path.Join(path.Dir(rel), name+strings.TrimPrefix(base, "world"))
		}
		src, err := worldFiles.ReadFile(p)
		if err != nil {
			return err
		}
		t, err := template.New(p).Parse(string(src))
		if err != nil {
			return fmt.Errorf("scaffold: template %s: %w", p, err)
		}
		var out bytes.Buffer
		if err := t.Execute(&out, data); err != nil {
			return fmt.Errorf("scaffold: template %s: %w", p, err)
		}
		b := out.Bytes()
		if strings.HasSuffix(rel, ".go") {
			if b, err = format.Source(b); err != nil {
				return fmt.Errorf("scaffold: %s does not format: %w", rel, err)
			}
		}
		dst := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return err
		}
		written = append(written, rel)
		return nil
	})
	return written, err
}
