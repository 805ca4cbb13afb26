package analyzers

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"reflect"
	"sort"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
	"golang.org/x/tools/go/types/typeutil"
)

// WorldsAnalyzer finds a package's *env.World variables and registrations.
// Its Result is a *Result; it exports a *WorldFact on every package-level
// *env.World variable. It reports no diagnostics.
var WorldsAnalyzer = &analysis.Analyzer{
	Name:       "seahavenworlds",
	Doc:        "find package-level *env.World variables, the child names their AddWorld calls register, and the tools, middleware and startup hooks registered on them",
	Requires:   []*analysis.Analyzer{inspect.Analyzer},
	Run:        runWorlds,
	ResultType: reflect.TypeFor[*Result](),
	FactTypes:  []analysis.Fact{new(WorldFact)},
}

// WorldFact is what a package says about one of its package-level
// *env.World variables, for the packages that import it.
type WorldFact struct {
	// Name is the world's own name (the Name of its env.WorldSpec), or ""
	// when it cannot be read statically.
	Name string
	// Children are the names the world's AddWorld calls register, in
	// registration order.
	Children []string
	// ChildrenKnown is true when every AddWorld call on the world is visible
	// in its package's init functions and variable declarations and every
	// name resolves; Children is then the complete list.
	ChildrenKnown bool
}

// AFact marks WorldFact as an analysis fact.
func (*WorldFact) AFact() {}

// String describes the fact: `world company children [payments shop]`,
// with "?" for an unknown name and "unknown" for unknown children.
func (f *WorldFact) String() string {
	children := "unknown"
	if f.ChildrenKnown {
		children = "[" + strings.Join(f.Children, " ") + "]"
	}
	return fmt.Sprintf("world %s children %s", cmp.Or(f.Name, "?"), children)
}

// World is one *env.World variable as the analyzer resolved it: declared in
// the analysed package, or imported and described by its WorldFact.
type World struct {
	// Var is the package-level variable.
	Var *types.Var
	// Name is the world's own name, or "" when unknown.
	Name string
	// Children are the AddWorld registrations, in order.
	Children []Child
	// ChildrenKnown is true when Children is complete (see WorldFact).
	ChildrenKnown bool
}

// Child is one AddWorld registration of a world.
type Child struct {
	// Name is the name the child is added under.
	Name string
	// World is the package-level variable of the added world, or nil when
	// the added world is not a plain reference to one.
	World *types.Var
}

// Child returns the registration of a child name.
func (w *World) Child(name string) (Child, bool) {
	for _, c := range w.Children {
		if c.Name == name {
			return c, true
		}
	}
	return Child{}, false
}

// ChildNames returns the registered child names in order.
func (w *World) ChildNames() []string {
	names := make([]string, len(w.Children))
	for i, c := range w.Children {
		names[i] = c.Name
	}
	return names
}

// Describe names the world for messages: its own name, else the variable.
func (w *World) Describe() string { return cmp.Or(w.Name, w.Var.Name()) }

// Registration kinds.
const (
	KindTool       = "tool"
	KindMiddleware = "middleware"
	KindHook       = "startup hook"
)

// Registration is one env.Tool, (*env.World).Use, env.OnStartup or
// env.OnStartupMap call and the function it registers.
type Registration struct {
	// Kind is KindTool, KindMiddleware or KindHook.
	Kind string
	// Tool is the tool's name, for a tool registered with a constant name.
	Tool string
	// WorldExpr is the expression naming the world registered on.
	WorldExpr ast.Expr
	// World is the world registered on, or nil when WorldExpr is not a
	// package-level *env.World variable.
	World *World
	// Body is the registered function's body, or nil when the function is
	// not a literal or a function or variable of this package.
	Body *ast.BlockStmt
	// Ctx is the function's *env.Ctx parameter, or nil when it is unnamed.
	Ctx *types.Var
	// Call is the registering call.
	Call *ast.CallExpr
	// In and Out are a tool's argument and result types, or nil for
	// middleware and hooks.
	In, Out types.Type
}

// Result is what WorldsAnalyzer found in one package. It is not modified
// after the pass that made it and is safe for concurrent reads.
type Result struct {
	// Worlds are the package's own package-level *env.World variables, in
	// declaration order, exported or not.
	Worlds []*World
	// Registrations are the package's tool, middleware and hook
	// registrations, in source order.
	Registrations []*Registration

	byVar map[*types.Var]*World
}

// Lookup returns what is known of a *env.World variable: one of the
// package's own, or an imported one described by its WorldFact.
func (r *Result) Lookup(v *types.Var) (*World, bool) {
	w, ok := r.byVar[v]
	return w, ok
}

// worldsPass holds one run of WorldsAnalyzer.
type worldsPass struct {
	pass *analysis.Pass
	res  *Result
	// specs maps each package-level variable to its initialiser, when it has
	// exactly one.
	specs map[*types.Var]ast.Expr
	// reassigned holds package-level variables assigned outside their
	// declaration.
	reassigned map[*types.Var]bool
	// names caches nameOf; a name being resolved is "", which ends an
	// initialiser cycle.
	names map[*types.Var]string
}

func runWorlds(pass *analysis.Pass) (any, error) {
	wp := &worldsPass{
		pass:       pass,
		res:        &Result{byVar: map[*types.Var]*World{}},
		specs:      map[*types.Var]ast.Expr{},
		reassigned: map[*types.Var]bool{},
		names:      map[*types.Var]string{},
	}
	info := pass.TypesInfo
	var own []*types.Var
	for _, f := range pass.Files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, id := range vs.Names {
					v, ok := info.Defs[id].(*types.Var)
					if !ok {
						continue
					}
					if len(vs.Values) == len(vs.Names) {
						wp.specs[v] = vs.Values[i]
					}
					if isWorldType(v.Type()) && id.Name != "_" {
						own = append(own, v)
					}
				}
			}
		}
	}
	sort.Slice(own, func(i, j int) bool { return own[i].Pos() < own[j].Pos() })

	ins := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	// Assignments to a package-level variable outside its declaration make
	// its value unknowable.
	for n := range ins.PreorderSeq((*ast.AssignStmt)(nil)) {
		for _, lhs := range n.(*ast.AssignStmt).Lhs {
			if v := packageVar(info, lhs); v != nil {
				wp.reassigned[v] = true
			}
		}
	}

	for _, v := range own {
		w := &World{Var: v, Name: wp.nameOf(v)}
		// Only a world made here by env.NewWorld starts with no children; a
		// clone or an alias carries registrations made elsewhere.
		w.ChildrenKnown = !wp.reassigned[v] && wp.isNewWorld(wp.specs[v])
		wp.res.Worlds = append(wp.res.Worlds, w)
		wp.res.byVar[v] = w
	}
	wp.collectChildren(ins)
	for _, w := range wp.res.Worlds {
		if !w.ChildrenKnown {
			w.Children = nil
		}
		pass.ExportObjectFact(w.Var, &WorldFact{Name: w.Name, Children: w.ChildNames(), ChildrenKnown: w.ChildrenKnown})
	}
	wp.collectRegistrations(ins)
	// Make the worlds this package's code reaches through AddWorld children
	// available to Lookup too, so a grandchild can be resolved.
	for _, w := range wp.res.Worlds {
		for _, c := range w.Children {
			wp.lookup(c.World) // nil for a child that is not a variable
		}
	}
	return wp.res, nil
}

// lookup returns the World of a *env.World variable: the package's own, or
// an imported one built from its fact.
func (wp *worldsPass) lookup(v *types.Var) *World {
	if v == nil {
		return nil
	}
	if w, ok := wp.res.byVar[v]; ok {
		return w
	}
	if v.Pkg() == wp.pass.Pkg {
		return nil
	}
	var f WorldFact
	if !wp.pass.ImportObjectFact(v, &f) {
		return nil
	}
	w := &World{Var: v, Name: f.Name, ChildrenKnown: f.ChildrenKnown}
	for _, n := range f.Children {
		w.Children = append(w.Children, Child{Name: n})
	}
	wp.res.byVar[v] = w
	return w
}

// isNewWorld reports whether e is a call of env.NewWorld.
func (wp *worldsPass) isNewWorld(e ast.Expr) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	return ok && isFunc(typeutil.StaticCallee(wp.pass.TypesInfo, call), EnvPath, "NewWorld")
}

// nameOf returns the own name of the world a package-level variable holds,
// or "".
func (wp *worldsPass) nameOf(v *types.Var) string {
	if v.Pkg() != wp.pass.Pkg {
		var f WorldFact
		if wp.pass.ImportObjectFact(v, &f) {
			return f.Name
		}
		return ""
	}
	if n, ok := wp.names[v]; ok || wp.reassigned[v] {
		return n
	}
	wp.names[v] = ""
	n := wp.nameOfExpr(wp.specs[v])
	wp.names[v] = n
	return n
}

// nameOfExpr returns the own name of the world an expression yields:
// env.NewWorld(env.WorldSpec{Name: "x", ...}), a clone of a known world, or
// a variable holding one.
func (wp *worldsPass) nameOfExpr(e ast.Expr) string {
	if e == nil {
		return ""
	}
	info := wp.pass.TypesInfo
	if v := packageVar(info, e); v != nil && isWorldType(v.Type()) {
		return wp.nameOf(v)
	}
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return ""
	}
	fn := typeutil.StaticCallee(info, call)
	switch {
	case isFunc(fn, EnvPath, "NewWorld") && len(call.Args) == 1:
		lit, ok := ast.Unparen(call.Args[0]).(*ast.CompositeLit)
		if !ok {
			return ""
		}
		for i, elt := range lit.Elts {
			kv, ok := elt.(*ast.KeyValueExpr)
			if !ok {
				// An unkeyed WorldSpec literal starts with Name.
				if i == 0 {
					s, _ := constString(info, elt)
					return s
				}
				return ""
			}
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
				s, _ := constString(info, kv.Value)
				return s
			}
		}
	case isMethod(fn, "World", "Clone") || isMethod(fn, "World", "WithFixturesDir"):
		if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
			return wp.nameOfExpr(sel.X)
		}
	}
	return ""
}

// collectChildren reads every AddWorld call on the package's own worlds.
// Calls in init functions and package-level variable initialisers register
// children; a call anywhere else, or one whose name cannot be resolved,
// makes the world's children unknown.
func (wp *worldsPass) collectChildren(ins *inspector.Inspector) {
	info := wp.pass.TypesInfo
	for c := range ins.Root().Preorder((*ast.CallExpr)(nil)) {
		call := c.Node().(*ast.CallExpr)
		if !isMethod(typeutil.StaticCallee(info, call), "World", "AddWorld") {
			continue
		}
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok {
			continue
		}
		w, ok := wp.res.byVar[packageVar(info, sel.X)]
		if !ok || !w.ChildrenKnown {
			continue
		}
		child, ok := wp.childOf(call)
		if !ok || !atInitTime(c) {
			w.ChildrenKnown = false
			continue
		}
		w.Children = append(w.Children, child)
	}
}

// atInitTime reports whether the cursor's node runs at package
// initialisation: inside a func init() or a package-level var declaration.
func atInitTime(c inspector.Cursor) bool {
	inVar := false
	for p := range c.Enclosing((*ast.FuncDecl)(nil), (*ast.GenDecl)(nil)) {
		switch d := p.Node().(type) {
		case *ast.FuncDecl:
			return d.Recv == nil && d.Name.Name == "init"
		case *ast.GenDecl:
			inVar = inVar || d.Tok == token.VAR
		}
	}
	return inVar
}

// childOf resolves one AddWorld call: the name the child is added under
// (env.Name with a constant, else the child's own name) and the child's
// variable.
func (wp *worldsPass) childOf(call *ast.CallExpr) (Child, bool) {
	info := wp.pass.TypesInfo
	if len(call.Args) == 0 || call.Ellipsis.IsValid() {
		return Child{}, false
	}
	child := Child{World: packageVar(info, call.Args[0])}
	named := false
	for _, opt := range call.Args[1:] {
		oc, ok := ast.Unparen(opt).(*ast.CallExpr)
		if !ok {
			return Child{}, false // an option held in a variable may be env.Name
		}
		fn := typeutil.StaticCallee(info, oc)
		if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != EnvPath {
			return Child{}, false
		}
		if fn.Name() == "Name" {
			if len(oc.Args) != 1 {
				return Child{}, false
			}
			s, ok := constString(info, oc.Args[0])
			if !ok {
				return Child{}, false
			}
			child.Name, named = s, true
		}
	}
	if !named {
		child.Name = wp.nameOfExpr(call.Args[0])
	}
	return child, child.Name != ""
}

// collectRegistrations reads every tool, middleware and hook registration.
func (wp *worldsPass) collectRegistrations(ins *inspector.Inspector) {
	info := wp.pass.TypesInfo
	for n := range ins.PreorderSeq((*ast.CallExpr)(nil)) {
		call := n.(*ast.CallExpr)
		fn := typeutil.StaticCallee(info, call)
		r := &Registration{Call: call}
		switch {
		case isFunc(fn, EnvPath, "Tool") && len(call.Args) == 4:
			r.Kind, r.WorldExpr = KindTool, call.Args[0]
			r.Tool, _ = constString(info, call.Args[1])
			r.In, r.Out = toolTypes(info, call)
		case isMethod(fn, "World", "Use") && len(call.Args) == 1:
			sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
			if !ok {
				continue
			}
			r.Kind, r.WorldExpr = KindMiddleware, sel.X
		case isFunc(fn, EnvPath, "OnStartup") && len(call.Args) == 2,
			isFunc(fn, EnvPath, "OnStartupMap") && len(call.Args) == 3:
			r.Kind, r.WorldExpr = KindHook, call.Args[0]
		default:
			continue
		}
		r.World = wp.lookup(packageVar(info, r.WorldExpr))
		// Each registers the function it is passed last.
		r.Body, r.Ctx = wp.funcOf(call.Args[len(call.Args)-1], map[types.Object]bool{})
		wp.res.Registrations = append(wp.res.Registrations, r)
	}
}

// toolTypes returns the argument and result types of an env.Tool call, as
// its type arguments were inferred or given.
func toolTypes(info *types.Info, call *ast.CallExpr) (in, out types.Type) {
	sig, ok := info.TypeOf(call.Fun).(*types.Signature)
	if !ok || sig.Params().Len() != 4 {
		return nil, nil
	}
	fn, ok := sig.Params().At(3).Type().Underlying().(*types.Signature)
	if !ok || fn.Params().Len() != 2 || fn.Results().Len() != 2 {
		return nil, nil
	}
	return fn.Params().At(1).Type(), fn.Results().At(0).Type()
}

// funcOf finds the body and the first (context) parameter of a registered
// function: a literal, a function of this package, a package-level variable
// of this package initialised with a literal, or a conversion of one of
// those (env.Middleware(fn)).
func (wp *worldsPass) funcOf(e ast.Expr, seen map[types.Object]bool) (*ast.BlockStmt, *types.Var) {
	info := wp.pass.TypesInfo
	var id *ast.Ident
	switch e := ast.Unparen(e).(type) {
	case *ast.FuncLit:
		return e.Body, wp.firstParam(e.Type)
	case *ast.CallExpr:
		if tv, ok := info.Types[e.Fun]; ok && tv.IsType() && len(e.Args) == 1 {
			return wp.funcOf(e.Args[0], seen)
		}
		return nil, nil
	case *ast.Ident:
		id = e
	case *ast.SelectorExpr:
		id = e.Sel
	default:
		return nil, nil
	}
	obj := info.Uses[id]
	if obj == nil || obj.Pkg() != wp.pass.Pkg || seen[obj] {
		return nil, nil
	}
	seen[obj] = true
	switch obj := obj.(type) {
	case *types.Func:
		for _, f := range wp.pass.Files {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && info.Defs[fd.Name] == obj && fd.Body != nil {
					return fd.Body, wp.firstParam(fd.Type)
				}
			}
		}
	case *types.Var:
		if init, ok := wp.specs[obj]; ok && !wp.reassigned[obj] {
			return wp.funcOf(init, seen)
		}
	}
	return nil, nil
}

// firstParam returns the variable of a function type's first parameter, or
// nil when it is unnamed or blank.
func (wp *worldsPass) firstParam(ft *ast.FuncType) *types.Var {
	if ft.Params == nil || len(ft.Params.List) == 0 || len(ft.Params.List[0].Names) == 0 {
		return nil
	}
	v, _ := wp.pass.TypesInfo.Defs[ft.Params.List[0].Names[0]].(*types.Var)
	return v
}
