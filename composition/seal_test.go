package composition_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/fixture"
)

func newWorld(name string) *env.World {
	return env.NewWorld(env.WorldSpec{Name: name, Version: "1.0.0",
		Schema: fmt.Sprintf("CREATE TABLE %s_rows (id TEXT PRIMARY KEY) STRICT;", name)})
}

type noArgs struct{}

func addTool(w *env.World, name string) *env.ToolRef[noArgs, string] {
	return env.Tool(w, name, "Tool "+name+" of "+w.Name()+".", func(c *env.Ctx, _ noArgs) (string, error) { return name, nil })
}

// mustPanicBug runs fn and returns the *env.WorldBug it panicked with.
func mustPanicBug(t *testing.T, fn func()) (bug *env.WorldBug) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatal("no panic")
		}
		b, ok := r.(*env.WorldBug)
		if !ok {
			t.Fatalf("panic %T %v, want *env.WorldBug", r, r)
		}
		bug = b
	}()
	fn()
	return nil
}

func TestAddWorld_ChecksAtTheCall(t *testing.T) {
	tests := []struct {
		name string                       // case
		add  func(host, child *env.World) // the AddWorld call under test
		want string                       // a substring of the WorldBug message
	}{
		{"BadSpelling", func(h, c *env.World) { h.AddWorld(c, env.Name("Pay")) }, `name "Pay" must match ^[a-z][a-z0-9_]*$`},
		{"DoubleUnderscore", func(h, c *env.World) { h.AddWorld(c, env.Name("pay__eu")) }, `must not contain "__"`},
		{"Main", func(h, c *env.World) { h.AddWorld(c, env.Name("main")) }, `name "main" is reserved`},
		{"Temp", func(h, c *env.World) { h.AddWorld(c, env.Name("temp")) }, `name "temp" is reserved`},
		{"Duplicate", func(h, c *env.World) { h.AddWorld(c, env.Name("p")); h.AddWorld(c, env.Name("p"), env.Store("x")) }, `name "p" is already used by`},
		{"BlankStore", func(h, c *env.World) { h.AddWorld(c, env.Store(" ")) }, "Store must name a scope"},
		{"BothLists", func(h, c *env.World) { h.AddWorld(c, env.ToolAllowList("a"), env.ToolBlockList("b")) }, "not both"},
		{"EmptyEntry", func(h, c *env.World) { h.AddWorld(c, env.ToolAllowList("")) }, "empty name"},
		{"UnknownStartupKey", func(h, c *env.World) { h.AddWorld(c, env.Startup(map[string]any{"colour": "red"})) }, `: startup keyword "colour" is not accepted by any startup hook of child (accepted: none)`},
		{"StartupKeyType", func(h, c *env.World) {
			env.OnStartup(c, func(*env.Ctx, struct {
				Region string `json:"region"`
				Seats  int    `json:"seats,omitempty"`
			}) error {
				return nil
			})
			h.AddWorld(c, env.Startup(map[string]any{"region": 5}))
		}, `: the startup keywords bound here do not fit the startup hook of child at seal_test.go:`},
		{"Self", func(h, c *env.World) { h.AddWorld(h) }, "makes a cycle"},
		{"Cycle", func(h, c *env.World) { c.AddWorld(h); h.AddWorld(c) }, "makes a cycle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host, child := newWorld("host"), newWorld("child")
			bug := mustPanicBug(t, func() { tt.add(host, child) })
			if !strings.Contains(bug.Message, tt.want) {
				t.Fatalf("message %q lacks %q", bug.Message, tt.want)
			}
			if !strings.Contains(bug.Message, ".AddWorld(") || !strings.Contains(bug.Where, "seal_test.go") {
				t.Fatalf("bug does not name the AddWorld line: %q at %q", bug.Message, bug.Where)
			}
		})
	}
}

func TestSeal_ChecksAtTheSeal(t *testing.T) {
	tests := []struct {
		name  string            // case
		build func() *env.World // returns the root
		want  string            // substring of the error
	}{
		{"AllowNamesMissingTool", func() *env.World {
			h, c := newWorld("host"), newWorld("child")
			addTool(c, "a")
			h.AddWorld(c, env.ToolAllowList("nope"))
			return h
		}, `ToolAllowList names "nope", which child does not contribute (it contributes: a)`},
		{"AllowOnAWorldWithoutTools", func() *env.World {
			h, c := newWorld("host"), newWorld("child")
			h.AddWorld(c, env.ToolAllowList("nope"))
			return h
		}, `ToolAllowList names "nope", which child does not contribute (it contributes no tools)`},
		{"BlockNamesMissingTool", func() *env.World {
			h, c := newWorld("host"), newWorld("child")
			addTool(c, "a")
			h.AddWorld(c, env.ToolBlockList("deep"))
			return h
		}, `ToolBlockList names "deep"`},
		{"TwoRoutesOneName", func() *env.World {
			h, a, b := newWorld("host"), newWorld("a"), newWorld("b")
			addTool(a, "go")
			addTool(b, "go")
			h.AddWorld(a)
			h.AddWorld(b)
			return h
		}, `two routes produce the tool name "go"`},
		{"CollidesWithHostTool", func() *env.World {
			h, a := newWorld("host"), newWorld("a")
			addTool(h, "go")
			addTool(a, "go")
			h.AddWorld(a)
			return h
		}, `host's own tool`},
		{"Reserved", func() *env.World {
			h, a := newWorld("host"), newWorld("a")
			addTool(a, "et")
			h.AddWorld(a, env.ToolPrefix("res"))
			return h
		}, `"reset" is reserved`},
		{"InvalidPrefixedName", func() *env.World {
			h, a := newWorld("host"), newWorld("a")
			addTool(a, "charge")
			h.AddWorld(a, env.ToolPrefix("payments."))
			return h
		}, `"payments.charge" is not a valid tool name`},
		{"StartupKeyBoundTwice", func() *env.World { return boundTwice("us", "eu") },
			`startup keyword "region" is bound to`},
		{"TooManyStores", func() *env.World {
			h := newWorld("host")
			for k := 0; k < 11; k++ {
				h.AddWorld(newWorld(fmt.Sprintf("w%d", k)))
			}
			return h
		}, "11 added stores, more than SQLite can attach: the limit is 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tt.build()
			_, err := composition.Seal(root)
			var bug *env.WorldBug
			if !errors.As(err, &bug) {
				t.Fatalf("Seal = %v, want a *env.WorldBug", err)
			}
			if !strings.Contains(bug.Message, tt.want) {
				t.Fatalf("message %q lacks %q", bug.Message, tt.want)
			}
			if !strings.Contains(bug.Message, ".AddWorld(") || !strings.Contains(bug.Where, "seal_test.go") {
				t.Fatalf("message does not name the AddWorld: %q at %q", bug.Message, bug.Where)
			}
		})
	}
}

// boundTwice returns a host adding a and b, which both add p, a world
// with a startup keyword region that a binds to first and b to second.
func boundTwice(first, second string) *env.World {
	h, a, b, p := newWorld("host"), newWorld("a"), newWorld("b"), newWorld("p")
	type K struct {
		Region string `json:"region,omitempty"`
	}
	env.OnStartup(p, func(c *env.Ctx, k K) error { return nil })
	a.AddWorld(p, env.Startup(map[string]any{"region": first}))
	b.AddWorld(p, env.Startup(map[string]any{"region": second}))
	h.AddWorld(a)
	h.AddWorld(b)
	return h
}

func TestSeal_StartupKeyBoundAlikeTwice(t *testing.T) {
	// Only two values for one key on one node fail the seal: two routes
	// binding the same value agree.
	s, err := composition.Seal(boundTwice("eu", "eu"))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Node("a/p"); n.Bound["region"] != "eu" || !slices.Equal(n.Aliases, []string{"b/p"}) {
		t.Fatalf("node a/p bound %v, aliases %v", n.Bound, n.Aliases)
	}
}

func TestSeal_Surface(t *testing.T) {
	// The spec's subtree rule: filter, then prefix, per subtree: a_b_deep.
	root, a, b := newWorld("root"), newWorld("a"), newWorld("b")
	addTool(root, "own")
	addTool(b, "deep")
	addTool(b, "hidden")
	addTool(a, "mid")
	a.AddWorld(b, env.ToolPrefix("b_"), env.ToolBlockList("hidden"))
	root.AddWorld(a, env.ToolPrefix("a_"), env.ToolAllowList("b_deep"))
	s, err := composition.Seal(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ti := range s.Tools() {
		names = append(names, ti.Name)
	}
	if want := []string{"own", "a_b_deep"}; !slices.Equal(names, want) {
		t.Fatalf("surface %v, want %v", names, want)
	}
	// What a contributes on its own: the block list alone keeps hidden off.
	sa, err := composition.Seal(a)
	if err != nil {
		t.Fatal(err)
	}
	names = nil
	for _, ti := range sa.Tools() {
		names = append(names, ti.Name)
	}
	if want := []string{"mid", "b_deep"}; !slices.Equal(names, want) {
		t.Fatalf("a's surface %v, want %v", names, want)
	}
	r, _ := s.Lookup("a_b_deep")
	if r.Owner.Path != "a/b" || len(r.Path) != 3 {
		t.Fatalf("route owner %s, path len %d", r.Owner.Path, len(r.Path))
	}
	// Descriptions and schemas are byte-identical to the owner's.
	info := s.Tools()[1]
	def := b.Tool("deep")
	if info.Description != def.Description || string(info.InputSchema) != string(def.InputSchema) {
		t.Fatal("listing differs from the owner's")
	}
}

func TestSeal_InvalidatedByAnyRegistration(t *testing.T) {
	root, child := newWorld("root"), newWorld("child")
	root.AddWorld(child)
	s1, err := composition.Seal(root)
	if err != nil {
		t.Fatal(err)
	}
	if s2, _ := composition.Seal(root); s2 != s1 {
		t.Fatal("seal not cached")
	}
	addTool(child, "late") // registered on a dependency after the host sealed
	s3, err := composition.Seal(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s3.Lookup("late"); !ok {
		t.Fatal("a tool registered later on a dependency is not on the surface")
	}
}

func TestSeal_CloneIsADistinctNode(t *testing.T) {
	root, p := newWorld("root"), newWorld("p")
	root.AddWorld(p, env.Name("one"))
	root.AddWorld(p.Clone(), env.Name("two"))
	root.AddWorld(p, env.Name("three"))
	s, err := composition.Seal(root)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, n := range s.Nodes {
		paths = append(paths, n.Path+fmt.Sprint(n.Aliases))
	}
	if want := []string{"main[]", "one[three]", "two[]"}; !slices.Equal(paths, want) {
		t.Fatalf("nodes %v, want %v", paths, want)
	}
}

func TestSeal_StartupOrder(t *testing.T) {
	// company adds payments, then shop; shop adds payments: payments runs
	// after every world that adds it.
	company, shop, payments, chat := newWorld("company"), newWorld("shop"), newWorld("payments"), newWorld("chat")
	shop.AddWorld(payments)
	company.AddWorld(payments)
	company.AddWorld(shop)
	company.AddWorld(chat)
	s, err := composition.Seal(company)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, n := range s.StartupOrder {
		order = append(order, n.Path)
	}
	if want := []string{"main", "shop", "payments", "chat"}; !slices.Equal(order, want) {
		t.Fatalf("startup order %v, want %v", order, want)
	}
}

// TestSeal_RandomTrees checks the invariants of canonical paths, aliases,
// surface names and file names over random trees with sharing and scopes.
func TestSeal_RandomTrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		pool := make([]*env.World, 6)
		for k := range pool {
			pool[k] = newWorld(fmt.Sprintf("w%d", k))
			if rng.IntN(2) == 0 {
				addTool(pool[k], "t")
			}
		}
		// Edges only from lower to higher index: no cycles, depth <= 4 below root.
		root := newWorld("root")
		for k := 0; k < 5; k++ {
			for j := k + 1; j < len(pool) && j <= k+2; j++ {
				if rng.IntN(3) == 0 {
					continue
				}
				opts := []env.AddOption{env.Name(fmt.Sprintf("c%d", j)), env.ToolPrefix(fmt.Sprintf("p%d_", j))}
				if rng.IntN(4) == 0 {
					opts = append(opts, env.Store([]string{"eu", "us"}[rng.IntN(2)]))
				}
				pool[k].AddWorld(pool[j], opts...)
			}
		}
		root.AddWorld(pool[0], env.ToolPrefix("r0_"))
		if rng.IntN(2) == 0 {
			root.AddWorld(pool[1], env.Name("again"), env.ToolPrefix("r1_"))
		}
		s, err := composition.Seal(root)
		if err != nil {
			var bug *env.WorldBug
			if !errors.As(err, &bug) {
				t.Fatalf("trial %d: %v is not a WorldBug", trial, err)
			}
			continue // e.g. over the attach limit
		}
		seen := map[string]bool{}
		for _, n := range s.Nodes {
			for _, p := range append([]string{n.Path}, n.Aliases...) {
				if seen[p] {
					t.Fatalf("trial %d: path %s appears twice", trial, p)
				}
				seen[p] = true
			}
			for _, a := range n.Aliases {
				if strings.Count(a, "/") < strings.Count(n.Path, "/") {
					t.Fatalf("trial %d: alias %s is shallower than canonical %s", trial, a, n.Path)
				}
			}
			back, err := fixture.PathOf(n.File)
			if err != nil || back != n.Path {
				t.Fatalf("trial %d: file %s -> %q, %v; want %s", trial, n.File, back, err, n.Path)
			}
		}
		// Aliases are complete: every route through the tree is a path or alias.
		var walk func(n *composition.Node, path string)
		walk = func(n *composition.Node, path string) {
			if !seen[path] {
				t.Fatalf("trial %d: route %s is neither a canonical path nor an alias", trial, path)
			}
			for _, c := range n.Children {
				p := c.Edge.Name
				if path != "main" {
					p = path + "/" + c.Edge.Name
				}
				walk(c.Node, p)
			}
		}
		walk(s.Nodes[0], "main")
		names := map[string]bool{}
		for _, r := range s.Surface {
			if names[r.Name] {
				t.Fatalf("trial %d: duplicate surface name %s", trial, r.Name)
			}
			names[r.Name] = true
		}
	}
}

// TestSeal_Scopes pins the spec's scope rules: a Store scopes the world it
// is given to and everything that world adds, recursively; scope names are
// one namespace across the tree, so two hosts writing the same scope for
// the same world share its store; and of two equally shallow routes to one
// node, the one registered first is the canonical path.
func TestSeal_Scopes(t *testing.T) {
	tax, pay := newWorld("tax"), newWorld("pay")
	pay.AddWorld(tax)
	shop, crm := newWorld("shop"), newWorld("crm")
	shop.AddWorld(pay, env.Store("eu"))
	crm.AddWorld(pay, env.Name("billing"), env.Store("eu"))
	root := newWorld("root")
	root.AddWorld(pay)
	root.AddWorld(shop)
	root.AddWorld(crm)
	s, err := composition.Seal(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range s.Nodes {
		scope := "null"
		if n.Scope != nil {
			scope = *n.Scope
		}
		got = append(got, fmt.Sprintf("%s %s %s %v", n.Path, n.World.Name(), scope, n.Aliases))
	}
	want := []string{
		"main root null []",
		"pay pay null []",
		"shop shop null []",
		"crm crm null []",
		"pay/tax tax null []",
		// The shop's and the CRM's "eu" are one account, tax and all,
		// named by the shop's route, registered first at that depth.
		"shop/pay pay eu [crm/billing]",
		"shop/pay/tax tax eu [crm/billing/tax]",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("nodes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
