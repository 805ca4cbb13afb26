package check_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/check"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/fixture"
)

// newWorld declares a world with a one-table schema named after it.
func newWorld(name string) *env.World {
	return env.NewWorld(env.WorldSpec{
		Name: name, Version: "1.0.0",
		Schema: fmt.Sprintf("CREATE TABLE %s_rows (id TEXT PRIMARY KEY) STRICT;", name),
	})
}

// addTool registers a tool that does nothing.
func addTool(w *env.World, name, description string) {
	env.Tool(w, name, description, func(*env.Ctx, struct{}) (string, error) { return "", nil })
}

// edge returns the AddWorld registration of w named name.
func edge(t *testing.T, w *env.World, name string) *env.Edge {
	t.Helper()
	for _, e := range w.Edges() {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("%s has no child %q", w.Name(), name)
	return nil
}

// only returns the findings of the given codes.
func only(fs []check.Finding, codes ...string) []check.Finding {
	var out []check.Finding
	for _, f := range fs {
		if slices.Contains(codes, f.Code) {
			out = append(out, f)
		}
	}
	return out
}

// expectFindings compares findings with the expected ones, exactly.
func expectFindings(t *testing.T, got, want []check.Finding) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n%s\nwant:\n%s", check.Format(got), check.Format(want))
	}
}

func TestWorld_CompanyChecksClean(t *testing.T) {
	ctx := context.Background()
	t.Run("World", func(t *testing.T) {
		fs := check.World(ctx, company.World)
		if check.HasErrors(fs) {
			t.Fatalf("the examples' company world has errors:\n%s", check.Format(fs))
		}
		if len(fs) != 0 {
			t.Errorf("the examples' company world has warnings:\n%s", check.Format(fs))
		}
	})
	t.Run("WithItsFixture", func(t *testing.T) {
		// A composite fixture with a shared node and a scoped one, freshly
		// built, checks clean.
		dir := t.TempDir()
		if err := company.BuildAcme(ctx, dir, false); err != nil {
			t.Fatal(err)
		}
		if list, err := fixture.List(dir); err != nil || len(list) == 0 || len(list[0].Nodes) == 0 {
			t.Fatalf("fixture.List = %v, %v; want the composite fixture acme", list, err)
		}
		if fs := check.World(ctx, company.World.WithFixturesDir(dir)); len(fs) != 0 {
			t.Errorf("findings:\n%s", check.Format(fs))
		}
	})
}

func TestWorld_Surface(t *testing.T) {
	for _, tt := range []struct {
		name string
		// build returns the root and the edge the finding points at.
		build func(t *testing.T) (*env.World, *env.Edge)
		// code and message are the one expected finding; empty for none.
		code, message string
	}{
		{
			name: "SH206PrefixedSibling",
			build: func(t *testing.T) (*env.World, *env.Edge) {
				p := newWorld("payments")
				addTool(p, "create_charge", "Charge the account.")
				addTool(p, "refund", "Refund a charge; call create_charge first.")
				root := newWorld("company")
				root.AddWorld(p, env.ToolPrefix("pay_"))
				return root, edge(t, root, "payments")
			},
			code:    "SH206",
			message: "pay_refund's description names a tool of payments the agent cannot call by that name: create_charge (published as pay_create_charge)",
		},
		{
			name: "SH206HiddenSibling",
			build: func(t *testing.T) (*env.World, *env.Edge) {
				p := newWorld("payments")
				addTool(p, "create_charge", "Charge the account.")
				addTool(p, "list_charges", "List charges.")
				addTool(p, "refund", "Refund a charge found with list_charges, made by create_charge.")
				root := newWorld("company")
				root.AddWorld(p, env.ToolPrefix("pay_"), env.ToolBlockList("create_charge"))
				return root, edge(t, root, "payments")
			},
			code:    "SH206",
			message: "pay_refund's description names a tool of payments the agent cannot call by that name: create_charge (not published), list_charges (published as pay_list_charges)",
		},
		{
			name: "SH206OutermostPrefix",
			build: func(t *testing.T) (*env.World, *env.Edge) {
				p := newWorld("payments")
				addTool(p, "create_charge", "Charge the account.")
				addTool(p, "refund", "Undo create_charge.")
				shop := newWorld("shop")
				shop.AddWorld(p, env.ToolPrefix("p_"))
				root := newWorld("company")
				root.AddWorld(shop, env.ToolPrefix("shop_"))
				return root, edge(t, root, "shop")
			},
			code:    "SH206",
			message: "shop_p_refund's description names a tool of payments the agent cannot call by that name: create_charge (published as shop_p_create_charge)",
		},
		{
			name: "NoPrefix",
			build: func(t *testing.T) (*env.World, *env.Edge) {
				p := newWorld("payments")
				addTool(p, "create_charge", "Charge the account.")
				addTool(p, "refund", "Refund a charge; call create_charge first.")
				root := newWorld("company")
				root.AddWorld(p)
				return root, nil
			},
		},
		{
			name: "NotAWholeWord",
			build: func(t *testing.T) (*env.World, *env.Edge) {
				p := newWorld("payments")
				addTool(p, "charge", "Charge the account.")
				addTool(p, "refund", "Refund a charged amount, see recharge-policy and charges_v2.")
				root := newWorld("company")
				root.AddWorld(p, env.ToolPrefix("pay_"))
				return root, nil
			},
		},
		{
			name: "SiblingPublishedUnderItsOwnName",
			build: func(t *testing.T) (*env.World, *env.Edge) {
				p := newWorld("payments")
				addTool(p, "create_charge", "Charge the account.")
				addTool(p, "refund", "Refund a charge; call create_charge first.")
				root := newWorld("company")
				root.AddWorld(p, env.ToolAllowList("create_charge"))
				root.AddWorld(p, env.Name("payments_eu"), env.Store("eu"), env.ToolPrefix("eu_"), env.ToolAllowList("refund"))
				return root, nil
			},
		},
		{
			name: "SH207SharedNodeTwice",
			build: func(t *testing.T) (*env.World, *env.Edge) {
				p := newWorld("payments")
				addTool(p, "create_charge", "Charge the account.")
				shop := newWorld("shop")
				addTool(shop, "place_order", "Place an order.")
				shop.AddWorld(p)
				root := newWorld("company")
				root.AddWorld(p, env.ToolPrefix("pay_"))
				root.AddWorld(shop, env.ToolPrefix("shop_"))
				return root, edge(t, root, "shop")
			},
			code:    "SH207",
			message: "the tool create_charge of node payments reaches the agent under 2 names: pay_create_charge, shop_create_charge",
		},
		{
			name: "SH207DivergesDeeper",
			build: func(t *testing.T) (*env.World, *env.Edge) {
				p := newWorld("payments")
				addTool(p, "create_charge", "Charge the account.")
				shop := newWorld("shop")
				shop.AddWorld(p, env.ToolPrefix("a_"))
				shop.AddWorld(p, env.Name("again"), env.ToolPrefix("b_"))
				root := newWorld("company")
				root.AddWorld(shop)
				return root, edge(t, shop, "again")
			},
			code:    "SH207",
			message: "the tool create_charge of node shop/payments reaches the agent under 2 names: a_create_charge, b_create_charge",
		},
		{
			name: "TwoScopesAreTwoNodes",
			build: func(t *testing.T) (*env.World, *env.Edge) {
				p := newWorld("payments")
				addTool(p, "create_charge", "Charge the account.")
				root := newWorld("company")
				root.AddWorld(p, env.ToolPrefix("pay_"))
				root.AddWorld(p, env.Name("payments_eu"), env.Store("eu"), env.ToolPrefix("eu_"))
				return root, nil
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root, e := tt.build(t)
			got := check.World(context.Background(), root)
			var want []check.Finding
			if tt.code != "" {
				want = []check.Finding{{Pos: e.Where + ":1", Code: tt.code, Severity: check.SeverityWarning, Message: tt.message}}
			}
			expectFindings(t, got, want)
		})
	}
}

func TestWorld_Seal(t *testing.T) {
	for _, tt := range []struct {
		name string
		// build returns the root and the edge the seal error names.
		build func(t *testing.T) (*env.World, *env.Edge)
		// message is the WorldBug's message after the edge's description.
		message string
	}{
		{
			name: "AllowListNamesNothing",
			build: func(t *testing.T) (*env.World, *env.Edge) {
				p := newWorld("payments")
				addTool(p, "create_charge", "Charge the account.")
				root := newWorld("company")
				root.AddWorld(p, env.ToolAllowList("create_chrage"))
				return root, edge(t, root, "payments")
			},
			message: `ToolAllowList names "create_chrage", which payments does not contribute (it contributes: create_charge)`,
		},
		{
			name: "TwoRoutesOneName",
			build: func(t *testing.T) (*env.World, *env.Edge) {
				p := newWorld("payments")
				addTool(p, "list", "List charges.")
				chat := newWorld("chat")
				addTool(chat, "list", "List messages.")
				root := newWorld("company")
				root.AddWorld(p)
				root.AddWorld(chat)
				return root, edge(t, root, "chat")
			},
			message: `two routes produce the tool name "list": this one and company.AddWorld(payments, Name "payments") at check_test.go:`,
		},
		{
			name: "ReservedName",
			build: func(t *testing.T) (*env.World, *env.Edge) {
				p := newWorld("payments")
				addTool(p, "ate", "Eat.")
				root := newWorld("company")
				root.AddWorld(p, env.ToolPrefix("st"))
				return root, edge(t, root, "payments")
			},
			message: `the contributed name "state" is reserved`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root, e := tt.build(t)
			got := only(check.World(context.Background(), root), "SH504")
			if len(got) != 1 {
				t.Fatalf("got %d SH504 findings, want 1:\n%s", len(got), check.Format(got))
			}
			f := got[0]
			prefix := "the composition does not seal: " + e.String() + ": "
			if f.Pos != e.Where+":1" || f.Severity != check.SeverityError || !strings.HasPrefix(f.Message, prefix+tt.message) {
				t.Errorf("finding %s\nwant at %s:1 an error starting %q", f, e.Where, prefix+tt.message)
			}
		})
	}
}

// TestWorld_SealEveryError: a tree that breaks several seal rules is one
// SH504 finding per breach, each at its AddWorld.
func TestWorld_SealEveryError(t *testing.T) {
	p := newWorld("payments")
	addTool(p, "create_charge", "Charge the account.")
	addTool(p, "list", "List charges.")
	chat := newWorld("chat")
	addTool(chat, "list", "List messages.")
	root := newWorld("company")
	root.AddWorld(p, env.ToolBlockList("create_chrage"))
	root.AddWorld(chat)
	got := only(check.World(context.Background(), root), "SH504")
	pe, ce := edge(t, root, "payments"), edge(t, root, "chat")
	want := []struct{ where, message string }{
		{pe.Where, `ToolBlockList names "create_chrage", which payments does not contribute (it contributes: create_charge, list)`},
		{ce.Where, `two routes produce the tool name "list": this one and ` + pe.String()},
	}
	if len(got) != len(want) {
		t.Fatalf("SH504 findings:\n%s\nwant %d", check.Format(got), len(want))
	}
	for i, w := range want {
		e := pe
		if i == 1 {
			e = ce
		}
		prefix := "the composition does not seal: " + e.String() + ": " + w.message
		if got[i].Pos != w.where+":1" || !strings.HasPrefix(got[i].Message, prefix) {
			t.Errorf("finding %s\nwant at %s:1 one starting %q", got[i], w.where, prefix)
		}
	}
}

// TestWorld_Keys: a table whose primary key cannot key the change log is
// SH301 at its world's NewWorld line, once, and not SH504 too, even in a
// tree that does not seal for another reason.
func TestWorld_Keys(t *testing.T) {
	legacy := env.NewWorld(env.WorldSpec{Name: "legacy", Version: "1.0.0",
		Schema: `CREATE TABLE codes (code TEXT PRIMARY KEY, label TEXT NOT NULL);`})
	p := newWorld("payments")
	addTool(p, "create_charge", "Charge the account.")
	p.AddWorld(legacy)
	root := newWorld("company")
	root.AddWorld(p, env.ToolAllowList("create_chrage"))
	root.AddWorld(legacy, env.Name("again"))
	got := check.World(context.Background(), root)
	keys := only(got, "SH301")
	want := "world legacy: the change log cannot key the rows of table codes: its primary-key column code may hold NULL"
	if len(keys) != 1 || keys[0].Pos != legacy.Where()+":1" || keys[0].Severity != check.SeverityError || !strings.HasPrefix(keys[0].Message, want) {
		t.Fatalf("SH301 findings:\n%s\nwant one at %s:1 starting %q", check.Format(keys), legacy.Where(), want)
	}
	if seal := only(got, "SH504"); len(seal) != 1 || strings.Contains(seal[0].Message, "codes") {
		t.Fatalf("SH504 findings:\n%s\nwant only the allow-list one", check.Format(seal))
	}
	// With the key declared NOT NULL, the world checks clean.
	fixed := env.NewWorld(env.WorldSpec{Name: "legacy", Version: "1.0.0",
		Schema: `CREATE TABLE codes (code TEXT PRIMARY KEY NOT NULL, label TEXT NOT NULL);`})
	if fs := check.World(context.Background(), fixed); len(fs) != 0 {
		t.Fatalf("findings:\n%s", check.Format(fs))
	}
}

// TestWorld_Schema: a schema that does not apply is SH302 at its world's
// NewWorld line, once, and not SH504 too, also for a world added by
// another; the message is SQLite's.
func TestWorld_Schema(t *testing.T) {
	broken := env.NewWorld(env.WorldSpec{Name: "broken", Version: "1.0.0",
		Schema: `CREATE TABLE b (id TEXT PRIMARY KEY, x INTEGR NOT NULL,) STRICT;`})
	root := newWorld("company")
	root.AddWorld(broken)
	for _, w := range []*env.World{broken, root} {
		got := check.World(context.Background(), w)
		want := `world broken: the schema does not apply: sqlitestore: near ")": syntax error (in statement: CREATE TABLE b (id TEXT PRIMARY KEY, x INTEGR NOT NULL,) STRICT;)`
		if len(got) != 1 || got[0].Code != "SH302" || got[0].Pos != broken.Where()+":1" || got[0].Severity != check.SeverityError || got[0].Message != want {
			t.Errorf("check %s: findings:\n%s\nwant one SH302 error at %s:1: %s", w.Name(), check.Format(got), broken.Where(), want)
		}
	}
}

// Declared child names, for TestWorld_Declared.
type (
	bothWorlds struct {
		Payments *env.Handle
		Shop     *env.Handle
	}
	taggedWorlds struct {
		EU   *env.Handle `world:"payments_eu"`
		Shop *env.Handle
	}
	extraWorlds struct {
		Payments *env.Handle
		Shop     *env.Handle
		Billing  *env.Handle
		Note     string // not a handle: not a child name
	}
	paymentsOnly struct{ Payments *env.Handle }
	shopOnly     struct{ Shop *env.Handle }
)

func TestWorld_Declared(t *testing.T) {
	// root adds payments and shop.
	root := func() *env.World {
		w := newWorld("company")
		w.AddWorld(newWorld("payments"))
		w.AddWorld(newWorld("shop"))
		return w
	}
	for _, tt := range []struct {
		name string
		// declare declares structs on w.
		declare func(w *env.World)
		// want returns the expected findings.
		want func(w *env.World) []check.Finding
	}{
		{
			name:    "NoneDeclared",
			declare: func(*env.World) {},
			want:    func(*env.World) []check.Finding { return nil },
		},
		{
			name:    "AllNamed",
			declare: func(w *env.World) { env.DeclareWorlds[bothWorlds](w) },
			want:    func(*env.World) []check.Finding { return nil },
		},
		{
			name:    "NamedAcrossTwoStructs",
			declare: func(w *env.World) { env.DeclareWorlds[paymentsOnly](w); env.DeclareWorlds[shopOnly](w) },
			want:    func(*env.World) []check.Finding { return nil },
		},
		{
			name:    "SH502ExtraField",
			declare: func(w *env.World) { env.DeclareWorlds[extraWorlds](w) },
			want: func(w *env.World) []check.Finding {
				return []check.Finding{{
					Pos: w.DeclaredWorlds()[0].Where + ":1", Code: "SH502", Severity: check.SeverityError,
					Message: `check_test.extraWorlds.Billing names the child "billing", which no AddWorld on company registered (registered: payments, shop)`,
				}}
			},
		},
		{
			name:    "SH502AndSH503Tagged",
			declare: func(w *env.World) { env.DeclareWorlds[taggedWorlds](w) },
			want: func(w *env.World) []check.Finding {
				return []check.Finding{
					{
						Pos: w.DeclaredWorlds()[0].Where + ":1", Code: "SH502", Severity: check.SeverityError,
						Message: `check_test.taggedWorlds.EU names the child "payments_eu", which no AddWorld on company registered (registered: payments, shop)`,
					},
					{
						Pos: w.Edges()[0].Where + ":1", Code: "SH503", Severity: check.SeverityWarning,
						Message: `company registers the child "payments", which no declared struct names (declared: check_test.taggedWorlds)`,
					},
				}
			},
		},
		{
			name:    "SH503Forgotten",
			declare: func(w *env.World) { env.DeclareWorlds[paymentsOnly](w) },
			want: func(w *env.World) []check.Finding {
				return []check.Finding{{
					Pos: w.Edges()[1].Where + ":1", Code: "SH503", Severity: check.SeverityWarning,
					Message: `company registers the child "shop", which no declared struct names (declared: check_test.paymentsOnly)`,
				}}
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := root()
			tt.declare(w)
			want := tt.want(w)
			check.Sort(want)
			expectFindings(t, check.World(context.Background(), w), want)
		})
	}
}

func TestFormat(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   []check.Finding // the findings, in any order
		want string          // the formatted text
	}{
		{name: "Empty", in: nil, want: ""},
		{
			name: "SortedNumerically",
			in: []check.Finding{
				{Pos: "b.go:10:1", Code: "SH503", Severity: "warning", Message: "m3"},
				{Pos: "b.go:9:12", Code: "SH209", Severity: "error", Message: "m2"},
				{Pos: "b.go:9:3", Code: "SH208", Severity: "error", Message: "m1"},
				{Pos: "a.go:100:1", Code: "SH504", Severity: "error", Message: "m0"},
			},
			want: "a.go:100:1: SH504 error: m0\nb.go:9:3: SH208 error: m1\nb.go:9:12: SH209 error: m2\nb.go:10:1: SH503 warning: m3\n",
		},
		{
			name: "CodeBreaksTies",
			in: []check.Finding{
				{Pos: "c:\\w\\a.go:1:1", Code: "SH503", Severity: "warning", Message: "x"},
				{Pos: "c:\\w\\a.go:1:1", Code: "SH502", Severity: "error", Message: "y"},
			},
			want: "c:\\w\\a.go:1:1: SH502 error: y\nc:\\w\\a.go:1:1: SH503 warning: x\n",
		},
		{
			name: "DuplicatesOnce",
			in: []check.Finding{
				{Pos: "a.go:1:1", Code: "SH504", Severity: "error", Message: "m"},
				{Pos: "a.go:1:1", Code: "SH504", Severity: "error", Message: "m"},
			},
			want: "a.go:1:1: SH504 error: m\n",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			if got := check.Format(in); got != tt.want {
				t.Errorf("Format =\n%s\nwant\n%s", got, tt.want)
			}
			if !slices.Equal(in, tt.in) {
				t.Errorf("Format modified its argument")
			}
		})
	}
}

func TestUnique(t *testing.T) {
	a := check.Finding{Pos: "a.go:2:1", Code: "SH504", Severity: "error", Message: "m"}
	b := check.Finding{Pos: "a.go:10:1", Code: "SH504", Severity: "error", Message: "m"}
	in := []check.Finding{b, a, b, a}
	got := check.Unique(in)
	if want := []check.Finding{a, b}; !slices.Equal(got, want) {
		t.Errorf("Unique = %v, want %v", got, want)
	}
	if !slices.Equal(in, []check.Finding{b, a, b, a}) {
		t.Errorf("Unique modified its argument")
	}
	if got := check.Unique(nil); len(got) != 0 {
		t.Errorf("Unique(nil) = %v, want none", got)
	}
}

func TestSplitPos(t *testing.T) {
	for _, tt := range []struct {
		pos       string // the position
		file      string // the file part
		line, col int    // the numbers
	}{
		{"a.go:3:4", "a.go", 3, 4},
		{"a.go:3", "a.go", 3, 0},
		{"a.go", "a.go", 0, 0},
		{"c:\\w\\a.go:1:2", "c:\\w\\a.go", 1, 2},
		{"a:b.go:x:7", "a:b.go:x", 7, 0},
		{"a.go:03:4", "a.go", 3, 4},
		{"", "", 0, 0},
	} {
		file, line, col := check.SplitPos(tt.pos)
		if file != tt.file || line != tt.line || col != tt.col {
			t.Errorf("SplitPos(%q) = %q, %d, %d; want %q, %d, %d", tt.pos, file, line, col, tt.file, tt.line, tt.col)
		}
	}
}

func TestHasErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   []check.Finding // the findings
		want bool            // whether any is an error
	}{
		{"None", nil, false},
		{"WarningsOnly", []check.Finding{{Code: "SH206", Severity: check.SeverityWarning}}, false},
		{"AnError", []check.Finding{{Code: "SH206", Severity: check.SeverityWarning}, {Code: "SH504", Severity: check.SeverityError}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := check.HasErrors(tt.in); got != tt.want {
				t.Errorf("HasErrors = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRules(t *testing.T) {
	codes := []string{"SH206", "SH207", "SH208", "SH209", "SH210", "SH301", "SH302", "SH303", "SH401", "SH402", "SH403", "SH404", "SH405", "SH406", "SH407", "SH408", "SH409", "SH502", "SH503", "SH504", "SH505"}
	var got []string
	for _, r := range check.Rules {
		got = append(got, r.Code)
		if r.Severity != check.SeverityError && r.Severity != check.SeverityWarning {
			t.Errorf("%s has severity %q", r.Code, r.Severity)
		}
		if lr, ok := check.Lookup(r.Code); !ok || lr != r {
			t.Errorf("Lookup(%s) = %+v, %v", r.Code, lr, ok)
		}
	}
	if !slices.Equal(got, codes) {
		t.Errorf("Rules codes = %v, want %v", got, codes)
	}
	if _, ok := check.Lookup("SH999"); ok {
		t.Errorf("Lookup(SH999) found a rule")
	}
}

func TestRules_Documented(t *testing.T) {
	// docs/lints.md has a section and an example finding for every code.
	b, err := os.ReadFile(filepath.Join("..", "docs", "lints.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, r := range check.Rules {
		if !strings.Contains(doc, "\n## "+r.Code+" — ") {
			t.Errorf("docs/lints.md has no section for %s", r.Code)
		}
		if !strings.Contains(doc, ": "+r.Code+" "+r.Severity+": ") {
			t.Errorf("docs/lints.md has no example %s %s finding", r.Code, r.Severity)
		}
	}
}
