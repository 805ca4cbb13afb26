package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func runNew(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	m := exampleMain()
	m.Stdout, m.Stderr = &out, &errOut
	err = m.Run(context.Background(), append([]string{"new"}, args...))
	return out.String(), errOut.String(), err
}

// A new world builds its fixture, passes its own tests, vet and
// `seahaven check` in a module of its own.
func TestNewWorld(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a module of its own")
	}
	dir := filepath.Join(t.TempDir(), "lib")
	mustModule(t, dir, "example.com/lib")
	stdout, stderr, err := runNew(t, "world", "--dir", filepath.Join(dir, "library"), "library")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.HasPrefix(stdout, "wrote world library (example.com/lib/library) into ") {
		t.Errorf("stdout:\n%s", stdout)
	}
	for _, args := range [][]string{
		{"generate", "./..."},
		{"vet", "./..."},
		{"test", "-count=1", "./..."},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "library", "fixtures", "demo", "fixture.yaml")); err != nil {
		t.Errorf("go generate made no demo fixture: %v", err)
	}
	if out, errOut, err := runCheck(t, "-C", dir, "./..."); err != nil {
		t.Errorf("seahaven check: %v\n%s%s", err, out, errOut)
	}

	// The fixtures are embedded: check reads them from the world's value
	// and names the source file they were embedded from.
	sidecar := filepath.Join(dir, "library", "fixtures", "demo", "fixture.yaml")
	b, err := os.ReadFile(sidecar)
	if err != nil {
		t.Fatal(err)
	}
	line := bytes.Count(b, []byte("\n")) + 1
	if err := os.WriteFile(sidecar, append(b, "colour: red\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runCheck(t, "-C", dir, "./...")
	want := fmt.Sprintf("library/fixtures/demo/fixture.yaml:%d:1: SH401 error: fixture demo: the sidecar does not parse: colour: unknown key", line)
	if exitCode(err) != 1 || !strings.Contains(out, want) {
		t.Errorf("seahaven check of an embedded fixture with an unknown key: %v\n%s%s\nwant %s", err, out, errOut, want)
	}
	if err := os.WriteFile(sidecar, b, 0o644); err != nil {
		t.Fatal(err)
	}

	// The world's own tests check the fixture it ships: a schema that
	// drifted from it fails go test, as it fails seahaven check.
	src := filepath.Join(dir, "library", "library.go")
	code, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	drifted := bytes.Replace(code, []byte("  quantity INTEGER NOT NULL"), []byte("  note TEXT,\n  quantity INTEGER NOT NULL"), 1)
	if bytes.Equal(drifted, code) {
		t.Fatalf("library.go has no quantity column to drift:\n%s", code)
	}
	if err := os.WriteFile(src, drifted, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "test", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err == nil || !bytes.Contains(out, []byte("--- FAIL: TestWorldChecksClean")) || !bytes.Contains(out, []byte("SH403 error: fixture demo")) {
		t.Errorf("go test of a world whose schema drifted from its fixture: %v, want TestWorldChecksClean to fail with SH403\n%s", err, out)
	}
}

// TestNewWorld_Names: worlds whose names are near the names the
// scaffold's files use (scaffold.CheckGoName) compile and vet, tests
// included, side by side in one module.
func TestNewWorld_Names(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own")
	}
	dir := filepath.Join(t.TempDir(), "lib")
	mustModule(t, dir, "example.com/lib")
	for _, name := range []string{"contexts", "task_list", "fixtures2", "logs", "strings", "errs", "demo_shop", "stock_tests"} {
		if _, stderr, err := runNew(t, "world", "--dir", filepath.Join(dir, name), name); err != nil {
			t.Fatalf("new world %s: %v\n%s", name, err, stderr)
		}
	}
	cmd := exec.Command("go", "vet", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go vet: %v\n%s", err, out)
	}
}

func TestNewWorld_Refused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lib")
	if err := os.MkdirAll(filepath.Join(dir, "full"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "full", "x.go"), []byte("package full\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/lib\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noMod := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"world", "--dir", filepath.Join(dir, "x"), "Library"}, `new world: world name "Library": want a lower-case Go package name`},
		{[]string{"world", "--dir", filepath.Join(dir, "x"), "func"}, `new world: world name "func": want a lower-case Go package name`},
		{[]string{"world", "--dir", filepath.Join(dir, "x"), "my-world"}, `new world: world name "my-world"`},
		// Names env.NewWorld refuses, in its words.
		{[]string{"world", "--dir", filepath.Join(dir, "x"), "main"}, `new world: world name "main" is reserved`},
		{[]string{"world", "--dir", filepath.Join(dir, "x"), "temp"}, `new world: world name "temp" is reserved`},
		{[]string{"world", "--dir", filepath.Join(dir, "x"), "a__b"}, `new world: world name "a__b" must not contain "__"`},
		// Names the world's files would not compile with.
		{[]string{"world", "--dir", filepath.Join(dir, "x"), "fmt"}, `new world: world name "fmt" is the name of a package the new world's files import`},
		{[]string{"world", "--dir", filepath.Join(dir, "x"), "string"}, `new world: world name "string" is one of Go's predeclared identifiers`},
		{[]string{"world", "--dir", filepath.Join(dir, "full"), "full"}, "new world: " + filepath.Join(dir, "full") + " is not empty"},
		{[]string{"world", "--dir", filepath.Join(noMod, "w"), "w"}, "new world: no go.mod in " + filepath.Join(noMod, "w") + " or above it; pass --import"},
		{[]string{"world"}, "new world takes one NAME, got 0 arguments"},
		// A flag after NAME is an argument to the flag package.
		{[]string{"world", "w", "--dir", filepath.Join(dir, "x")}, "new world takes one NAME, got 3 arguments: flags go before NAME (seahaven new world --dir DIR w)"},
		{[]string{"planet", "x"}, `new: want "seahaven new world NAME"`},
	} {
		_, _, err := runNew(t, tt.args...)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("new %q: %v, want %q…", tt.args, err, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused new world wrote %s: %v", filepath.Join(dir, "x"), err)
	}
	// An explicit import path needs no go.mod.
	if _, stderr, err := runNew(t, "world", "--dir", filepath.Join(noMod, "w"), "--import", "example.com/w", "w"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	b, err := os.ReadFile(filepath.Join(noMod, "w", "w_test.go"))
	if err != nil || !bytes.Contains(b, []byte(`"example.com/w"`)) {
		t.Errorf("w_test.go does not import example.com/w: %v", err)
	}
}

// TestNewWorld_Hint: the commands printed after a new world tidy the
// module first (the new package imports what it does not require yet), name
// its packages as they are typed in the current directory, and the check is
// the author's own binary's.
func TestNewWorld_Hint(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/lib\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "far")
	t.Chdir(root)
	for _, tt := range []struct {
		dir  string // the --dir flag
		pkgs string // the package pattern the hint names
	}{
		{"a", "./a/..."},
		{"./b", "./b/..."},
		{filepath.Join(root, "c"), "./c/..."},
		{"d/e", "./d/e/..."},
		{outside, filepath.ToSlash(outside) + "/..."},
	} {
		stdout, stderr, err := runNew(t, "world", "--dir", tt.dir, "--import", "example.com/lib/w", "stock")
		if err != nil {
			t.Fatalf("new world --dir %s: %v\n%s", tt.dir, err, stderr)
		}
		want := "next: go mod tidy && go generate " + tt.pkgs + " && go test " + tt.pkgs + "\n" +
			`then: build a binary of your own, func main() { cli.Run(stock.World) } (docs/authoring.md, "Your own binary"), and run its check ` + tt.pkgs + "\n"
		if !strings.HasSuffix(stdout, want) {
			t.Errorf("new world --dir %s printed:\n%s\nwant it to end:\n%s", tt.dir, stdout, want)
		}
	}
}
