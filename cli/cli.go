package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/seahaven/seahaven/env"
)

// DefaultName is the name New gives a Main: the program's own.
const DefaultName = "seahaven"

// Main is the seahaven program over a set of worlds: one small type per
// subcommand, each with Run(ctx, args) error. Its fields are set before
// Run; a Main is not safe for concurrent use.
type Main struct {
	// Name is what the program calls itself in its usage texts, flag
	// sets, messages and hints ("Usage of NAME serve", "NAME check: ok:
	// …"): DefaultName from New; Run sets it to the executable's name, so
	// a world author's binary names itself. Empty is DefaultName.
	Name           string
	Stdout, Stderr io.Writer
	// Worlds are the worlds the CLI can name with --world.
	Worlds map[string]*env.World
	// Default is the world a command uses when --world names none: the
	// first world given to New.
	Default string
}

// New returns a Main writing to the process's standard streams and
// knowing worlds by their names; the first is the default. It panics when
// two worlds share a name, or none is given.
func New(worlds ...*env.World) *Main {
	if len(worlds) == 0 {
		panic("cli.New: no worlds")
	}
	m := &Main{Name: DefaultName, Stdout: os.Stdout, Stderr: os.Stderr, Worlds: map[string]*env.World{}, Default: worlds[0].Name()}
	for _, w := range worlds {
		if _, dup := m.Worlds[w.Name()]; dup {
			panic(fmt.Sprintf("cli.New: two worlds named %q", w.Name()))
		}
		m.Worlds[w.Name()] = w
	}
	return m
}

// Run runs the program with the process's arguments over worlds (the
// first is the default) until it ends or the process is interrupted
// (SIGINT, SIGTERM), and exits with its status. A second signal ends the
// process at once, as if it had no handler, without waiting for a
// shutdown under way. It is a world author's whole main:
//
//	func main() { cli.Run(library.World) }
//
// The program calls itself by its executable's name (library, for a
// binary built from ./cmd/library; see [Main.Name]).
func Run(worlds ...*env.World) {
	ctx, stop := notifyOnce(os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := New(worlds...)
	var pkg string
	if bi, ok := debug.ReadBuildInfo(); ok {
		pkg = bi.Path
	}
	_, caller, _, _ := runtime.Caller(1)
	m.Name = progName(os.Args[0], pkg, caller)
	if err := m.Run(ctx, os.Args[1:]); err != nil {
		m.fail(err)
		stop()
		os.Exit(exitCode(err))
	}
}

// notifyOnce returns a context the first of sigs cancels, and a function
// that cancels it. Once either has, sigs take their default action again
// (a second Ctrl-C or SIGTERM ends the process at once), and that is so
// before the context is done: with signal.NotifyContext and a
// context.AfterFunc restoring it, a second signal that came between a
// shutdown starting and the AfterFunc running was swallowed, and the
// process waited out --shutdown-timeout.
func notifyOnce(sigs ...os.Signal) (context.Context, func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, sigs...)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-c:
		case <-ctx.Done():
		}
		signal.Stop(c)
		cancel()
	}()
	return ctx, cancel
}

// progName returns the name a program calls itself, run as arg0 from the
// main package pkg, Run called from the source file caller: the base name
// of its executable, without .exe, as `go build` and `go run ./cmd/library`
// name it after the package's directory. `go run main.go` builds the
// package command-line-arguments into an executable named after its first
// file (main, in a go-build directory, or in the build cache when it runs
// one it cached): that one is named after the
// directory of caller, the package's, where it is known (not under
// -trimpath). An arg0 that names nothing is DefaultName.
func progName(arg0, pkg, caller string) string {
	name := filepath.Base(arg0)
	if pkg == "command-line-arguments" && filepath.IsAbs(caller) && goRunExe(arg0) {
		name = filepath.Base(filepath.Dir(caller))
	}
	if ext := filepath.Ext(name); strings.EqualFold(ext, ".exe") {
		name = strings.TrimSuffix(name, ext)
	}
	if name == "" || name == "." || name == string(filepath.Separator) {
		return DefaultName
	}
	return name
}

// goRunExe reports whether path is an executable `go run` built:
// WORK/b001/exe/NAME, in a work directory named go-build…, or, run again
// unchanged, the one it cached in the build cache, GOCACHE/xx/xx…-d/NAME
// (the directory named by the hexadecimal hash its parent begins).
func goRunExe(path string) bool {
	exe := filepath.Dir(path)
	work := filepath.Dir(filepath.Dir(exe))
	if filepath.Base(exe) == "exe" && strings.HasPrefix(filepath.Base(work), "go-build") {
		return true
	}
	hash, ok := strings.CutSuffix(filepath.Base(exe), "-d")
	prefix := filepath.Base(filepath.Dir(exe))
	return ok && len(hash) > len(prefix) && len(prefix) == 2 && strings.HasPrefix(hash, prefix) &&
		strings.Trim(hash, "0123456789abcdef") == ""
}

// name returns the name m calls itself: Name, or DefaultName.
func (m *Main) name() string {
	return cmp.Or(m.Name, DefaultName)
}

// names returns the names of the worlds m knows, sorted.
func (m *Main) names() []string {
	return slices.Sorted(maps.Keys(m.Worlds))
}

// exitError carries an exit code, and the error to print, if any: one
// with no error was reported already (check's findings), and reads as
// "exit status N".
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 1
}

func (m *Main) fail(err error) {
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.err == nil {
		return
	}
	fmt.Fprintln(m.Stderr, m.name()+":", err)
}

// usageText is the program's usage text, PROG standing for its name.
const usageText = `PROG — deterministic, composable tool worlds served over OpenEnv.

Usage:
  PROG serve    [flags]   serve a world over OpenEnv (HTTP, WebSocket, MCP)
  PROG fixtures build|list|verify [flags]
  PROG check    [flags] [packages]   lint the worlds of a module (docs/lints.md)
  PROG grade    [flags] FILE...      replay and grade recorded trajectories (docs/tasks.md)
  PROG new world [flags] NAME        write a new world: schema, tools, tests, fixture generator, task
  PROG healthcheck [--url URL]       exit 0 if a server's /health answers healthy
  PROG bench    [flags]   load-test a server: sessions, latency, memory (docs/scale.md)
  PROG bench echo [--addr A]         a bare WebSocket echo server (the benchmark's floor)
  PROG bench checkpoint [flags]      checkpoint and restore against resets: latency, CPU, forks (docs/checkpoints.md)
  PROG version

Run "PROG <command> -h" for a command's flags.
`

// usage returns the program's usage text.
func (m *Main) usage() string {
	return strings.ReplaceAll(usageText, "PROG", m.name())
}

// Run runs the subcommand named by args[0].
func (m *Main) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(m.Stderr, m.usage())
		return &exitError{code: 2, err: errors.New("no command")}
	}
	switch args[0] {
	case "serve":
		return (&ServeCommand{m: m}).Run(ctx, args[1:])
	case "fixtures":
		return (&FixturesCommand{m: m}).Run(ctx, args[1:])
	case "check":
		return (&CheckCommand{m: m}).Run(ctx, args[1:])
	case "healthcheck":
		return (&HealthcheckCommand{m: m}).Run(ctx, args[1:])
	case "bench":
		return (&BenchCommand{m: m}).Run(ctx, args[1:])
	case "grade":
		return (&GradeCommand{m: m}).Run(ctx, args[1:])
	case "new":
		return (&NewCommand{m: m}).Run(ctx, args[1:])
	case "version":
		fmt.Fprintln(m.Stdout, m.name(), version())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(m.Stdout, m.usage())
		return nil
	}
	fmt.Fprint(m.Stderr, m.usage())
	return &exitError{code: 2, err: fmt.Errorf("unknown command %q", args[0])}
}

// world returns the world named by --world.
func (m *Main) world(name string) (*env.World, error) {
	w, ok := m.Worlds[name]
	if !ok {
		return nil, fmt.Errorf("unknown world %q (known: %s)", name, strings.Join(m.names(), ", "))
	}
	return w, nil
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// envOr returns the environment variable's value, or def.
func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

// parseNoArgs parses args into fs, a flag set of m's, and fails when an
// argument is left.
func parseNoArgs(m *Main, fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s takes no arguments, got %q", strings.TrimPrefix(fs.Name(), m.name()+" "), fs.Args())
	}
	return nil
}

// newFlagSet returns the flag set of m's subcommand name, "NAME name".
func newFlagSet(m *Main, name string) *flag.FlagSet {
	fs := flag.NewFlagSet(m.name()+" "+name, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	return fs
}

// envName finds the variable a flag's usage names: "env SEAHAVEN_X".
var envName = regexp.MustCompile(`\benv (SEAHAVEN_[A-Z0-9_]+)`)

// envExpect says what each kind of flag value takes.
var envExpect = map[string]string{
	"*flag.intValue":      "an integer",
	"*flag.int64Value":    "an integer",
	"*flag.float64Value":  "a number",
	"*flag.durationValue": "a duration such as 30s, 5m or 1h",
	"*flag.boolValue":     "true or false",
}

// applyEnv sets each flag not given on the command line from the
// variable its usage names, when that is set (and, but for a string flag,
// not empty), with the flag's own parser: a value it refuses is an error naming the variable,
// the value and what is expected, never a silent default.
func applyEnv(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		m := envName.FindStringSubmatch(f.Usage)
		if m == nil || given[f.Name] {
			return
		}
		v, ok := os.LookupEnv(m[1])
		if !ok || (v == "" && fmt.Sprintf("%T", f.Value) != "*flag.stringValue") {
			return // an empty string is a string flag's value, and no other's
		}
		if err := fs.Set(f.Name, v); err != nil {
			want := cmp.Or(envExpect[fmt.Sprintf("%T", f.Value)], "a valid value")
			errs = append(errs, fmt.Errorf("%s=%q: want %s (the variable of --%s)", m[1], v, want, f.Name))
		}
	})
	return errors.Join(errs...)
}
