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
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/seahaven/seahaven/env"
)

// Main is the seahaven program over a set of worlds: one small type per
// subcommand, each with Run(ctx, args) error. Its fields are set before
// Run; a Main is not safe for concurrent use.
type Main struct {
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
	m := &Main{Stdout: os.Stdout, Stderr: os.Stderr, Worlds: map[string]*env.World{}, Default: worlds[0].Name()}
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
func Run(worlds ...*env.World) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop) // the next signal takes its default action
	m := New(worlds...)
	if err := m.Run(ctx, os.Args[1:]); err != nil {
		m.fail(err)
		stop()
		os.Exit(exitCode(err))
	}
}

// names returns the names of the worlds m knows, sorted.
func (m *Main) names() []string {
	return slices.Sorted(maps.Keys(m.Worlds))
}

// exitError carries an exit code other than 1.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
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
	fmt.Fprintln(m.Stderr, "seahaven:", err)
}

const usage = `seahaven — deterministic, composable tool worlds served over OpenEnv.

Usage:
  seahaven serve    [flags]   serve a world over OpenEnv (HTTP, WebSocket, MCP)
  seahaven fixtures build|list|verify [flags]
  seahaven check    [flags] [packages]   lint the worlds of a module (docs/lints.md)
  seahaven grade    [flags] FILE...      replay and grade recorded trajectories (docs/tasks.md)
  seahaven new world [flags] NAME        write a new world: schema, tools, tests, fixture generator, task
  seahaven healthcheck [--url URL]       exit 0 if a server's /health answers healthy
  seahaven bench    [flags]   load-test a server: sessions, latency, memory (docs/scale.md)
  seahaven bench echo [--addr A]         a bare WebSocket echo server (the benchmark's floor)
  seahaven version

Run "seahaven <command> -h" for a command's flags.
`

// Run runs the subcommand named by args[0].
func (m *Main) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(m.Stderr, usage)
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
		fmt.Fprintln(m.Stdout, "seahaven", version())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(m.Stdout, usage)
		return nil
	}
	fmt.Fprint(m.Stderr, usage)
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

// parseNoArgs parses args into fs and fails when an argument is left.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s takes no arguments, got %q", strings.TrimPrefix(fs.Name(), "seahaven "), fs.Args())
	}
	return nil
}

func newFlagSet(m *Main, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("seahaven "+name, flag.ContinueOnError)
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
