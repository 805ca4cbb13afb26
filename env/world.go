package env

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"iter"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

var (
	nameRE     = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
)

// ControlTool is the name of the reserved control tool, callable only on
// instances opened with control tools enabled.
const ControlTool = "seahaven_control"

// ReservedNames are names no tool may be published under.
var ReservedNames = []string{"reset", "step", "state", "close", ControlTool}

// IsReserved reports whether name is one of ReservedNames.
func IsReserved(name string) bool { return slices.Contains(ReservedNames, name) }

// ValidToolName reports whether name is a valid tool name:
// ^[A-Za-z0-9_-]{1,128}$.
func ValidToolName(name string) bool { return toolNameRE.MatchString(name) }

// CheckName checks a world name or an added world's name:
// ^[a-z][a-z0-9_]*$, no "__", never "main" or "temp".
func CheckName(name string) error {
	switch {
	case !nameRE.MatchString(name):
		return fmt.Errorf("name %q must match ^[a-z][a-z0-9_]*$", name)
	case strings.Contains(name, "__"):
		return fmt.Errorf("name %q must not contain \"__\"", name)
	case name == "main" || name == "temp":
		return fmt.Errorf("name %q is reserved", name)
	}
	return nil
}

// generation counts registrations anywhere in the process. A sealed
// composition remembers the generation it was sealed at and is sealed again
// when it changes.
var generation atomic.Uint64

// Generation returns the process-wide registration counter.
func Generation() uint64 { return generation.Load() }

// WorldSpec declares a world.
type WorldSpec struct {
	// Name is the world's own name: ^[a-z][a-z0-9_]*$, no "__", not main or temp.
	Name string
	// Version is the world's version, recorded in fixtures.
	Version string
	// Schema is the SQL applied to a blank store at genesis.
	Schema string
	// StateFormat names the state document format; "" means StateFormat.
	StateFormat string
	// FixturesDir is where this world's own fixtures live on disk. When it
	// is set it wins over Fixtures.
	FixturesDir string
	// Fixtures holds the world's own fixtures (and its tasks.yaml) as a file
	// system, such as a directory embedded in the binary with //go:embed, so
	// a world carries them wherever it is built. Instances are still made
	// from files: the first use copies them to a directory of their own (see
	// composition.FixturesDir).
	Fixtures fs.FS
	// DefaultFixture is the fixture a server's reset uses when it names
	// none; "" means a genesis instance.
	DefaultFixture string
	// DefaultClockMode is the clock mode of instances of this world when it is
	// the root and the caller names none; "" means ClockFrozen.
	DefaultClockMode string
	// UntrackedTables are excluded from the change log.
	UntrackedTables []string
	// Description is a short text for listings and metadata.
	Description string
}

// World is a declared world: schema, tools, middleware, startup hooks and
// added worlds. Registration is safe for concurrent use, but is expected to
// finish at package initialisation. A World's identity is its pointer: the
// same *World added twice under one scope is one store.
type World struct {
	spec  WorldSpec
	where string

	mu         sync.Mutex // guards the registries below
	tools      []*ToolDef
	toolByName map[string]*ToolDef
	middleware []Middleware
	hooks      []*StartupHook
	edges      []*Edge
	declared   []*Declared
	tasks      []Task
	generate   FixtureGenerator
}

// FixtureGenerator builds a world's fixtures reproducibly into the fixtures
// directory dir (`seahaven fixtures build`), replacing fixtures of the same
// id when replace is set.
type FixtureGenerator func(ctx context.Context, dir string, replace bool) error

// SetFixtureGenerator registers the generator of w's fixtures, typically
// in an init function, since it refers to the world.
func (w *World) SetFixtureGenerator(g FixtureGenerator) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.generate = g
}

// FixtureGenerator returns w's fixture generator, or nil.
func (w *World) FixtureGenerator() FixtureGenerator {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.generate
}

// NewWorld declares a world. It panics with a *WorldBug when the spec is
// invalid: a bad name, an empty version, or an unknown clock mode.
func NewWorld(spec WorldSpec) *World {
	where := callerLine()
	if err := CheckName(spec.Name); err != nil {
		panic(&WorldBug{Message: "NewWorld: world " + err.Error(), Where: where})
	}
	if spec.Version == "" {
		panic(&WorldBug{Message: fmt.Sprintf("NewWorld(%s): Version is required", spec.Name), Where: where})
	}
	spec.StateFormat = cmp.Or(spec.StateFormat, StateFormat)
	switch spec.DefaultClockMode {
	case "":
		spec.DefaultClockMode = ClockFrozen
	case ClockFrozen, ClockStep, ClockWall:
	default:
		panic(&WorldBug{Message: fmt.Sprintf("NewWorld(%s): unknown clock mode %q (want frozen, step or wall)", spec.Name, spec.DefaultClockMode), Where: where})
	}
	spec.UntrackedTables = slices.Clone(spec.UntrackedTables)
	generation.Add(1)
	return &World{spec: spec, where: where, toolByName: map[string]*ToolDef{}}
}

// Name returns the world's own name.
func (w *World) Name() string { return w.spec.Name }

// Version returns the world's version.
func (w *World) Version() string { return w.spec.Version }

// Spec returns a copy of the world's spec.
func (w *World) Spec() WorldSpec {
	s := w.spec
	s.UntrackedTables = slices.Clone(s.UntrackedTables)
	return s
}

// Where returns the file:line that declared the world.
func (w *World) Where() string { return w.where }

// String returns the world's name.
func (w *World) String() string { return w.spec.Name }

// Clone returns a distinct World with the same spec and registrations. It is
// a different node: a host that added w does not see the clone. Copy the
// root, never a dependency, when a test points a world at another fixtures
// directory.
func (w *World) Clone() *World {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := &World{spec: w.Spec(), where: callerLine(), toolByName: map[string]*ToolDef{}}
	for _, t := range w.tools {
		t2 := *t
		t2.World = c
		t2.origin = t.root()
		c.tools = append(c.tools, &t2)
		c.toolByName[t2.Name] = &t2
	}
	c.middleware = slices.Clone(w.middleware)
	for _, h := range w.hooks {
		h2 := *h
		h2.World = c
		c.hooks = append(c.hooks, &h2)
	}
	for _, e := range w.edges {
		e2 := *e
		e2.Parent = c
		c.edges = append(c.edges, &e2)
	}
	c.declared = slices.Clone(w.declared)
	c.tasks = slices.Clone(w.tasks)
	c.generate = w.generate
	generation.Add(1)
	return c
}

// WithFixturesDir returns a clone of w whose fixtures live in dir.
func (w *World) WithFixturesDir(dir string) *World {
	c := w.Clone()
	c.spec.FixturesDir = dir
	return c
}

// Tools returns the world's own tools in registration order.
func (w *World) Tools() []*ToolDef { return cloneRegistry(w, &w.tools) }

// cloneRegistry returns a copy of one of w's registries, read under w.mu.
func cloneRegistry[T any](w *World, registry *[]T) []T {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(*registry)
}

// Tool returns the world's own tool of that name, or nil.
func (w *World) Tool(name string) *ToolDef {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.toolByName[name]
}

// Middleware returns the world's middleware, outermost first.
func (w *World) Middleware() []Middleware { return cloneRegistry(w, &w.middleware) }

// Hooks returns the world's startup hooks in registration order.
func (w *World) Hooks() []*StartupHook { return cloneRegistry(w, &w.hooks) }

// Edges returns the world's AddWorld registrations in order.
func (w *World) Edges() []*Edge { return cloneRegistry(w, &w.edges) }

// Tree yields w and every world its AddWorld registrations reach, each
// once however many times it was added, breadth first.
func (w *World) Tree() iter.Seq[*World] {
	return func(yield func(*World) bool) {
		seen := map[*World]bool{}
		for queue := []*World{w}; len(queue) > 0; queue = queue[1:] {
			x := queue[0]
			if seen[x] {
				continue
			}
			seen[x] = true
			if !yield(x) {
				return
			}
			for _, e := range x.Edges() {
				queue = append(queue, e.Child)
			}
		}
	}
}

// StartupKeys returns the sorted keyword names the world's own hooks accept.
func (w *World) StartupKeys() []string {
	var keys []string
	for _, h := range w.Hooks() {
		keys = append(keys, h.Keys...)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// Use registers middleware on the world. Middleware runs outermost first,
// in registration order, around every call of a tool this world owns or
// contributes.
func (w *World) Use(mw Middleware) {
	where := callerLine()
	mustWorld(w, "World.Use", where)
	if mw == nil {
		panic(&WorldBug{Message: fmt.Sprintf("%s.Use: nil middleware", w.spec.Name), Where: where})
	}
	w.mu.Lock()
	w.middleware = append(w.middleware, mw)
	w.mu.Unlock()
	generation.Add(1)
}

func (w *World) addTool(t *ToolDef) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if old, dup := w.toolByName[t.Name]; dup {
		panic(&WorldBug{Message: fmt.Sprintf("%s.Tool(%q): the tool is already registered at %s; give one of them another name",
			w.spec.Name, t.Name, shortWhere(old.Where)), Where: t.Where})
	}
	w.tools = append(w.tools, t)
	w.toolByName[t.Name] = t
	generation.Add(1)
}

// Middleware wraps every call of a tool. It runs with its own world's
// context: c.DB, c.State, c.IDs and c.Worlds are those of the world that
// registered it; c.Call is the same object in every layer and names the
// tool and the owning node. It calls next to descend, or returns without
// calling it to refuse the call. It returns what next returned or a value
// of the tool's result type (nil where that type has one): anything else
// fails the call with a *WorldBug, since the tool's OutputSchema describes
// its result.
type Middleware func(c *Ctx, next func() (any, error)) (any, error)

// shortWhere turns a full file:line into base:line for messages.
func shortWhere(where string) string {
	if where == "" {
		return "unknown line"
	}
	return filepath.Base(where)
}
