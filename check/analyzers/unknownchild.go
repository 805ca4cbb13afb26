package analyzers

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

// UnknownChild reports SH209: a Get on *env.Worlds, with a constant name,
// that names no child registered on the world it reaches. Inside a tool
// function, middleware or startup hook registered on a package-level world,
// ctx.Worlds reaches that world's children, and ctx.Worlds.Get("a").Worlds()
// the children of the world added as "a". The children must be resolvable
// statically (see WorldFact); when they are not, the analyzer is silent.
// The engine answers such a Get with a handle whose every use is a WorldBug.
var UnknownChild = &analysis.Analyzer{
	Name:     "unknownchild",
	Doc:      "SH209: report ctx.Worlds.Get with a constant name no AddWorld registered",
	Requires: []*analysis.Analyzer{WorldsAnalyzer},
	Run:      runUnknownChild,
}

func runUnknownChild(pass *analysis.Pass) (any, error) {
	res := pass.ResultOf[WorldsAnalyzer].(*Result)
	info := pass.TypesInfo
	reported := map[token.Pos]bool{}
	for _, r := range res.Registrations {
		if r.Body == nil || r.World == nil || r.Ctx == nil {
			continue
		}
		ast.Inspect(r.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			worlds, name, ok := worldsGet(info, call)
			if !ok {
				return true
			}
			w := resolveWorlds(info, res, r, worlds)
			if w == nil || !w.ChildrenKnown {
				return true
			}
			if _, ok := w.Child(name); ok || reported[call.Args[0].Pos()] {
				return true
			}
			reported[call.Args[0].Pos()] = true
			children := "it adds no worlds"
			if len(w.Children) > 0 {
				children = "its children: " + strings.Join(w.ChildNames(), ", ")
			}
			pass.Report(analysis.Diagnostic{
				Pos: call.Args[0].Pos(), End: call.Args[0].End(), Category: "SH209",
				Message: fmt.Sprintf("%s.Get(%q) names no registered child of %s (%s)", types.ExprString(worlds), name, w.Describe(), children),
			})
			return true
		})
	}
	return nil, nil
}

// resolveWorlds returns the world whose children an *env.Worlds expression
// reaches inside a registered function: ctx.Worlds is the registration's
// world; h.Worlds(), for h = <worlds>.Get("name"), is the world added under
// that name. It returns nil when the expression is anything else or a step
// cannot be resolved.
func resolveWorlds(info *types.Info, res *Result, r *Registration, e ast.Expr) *World {
	switch e := ast.Unparen(e).(type) {
	case *ast.SelectorExpr:
		// ctx.Worlds, the field of the registered function's *env.Ctx.
		x, ok := ast.Unparen(e.X).(*ast.Ident)
		if !ok || e.Sel.Name != "Worlds" || info.Uses[x] != r.Ctx {
			return nil
		}
		if s, ok := info.Selections[e]; !ok || s.Kind() != types.FieldVal {
			return nil
		}
		return r.World
	case *ast.CallExpr:
		// <handle>.Worlds(), with <handle> = <worlds>.Get("name").
		if !isMethod(typeutil.StaticCallee(info, e), "Handle", "Worlds") {
			return nil
		}
		sel, ok := ast.Unparen(e.Fun).(*ast.SelectorExpr)
		if !ok {
			return nil
		}
		worlds, name, ok := worldsGet(info, sel.X)
		if !ok {
			return nil
		}
		parent := resolveWorlds(info, res, r, worlds)
		if parent == nil || !parent.ChildrenKnown {
			return nil
		}
		c, ok := parent.Child(name)
		if !ok || c.World == nil {
			return nil
		}
		w, _ := res.Lookup(c.World)
		return w
	}
	return nil
}

// worldsGet matches <worlds>.Get("name"), the method of *env.Worlds called
// with a constant name, and returns the *env.Worlds expression and the name.
func worldsGet(info *types.Info, e ast.Expr) (worlds ast.Expr, name string, ok bool) {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || !isMethod(typeutil.StaticCallee(info, call), "Worlds", "Get") || len(call.Args) != 1 {
		return nil, "", false
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return nil, "", false
	}
	name, ok = constString(info, call.Args[0])
	return sel.X, name, ok
}
