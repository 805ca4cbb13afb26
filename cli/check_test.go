package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/check"
)

var update = flag.Bool("update", false, "rewrite golden files")

// mustCheckModule copies testdata/checkmod into a temporary directory and
// makes it a module that uses this repository's seahaven (see mustModule).
// It returns the module's directory.
func mustCheckModule(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "checkmod")
	src := filepath.Join("testdata", "checkmod")
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		tb.Fatal(err)
	}
	mustModule(tb, dir, "example.com/checkmod")
	return dir
}

// mustModule makes dir (made with its parents when they do not exist) the
// module named module that uses this repository's seahaven through a
// replace directive, with this repository's requirements and sums.
func mustModule(tb testing.TB, dir, module string) {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		tb.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	if err != nil {
		tb.Fatal(err)
	}
	// The repository's requirements, as the module's indirect ones.
	requires := regexp.MustCompile(`(?ms)^require \(\n.*?^\)\n`).FindAll(gomod, -1)
	goLine := regexp.MustCompile(`(?m)^go .*$`).Find(gomod)
	var b bytes.Buffer
	b.WriteString("module " + module + "\n\n")
	b.Write(goLine)
	b.WriteString("\n\nrequire github.com/seahaven/seahaven v0.0.0\n\n")
	for _, r := range requires {
		b.Write(r)
		b.WriteString("\n")
	}
	b.WriteString("replace github.com/seahaven/seahaven => " + repo + "\n")
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), b.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// runCheck runs `seahaven check args...` through Main and returns its
// output and error.
func runCheck(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	m := exampleMain()
	m.Stdout, m.Stderr = &out, &errOut
	err = m.Run(context.Background(), append([]string{"check"}, args...))
	return out.String(), errOut.String(), err
}

func TestCheckCommand(t *testing.T) {
	dir := mustCheckModule(t)

	t.Run("EveryCode", func(t *testing.T) {
		stdout, stderr, err := runCheck(t, "-C", dir, "-v", "./...")
		if code := exitCode(err); code != 1 {
			t.Fatalf("exit code %d (err %v), want 1; stderr:\n%s", code, err, stderr)
		}
		// Main.Run's caller may print what it returns.
		if got := fmt.Sprint(err); got != "exit status 1" {
			t.Errorf("the error reads %q, want %q", got, "exit status 1")
		}
		golden := filepath.Join("testdata", "check.golden")
		if *update {
			if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if stdout != string(want) {
			t.Errorf("output:\n%s\nwant (testdata/check.golden; -update rewrites it):\n%s", stdout, want)
		}
		// Every dynamic and static code is exercised.
		for _, r := range check.Rules {
			if !strings.Contains(stdout, ": "+r.Code+" "+r.Severity+": ") {
				t.Errorf("no %s %s in the output", r.Code, r.Severity)
			}
		}
		for _, line := range []string{
			"seahaven check: checking example.com/checkmod/internal/shown.World\n",
			"seahaven check: not checked dynamically: example.com/checkmod/cmd/local.World (a main package cannot be imported)\n",
			"seahaven check: not checked dynamically: example.com/checkmod/internal/hidden.world (unexported)\n",
		} {
			if !strings.Contains(stderr, line) {
				t.Errorf("stderr lacks %q:\n%s", line, stderr)
			}
		}
		// The generated program's directory is gone.
		if matches, _ := filepath.Glob(filepath.Join(dir, ".seahaven-check-*")); len(matches) > 0 {
			t.Errorf("left behind: %v", matches)
		}
	})

	t.Run("WarningsOnly", func(t *testing.T) {
		// The worlds under worlds/ check clean and add nothing to the output.
		stdout, stderr, err := runCheck(t, "-C", dir, "./describe", "./shared", "./worlds/...")
		if err != nil {
			t.Fatalf("err = %v, want nil for warnings only; stderr:\n%s", err, stderr)
		}
		want := "describe/describe.go:14:1: SH206 warning: pay_create_charge's description names a tool of payments the agent cannot call by that name: create_customer (published as pay_create_customer)\n" +
			"shared/shared.go:19:1: SH207 warning: the tool post of node ledger reaches the agent under 2 names: a_post, b_post\n" +
			"seahaven check: ok: 4 packages, 5 worlds checked, 2 warnings\n"
		if stdout != want {
			t.Errorf("output:\n%s\nwant:\n%s", stdout, want)
		}
	})

	t.Run("JSON", func(t *testing.T) {
		stdout, _, err := runCheck(t, "-C", dir, "-json", "./calls")
		if exitCode(err) != 1 {
			t.Fatalf("err = %v, want exit code 1", err)
		}
		var got []check.Finding
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("output is not a JSON array of findings: %v\n%s", err, stdout)
		}
		want := []check.Finding{
			{Pos: "calls/calls.go:21:16", Code: "SH208", Severity: "error", Message: `composition.Open inside the tool function of "settle" (calls): an instance cannot be made inside a call; reach added worlds through ctx.Worlds`},
			{Pos: "calls/calls.go:26:23", Code: "SH209", Severity: "error", Message: `c.Worlds.Get("ledgr") names no registered child of calls (its children: ledger)`},
		}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("findings = %+v\nwant %+v", got, want)
		}
	})

	// A package that panics when it is loaded is a finding of its own, and
	// the other packages' worlds are checked all the same.
	t.Run("JSONPanic", func(t *testing.T) {
		stdout, _, err := runCheck(t, "-C", dir, "-json", "./panics", "./badschema")
		if exitCode(err) != 1 {
			t.Fatalf("err = %v, want exit code 1", err)
		}
		var got []check.Finding
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("output is not a JSON array of findings: %v\n%s", err, stdout)
		}
		var codes []string
		for _, f := range got {
			codes = append(codes, f.Pos+" "+f.Code)
		}
		if want := []string{"badschema/badschema.go:8:1 SH302", "panics/panics.go:15:1 SH505"}; !slices.Equal(codes, want) {
			t.Errorf("findings = %+v\nwant %q", got, want)
		}
	})

	t.Run("ErrNoPackages", func(t *testing.T) {
		_, _, err := runCheck(t, "-C", dir, "./archive/fixtures/...")
		var ee *exitError
		if err == nil || errors.As(err, &ee) || !strings.Contains(err.Error(), "matched no packages") {
			t.Errorf("err = %v, want one saying the pattern matched no packages", err)
		}
	})

	t.Run("ErrNoSuchDirectory", func(t *testing.T) {
		_, _, err := runCheck(t, "-C", dir, "./nothing/...")
		if err == nil || !strings.Contains(err.Error(), "./nothing") {
			t.Errorf("err = %v, want one naming ./nothing", err)
		}
	})

	t.Run("ErrDoesNotCompile", func(t *testing.T) {
		bad := filepath.Join(dir, "bad")
		if err := os.MkdirAll(bad, 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(bad)
		if err := os.WriteFile(filepath.Join(bad, "bad.go"), []byte("package bad\n\nvar x int = \"x\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := runCheck(t, "-C", dir, "./bad")
		if err == nil || !strings.Contains(err.Error(), "do not load") || !strings.Contains(err.Error(), "bad.go:3") {
			t.Errorf("err = %v, want one naming bad.go:3", err)
		}
	})
}

func TestRelativePos(t *testing.T) {
	for _, tt := range []struct {
		dir, pos string // the working directory and a position
		want     string // the position as printed
	}{
		{"/m", "/m/a/b.go:3:4", "a/b.go:3:4"},
		{"/m", "/m/a/fixture.yaml:1:1", "a/fixture.yaml:1:1"},
		{"/m", "/elsewhere/b.go:3:4", "/elsewhere/b.go:3:4"},
		{"/m", "/mm/b.go:3:4", "/mm/b.go:3:4"},
		{"/m", "rel/b.go:3:4", "rel/b.go:3:4"},
		{"/m", "/m/b.go", "b.go"},
	} {
		if got := relativePos(tt.dir, tt.pos); got != tt.want {
			t.Errorf("relativePos(%q, %q) = %q, want %q", tt.dir, tt.pos, got, tt.want)
		}
	}
}
