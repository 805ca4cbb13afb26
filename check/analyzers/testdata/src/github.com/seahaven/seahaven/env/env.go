// Package env is a minimal stand-in for Seahaven's env package, with the
// same API shape, for the analyzers' tests. It imports nothing, so the
// tests type-check no standard library from source; Context stands in for
// context.Context.
package env

// Context stands in for context.Context.
type Context interface{ Done() <-chan struct{} }

// Background stands in for context.Background.
func Background() Context { return nil }

type WorldSpec struct {
	Name, Version, Schema, FixturesDir string
}

type World struct{ spec WorldSpec }

func NewWorld(spec WorldSpec) *World { return &World{spec: spec} }

func (w *World) Name() string                             { return w.spec.Name }
func (w *World) Clone() *World                            { c := *w; return &c }
func (w *World) WithFixturesDir(dir string) *World        { return w.Clone() }
func (w *World) AddWorld(child *World, opts ...AddOption) {}
func (w *World) Use(mw Middleware)                        {}

type Edge struct{ Name string }

type AddOption func(*Edge)

func Name(name string) AddOption              { return nil }
func Store(scope string) AddOption            { return nil }
func ToolPrefix(prefix string) AddOption      { return nil }
func ToolAllowList(names ...string) AddOption { return nil }

type Ctx struct {
	Worlds *Worlds
}

func (c *Ctx) Context() Context { return nil }

type Worlds struct{}

func (w *Worlds) Get(name string) *Handle { return nil }
func (w *Worlds) Names() []string         { return nil }

type Handle struct{}

func (h *Handle) Call(tool string, args any) (any, error) { return nil, nil }
func (h *Handle) Worlds() *Worlds                         { return nil }

type Middleware func(c *Ctx, next func() (any, error)) (any, error)

type ToolRef[In, Out any] struct{}

func Tool[In, Out any](w *World, name, description string, fn func(c *Ctx, in In) (Out, error)) *ToolRef[In, Out] {
	return nil
}

func OnStartup[K any](w *World, fn func(c *Ctx, k K) error) {}

func OnStartupMap(w *World, keys []string, fn func(c *Ctx, kw map[string]any) error) {}

func DeclareWorlds[T any](w *World) {}
