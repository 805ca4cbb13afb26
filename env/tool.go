package env

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/seahaven/seahaven/internal/argschema"
)

// ToolDef is one registered tool of one world. Its input schema is derived
// from the argument struct; its arguments are validated against it before
// the tool runs. A ToolDef is immutable after registration and safe for
// concurrent use.
type ToolDef struct {
	// World is the world that registered the tool.
	World *World
	// Name is the tool's own name in its world's registry.
	Name string
	// Description is the text the agent sees, byte-identical under every name.
	Description string
	// InputSchema is the JSON Schema of the arguments.
	InputSchema json.RawMessage
	// OutputSchema is the JSON Schema of the structured result, derived
	// from the result type; ResultWrapped says the structured result is
	// {"result": <result>}, as it is for every result type but a struct.
	OutputSchema  json.RawMessage
	ResultWrapped bool
	// Where is the file:line of the registration.
	Where string

	in     reflect.Type
	out    reflect.Type
	origin *ToolDef // the registration a clone's copy came from; nil for an original
	invoke func(c *Ctx, in any) (any, error)
}

// Same reports whether t and other are one registration: the same ToolDef,
// or copies of one made by World.Clone.
func (t *ToolDef) Same(other *ToolDef) bool { return t.root() == other.root() }

func (t *ToolDef) root() *ToolDef { return cmp.Or(t.origin, t) }

// Returns reports whether v is a result of the tool's result type, as
// OutputSchema describes: a value of that type, or nil when the type has a
// nil (a pointer, slice, map or interface). A middleware that replaced a
// tool's result with anything else would break the schema.
func (t *ToolDef) Returns(v any) bool {
	if v == nil {
		switch t.out.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			return true
		}
		return false
	}
	got := reflect.TypeOf(v)
	if t.out.Kind() == reflect.Interface {
		return got.Implements(t.out)
	}
	return got == t.out
}

// ResultType returns the tool's result type.
func (t *ToolDef) ResultType() reflect.Type { return t.out }

// Info returns the listing entry for the tool under a published name.
func (t *ToolDef) Info(name string) ToolInfo {
	return ToolInfo{Name: name, Description: t.Description, InputSchema: t.InputSchema,
		OutputSchema: t.OutputSchema, ResultWrapped: t.ResultWrapped}
}

// Decode validates raw JSON arguments and returns the typed argument value.
// A refusal is a *ToolError of KindInvalidArgs naming the field.
func (t *ToolDef) Decode(raw []byte) (any, error) {
	v, err := argschema.Decode(t.in, raw)
	if err != nil {
		return nil, &ToolError{Kind: KindInvalidArgs, Message: err.Error(), Err: err}
	}
	return v.Interface(), nil
}

// Accept converts arguments given in process — the typed argument struct,
// a map, or raw JSON — into the typed value, with the same validation as
// Decode.
func (t *ToolDef) Accept(args any) (any, error) {
	in, _, err := t.AcceptJSON(args)
	return in, err
}

// AcceptJSON is Accept that also returns the arguments as JSON, as given:
// the raw JSON itself, the typed value or map marshalled, or {} for nil.
func (t *ToolDef) AcceptJSON(args any) (in any, raw json.RawMessage, err error) {
	switch a := args.(type) {
	case nil:
		in, err = t.Decode(nil)
		return in, json.RawMessage(`{}`), err
	case json.RawMessage:
		raw = a
	case []byte:
		raw = a
	default:
		if raw, err = json.Marshal(args); err != nil {
			return nil, nil, &ToolError{Kind: KindInvalidArgs, Message: fmt.Sprintf("invalid arguments: %v", err), Err: err}
		}
	}
	in, err = t.Decode(raw)
	return in, raw, err
}

// Invoke runs the tool's function with a decoded argument value. Engines call
// it after resolution, validation and middleware; world code uses a handle.
func (t *ToolDef) Invoke(c *Ctx, in any) (any, error) { return t.invoke(c, in) }

// ToolRef is a typed reference to a registered tool, for calling it by the
// function itself: env.Call(ctx, caller, ref, args) checks the argument and
// result types at compile time.
type ToolRef[In, Out any] struct{ def *ToolDef }

// Def returns the tool's definition.
func (r *ToolRef[In, Out]) Def() *ToolDef { return r.def }

// Name returns the tool's own name.
func (r *ToolRef[In, Out]) Name() string { return r.def.Name }

// Tool registers a tool on w. The name must match ^[A-Za-z0-9_-]{1,128}$
// and not be reserved; In must be a struct whose fields (json tags, `doc:`
// descriptions, required unless a pointer, omitempty or `default:`) become
// the input schema. It panics with a *WorldBug on a bad name, a duplicate,
// an argument type with no JSON Schema, or a result type JSON cannot
// encode or with a json tag json v2 refuses (a mis-spelt or repeated
// option, a malformed name, a tag on an unexported field, two fields of
// one name: argschema.TagError).
func Tool[In, Out any](w *World, name, description string, fn func(c *Ctx, in In) (Out, error)) *ToolRef[In, Out] {
	where := callerLine()
	mustWorld(w, fmt.Sprintf("env.Tool(%q)", name), where)
	bug := func(format string, args ...any) {
		panic(&WorldBug{Message: fmt.Sprintf("%s.Tool(%q): ", w.Name(), name) + fmt.Sprintf(format, args...), Where: where})
	}
	switch {
	case !ValidToolName(name):
		bug("tool name must match ^[A-Za-z0-9_-]{1,128}$")
	case IsReserved(name):
		bug("%q is a reserved name", name)
	case fn == nil:
		bug("nil function")
	}
	def, err := newToolDef(name, description, where, fn)
	if err != nil {
		bug("%v", err)
	}
	def.World = w
	w.addTool(def)
	return &ToolRef[In, Out]{def: def}
}

// newToolDef builds the definition of fn's tool, in no world yet: the input
// schema derived from In and the typed call. It fails when In has no JSON
// Schema, when Out holds a type JSON cannot encode, and when a json tag in
// Out is one json v2 refuses.
func newToolDef[In, Out any](name, description, where string, fn func(c *Ctx, in In) (Out, error)) (*ToolDef, error) {
	in := reflect.TypeFor[In]()
	schema, err := argschema.Schema(in)
	if err != nil {
		return nil, err
	}
	if bad := argschema.Unencodable(reflect.TypeFor[Out]()); bad != nil {
		return nil, fmt.Errorf("its result type %v holds a %v, which JSON cannot encode, so no call could return a result", reflect.TypeFor[Out](), bad)
	}
	if err := argschema.RefusedTag(reflect.TypeFor[Out]()); err != nil {
		return nil, err
	}
	out := argschema.OutputOf(reflect.TypeFor[Out]())
	return &ToolDef{
		Name: name, Description: description, InputSchema: schema, Where: where, in: in, out: reflect.TypeFor[Out](),
		OutputSchema: out.Schema, ResultWrapped: out.Wrapped,
		invoke: func(c *Ctx, v any) (any, error) {
			typed, ok := v.(In)
			if !ok {
				return nil, &ToolError{Kind: KindInvalidArgs, Message: fmt.Sprintf("invalid arguments: %s takes %s, got %T", name, in, v)}
			}
			out, err := fn(c, typed)
			if err != nil {
				return nil, err
			}
			return out, nil
		},
	}, nil
}

// Caller runs a tool by its definition: an instance (over the whole agent
// surface) or a handle (over that handle's subtree).
type Caller interface {
	CallDef(ctx context.Context, def *ToolDef, args any) (any, error)
}

// Call runs a tool through a caller, by the tool itself, with typed
// arguments and result. Dispatch after resolution is the by-name path:
// validation, the middleware chain, the transaction.
func Call[In, Out any](ctx context.Context, caller Caller, ref *ToolRef[In, Out], in In) (Out, error) {
	var zero Out
	res, err := caller.CallDef(ctx, ref.def, in)
	if err != nil {
		return zero, err
	}
	if res == nil {
		return zero, nil
	}
	out, ok := res.(Out)
	if !ok {
		return zero, fmt.Errorf("env.Call(%s): result is %T, not %s", ref.def.Name, res, reflect.TypeFor[Out]())
	}
	return out, nil
}

// AsToolError reports whether err is or wraps a *ToolError and returns it.
func AsToolError(err error) (*ToolError, bool) {
	return errors.AsType[*ToolError](err)
}

// BuiltinTool builds a tool that belongs to no world, for engines that serve
// tools of their own (the control tool). World code uses Tool.
func BuiltinTool[In, Out any](name, description string, fn func(c *Ctx, in In) (Out, error)) *ToolDef {
	def, err := newToolDef(name, description, callerLine(), fn)
	if err != nil {
		panic(err)
	}
	return def
}

// resultCheckKey carries a WithResultCheck function in a context.
type resultCheckKey struct{}

// WithResultCheck returns a copy of ctx under which an engine checks the
// result of every layer of an agent's call with check (each middleware
// layer's, and the tool's) before that layer's transaction commits: a
// result check refuses fails the call with a *ToolError of KindExecution,
// and what the call wrote is rolled back. A server passes the encoder of
// its wire, so a result it could not send leaves no writes behind. The
// last value checked in a call that succeeds is its result.
func WithResultCheck(ctx context.Context, check func(result any) error) context.Context {
	return context.WithValue(ctx, resultCheckKey{}, check)
}

// ResultCheck returns the check WithResultCheck put in ctx, or nil.
func ResultCheck(ctx context.Context) func(result any) error {
	check, _ := ctx.Value(resultCheckKey{}).(func(any) error)
	return check
}
