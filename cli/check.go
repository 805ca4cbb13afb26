package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/packages"

	"github.com/seahaven/seahaven/check"
	"github.com/seahaven/seahaven/check/analyzers"
)

// CheckCommand runs `seahaven check [-C dir] [-json] [-v] [packages]`: the
// lints of docs/lints.md over the worlds of a module. It runs the static
// analyzers of package check/analyzers over the named packages (default
// ./...), then checks every exported package-level *env.World variable they
// declare with check.World, in a program it generates inside the module and
// runs with `go run`. Findings print as `file:line:col: SHnnn severity:
// message`, sorted; the command fails when any is an error.
type CheckCommand struct{ m *Main }

// checkedWorld is a package-level *env.World variable the generated
// program checks, and the position of its declaration.
type checkedWorld struct{ pkgPath, name, pos string }

// Run runs the command.
func (c *CheckCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet(c.m, "check")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: "+c.m.name()+" check [-C dir] [-json] [-v] [packages]\n\nRun the lints of docs/lints.md over the worlds of the named packages (default ./...).\n\n")
		fs.PrintDefaults()
	}
	dir := fs.String("C", "", "run in `dir` instead of the current directory")
	asJSON := fs.Bool("json", false, "print the findings as a JSON array")
	verbose := fs.Bool("v", false, "say which worlds are checked dynamically and which cannot be")
	if err := fs.Parse(args); err != nil {
		return err
	}
	patterns := fs.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	wd, err := filepath.Abs(*dir) // "" is the current directory
	if err != nil {
		return err
	}

	pkgs, roots, modRoot, err := loadPackages(ctx, wd, patterns)
	if err != nil {
		return err
	}
	findings, worlds, skipped, err := analyse(pkgs, roots)
	if err != nil {
		return err
	}
	if *verbose {
		for _, w := range worlds {
			fmt.Fprintf(c.m.Stderr, "%s check: checking %s.%s\n", c.m.name(), w.pkgPath, w.name)
		}
		for _, s := range skipped {
			fmt.Fprintf(c.m.Stderr, "%s check: not checked dynamically: %s\n", c.m.name(), s)
		}
	}
	if len(worlds) > 0 {
		dynamic, err := runDynamic(ctx, modRoot, worlds)
		if err != nil {
			return err
		}
		findings = append(findings, dynamic...)
	}
	for i := range findings {
		findings[i].Pos = relativePos(wd, findings[i].Pos)
	}
	if *asJSON {
		out := check.Unique(findings)
		if out == nil {
			out = []check.Finding{}
		}
		enc := json.NewEncoder(c.m.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		fmt.Fprint(c.m.Stdout, check.Format(findings))
	}
	if check.HasErrors(findings) {
		return &exitError{code: 1}
	}
	if !*asJSON {
		fmt.Fprintf(c.m.Stdout, "%s check: ok: %s, %s checked, %s\n", c.m.name(),
			plural(len(roots), "package"), plural(len(worlds), "world"), plural(len(check.Unique(findings)), "warning"))
	}
	return nil
}

// plural formats n things, as "1 world" or "2 worlds".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// loadPackages loads the packages matching patterns in dir from source,
// with their dependencies' types from export data, and returns them with
// the root directory of the main module. Dependencies that import env (the
// worlds they add) are loaded from source too, so the analyzers see their
// facts; roots holds the import paths of the packages matching patterns.
func loadPackages(ctx context.Context, dir string, patterns []string) (all []*packages.Package, roots map[string]bool, modRoot string, err error) {
	// First the import graph alone, which is cheap, to find the world
	// packages among the dependencies.
	graph, err := packages.Load(&packages.Config{
		Context: ctx, Dir: dir,
		Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps,
	}, patterns...)
	if err != nil {
		return nil, nil, "", fmt.Errorf("check: loading %s: %w", strings.Join(patterns, " "), err)
	}
	if len(graph) == 0 {
		return nil, nil, "", fmt.Errorf("check: %s matched no packages in %s", strings.Join(patterns, " "), dir)
	}
	roots = map[string]bool{}
	for _, p := range graph {
		roots[p.PkgPath] = true
	}
	extra := []string{}
	packages.Visit(graph, nil, func(p *packages.Package) {
		if _, ok := p.Imports[analyzers.EnvPath]; ok && !roots[p.PkgPath] {
			extra = append(extra, p.PkgPath)
		}
	})
	slices.Sort(extra)

	all, err = packages.Load(&packages.Config{
		Context: ctx, Dir: dir,
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles | packages.NeedImports |
			packages.NeedTypes | packages.NeedTypesInfo | packages.NeedTypesSizes | packages.NeedSyntax | packages.NeedModule,
	}, slices.Concat(patterns, extra)...)
	if err != nil {
		return nil, nil, "", fmt.Errorf("check: loading %s: %w", strings.Join(patterns, " "), err)
	}
	var problems []string
	for _, p := range all {
		for _, e := range p.Errors {
			problems = append(problems, e.Error())
		}
	}
	if len(problems) > 0 {
		return nil, nil, "", fmt.Errorf("check: the packages do not load, so they cannot be checked:\n\t%s", strings.Join(problems, "\n\t"))
	}
	for _, p := range all {
		if p.Module != nil && p.Module.Main {
			modRoot = p.Module.Dir
			break
		}
	}
	return all, roots, modRoot, nil
}

// analyse runs the analyzers over the loaded packages, dependencies first,
// and returns the findings in the root packages, their exported worlds to
// check dynamically and a description of each of their worlds that cannot
// be.
func analyse(pkgs []*packages.Package, roots map[string]bool) (findings []check.Finding, worlds []checkedWorld, skipped []string, err error) {
	r := &analysisRun{facts: map[factKey]analysis.Fact{}}
	for _, p := range topoSort(pkgs) {
		results := map[*analysis.Analyzer]outcome{}
		if !roots[p.PkgPath] {
			// A dependency: only its facts are wanted.
			r.run(analyzers.WorldsAnalyzer, p, results)
			continue
		}
		for _, a := range analyzers.Analyzers {
			r.run(a, p, results)
		}
		out, _ := r.run(analyzers.WorldsAnalyzer, p, results)
		res, ok := out.(*analyzers.Result)
		if !ok {
			continue
		}
		for _, w := range res.Worlds {
			desc := fmt.Sprintf("%s.%s", p.PkgPath, w.Var.Name())
			switch {
			case p.Name == "main":
				skipped = append(skipped, desc+" (a main package cannot be imported)")
			case !w.Var.Exported():
				skipped = append(skipped, desc+" (unexported)")
			case !importableFromRoot(p.PkgPath, p.Module):
				skipped = append(skipped, desc+" (an internal package below the module root)")
			default:
				pos := p.Fset.Position(w.Var.Pos())
				worlds = append(worlds, checkedWorld{pkgPath: p.PkgPath, name: w.Var.Name(), pos: fmt.Sprintf("%s:%d:%d", pos.Filename, pos.Line, pos.Column)})
			}
		}
	}
	return r.findings, worlds, skipped, errors.Join(r.errs...)
}

// importableFromRoot reports whether a package can be imported by a
// package at its module's root: it is not below an internal directory
// deeper than the root.
func importableFromRoot(pkgPath string, mod *packages.Module) bool {
	rel := pkgPath
	if mod != nil {
		rel = strings.TrimPrefix(strings.TrimPrefix(pkgPath, mod.Path), "/")
	}
	return !slices.Contains(strings.Split(rel, "/")[1:], "internal")
}

// topoSort orders packages so each comes after the packages it imports.
func topoSort(pkgs []*packages.Package) []*packages.Package {
	in := map[*packages.Package]bool{}
	for _, p := range pkgs {
		in[p] = true
	}
	var out []*packages.Package
	packages.Visit(pkgs, func(p *packages.Package) bool { return in[p] }, func(p *packages.Package) {
		if in[p] {
			out = append(out, p)
		}
	})
	return out
}

// factKey names one fact: of an analyzer, about an object, of a type.
type factKey struct {
	a   *analysis.Analyzer
	obj types.Object
	t   reflect.Type
}

// analysisRun runs analyzers over source packages in dependency order,
// keeping facts in memory: a package imported by another package of the run
// is the same types.Package in both, so its objects are the facts' keys.
type analysisRun struct {
	facts    map[factKey]analysis.Fact
	findings []check.Finding
	errs     []error
}

// outcome is one analyzer's run on one package.
type outcome struct {
	result any
	ok     bool // false when the analyzer, or one it requires, failed
}

// run runs a on p after the analyzers it requires, once per package, and
// returns its result; ok is false when it could not run.
func (r *analysisRun) run(a *analysis.Analyzer, p *packages.Package, results map[*analysis.Analyzer]outcome) (any, bool) {
	if o, done := results[a]; done {
		return o.result, o.ok
	}
	results[a] = outcome{}
	resultOf := map[*analysis.Analyzer]any{}
	for _, req := range a.Requires {
		res, ok := r.run(req, p, results)
		if !ok {
			return nil, false
		}
		resultOf[req] = res
	}
	pass := &analysis.Pass{
		Analyzer: a, Fset: p.Fset, Files: p.Syntax, OtherFiles: p.OtherFiles, IgnoredFiles: p.IgnoredFiles,
		Pkg: p.Types, TypesInfo: p.TypesInfo, TypesSizes: p.TypesSizes, TypeErrors: p.TypeErrors,
		ResultOf: resultOf, ReadFile: os.ReadFile,
		Report: func(d analysis.Diagnostic) {
			rule, ok := check.Lookup(d.Category)
			if !ok {
				return
			}
			pos := p.Fset.Position(d.Pos)
			r.findings = append(r.findings, check.Finding{
				Pos: fmt.Sprintf("%s:%d:%d", pos.Filename, pos.Line, pos.Column), Code: rule.Code, Severity: rule.Severity, Message: d.Message,
			})
		},
		ImportObjectFact: func(obj types.Object, fact analysis.Fact) bool {
			f, ok := r.facts[factKey{a, obj, reflect.TypeOf(fact)}]
			if ok {
				reflect.ValueOf(fact).Elem().Set(reflect.ValueOf(f).Elem())
			}
			return ok
		},
		ExportObjectFact: func(obj types.Object, fact analysis.Fact) {
			if obj.Pkg() != p.Types {
				panic(fmt.Sprintf("%s: fact about %s, an object of another package", a.Name, obj))
			}
			r.facts[factKey{a, obj, reflect.TypeOf(fact)}] = fact
		},
		ImportPackageFact: func(*types.Package, analysis.Fact) bool { return false },
		ExportPackageFact: func(analysis.Fact) {},
		AllObjectFacts: func() []analysis.ObjectFact {
			var out []analysis.ObjectFact
			for k, f := range r.facts {
				if k.a == a {
					out = append(out, analysis.ObjectFact{Object: k.obj, Fact: f})
				}
			}
			return out
		},
		AllPackageFacts: func() []analysis.PackageFact { return nil },
	}
	if p.Module != nil {
		pass.Module = &analysis.Module{Path: p.Module.Path, Version: p.Module.Version, GoVersion: p.Module.GoVersion}
	}
	res, err := a.Run(pass)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("check: %s on %s: %w", a.Name, p.PkgPath, err))
		return nil, false
	}
	results[a] = outcome{result: res, ok: true}
	return res, true
}

// dynamicMain is the program that runs check.World on the worlds found.
const dynamicMain = `// Code generated by seahaven check; DO NOT EDIT.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/seahaven/seahaven/check"
	"github.com/seahaven/seahaven/env"
%s)

func main() {
	ctx := context.Background()
	seen := map[*env.World]bool{}
	findings := []check.Finding{}
	for _, w := range []*env.World{
%s	} {
		if w == nil || seen[w] {
			continue
		}
		seen[w] = true
		findings = append(findings, check.World(ctx, w)...)
	}
	out, err := json.Marshal(findings)
	if err == nil {
		err = os.WriteFile(os.Args[1], out, 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

// runDynamic generates a program in a temporary directory of the module
// root that imports every world's package and runs check.World on each
// world, runs it with `go run`, and returns its findings. The directory is
// removed afterwards. A package that panics as it is loaded (a tool whose
// arguments have no schema, say) stops the program before any world is
// checked: then each package is checked by a program of its own, and each
// that panics is an SH505 finding, at the line of its own that panicked.
func runDynamic(ctx context.Context, modRoot string, worlds []checkedWorld) ([]check.Finding, error) {
	if modRoot == "" {
		return nil, errors.New("check: the packages are not in a module, so their worlds cannot be checked")
	}
	tmp, err := os.MkdirTemp(modRoot, ".seahaven-check-")
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	defer os.RemoveAll(tmp)
	findings, err := runWorlds(ctx, tmp, modRoot, worlds)
	var pe *loadPanic
	if !errors.As(err, &pe) {
		return findings, err
	}
	findings = nil
	var pkgs []string // in the order of worlds, which are by package
	for _, w := range worlds {
		if !slices.Contains(pkgs, w.pkgPath) {
			pkgs = append(pkgs, w.pkgPath)
		}
	}
	for _, pkg := range pkgs {
		of := slices.DeleteFunc(slices.Clone(worlds), func(w checkedWorld) bool { return w.pkgPath != pkg })
		fs, err := runWorlds(ctx, tmp, modRoot, of)
		if errors.As(err, &pe) {
			findings = append(findings, pe.finding(pkg, of[0].pos))
			continue
		}
		if err != nil {
			return nil, err
		}
		findings = append(findings, fs...)
	}
	return findings, nil
}

// loadPanic is the output of a generated program that panicked.
type loadPanic struct{ output string }

func (e *loadPanic) Error() string {
	return "check: a world's package panics when it is loaded:\n" + e.output
}

// finding is SH505 for the package pkg, which panicked: positioned at the
// deepest line of the stack in one of its own functions (the registration
// that panicked), else at fallback (the world variable's declaration).
func (e *loadPanic) finding(pkg, fallback string) check.Finding {
	msg := e.output
	if i := strings.Index(msg, "panic: "); i >= 0 {
		msg = msg[i+len("panic: "):]
	}
	msg, _, _ = strings.Cut(msg, "\n")
	msg = strings.TrimSuffix(msg, " [recovered]")
	pos := fallback
	lines := strings.Split(e.output, "\n")
	for i := 0; i+1 < len(lines); i++ {
		fn, _, _ := strings.Cut(lines[i], "(")
		if !strings.HasPrefix(fn, pkg+".") || strings.Contains(strings.TrimPrefix(fn, pkg+"."), "/") {
			continue // not a function of pkg
		}
		if at, _, _ := strings.Cut(strings.TrimSpace(lines[i+1]), " "); at != "" {
			pos = at + ":1"
			break
		}
	}
	r, _ := check.Lookup("SH505")
	return check.Finding{Pos: pos, Code: r.Code, Severity: r.Severity,
		Message: fmt.Sprintf("package %s panics when it is loaded, so its worlds cannot be checked: %s", pkg, msg)}
}

// runWorlds writes the program that checks worlds into tmp, a directory of
// the module root, runs it and returns its findings; the error is a
// *loadPanic when the program panicked.
func runWorlds(ctx context.Context, tmp, modRoot string, worlds []checkedWorld) ([]check.Finding, error) {
	var imports, list strings.Builder
	alias := map[string]string{}
	for _, w := range worlds {
		a, ok := alias[w.pkgPath]
		if !ok {
			a = "w" + strconv.Itoa(len(alias))
			alias[w.pkgPath] = a
			fmt.Fprintf(&imports, "\t%s %q\n", a, w.pkgPath)
		}
		fmt.Fprintf(&list, "\t\t%s.%s,\n", a, w.name)
	}
	src := filepath.Join(tmp, "main.go")
	if err := os.WriteFile(src, fmt.Appendf(nil, dynamicMain, imports.String(), list.String()), 0o600); err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	out := filepath.Join(tmp, "findings.json")
	if err := os.Remove(out); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("check: %w", err)
	}
	cmd := exec.CommandContext(ctx, "go", "run", "-trimpath=false", src, out)
	cmd.Dir = modRoot
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		if s := stderr.String(); strings.HasPrefix(s, "panic: ") || strings.Contains(s, "\npanic: ") {
			return nil, &loadPanic{output: strings.TrimSpace(s)}
		}
		return nil, fmt.Errorf("check: running the worlds' checks failed (%v):\n%s", err, strings.TrimSpace(stderr.String()))
	}
	var findings []check.Finding
	data, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(data, &findings)
	}
	if err != nil {
		return nil, fmt.Errorf("check: reading the worlds' findings: %w", err)
	}
	return findings, nil
}

// relativePos rewrites a "file:line:col" position relative to dir when the
// file is inside it.
func relativePos(dir, pos string) string {
	file, _, _ := check.SplitPos(pos)
	if rel, ok := within(dir, file); ok && filepath.IsAbs(file) {
		return rel + pos[len(file):]
	}
	return pos
}

// within returns path relative to dir, and whether path is dir or below it.
func within(dir, path string) (string, bool) {
	rel, err := filepath.Rel(dir, path)
	return rel, err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
