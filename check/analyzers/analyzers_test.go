package analyzers_test

import (
	"slices"
	"testing"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/seahaven/seahaven/check/analyzers"
)

// The testdata tree is GOPATH-shaped: src/github.com/seahaven/seahaven/env
// and .../composition are stand-ins with the real API shape, and every other
// package under src states what it expects in `// want` comments.

func TestWorldsAnalyzer(t *testing.T) {
	// The facts are checked against the `// want` comments; the result of
	// facts/company is checked here.
	results := analysistest.Run(t, analysistest.TestData(), analyzers.WorldsAnalyzer,
		"facts/payments", "facts/company", "facts/dynamic", "facts/derived")
	var res *analyzers.Result
	for _, r := range results {
		if r.Action.Package.PkgPath == "facts/company" {
			res, _ = r.Action.Result.(*analyzers.Result)
		}
	}
	if res == nil {
		t.Fatal("no result for facts/company")
	}
	type world struct {
		name     string   // the world's own name
		varName  string   // the package-level variable
		exported bool     // whether a driver can reach the variable
		children []string // the registered child names
	}
	var got []world
	for _, w := range res.Worlds {
		got = append(got, world{w.Name, w.Var.Name(), w.Var.Exported(), w.ChildNames()})
		if lw, ok := res.Lookup(w.Var); !ok || lw != w {
			t.Errorf("Lookup(%s) = %v, %v; want the package's own world", w.Var.Name(), lw, ok)
		}
	}
	want := []world{
		{"chat", "Chat", true, []string{}},
		{"company", "World", true, []string{"payments", "payments_eu", "chat", "audit"}},
	}
	if !slices.EqualFunc(got, want, func(a, b world) bool {
		return a.name == b.name && a.varName == b.varName && a.exported == b.exported && slices.Equal(a.children, b.children)
	}) {
		t.Errorf("Worlds = %+v, want %+v", got, want)
	}
	// The imported payments world is reachable through its fact, as the
	// child the company added.
	company := res.Worlds[1]
	c, ok := company.Child("payments")
	if !ok || c.World == nil {
		t.Fatalf("child payments = %+v, %v; want its variable", c, ok)
	}
	pw, ok := res.Lookup(c.World)
	if !ok || pw.Name != "payments" || !pw.ChildrenKnown || len(pw.Children) != 0 {
		t.Errorf("Lookup(payments.World) = %+v, %v; want world payments with no children", pw, ok)
	}
}

func TestOpenInCall(t *testing.T) {
	results := analysistest.Run(t, analysistest.TestData(), analyzers.OpenInCall,
		"sh208/company", "sh208/app/tools", "sh208/app/middleware/auth", "sh208/app/toolsy")
	checkCategories(t, analyzers.OpenInCall, "SH208", results)
}

func TestUnknownChild(t *testing.T) {
	results := analysistest.Run(t, analysistest.TestData(), analyzers.UnknownChild, "sh209/company", "sh209/chain")
	checkCategories(t, analyzers.UnknownChild, "SH209", results)
}

func TestJSONTagOption(t *testing.T) {
	results := analysistest.Run(t, analysistest.TestData(), analyzers.JSONTagOption, "sh210/company")
	checkCategories(t, analyzers.JSONTagOption, "SH210", results)
}

// checkCategories checks that every diagnostic carries its analyzer's code
// as its category, which is how a driver prints it.
func checkCategories(t *testing.T, a *analysis.Analyzer, code string, results []*analysistest.Result) {
	t.Helper()
	n := 0
	for _, r := range results {
		for _, d := range r.Action.Diagnostics {
			n++
			if d.Category != code {
				t.Errorf("%s: diagnostic %q has category %q, want %q", a.Name, d.Message, d.Category, code)
			}
		}
	}
	if n == 0 {
		t.Errorf("%s reported nothing", a.Name)
	}
}

func TestValidate(t *testing.T) {
	if err := analysis.Validate(append([]*analysis.Analyzer{analyzers.WorldsAnalyzer}, analyzers.Analyzers...)); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
