// Package analyzers holds the static half of `seahaven check`: analyzers
// built on [golang.org/x/tools/go/analysis] that read a world's source and
// find the mistakes no running world reveals until a call makes them.
//
//   - [OpenInCall] (SH208) reports composition.Open — making an instance —
//     inside a tool function, a middleware or a startup hook, and anywhere
//     in a package under a tools/ or middleware/ directory.
//   - [UnknownChild] (SH209) reports ctx.Worlds.Get("name") with a constant
//     name that no AddWorld registered on the world the enclosing tool,
//     middleware or hook belongs to.
//   - [JSONTagOption] (SH210) reports a field of a tool's argument or
//     result struct whose json tag json v2 refuses (a malformed tag, a
//     mis-spelt or repeated option, two fields of one name), or has the
//     option inline or unknown, which json v2 ignores (it spells embedding
//     embed).
//   - [WorldsAnalyzer] is their helper: it finds every package-level
//     *env.World variable, the world's own name, the names its AddWorld calls
//     register, and every tool, middleware and hook registration. It exports
//     a [WorldFact] per world variable, so a host in one package sees the
//     names of a world declared in another, and its [Result] tells a driver
//     which worlds a package declares.
//
// The analyzers only report what they can prove from the source in hand:
// when a world's name or its children cannot be resolved statically (a name
// held in a variable, an AddWorld outside init, a world made by Clone), they
// stay silent. The dynamic checks of package check see what they cannot.
//
// Every analyzer reports diagnostics whose Category is the lint code
// ("SH208", "SH209", "SH210"). The analyzers are stateless values and safe for
// concurrent use by a driver running them over many packages.
package analyzers

import (
	"go/ast"
	"go/constant"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// Import paths of the packages the analyzers recognise.
const (
	// EnvPath is the import path of the domain package world authors import.
	EnvPath = "github.com/seahaven/seahaven/env"
	// CompositionPath is the import path of the engine, which makes instances.
	CompositionPath = "github.com/seahaven/seahaven/composition"
)

// Analyzers are the analyzers whose diagnostics `seahaven check` prints:
// OpenInCall (SH208), UnknownChild (SH209) and JSONTagOption (SH210). All
// require WorldsAnalyzer, which a driver runs first.
var Analyzers = []*analysis.Analyzer{OpenInCall, UnknownChild, JSONTagOption}

// signatureOf returns the signature of fn when fn is named name in package
// pkg, or nil.
func signatureOf(fn *types.Func, pkg, name string) *types.Signature {
	if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != pkg || fn.Name() != name {
		return nil
	}
	return fn.Signature()
}

// isFunc reports whether fn is the package-level function pkg.name.
func isFunc(fn *types.Func, pkg, name string) bool {
	sig := signatureOf(fn, pkg, name)
	return sig != nil && sig.Recv() == nil
}

// isMethod reports whether fn is the method (*env.recv).name.
func isMethod(fn *types.Func, recv, name string) bool {
	sig := signatureOf(fn, EnvPath, name)
	return sig != nil && sig.Recv() != nil && isEnvPointer(sig.Recv().Type(), recv)
}

// isEnvPointer reports whether t is *env.name.
func isEnvPointer(t types.Type, name string) bool {
	p, ok := types.Unalias(t).(*types.Pointer)
	if !ok {
		return false
	}
	n, ok := types.Unalias(p.Elem()).(*types.Named)
	if !ok {
		return false
	}
	obj := n.Obj()
	return obj.Pkg() != nil && obj.Pkg().Path() == EnvPath && obj.Name() == name
}

// isWorldType reports whether t is *env.World.
func isWorldType(t types.Type) bool { return isEnvPointer(t, "World") }

// packageVar returns the package-level variable an expression names — an
// identifier or a qualified identifier — or nil.
func packageVar(info *types.Info, e ast.Expr) *types.Var {
	var id *ast.Ident
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		id = e
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			if _, isPkg := info.Uses[x].(*types.PkgName); isPkg {
				id = e.Sel
			}
		}
	}
	if id == nil {
		return nil
	}
	v, ok := info.Uses[id].(*types.Var)
	if !ok || v.IsField() || v.Pkg() == nil || v.Pkg().Scope().Lookup(v.Name()) != v {
		return nil
	}
	return v
}

// constString returns the value of a constant string expression.
func constString(info *types.Info, e ast.Expr) (string, bool) {
	tv, ok := info.Types[e]
	if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
		return "", false
	}
	return constant.StringVal(tv.Value), true
}
