// Package scaffold writes the starting files of a new world: `seahaven new
// world NAME`. The files are Go templates embedded in the binary; the world
// they make passes `seahaven check` and its own tests.
package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/format"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
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
// (env.CheckName), and must not be a name the files written import,
// declare or use, nor one of Go's predeclared identifiers (CheckGoName);
// otherwise World writes nothing. importPath is the Go import path dir has
// in its module (the test and the fixture generator import the world by
// it). It returns the paths of the files written, relative to dir.
func World(dir, name, importPath string) ([]string, error) {
	if !validName.MatchString(name) || token.IsKeyword(name) {
		return nil, fmt.Errorf("world name %q: want a lower-case Go package name (a letter, then letters, digits or _, at most 63) that is not a Go keyword", name)
	}
	if err := env.CheckName(name); err != nil {
		// What env.NewWorld would panic with when the package loads.
		return nil, fmt.Errorf("world %w", err)
	}
	if err := CheckGoName(name); err != nil {
		return nil, err
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
	files, err := render(name, importPath)
	if err != nil {
		return nil, err
	}
	var written []string
	for _, f := range files {
		dst := filepath.Join(dir, filepath.FromSlash(f.rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return written, err
		}
		if err := os.WriteFile(dst, f.data, 0o644); err != nil {
			return written, err
		}
		written = append(written, f.rel)
	}
	return written, nil
}

// file is one file of a new world: its path relative to the world's
// directory, slash-separated, and its contents.
type file struct {
	rel  string
	data []byte
}

// render executes the templates for a world of that name and import path,
// in the order of their paths; Go files are formatted.
func render(name, importPath string) ([]file, error) {
	data := struct{ Name, ImportPath string }{name, importPath}
	var files []file
	err := fs.WalkDir(worldFiles, "world", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(p, "world/"), ".tmpl")
		if rest, ok := strings.CutPrefix(path.Base(rel), "world"); ok {
			rel = path.Join(path.Dir(rel), name+rest)
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
		files = append(files, file{rel, b})
		return nil
	})
	return files, err
}

// placeholder is the world name the templates are read with to find the
// names they use: one no template uses for anything else.
const placeholder = "zzscaffoldplaceholder"

// CheckGoName returns an error when a world of that name would not
// compile, or would shadow what its files need: when it is the name of a
// package one of the new world's files imports (its tests import the world
// beside them, and two imports of one name collide), an identifier its
// tests or fixture generator declare or use (the world's package name
// hides it in those files), or one of Go's predeclared identifiers
// (string, len, true...), which the world's name would hide from every file
// that imports it; or when a file named after the world would be another
// file of the new world (tasks.go), a test file (NAME_test) or one Go
// builds for some systems only (NAME_linux, NAME_arm64). The names are read
// from the templates themselves, so a change to them cannot make a name
// the check accepts fail to compile.
func CheckGoName(name string) error {
	n, err := templateNames()
	if err != nil {
		return err
	}
	var why string
	switch {
	case slices.Contains(n.imports, name):
		why = "is the name of a package the new world's files import, which the world's own name would collide with"
	case types.Universe.Lookup(name) != nil:
		why = "is one of Go's predeclared identifiers, which the world's name would hide from every file that imports it"
	case slices.Contains(n.idents, name):
		why = "is a name the new world's tests or fixture generator declare or use, which the world's name would hide"
	default:
		if why, err = fileProblem(name, n.files); err != nil || why == "" {
			return err
		}
	}
	return fmt.Errorf("world name %q %s, so the world would not compile; pick another, such as %q", name, why, name+"world")
}

// fileProblem says what is wrong with the files of a world of that name, ""
// when nothing is: two files of one path, or a file Go would build
// differently from the file of the same template in placeholder's world
// (those are the files the templates mean, built everywhere, tests only in
// tests).
func fileProblem(name string, want []file) (string, error) {
	files, err := render(name, "example.com/"+name)
	if err != nil {
		return "", err
	}
	seen := map[string]bool{}
	for i, f := range files {
		if seen[f.rel] {
			return "would name its world file " + f.rel + ", a file the new world has already", nil
		}
		seen[f.rel] = true
		if !strings.HasSuffix(f.rel, ".go") {
			continue
		}
		if strings.HasSuffix(f.rel, "_test.go") != strings.HasSuffix(want[i].rel, "_test.go") {
			return "would name its world file " + f.rel + ", which Go compiles only in tests", nil
		}
		for _, sys := range [][2]string{{"linux", "amd64"}, {"windows", "arm64"}, {"darwin", "arm64"}} {
			ctxt := build.Default
			ctxt.GOOS, ctxt.GOARCH, ctxt.BuildTags = sys[0], sys[1], nil
			ctxt.OpenFile = func(string) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(f.data)), nil }
			if ok, err := ctxt.MatchFile(".", path.Base(f.rel)); err != nil || !ok {
				return "would name its world file " + f.rel + ", which Go builds only for some systems", nil
			}
		}
	}
	return "", nil
}

// names are the names a world's name must not be: those the templates
// import and those declared or used by the files that import the world.
type names struct {
	imports, idents []string
	files           []file // the files of placeholder's world
}

// templateNames reads the names of the templates once.
var templateNames = sync.OnceValues(func() (names, error) {
	files, err := render(placeholder, "example.com/"+placeholder)
	if err != nil {
		return names{}, err
	}
	var n names
	fset := token.NewFileSet()
	for _, f := range files {
		if !strings.HasSuffix(f.rel, ".go") {
			continue
		}
		af, err := parser.ParseFile(fset, f.rel, f.data, parser.SkipObjectResolution)
		if err != nil {
			return names{}, fmt.Errorf("scaffold: %s does not parse: %w", f.rel, err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			name := path.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			if name != placeholder && name != "_" && name != "." {
				n.imports = append(n.imports, name)
			}
		}
		if af.Name.Name == placeholder {
			continue // the world's own package, which does not name itself
		}
		// A file that imports the world: every identifier in it but a
		// selector's (x.Sel names a field or a method, not a variable).
		var visit func(ast.Node) bool
		visit = func(node ast.Node) bool {
			switch x := node.(type) {
			case *ast.SelectorExpr:
				ast.Inspect(x.X, visit)
				return false
			case *ast.Ident:
				if x.Name != placeholder {
					n.idents = append(n.idents, x.Name)
				}
			}
			return true
		}
		ast.Inspect(af, visit)
	}
	slices.Sort(n.imports)
	slices.Sort(n.idents)
	return names{slices.Compact(n.imports), slices.Compact(n.idents), files}, nil
})
