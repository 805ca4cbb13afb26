package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"
)

// runNamed runs args through the example worlds' Main named name and
// returns its output, what it prints on failing (as Run does) included,
// and its error.
func runNamed(t *testing.T, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	m := exampleMain()
	m.Name = name
	m.Stdout, m.Stderr = &out, &errOut
	if err = m.Run(context.Background(), args); err != nil {
		m.fail(err)
	}
	return out.String(), errOut.String(), err
}

// noSeahaven fails t when out names the program seahaven: a word
// "seahaven" followed by a space or a colon (SEAHAVEN_* variables and
// the seahaven-instances directory are no name of the program).
func noSeahaven(t *testing.T, what, out string) {
	t.Helper()
	if strings.Contains(out, "seahaven ") || strings.Contains(out, "seahaven:") {
		t.Errorf("%s names seahaven:\n%s", what, out)
	}
}

func TestMain_Name(t *testing.T) {
	t.Run("Default", func(t *testing.T) {
		if m := exampleMain(); m.Name != DefaultName || DefaultName != "seahaven" {
			t.Fatalf("New(...).Name = %q, DefaultName = %q, want seahaven", m.Name, DefaultName)
		}
		_, stderr, err := runNamed(t, DefaultName, "serve", "-h")
		if !errors.Is(err, flag.ErrHelp) || !strings.HasPrefix(stderr, "Usage of seahaven serve:\n") {
			t.Errorf("serve -h: %v\n%s", err, stderr)
		}
		// A Main made without New is seahaven too.
		var out bytes.Buffer
		m := &Main{Stdout: &out, Stderr: &out}
		if err := m.Run(context.Background(), []string{"help"}); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), "seahaven — ") || !strings.Contains(out.String(), "\n  seahaven serve    [flags]") ||
			!strings.Contains(out.String(), `Run "seahaven <command> -h" for a command's flags.`) {
			t.Errorf("help of a Main without a name:\n%s", out.String())
		}
	})

	t.Run("Serve", func(t *testing.T) {
		_, stderr, err := runNamed(t, "library", "serve", "-h")
		if !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("serve -h: %v", err)
		}
		if !strings.HasPrefix(stderr, "Usage of library serve:\n") || !strings.Contains(stderr, "for library grade (default: off; env SEAHAVEN_RECORD)") {
			t.Errorf("serve -h:\n%s", stderr)
		}
		noSeahaven(t, "serve -h", stderr)
	})

	t.Run("Fixtures", func(t *testing.T) {
		_, stderr, err := runNamed(t, "library", "fixtures")
		if code := exitCode(err); code != 2 {
			t.Fatalf("fixtures: exit code %d (%v), want 2", code, err)
		}
		want := "Usage: library fixtures build|list|verify [--world W] [--dir DIR]\n"
		if !strings.HasPrefix(stderr, want) || !strings.HasSuffix(stderr, "\nlibrary: fixtures: want build, list or verify\n") {
			t.Errorf("fixtures:\n%s\nwant %q… ending in the error", stderr, want)
		}
		noSeahaven(t, "fixtures", stderr)
		_, stderr, _ = runNamed(t, "library", "fixtures", "list", "-h")
		if !strings.HasPrefix(stderr, "Usage of library fixtures list:\n") {
			t.Errorf("fixtures list -h:\n%s", stderr)
		}
	})

	t.Run("Check", func(t *testing.T) {
		dir := mustCheckModule(t)
		// A world in a main package is not checked dynamically: no program
		// is generated, run or compiled.
		stdout, stderr, err := runNamed(t, "library", "check", "-C", dir, "-v", "./cmd/local")
		if err != nil {
			t.Fatalf("check: %v\n%s", err, stderr)
		}
		if want := "library check: ok: 1 package, 0 worlds checked, 0 warnings\n"; stdout != want {
			t.Errorf("stdout = %q, want %q", stdout, want)
		}
		if want := "library check: not checked dynamically: example.com/checkmod/cmd/local.World (a main package cannot be imported)\n"; stderr != want {
			t.Errorf("stderr = %q, want %q", stderr, want)
		}
		_, stderr, _ = runNamed(t, "library", "check", "-h")
		if !strings.HasPrefix(stderr, "Usage: library check [-C dir]") {
			t.Errorf("check -h:\n%s", stderr)
		}
	})

	t.Run("Errors", func(t *testing.T) {
		for _, tt := range []struct {
			args   []string // the command line
			stdout string   // what stdout starts with
			stderr string   // what stderr starts with ("": nothing more than the error)
			err    string   // the error
		}{
			{args: nil, stderr: "library — deterministic", err: "no command"},
			{args: []string{"serv"}, stderr: "library — deterministic", err: `unknown command "serv"`},
			{args: []string{"help"}, stdout: "library — deterministic"},
			{args: []string{"version"}, stdout: "library "},
			{args: []string{"healthcheck", "now"}, err: `healthcheck takes no arguments, got ["now"]`},
			{args: []string{"bench", "echo", "x"}, err: `bench echo takes no arguments, got ["x"]`},
			{args: []string{"serve", "--no-such-flag"}, stderr: "flag provided but not defined: -no-such-flag\nUsage of library serve:\n", err: "flag provided but not defined: -no-such-flag"},
			{args: []string{"new", "planet"}, err: `new: want "library new world NAME"`},
			{args: []string{"new", "world", "w", "--dir", filepath.Join(t.TempDir(), "x")}, stderr: "Usage: library new world [--dir DIR] [--import PATH] NAME\n",
				err: "new world takes one NAME, got 3 arguments: flags go before NAME (library new world --dir DIR w)"},
			{args: []string{"grade"}, stderr: "Usage: library grade [flags] FILE...\n", err: "grade: no trajectory files given"},
		} {
			stdout, stderr, err := runNamed(t, "library", tt.args...)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Errorf("%q: err = %v, want %s", tt.args, err, tt.err)
				}
				if !strings.HasSuffix(stderr, "library: "+tt.err+"\n") {
					t.Errorf("%q: stderr does not end in %q:\n%s", tt.args, "library: "+tt.err, stderr)
				}
			}
			if !strings.HasPrefix(stdout, tt.stdout) || !strings.HasPrefix(stderr, tt.stderr) {
				t.Errorf("%q: stdout\n%s\nstderr\n%s\nwant them to start with %q and %q", tt.args, stdout, stderr, tt.stdout, tt.stderr)
			}
			noSeahaven(t, strings.Join(tt.args, " "), stdout+stderr)
		}
	})
}

func TestProgName(t *testing.T) {
	for _, tt := range []struct {
		arg0   string // os.Args[0]
		pkg    string // the main package's path (debug.BuildInfo.Path)
		caller string // the file that called Run
		want   string
	}{
		// go build -o bin/library ./cmd/library; go install.
		{arg0: "bin/library", pkg: "example.com/library/cmd/library", caller: "/src/library/cmd/library/main.go", want: "library"},
		{arg0: "/usr/local/bin/seahaven", pkg: "github.com/seahaven/seahaven/cmd/seahaven", want: "seahaven"},
		{arg0: "library", want: "library"},
		// go run ./cmd/library names the executable after the package.
		{arg0: "/tmp/go-build123/b001/exe/library", pkg: "example.com/library/cmd/library", caller: "/src/library/cmd/library/main.go", want: "library"},
		// go run main.go names it after the file: the package's directory
		// names the program instead, where the file's path is known.
		{arg0: "/tmp/go-build123/b001/exe/main", pkg: "command-line-arguments", caller: "/src/library/cmd/library/main.go", want: "library"},
		{arg0: "/tmp/go-build123/b001/exe/main", pkg: "command-line-arguments", caller: "./main.go", want: "main"}, // -trimpath
		// Run again unchanged, go run runs the executable it cached in the
		// build cache, GOCACHE/50/50653e…-d/main: still the package's.
		{arg0: "/root/.cache/go-build/50/50653e20287b4cbd0d65b4742744b5fdb670430b7528d572fdee7c51d3ac5f34-d/main", pkg: "command-line-arguments", caller: "/src/library/cmd/library/main.go", want: "library"},
		{arg0: "/root/.cache/go-build/50/50653e20287b4cbd0d65b4742744b5fdb670430b7528d572fdee7c51d3ac5f34-d/main", pkg: "command-line-arguments", caller: "./main.go", want: "main"}, // -trimpath
		// A directory merely named like one is not the cache's.
		{arg0: "/srv/50/not-hex-d/main", pkg: "command-line-arguments", caller: "/src/library/cmd/library/main.go", want: "main"},
		// go build main.go: ./main is what was run.
		{arg0: "./main", pkg: "command-line-arguments", caller: "/src/library/cmd/library/main.go", want: "main"},
		{arg0: "library.exe", want: "library"},
		{arg0: "", want: DefaultName},
		{arg0: "/", want: DefaultName},
	} {
		if got := progName(filepath.FromSlash(tt.arg0), tt.pkg, filepath.FromSlash(tt.caller)); got != tt.want {
			t.Errorf("progName(%q, %q, %q) = %q, want %q", tt.arg0, tt.pkg, tt.caller, got, tt.want)
		}
	}
}

// TestUsage_NamesEverySubcommand holds the usage text to the commands of
// more than one word that answer -h with flags of their own: each has its
// line, as every other command does.
func TestUsage_NamesEverySubcommand(t *testing.T) {
	usage, _, err := runNamed(t, DefaultName, "help")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"bench", "echo"}, {"bench", "checkpoint"}, {"new", "world"}} {
		name := strings.Join(cmd, " ")
		_, stderr, err := runNamed(t, DefaultName, append(cmd, "-h")...)
		if !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr, "seahaven "+name) {
			t.Fatalf("%s -h: %v\n%s", name, err, stderr)
		}
		if !strings.Contains(usage, "\n  seahaven "+name+" ") {
			t.Errorf("the usage text has no line for %s:\n%s", name, usage)
		}
	}
}
