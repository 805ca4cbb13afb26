package composition

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/sqlitestore"
)

// Node is one store of a composition: a (World, scope) pair. The same pair
// anywhere in one root's tree is one node.
type Node struct {
	// Index is the node's position in Sealed.Nodes (canonical order).
	Index int
	// World is the node's world.
	World *env.World
	// Scope is the account scope; nil is the root's default scope.
	Scope *string
	// Path is the canonical path: the shallowest route, ties broken by
	// registration order. "main" for the root.
	Path string
	// Aliases are every other route reaching the node, in discovery order.
	Aliases []string
	// Children are the node's world's AddWorld edges resolved to nodes.
	Children []Child
	// Bound holds the startup keywords bound to this node by AddWorld.
	Bound map[string]any
	// Adders are the edges through which the node is reached.
	Adders []*env.Edge
	// File is the node's store file name in an instance or fixture directory.
	File string
}

// Child is one AddWorld edge of a node, resolved to the added node.
type Child struct {
	Edge *env.Edge
	Node *Node
}

// Route is one tool of the agent surface: a published name, the tool, the
// node that owns it, and the nodes its call descends, root first.
type Route struct {
	Name  string
	Def   *env.ToolDef
	Owner *Node
	Path  []*Node
}

// Sealed is a root world's resolved composition: nodes, paths, aliases and
// the agent surface. It is immutable and safe for concurrent use.
type Sealed struct {
	Root *env.World
	// Generation is env.Generation() when the tree was sealed.
	Generation uint64
	// Nodes in canonical order: the root first, then breadth first by
	// registration order.
	Nodes []*Node
	// Surface is the flat agent surface, insertion-ordered.
	Surface []*Route
	// StartupOrder lists nodes depth first from the root, each after every
	// node that adds it.
	StartupOrder []*Node
	// StartupKeys is the union of every hook's keywords across the tree.
	StartupKeys []string

	byName map[string]*Route
	byPath map[string]*Node
}

// Lookup returns the surface route of a published tool name.
func (s *Sealed) Lookup(name string) (*Route, bool) {
	r, ok := s.byName[name]
	return r, ok
}

// Node returns the node at a canonical path.
func (s *Sealed) Node(path string) (*Node, bool) {
	n, ok := s.byPath[path]
	return n, ok
}

// Tools returns the surface listing.
func (s *Sealed) Tools() []env.ToolInfo {
	out := make([]env.ToolInfo, len(s.Surface))
	for i, r := range s.Surface {
		out[i] = r.Def.Info(r.Name)
	}
	return out
}

var sealCache sync.Map // of *env.World to *Sealed

// Seal resolves a root world's tree, or returns the cached resolution when
// no registration happened anywhere since. Every whole-tree rule is checked
// here; a failure is an error wrapping a *env.WorldBug that names the
// AddWorld behind it, or, when the tree breaks several rules, an
// errors.Join of one such error per breach. The seal also refuses a world whose schema does not
// apply or has a table the change log cannot key exactly (see CheckKeys):
// an error joining one WorldBug per such world or table, each at its
// world's NewWorld line.
func Seal(root *env.World) (*Sealed, error) {
	gen := env.Generation()
	if s, ok := sealCache.Load(root); ok && s.(*Sealed).Generation == gen {
		return s.(*Sealed), nil
	}
	s, err := seal(root, gen)
	if err != nil {
		return nil, err
	}
	sealCache.Store(root, s)
	return s, nil
}

// nodeKey identifies a node: its world, and its scope as scopeText writes
// it, which tells no scope (null) from every named one.
type nodeKey struct {
	world *env.World
	scope string
}

// maxRoutes bounds route expansion of pathological sharing.
const maxRoutes = 100000

type sealer struct {
	s       *Sealed
	nodes   map[nodeKey]*Node
	routes  int
	bound   map[*Node]map[string]*env.Edge
	contrib map[*Node][]*Route // each node's contribution, once made
	errs    []error            // the seal's errors, in the order found
}

// bugAt returns a *env.WorldBug at the AddWorld of e, its message led by e.
func bugAt(e *env.Edge, format string, args ...any) error {
	return &env.WorldBug{Message: e.String() + ": " + fmt.Sprintf(format, args...), Where: e.Where}
}

func seal(root *env.World, gen uint64) (*Sealed, error) {
	z := &sealer{
		s:       &Sealed{Root: root, Generation: gen, byName: map[string]*Route{}, byPath: map[string]*Node{}},
		nodes:   map[nodeKey]*Node{},
		bound:   map[*Node]map[string]*env.Edge{},
		contrib: map[*Node][]*Route{},
	}
	if err := z.discover(); err != nil {
		return nil, err
	}
	surface := z.contribution(z.s.Nodes[0])
	for _, r := range surface {
		z.s.byName[r.Name] = r
	}
	z.s.Surface = surface
	z.s.StartupOrder = z.startupOrder()
	var keys []string
	for _, n := range z.s.Nodes {
		keys = append(keys, n.World.StartupKeys()...)
	}
	slices.Sort(keys)
	z.s.StartupKeys = slices.Compact(keys)
	if added, limit := len(z.s.Nodes)-1, sqlitestore.AttachLimit(); added > limit {
		z.errs = append(z.errs, bugAt(z.s.Nodes[limit+1].Adders[0], "the composition has %d added stores, more than SQLite can attach: the limit is %d", added, limit))
	}
	switch len(z.errs) {
	case 0:
	case 1:
		return nil, z.errs[0]
	default:
		return nil, errors.Join(z.errs...)
	}
	if err := CheckKeys(root); err != nil {
		return nil, err
	}
	return z.s, nil
}

// discover walks every route breadth first, so the first route reaching a
// node is the shallowest, ties broken by registration order.
func (z *sealer) discover() error {
	type route struct {
		world *env.World
		scope *string
		path  string
		edge  *env.Edge
	}
	queue := []route{{world: z.s.Root, path: "main"}}
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		z.routes++
		if z.routes > maxRoutes {
			return bugAt(r.edge, "the tree has more than %d routes; share fewer worlds", maxRoutes)
		}
		k := nodeKey{r.world, scopeText(r.scope)}
		n, seen := z.nodes[k]
		if !seen {
			n = &Node{Index: len(z.s.Nodes), World: r.world, Scope: r.scope, Path: r.path, Bound: map[string]any{}, File: fixture.FileName(r.path)}
			z.nodes[k] = n
			z.s.Nodes = append(z.s.Nodes, n)
			z.s.byPath[n.Path] = n
			z.bound[n] = map[string]*env.Edge{}
		} else if !slices.Contains(n.Aliases, r.path) && n.Path != r.path {
			n.Aliases = append(n.Aliases, r.path)
		}
		if r.edge != nil {
			if !slices.Contains(n.Adders, r.edge) {
				n.Adders = append(n.Adders, r.edge)
			}
			for key, val := range r.edge.Startup {
				if prev, ok := z.bound[n][key]; ok && prev != r.edge && !reflect.DeepEqual(n.Bound[key], val) {
					z.errs = append(z.errs, bugAt(r.edge, "startup keyword %q is bound to %v here and to %v by %s, on the same node %s", key, val, n.Bound[key], prev, n.Path))
					continue
				}
				n.Bound[key] = val
				z.bound[n][key] = r.edge
			}
		}
		for _, e := range r.world.Edges() {
			scope := cmp.Or(e.Store, r.scope)
			p := e.Name
			if r.path != "main" {
				p = r.path + "/" + e.Name
			}
			queue = append(queue, route{world: e.Child, scope: scope, path: p, edge: e})
		}
	}
	for _, n := range z.s.Nodes {
		for _, e := range n.World.Edges() {
			n.Children = append(n.Children, Child{Edge: e, Node: z.nodes[nodeKey{e.Child, scopeText(cmp.Or(e.Store, n.Scope))}]})
		}
	}
	return nil
}

// contribution returns what a node contributes to whoever adds it: its
// world's own tools, then each child's contribution filtered by the edge's
// list and renamed by its prefix. Names must be unique, valid and not
// reserved at every level: each breach is recorded in z.errs, once per
// node, and the route at fault is left out, so every breach of the tree
// is found in one seal.
func (z *sealer) contribution(n *Node) []*Route {
	if out, ok := z.contrib[n]; ok {
		return out
	}
	var out []*Route
	from := map[string]*env.Edge{}
	for _, t := range n.World.Tools() {
		out = append(out, &Route{Name: t.Name, Def: t, Owner: n, Path: []*Node{n}})
		from[t.Name] = nil
	}
	for _, c := range n.Children {
		sub := z.contribution(c.Node)
		e := c.Edge
		names := map[string]bool{}
		for _, r := range sub {
			names[r.Name] = true
		}
		for _, list := range []struct {
			kind  string
			names []string
		}{{"ToolAllowList", e.Allow}, {"ToolBlockList", e.Block}} {
			for _, want := range list.names {
				if !names[want] {
					contributes := "it contributes no tools"
					if len(names) > 0 {
						contributes = "it contributes: " + strings.Join(slices.Sorted(maps.Keys(names)), ", ")
					}
					z.errs = append(z.errs, bugAt(e, "%s names %q, which %s does not contribute (%s)", list.kind, want, e.Child.Name(), contributes))
				}
			}
		}
		for _, r := range sub {
			if e.AllowSet && !slices.Contains(e.Allow, r.Name) {
				continue
			}
			if e.BlockSet && slices.Contains(e.Block, r.Name) {
				continue
			}
			name := e.Prefix + r.Name
			if !env.ValidToolName(name) {
				z.errs = append(z.errs, bugAt(e, "the contributed name %q is not a valid tool name (^[A-Za-z0-9_-]{1,128}$)", name))
				continue
			}
			if env.IsReserved(name) {
				z.errs = append(z.errs, bugAt(e, "the contributed name %q is reserved", name))
				continue
			}
			if prev, dup := from[name]; dup {
				other := n.World.Name() + "'s own tool"
				if prev != nil {
					other = prev.String()
				}
				z.errs = append(z.errs, bugAt(e, "two routes produce the tool name %q: this one and %s", name, other))
				continue
			}
			from[name] = e
			path := append([]*Node{n}, r.Path...)
			out = append(out, &Route{Name: name, Def: r.Def, Owner: r.Owner, Path: path})
		}
	}
	z.contrib[n] = out
	return out
}

// startupOrder orders nodes by their last occurrence in a depth-first
// preorder of every route, which puts each node after every node adding it
// and is plain preorder for a tree without sharing.
func (z *sealer) startupOrder() []*Node {
	last := map[*Node]int{}
	pos := 0
	var walk func(n *Node)
	walk = func(n *Node) {
		last[n] = pos
		pos++
		for _, c := range n.Children {
			walk(c.Node)
		}
	}
	walk(z.s.Nodes[0])
	order := slices.Clone(z.s.Nodes)
	slices.SortStableFunc(order, func(a, b *Node) int { return cmp.Compare(last[a], last[b]) })
	return order
}

// SchemaName is the inspection schema a node is attached under: its path
// with / as __ ("main" for the root).
func SchemaName(path string) string { return strings.ReplaceAll(path, "/", "__") }
