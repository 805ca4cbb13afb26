package env

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode"
)

// StaleHandle is the message of the WorldBug a handle returns when it is used
// after the activation it belongs to has ended, and when it is used while the
// code that made it is not the code running: while that code waits in a
// nested call, alongside another use, or after that code returned. Go has no
// goroutine identity; that is how a handle carried to another goroutine is
// caught.
const StaleHandle = "a world handle was used after the call it belongs to returned"

// HandleImpl is what an engine supplies behind a Handle.
type HandleImpl interface {
	// CallName runs a tool of the handle's world by its own, unprefixed name.
	CallName(tool string, args any) (any, error)
	// CallDef runs a tool by definition, resolved over the handle's subtree.
	CallDef(ctx context.Context, def *ToolDef, args any) (any, error)
	// DB returns the node's store.
	DB() DB
	// State returns the node's state map, or an error for a stale handle.
	State() (map[string]any, error)
	// Worlds returns the node's own children.
	Worlds() *Worlds
}

// WorldsImpl is what an engine supplies behind a Worlds.
type WorldsImpl interface {
	// Get returns the handle of a child by name, or a *WorldBug.
	Get(name string) (HandleImpl, error)
	// Names returns the registered child names in AddWorld order.
	Names() []string
}

// Worlds reaches the worlds a node's world added, by the name each was added
// under. It belongs to one activation; it is safe for concurrent use.
type Worlds struct{ impl WorldsImpl }

// NewWorlds wraps an engine's implementation.
func NewWorlds(impl WorldsImpl) *Worlds { return &Worlds{impl: impl} }

// Get returns the handle of the child added under name. A name no AddWorld
// registered yields a handle whose every use fails with a *WorldBug. Every
// handle Get returns for a name reaches the same node and is bound to the
// same activation.
func (w *Worlds) Get(name string) *Handle {
	if w == nil || w.impl == nil {
		return &Handle{impl: broken{Bugf("ctx.Worlds.Get(%q): this context has no added worlds", name)}}
	}
	impl, err := w.impl.Get(name)
	if err != nil {
		return &Handle{impl: broken{err}}
	}
	return &Handle{impl: impl}
}

// Names returns the registered child names in AddWorld order.
func (w *Worlds) Names() []string {
	if w == nil || w.impl == nil {
		return nil
	}
	return w.impl.Names()
}

// Handle is one added world's node, reached from host code: call its tools
// (full validation, its own middleware chain, its own transaction), use its
// store and state, reach its children. A handle is call-scoped: it dies when
// the activation that made it ends, and every later use fails with the
// WorldBug whose message is StaleHandle. Within the activation it belongs to
// the code that made it (a tool, a middleware layer, a hook, a Bulk block)
// and fails the same way when used while that code is not the code running
// (see StaleHandle). A Handle is not safe for concurrent use.
type Handle struct{ impl HandleImpl }

// Call runs one tool of the node by the added world's own, unprefixed name.
// Lists and prefixes do not apply: host code can call every tool.
func (h *Handle) Call(tool string, args any) (any, error) { return h.impl.CallName(tool, args) }

// CallDef runs a tool by definition, resolved over the handle's subtree; it
// makes *Handle an env.Caller.
func (h *Handle) CallDef(ctx context.Context, def *ToolDef, args any) (any, error) {
	return h.impl.CallDef(ctx, def, args)
}

// DB returns the node's store. Outside a Transaction, statements autocommit
// one by one.
func (h *Handle) DB() DB { return h.impl.DB() }

// State returns the node's own state map. It panics with a *WorldBug when the
// handle is stale or names no child; the engine turns that panic into the
// call's error.
func (h *Handle) State() map[string]any {
	s, err := h.impl.State()
	if err != nil {
		panic(err)
	}
	return s
}

// Worlds returns the node's own children, for reaching a grandchild.
func (h *Handle) Worlds() *Worlds { return h.impl.Worlds() }

// broken is the handle, the worlds and the DB of a handle no node stands
// behind: every use fails with err.
type broken struct{ err error }

func (b broken) CallName(string, any) (any, error)                   { return nil, b.err }
func (b broken) CallDef(context.Context, *ToolDef, any) (any, error) { return nil, b.err }
func (b broken) DB() DB                                              { return b }
func (b broken) State() (map[string]any, error)                      { return nil, b.err }
func (b broken) Worlds() *Worlds                                     { return &Worlds{impl: b} }
func (b broken) Get(string) (HandleImpl, error)                      { return nil, b.err }
func (b broken) Names() []string                                     { return nil }
func (b broken) Exec(string, ...any) (Result, error)                 { return Result{}, b.err }
func (b broken) Rows(string, ...any) ([]Row, error)                  { return nil, b.err }
func (b broken) One(string, ...any) (Row, error)                     { return nil, b.err }
func (b broken) Transaction(func() error) error                      { return b.err }
func (b broken) Conn() (any, error)                                  { return nil, b.err }

// Declared records a struct type declaring a world's static child names.
type Declared struct {
	// Type is the declared struct type.
	Type reflect.Type
	// Fields maps each field's child name to the field name.
	Fields map[string]string
	// Where is the file:line of the declaration.
	Where string
}

// DeclareWorlds declares the child names of w as the *Handle fields of the
// struct type T, so that a type checker sees them and `seahaven check` binds
// them to the AddWorld registrations (SH502, SH503). A field's child name is
// its `world:"..."` tag, else its name in snake_case. Declaring is never
// required. Use WorldsOf to fill a T from a context; an unexported *Handle
// field, which it could not fill, is a WorldBug.
func DeclareWorlds[T any](w *World) {
	t := reflect.TypeFor[T]()
	where := callerLine()
	mustWorld(w, "env.DeclareWorlds", where)
	if t.Kind() != reflect.Struct {
		panic(&WorldBug{Message: fmt.Sprintf("DeclareWorlds(%s): %s is not a struct", w.Name(), t), Where: where})
	}
	d := &Declared{Type: t, Fields: map[string]string{}, Where: where}
	for f := range t.Fields() {
		if f.Type != reflect.TypeFor[*Handle]() {
			continue
		}
		if !f.IsExported() {
			panic(&WorldBug{Message: fmt.Sprintf("DeclareWorlds(%s): field %s of %s is unexported, and WorldsOf fills exported fields only: export it", w.Name(), f.Name, t), Where: where})
		}
		d.Fields[childName(f)] = f.Name
	}
	w.mu.Lock()
	w.declared = append(w.declared, d)
	w.mu.Unlock()
}

// DeclaredWorlds returns the struct types declared with DeclareWorlds.
func (w *World) DeclaredWorlds() []*Declared { return cloneRegistry(w, &w.declared) }

// WorldsOf fills a T's *Handle fields from c.Worlds, by child name.
func WorldsOf[T any](c *Ctx) T {
	var v T
	rv := reflect.ValueOf(&v).Elem()
	if rv.Kind() != reflect.Struct {
		return v
	}
	for _, f := range handleFields(rv.Type()) {
		rv.Field(f.index).Set(reflect.ValueOf(c.Worlds.Get(f.name)))
	}
	return v
}

// handleField is an exported *Handle field of a WorldsOf struct and the
// child name it stands for.
type handleField struct {
	index int
	name  string
}

// handleFieldsCache maps a struct type to its []handleField.
var handleFieldsCache sync.Map

// handleFields returns the *Handle fields of the struct type t.
func handleFields(t reflect.Type) []handleField {
	if fs, ok := handleFieldsCache.Load(t); ok {
		return fs.([]handleField)
	}
	var fs []handleField
	for f := range t.Fields() {
		if f.Type == reflect.TypeFor[*Handle]() && f.IsExported() {
			fs = append(fs, handleField{f.Index[0], childName(f)})
		}
	}
	handleFieldsCache.Store(t, fs)
	return fs
}

func childName(f reflect.StructField) string {
	if tag := f.Tag.Get("world"); tag != "" {
		return tag
	}
	var b strings.Builder
	for i, r := range f.Name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
