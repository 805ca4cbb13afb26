package analyzers

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
	"golang.org/x/tools/go/types/typeutil"
)

// OpenInCall reports SH208: composition.Open, which makes an instance,
// called inside a tool function, a middleware or a startup hook (the
// function passed to env.Tool, (*env.World).Use, env.OnStartup or
// env.OnStartupMap, as a literal or as a function or variable of the same
// package), or anywhere in a package whose import path has a "tools" or
// "middleware" element. The engine refuses it at run time; the child name
// is the only door to another world.
var OpenInCall = &analysis.Analyzer{
	Name:     "openincall",
	Doc:      "SH208: report composition.Open inside a tool, a middleware or a startup hook, or in a tools/ or middleware/ package",
	Requires: []*analysis.Analyzer{inspect.Analyzer, WorldsAnalyzer},
	Run:      runOpenInCall,
}

func runOpenInCall(pass *analysis.Pass) (any, error) {
	res := pass.ResultOf[WorldsAnalyzer].(*Result)
	reported := map[token.Pos]bool{}
	report := func(call *ast.CallExpr, where string) {
		if reported[call.Pos()] {
			return
		}
		reported[call.Pos()] = true
		pass.Report(analysis.Diagnostic{
			Pos: call.Pos(), End: call.End(), Category: "SH208",
			Message: fmt.Sprintf("composition.Open %s: an instance cannot be made inside a call; reach added worlds through ctx.Worlds", where),
		})
	}
	if elem := callPathElement(pass.Pkg.Path()); elem != "" {
		ins := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
		for n := range ins.PreorderSeq((*ast.CallExpr)(nil)) {
			call := n.(*ast.CallExpr)
			if isOpen(pass.TypesInfo, call) {
				report(call, fmt.Sprintf("in package %s, whose code runs inside calls (it is under %s/)", pass.Pkg.Path(), elem))
			}
		}
		return nil, nil
	}
	for _, r := range res.Registrations {
		if r.Body == nil {
			continue
		}
		where := "inside " + describeRegistration(r)
		ast.Inspect(r.Body, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && isOpen(pass.TypesInfo, call) {
				report(call, where)
			}
			return true
		})
	}
	return nil, nil
}

// callPathElement returns "tools" or "middleware" when an import path has
// such an element, else "".
func callPathElement(path string) string {
	for _, e := range strings.Split(path, "/") {
		if e == "tools" || e == "middleware" {
			return e
		}
	}
	return ""
}

// isOpen reports whether a call is composition.Open.
func isOpen(info *types.Info, call *ast.CallExpr) bool {
	return isFunc(typeutil.StaticCallee(info, call), CompositionPath, "Open")
}

// describeRegistration names a registration for messages: `the tool
// function of "invoice" (company)`, `a middleware of company`, `a startup
// hook of company`.
func describeRegistration(r *Registration) string {
	world := types.ExprString(r.WorldExpr)
	if r.World != nil {
		world = r.World.Describe()
	}
	switch r.Kind {
	case KindTool:
		if r.Tool != "" {
			return fmt.Sprintf("the tool function of %q (%s)", r.Tool, world)
		}
		return "a tool function of " + world
	case KindMiddleware:
		return "a middleware of " + world
	}
	return "a startup hook of " + world
}
