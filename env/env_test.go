package env_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seahaven/seahaven/env"
)

func TestCheckName(t *testing.T) {
	tests := []struct {
		name string // candidate
		ok   bool   // accepted
	}{
		{"payments", true},
		{"payments_eu", true},
		{"p2", true},
		{"", false},
		{"Payments", false},
		{"2p", false},
		{"_p", false},
		{"pay__eu", false},
		{"pay-eu", false},
		{"main", false},
		{"temp", false},
		{"pay.eu", false},
		{"pay/eu", false},
	}
	for _, tt := range tests {
		if err := env.CheckName(tt.name); (err == nil) != tt.ok {
			t.Errorf("CheckName(%q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func TestValidToolName(t *testing.T) {
	tests := []struct {
		name string // candidate
		ok   bool   // accepted
	}{
		{"create_charge", true},
		{"pay_create-charge2", true},
		{"A", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"", false},
		{"payments.create", false},
		{"a b", false},
	}
	for _, tt := range tests {
		if got := env.ValidToolName(tt.name); got != tt.ok {
			t.Errorf("ValidToolName(%q) = %v, want %v", tt.name, got, tt.ok)
		}
	}
}

func bugOf(t *testing.T, fn func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		b, ok := r.(*env.WorldBug)
		if !ok {
			t.Fatalf("panic %v, want *env.WorldBug", r)
		}
		if !strings.Contains(b.Where, "env_test.go") {
			t.Fatalf("Where = %q, want the registration line", b.Where)
		}
		msg = b.Message
	}()
	fn()
	return ""
}

type none struct{}

func TestTool_RegistrationBugs(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "regs", Version: "1"})
	fn := func(c *env.Ctx, _ none) (int, error) { return 0, nil }
	first := env.Tool(w, "ok", "Fine.", fn).Def().Where
	// A duplicate names the line of the first registration, which may be
	// in another file of the package.
	want := `regs.Tool("ok"): the tool is already registered at ` + filepath.Base(first) + "; give one of them another name"
	if msg := bugOf(t, func() { env.Tool(w, "ok", "Again.", fn) }); msg != want {
		t.Errorf("duplicate: %q, want %q", msg, want)
	}
	for _, tc := range []struct{ name, want string }{
		{"ok", "already registered"},
		{"reset", "reserved"},
		{"seahaven_control", "reserved"},
		{"bad name", "must match"},
	} {
		if msg := bugOf(t, func() { env.Tool(w, tc.name, "x", fn) }); !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %q lacks %q", tc.name, msg, tc.want)
		}
	}
	// A result type JSON cannot encode, reached however deep, is refused at
	// the registration; one behind an interface cannot be known there.
	type deep struct {
		Done chan int `json:"done"`
	}
	for name, reg := range map[string]func(){
		"chan":    func() { env.Tool(w, "c", "x", func(*env.Ctx, none) (chan int, error) { return nil, nil }) },
		"complex": func() { env.Tool(w, "x", "x", func(*env.Ctx, none) ([]complex128, error) { return nil, nil }) },
		"field":   func() { env.Tool(w, "f", "x", func(*env.Ctx, none) (map[string]*deep, error) { return nil, nil }) },
	} {
		if msg := bugOf(t, reg); !strings.Contains(msg, "which JSON cannot encode") {
			t.Errorf("%s result: %q", name, msg)
		}
	}
	env.Tool(w, "any", "x", func(*env.Ctx, none) (map[string]any, error) { return nil, nil })
	// A result field whose json tag mis-spells an option, which the
	// server's encoding would ignore, is refused as it is in arguments.
	type noted struct {
		//lint:ignore SA5008 the mis-spelt option is what this case tests
		Note string `json:"note,omitEmpty"`
	}
	argMsg := bugOf(t, func() { env.Tool(w, "a", "x", func(*env.Ctx, noted) (int, error) { return 0, nil }) })
	resMsg := bugOf(t, func() { env.Tool(w, "r", "x", func(*env.Ctx, none) (noted, error) { return noted{}, nil }) })
	if want := strings.Replace(argMsg, `Tool("a")`, `Tool("r")`, 1); resMsg != want || !strings.Contains(resMsg, "specify `omitempty` instead") {
		t.Errorf("mis-spelt option in a result: %q, want %q", resMsg, want)
	}
	if msg := bugOf(t, func() { env.Tool(w, "r", "x", func(*env.Ctx, none) (map[string][]*noted, error) { return nil, nil }) }); !strings.Contains(msg, "Go struct field Note has invalid appearance of `omitEmpty`") {
		t.Errorf("mis-spelt option deep in a result: %q", msg)
	}
	if msg := bugOf(t, func() { env.NewWorld(env.WorldSpec{Name: "Bad", Version: "1"}) }); !strings.Contains(msg, "must match") {
		t.Errorf("NewWorld: %q", msg)
	}
	if msg := bugOf(t, func() { env.NewWorld(env.WorldSpec{Name: "nover"}) }); !strings.Contains(msg, "Version is required") {
		t.Errorf("NewWorld: %q", msg)
	}
}

// Structs with json tags json v2 refuses, which the server's encoding of
// results would write all the same.
type (
	tagRepeated struct {
		//lint:ignore SA5008 the repeated option is what this case tests
		Note string `json:"note,omitempty,omitempty"`
	}
	tagQuoted struct {
		//lint:ignore SA5008 the malformed name is what this case tests
		Note string `json:"'note"`
	}
	tagUnexported struct {
		ID   int    `json:"id"`
		note string `json:""` //lint:ignore U1000 the tag is what this case tests
	}
	tagEmbedNamed struct {
		Rest map[string]any `json:"rest,embed"`
	}
	tagEmbedOmit struct {
		Rest map[string]any `json:",embed,omitzero"`
	}
	tagCase struct {
		//lint:ignore SA5008 the case value is what this case tests
		Note string `json:"note,case:bogus"`
	}
	tagFormat struct {
		At time.Time `json:"at,format:RFC3339"`
	}
	tagSameName struct {
		Note  string
		Other string `json:"Note"`
	}
)

// TestTool_RefusesTagsJSONv2Refuses panics at the registration of a tool
// whose result or argument type reaches a struct with a json tag json v2
// refuses, naming the type, the field and the tag.
func TestTool_RefusesTagsJSONv2Refuses(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "tags", Version: "1"})
	type none struct{}
	for _, tc := range []struct {
		name string
		res  func() // registers a tool returning a []T
		arg  func() // registers a tool taking a struct with a field of T
		want string // the message after the type
	}{
		{"repeated", func() {
			env.Tool(w, "r", "x", func(*env.Ctx, none) ([]tagRepeated, error) { return nil, nil })
		}, func() {
			env.Tool(w, "a", "x", func(*env.Ctx, struct{ In tagRepeated }) (int, error) { return 0, nil })
		}, "Go struct field Note has duplicate appearance of `omitempty` tag option (tag `json:\"note,omitempty,omitempty\"`)"},
		{"quoted", func() {
			env.Tool(w, "r", "x", func(*env.Ctx, none) ([]tagQuoted, error) { return nil, nil })
		}, func() {
			env.Tool(w, "a", "x", func(*env.Ctx, struct{ In tagQuoted }) (int, error) { return 0, nil })
		}, "Go struct field Note has malformed `json` tag: invalid character '\\'' at start of option (expecting Unicode letter) (tag `json:\"'note\"`)"},
		{"unexported", func() {
			env.Tool(w, "r", "x", func(*env.Ctx, none) ([]tagUnexported, error) { return nil, nil })
		}, func() {
			env.Tool(w, "a", "x", func(*env.Ctx, struct{ In tagUnexported }) (int, error) { return 0, nil })
		}, "unexported Go struct field note cannot have non-ignored `json:\"\"` tag"},
		{"embed named", func() {
			env.Tool(w, "r", "x", func(*env.Ctx, none) ([]tagEmbedNamed, error) { return nil, nil })
		}, func() {
			env.Tool(w, "a", "x", func(*env.Ctx, struct{ In tagEmbedNamed }) (int, error) { return 0, nil })
		}, "Go struct field Rest cannot have any options other than `embed` specified (tag `json:\"rest,embed\"`)"},
		{"embed omitzero", func() {
			env.Tool(w, "r", "x", func(*env.Ctx, none) ([]tagEmbedOmit, error) { return nil, nil })
		}, func() {
			env.Tool(w, "a", "x", func(*env.Ctx, struct{ In tagEmbedOmit }) (int, error) { return 0, nil })
		}, "Go struct field Rest cannot have any options other than `embed` specified (tag `json:\",embed,omitzero\"`)"},
		{"case", func() {
			env.Tool(w, "r", "x", func(*env.Ctx, none) ([]tagCase, error) { return nil, nil })
		}, func() {
			env.Tool(w, "a", "x", func(*env.Ctx, struct{ In tagCase }) (int, error) { return 0, nil })
		}, "Go struct field Note has unknown `case:bogus` tag value (tag `json:\"note,case:bogus\"`)"},
		{"same name", func() {
			env.Tool(w, "r", "x", func(*env.Ctx, none) ([]tagSameName, error) { return nil, nil })
		}, func() {
			env.Tool(w, "a", "x", func(*env.Ctx, struct{ In tagSameName }) (int, error) { return 0, nil })
		}, "Go struct fields Note and Other conflict over JSON object name \"Note\""},
		// json v2 takes a format option only with an option the server
		// does not give: every call would fail.
		{"format", func() {
			env.Tool(w, "r", "x", func(*env.Ctx, none) ([]tagFormat, error) { return nil, nil })
		}, func() {
			env.Tool(w, "a", "x", func(*env.Ctx, struct{ In tagFormat }) (int, error) { return 0, nil })
		}, "Go struct field At has unsupported `format` tag option (tag `json:\"at,format:RFC3339\"`)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := bugOf(t, tc.res)
			if !strings.HasPrefix(res, `tags.Tool("r"): argschema: []env_test.tag`) || !strings.HasSuffix(res, ": "+tc.want) {
				t.Errorf("result: %q, want %q after the type", res, tc.want)
			}
			arg := bugOf(t, tc.arg)
			if !strings.HasPrefix(arg, `tags.Tool("a"): argschema: struct { In env_test.tag`) || !strings.HasSuffix(arg, " field In: "+tc.want) {
				t.Errorf("argument: %q, want %q after the field", arg, tc.want)
			}
		})
	}
}

func TestTool_DecodeNamesTheField(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "dec", Version: "1"})
	type args struct {
		Amount int64 `json:"amount"`
	}
	ref := env.Tool(w, "t", "T.", func(c *env.Ctx, in args) (int64, error) { return in.Amount, nil })
	for _, raw := range []string{`{"amount":"5"}`, `{}`, `{"amount":5,"amout":1}`} {
		_, err := ref.Def().Decode([]byte(raw))
		te, ok := env.AsToolError(err)
		if !ok || te.Kind != env.KindInvalidArgs || !strings.Contains(te.Message, "am") {
			t.Errorf("%s: %v", raw, err)
		}
	}
	v, err := ref.Def().Accept(map[string]any{"amount": 5})
	if err != nil || v.(args).Amount != 5 {
		t.Fatalf("Accept map: %v %v", v, err)
	}
}

func TestIDs(t *testing.T) {
	a, b := env.NewIDs(7, "main"), env.NewIDs(7, "main")
	uuidRE := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	for range 100 {
		x, y := a.UUID(), b.UUID()
		if x != y || !uuidRE.MatchString(x) {
			t.Fatalf("%s vs %s", x, y)
		}
	}
	if env.NewIDs(7, "payments").UUID() == env.NewIDs(7, "main").UUID() {
		t.Fatal("a node's stream is not salted by its path")
	}
	if tok := a.Token(12); len(tok) != 12 {
		t.Fatalf("token %q", tok)
	}
}

func TestDeclareWorlds(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "decl", Version: "1"})
	type children struct {
		Payments   *env.Handle
		PaymentsEU *env.Handle `world:"payments_eu"`
		ChatRoom   *env.Handle
		Other      int
	}
	env.DeclareWorlds[children](w)
	d := w.DeclaredWorlds()
	if len(d) != 1 || d[0].Fields["payments"] != "Payments" || d[0].Fields["payments_eu"] != "PaymentsEU" || d[0].Fields["chat_room"] != "ChatRoom" || len(d[0].Fields) != 3 {
		t.Fatalf("declared %+v", d)
	}
	defer func() {
		const want = "DeclareWorlds(decl): field payments of env_test.hidden is unexported, and WorldsOf fills exported fields only: export it"
		if bug, ok := recover().(*env.WorldBug); !ok || bug.Message != want {
			t.Fatalf("unexported field: %v, want a WorldBug %q", bug, want)
		}
	}()
	type hidden struct {
		payments *env.Handle //lint:ignore U1000 the field under test
	}
	env.DeclareWorlds[hidden](w)
}

// A world declares its schema and typed tools; the input schema is derived
// from the argument struct, the output schema from the result type.
func ExampleTool() {
	payments := env.NewWorld(env.WorldSpec{
		Name: "payments", Version: "1.0.0",
		Schema: `CREATE TABLE charges (id TEXT PRIMARY KEY, amount INTEGER NOT NULL) STRICT;`,
	})
	type ChargeArgs struct {
		Amount int64 `json:"amount" doc:"Amount in cents."`
	}
	type Charge struct {
		ID     string `json:"id"`
		Amount int64  `json:"amount"`
	}
	ref := env.Tool(payments, "create_charge", "Charge the account and return the charge.",
		func(c *env.Ctx, in ChargeArgs) (Charge, error) {
			ch := Charge{ID: c.IDs.UUID(), Amount: in.Amount}
			_, err := c.DB.Exec("INSERT INTO charges (id, amount) VALUES (?, ?)", ch.ID, ch.Amount)
			return ch, err
		})
	info := ref.Def().Info(ref.Name())
	fmt.Println(info.Name)
	fmt.Println(info.Description)
	fmt.Println(string(info.InputSchema))
	fmt.Println(string(info.OutputSchema), info.ResultWrapped)
	// Output:
	// create_charge
	// Charge the account and return the charge.
	// {"type":"object","properties":{"amount":{"type":"integer","description":"Amount in cents."}},"required":["amount"],"additionalProperties":false}
	// {"type":"object","properties":{"id":{"type":"string"},"amount":{"type":"integer"}},"required":["id","amount"],"additionalProperties":false} false
}

// TestRegistration_NilWorld: a registration on a nil world (one assigned in
// an init function, still nil when package-level variables register on
// it) is a WorldBug at its line saying so, not a nil pointer dereference.
func TestRegistration_NilWorld(t *testing.T) {
	var w *env.World
	const why = ": the world is nil: a world assigned in an init function is still nil when package-level variables are initialised; declare it as a package-level variable, var World = env.NewWorld(...)"
	for _, tc := range []struct {
		what string
		reg  func()
	}{
		{`env.Tool("t")`, func() { env.Tool(w, "t", "x", func(*env.Ctx, none) (int, error) { return 0, nil }) }},
		{"env.OnStartup", func() { env.OnStartup(w, func(*env.Ctx, none) error { return nil }) }},
		{"env.OnStartupMap", func() { env.OnStartupMap(w, nil, func(*env.Ctx, map[string]any) error { return nil }) }},
		{"env.DeclareWorlds", func() { env.DeclareWorlds[struct{ A *env.Handle }](w) }},
		{"World.Use", func() { w.Use(func(c *env.Ctx, next func() (any, error)) (any, error) { return next() }) }},
		{"World.AddWorld", func() { w.AddWorld(env.NewWorld(env.WorldSpec{Name: "child", Version: "1"})) }},
		{"World.AddTask", func() { w.AddTask(env.Task{ID: "t", Instruction: "Do it."}) }},
	} {
		if msg := bugOf(t, tc.reg); msg != tc.what+why {
			t.Errorf("%s: %q, want %q", tc.what, msg, tc.what+why)
		}
	}
}

// TestWorld_Tree walks a diamond: a root adding two worlds that both add a
// shared one, which is also added twice under two names. Each world comes
// once, breadth first, and a stopped walk stops.
func TestWorld_Tree(t *testing.T) {
	world := func(name string) *env.World { return env.NewWorld(env.WorldSpec{Name: name, Version: "1"}) }
	root, left, right, shared := world("treeroot"), world("treeleft"), world("treeright"), world("treeshared")
	left.AddWorld(shared)
	right.AddWorld(shared)
	right.AddWorld(shared, env.Name("again"))
	root.AddWorld(left)
	root.AddWorld(right)
	var names []string
	for w := range root.Tree() {
		names = append(names, w.Name())
	}
	if got := strings.Join(names, " "); got != "treeroot treeleft treeright treeshared" {
		t.Errorf("Tree = %s, want each world once, breadth first", got)
	}
	for w := range root.Tree() {
		if w != root {
			t.Fatalf("the walk went on to %s after it was stopped", w.Name())
		}
		break
	}
}

func TestIsReserved(t *testing.T) {
	tests := []struct {
		name string // candidate
		ok   bool   // reserved
	}{
		{"reset", true},
		{"step", true},
		{"state", true},
		{"close", true},
		{env.ControlTool, true},
		{"closed", false},
		{"Reset", false},
		{"pay_close", false},
	}
	for _, tt := range tests {
		if got := env.IsReserved(tt.name); got != tt.ok {
			t.Errorf("IsReserved(%q) = %v, want %v", tt.name, got, tt.ok)
		}
	}
}

// The root's stream is the instance seed untouched, so a world that adds
// no others draws the ids it always drew; a node's is salted with its path.
func ExampleNewIDs() {
	fmt.Println(env.NewIDs(7, "main").UUID())
	fmt.Println(env.NewIDs(7, "").UUID())
	fmt.Println(env.NewIDs(7, "payments").UUID())
	// Output:
	// 6cd6ee76-a303-4182-ae08-08d724f9fe42
	// 6cd6ee76-a303-4182-ae08-08d724f9fe42
	// b9dcccf6-55be-4561-8a61-40f1609a6446
}
