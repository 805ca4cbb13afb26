package env

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/seahaven/seahaven/internal/argschema"
)

// StartupHook runs at every instance creation, for every node of its world,
// with that node's context and the keyword arguments it accepts.
type StartupHook struct {
	// World is the world that registered the hook.
	World *World
	// Keys are the keyword names the hook accepts, sorted.
	Keys []string
	// Where is the file:line of the registration.
	Where string

	run   func(c *Ctx, kw map[string]any) error
	check func(kw map[string]any) error // nil for OnStartupMap's hooks
}

// CheckBound reports whether values bound to keywords of the hook (by
// AddWorld's Startup) fit their types, as the hook will decode them; keys
// it does not accept are ignored. A hook registered with OnStartupMap takes
// any value.
func (h *StartupHook) CheckBound(kw map[string]any) error {
	if h.check == nil {
		return nil
	}
	return h.check(kw)
}

// Run runs the hook with the keyword arguments that reach it (only its own
// keys are passed; engines filter).
func (h *StartupHook) Run(c *Ctx, kw map[string]any) error { return h.run(c, kw) }

// OnStartup registers a startup hook on w. K must be a struct: its fields'
// json names are the keywords the hook accepts (an embedded struct's fields
// among them, as for a tool's arguments), and a `default:"..."` tag (or a
// pointer, or omitempty) makes a keyword optional. A K that a tool could
// not take as its arguments is a *WorldBug here. At creation the
// hook receives the broadcast keywords it names, with those bound by
// AddWorld(..., Startup(...)) winning on this node.
func OnStartup[K any](w *World, fn func(c *Ctx, k K) error) {
	where := callerLine()
	mustWorld(w, "env.OnStartup", where)
	t := reflect.TypeFor[K]()
	if fn == nil || t.Kind() != reflect.Struct {
		panic(&WorldBug{Message: fmt.Sprintf("%s.OnStartup: want a func(*env.Ctx, K) error with K a struct, got K=%s", w.Name(), t), Where: where})
	}
	keys, err := structKeys(t)
	if err != nil {
		panic(&WorldBug{Message: fmt.Sprintf("%s.OnStartup: the keywords of %s: %v", w.Name(), t, err), Where: where})
	}
	w.addHook(&StartupHook{World: w, Keys: keys, Where: where, run: func(c *Ctx, kw map[string]any) error {
		raw, err := json.Marshal(kw)
		if err != nil {
			return fmt.Errorf("startup keywords: %w", err)
		}
		v, err := argschema.Decode(t, raw)
		if err != nil {
			return fmt.Errorf("startup keywords: %w", err)
		}
		return fn(c, v.Interface().(K))
	}, check: func(kw map[string]any) error {
		// Decoded as the hook decodes them, into a struct of their fields
		// (an embedded struct's among them).
		var fields []reflect.StructField
		sub := map[string]any{}
		for _, f := range argschema.StructFields(t) {
			name, ok := keyName(f)
			v, bound := kw[name]
			_, seen := sub[name]
			if !bound || !ok || f.Anonymous || seen || !slices.Contains(keys, name) {
				continue // not one of the hook's keywords, or not bound
			}
			fields = append(fields, reflect.StructField{Name: f.Name, Type: f.Type, Tag: f.Tag})
			sub[name] = v
		}
		if len(fields) == 0 {
			return nil
		}
		raw, err := json.Marshal(sub)
		if err == nil {
			_, err = argschema.Decode(reflect.StructOf(fields), raw)
		}
		return err
	}})
}

// OnStartupMap registers a startup hook that receives its keywords as a map.
// keys names every keyword it accepts, so unknown keywords can be refused
// before any file is touched.
func OnStartupMap(w *World, keys []string, fn func(c *Ctx, kw map[string]any) error) {
	where := callerLine()
	mustWorld(w, "env.OnStartupMap", where)
	if fn == nil {
		panic(&WorldBug{Message: fmt.Sprintf("%s.OnStartupMap: nil function", w.Name()), Where: where})
	}
	w.addHook(&StartupHook{World: w, Keys: slices.Sorted(slices.Values(keys)), Where: where, run: fn})
}

func (w *World) addHook(h *StartupHook) {
	w.mu.Lock()
	w.hooks = append(w.hooks, h)
	w.mu.Unlock()
	generation.Add(1)
}

// structKeys returns the sorted keywords of a struct: the properties of its
// argument schema, which holds an embedded struct's fields as its own.
func structKeys(t reflect.Type) ([]string, error) {
	raw, err := argschema.Schema(t)
	if err != nil {
		return nil, err
	}
	var schema struct{ Properties map[string]json.RawMessage }
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(schema.Properties)), nil
}

// keyName returns the keyword a struct field is decoded from, its json
// name, and whether it is one: an exported field not tagged "-".
func keyName(f reflect.StructField) (string, bool) {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return cmp.Or(name, f.Name), f.IsExported() && name != "-"
}
