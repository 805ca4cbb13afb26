// Command importcheck enforces the one-way import direction of DESIGN.md:
// cmd -> cli -> {openenv, app} -> composition -> {sqlitestore, fixture} -> env, with
// openenv importing no project package but env and leaf helpers, with
// schemas and web as leaves, sqlitestore the only product importer of the
// SQLite driver, the benchmark tooling (internal/bench) imported by the
// command (cli, and cmd/seahaven through it) alone, and cli knowing no
// example world. It reads `go list` and fails on any edge that
// flows the wrong way.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

const module = "github.com/seahaven/seahaven/"

// forbidden maps a project package to what it must never depend on,
// directly or transitively: project packages by path relative to the
// module (a trailing "/" means a whole tree), or third-party path prefixes.
var forbidden = map[string][]string{
	"env":         {"composition", "sqlitestore", "fixture", "openenv", "cmd/", "cli", "web", "examples/", "github.com/ncruces/", "github.com/go-chi/", "github.com/coder/", "gopkg.in/yaml.v3"},
	"sqlitestore": {"composition", "fixture", "openenv", "cmd/", "cli", "web", "examples/"},
	"fixture":     {"composition", "sqlitestore", "openenv", "cmd/", "cli", "web", "examples/", "github.com/ncruces/"},
	"composition": {"openenv", "cmd/", "cli", "web", "examples/"},
	"schemas":     {"env", "composition", "sqlitestore", "fixture", "openenv", "cmd/", "cli", "web"},
	"web":         {"env", "composition", "sqlitestore", "fixture", "openenv", "cmd/", "cli"},
	"check":       {"openenv", "cmd/", "cli", "web"},
	"task":        {"openenv", "cmd/", "cli", "web"},
	// openenv is the protocol adapter only: it sees the application through
	// the Backend interface it declares (DESIGN.md §1).
	"openenv":         {"app", "task", "composition", "sqlitestore", "fixture", "check", "cmd/", "cli", "web", "examples/", "internal/yamlnode", "github.com/ncruces/", "gopkg.in/yaml.v3"},
	"app":             {"cmd/", "cli", "web", "examples/"},
	"compositiontest": {"openenv", "app", "cmd/", "cli", "web", "examples/"},
	// The command knows worlds only as its caller gives them.
	"cli": {"cmd/", "examples/"},
}

// driverImporters are the packages that may import the SQLite driver:
// sqlitestore, and the benchmark tooling, whose floors time the raw driver.
var driverImporters = map[string]bool{"sqlitestore": true, "internal/bench": true}

// toolingImporters maps a tooling package to the only packages that may
// depend on it: no product package does.
var toolingImporters = map[string][]string{"internal/bench": {"cli", "cmd/seahaven"}}

func main() {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", "./...").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "importcheck: go list:", err)
		os.Exit(2)
	}
	var bad []string
	for line := range strings.Lines(string(out)) {
		parts := strings.SplitN(strings.TrimSuffix(line, "\n"), "|", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[0], module) {
			continue
		}
		pkg := strings.TrimPrefix(parts[0], module)
		for _, imp := range strings.Fields(parts[1]) {
			if strings.HasPrefix(imp, "github.com/ncruces/go-sqlite3") && !driverImporters[pkg] {
				bad = append(bad, fmt.Sprintf("%s imports %s: only sqlitestore may", pkg, imp))
			}
		}
		for _, dep := range strings.Fields(parts[2]) {
			if tool, ok := strings.CutPrefix(dep, module); ok {
				if allowed, ok := toolingImporters[tool]; ok && !slices.Contains(allowed, pkg) {
					bad = append(bad, fmt.Sprintf("%s depends on %s: tooling only %s may import", pkg, dep, strings.Join(allowed, ", ")))
				}
			}
			for _, rule := range forbidden[pkg] {
				if matches(dep, rule) {
					bad = append(bad, fmt.Sprintf("%s depends on %s", pkg, dep))
				}
			}
		}
	}
	for _, b := range bad {
		fmt.Fprintln(os.Stderr, "importcheck:", b)
	}
	if len(bad) > 0 {
		os.Exit(1)
	}
}

// matches reports whether dep is covered by rule.
func matches(dep, rule string) bool {
	if strings.Contains(rule, ".") { // third-party prefix
		return strings.HasPrefix(dep, rule)
	}
	rel, ok := strings.CutPrefix(dep, module)
	if !ok {
		return false
	}
	if strings.HasSuffix(rule, "/") {
		return strings.HasPrefix(rel, rule)
	}
	return rel == rule || strings.HasPrefix(rel, rule+"/")
}
