package env

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Edge is one AddWorld registration: a host adding a child under a name.
type Edge struct {
	// Parent is the host; Child the added world.
	Parent, Child *World
	// Name is the host's internal identity for the child: a path segment,
	// a file name and a schema name. Never agent-visible.
	Name string
	// Store is the account scope of the child and its subtree; nil keeps the
	// host's own scope.
	Store *string
	// Prefix is prepended to every contributed tool name.
	Prefix string
	// Allow, when AllowSet, contributes only these tools.
	Allow    []string
	AllowSet bool
	// Block, when BlockSet, contributes every tool except these.
	Block    []string
	BlockSet bool
	// Startup holds keyword arguments bound to the child node's hooks.
	Startup map[string]any
	// Where is the file:line of the AddWorld call.
	Where string
}

// String names the registration for messages: `company.AddWorld(payments,
// Name "payments_eu") at company.go:31`.
func (e *Edge) String() string {
	return fmt.Sprintf("%s.AddWorld(%s, Name %q) at %s", e.Parent.Name(), e.Child.Name(), e.Name, shortWhere(e.Where))
}

// AddOption configures one AddWorld registration.
type AddOption func(*Edge)

// Name sets the name the child is added under (default: its own name).
func Name(name string) AddOption { return func(e *Edge) { e.Name = name } }

// Store opens the named account scope for the child and its whole subtree.
// Scope names are one flat namespace across the tree.
func Store(scope string) AddOption { return func(e *Edge) { e.Store = &scope } }

// ToolPrefix is prepended to every tool name the child contributes.
func ToolPrefix(prefix string) AddOption { return func(e *Edge) { e.Prefix = prefix } }

// ToolAllowList contributes only the named tools (named as the child
// contributes them, deeper prefixes included). With no names, nothing is
// contributed.
func ToolAllowList(names ...string) AddOption {
	return func(e *Edge) { e.Allow, e.AllowSet = append([]string{}, names...), true }
}

// ToolBlockList contributes every tool except the named ones.
func ToolBlockList(names ...string) AddOption {
	return func(e *Edge) { e.Block, e.BlockSet = append([]string{}, names...), true }
}

// Startup binds keyword arguments to the child node's startup hooks at every
// instance creation. A caller's broadcast keyword of the same name does not
// override them.
func Startup(kw map[string]any) AddOption {
	return func(e *Edge) { e.Startup = maps.Clone(kw) }
}

// AddWorld adds child to w. What is knowable from the two worlds is checked
// here and panics with a *WorldBug from this line: the name's spelling and
// uniqueness on w, a blank Store, both lists given, an empty-string list
// entry, startup keywords the child's hooks do not accept, and a cycle.
// Whole-tree rules are checked when the tree is sealed.
func (w *World) AddWorld(child *World, opts ...AddOption) {
	where := callerLine()
	mustWorld(w, "World.AddWorld", where)
	if child == nil {
		panic(&WorldBug{Message: fmt.Sprintf("%s.AddWorld: nil world", w.Name()), Where: where})
	}
	e := &Edge{Parent: w, Child: child, Name: child.Name(), Where: where}
	for _, o := range opts {
		o(e)
	}
	bug := func(format string, args ...any) {
		panic(&WorldBug{Message: fmt.Sprintf("%s.AddWorld(%s) at %s: ", w.Name(), child.Name(), shortWhere(where)) + fmt.Sprintf(format, args...), Where: where})
	}
	if err := CheckName(e.Name); err != nil {
		bug("%v", err)
	}
	if e.Store != nil && strings.TrimSpace(*e.Store) == "" {
		bug("Store must name a scope, not a blank string")
	}
	if e.AllowSet && e.BlockSet {
		bug("give ToolAllowList or ToolBlockList, not both")
	}
	if slices.Contains(e.Allow, "") || slices.Contains(e.Block, "") {
		bug("a tool list holds an empty name")
	}
	if len(e.Startup) > 0 {
		accepted := child.StartupKeys()
		unknown := slices.DeleteFunc(slices.Sorted(maps.Keys(e.Startup)), func(k string) bool { return slices.Contains(accepted, k) })
		if len(unknown) > 0 {
			bug("startup keyword %s is not accepted by any startup hook of %s (accepted: %s)",
				quoteList(unknown), child.Name(), cmp.Or(strings.Join(accepted, ", "), "none"))
		}
		for _, h := range child.Hooks() {
			if err := h.CheckBound(e.Startup); err != nil {
				bug("the startup keywords bound here do not fit the startup hook of %s at %s: %v", child.Name(), shortWhere(h.Where), err)
			}
		}
	}
	if child == w || child.reaches(w) {
		bug("adding %s to %s makes a cycle", child.Name(), w.Name())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, other := range w.edges {
		if other.Name == e.Name {
			bug("name %q is already used by %s", e.Name, other)
		}
	}
	w.edges = append(w.edges, e)
	generation.Add(1)
}

// reaches reports whether target is in w's tree.
func (w *World) reaches(target *World) bool {
	for x := range w.Tree() {
		if x == target {
			return true
		}
	}
	return false
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}
