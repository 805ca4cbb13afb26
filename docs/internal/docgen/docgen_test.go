package docgen_test

import (
	"strings"
	"testing"

	"github.com/seahaven/seahaven/docs/internal/docgen"
)

func TestStateTables(t *testing.T) {
	tests := []struct {
		name   string            // case
		schema string            // the schema rendered
		notes  map[string]string // descriptions the schema lacks
		want   []string          // rows or lines the output must hold
		err    string            // a substring of the error; "" for success
	}{
		{
			name:   "Scalars",
			schema: `{"title":"T","properties":{"a":{"type":"string","description":"A | B"},"n":{"type":"integer","minimum":0,"description":"N."}},"required":["a"]}`,
			want:   []string{"#### T", "| `a` | string | yes | A \\| B |", "| `n` | integer, ≥ 0 | no | N. |"},
		},
		{
			name:   "NullableConstEnum",
			schema: `{"title":"T","properties":{"s":{"type":["string","null"]},"c":{"const":"v/1"},"e":{"enum":["x",""]}}}`,
			notes:  map[string]string{"T.s": "S.", "T.c": "C.", "T.e": "E."},
			want:   []string{"| `s` | string or null | no | S. |", "| `c` | `\"v/1\"` | no | C. |", "| `e` | `\"x\"` or `\"\"` | no | E. |"},
		},
		{
			name: "RefsAndContainers",
			schema: `{"title":"T","properties":{
				"m":{"anyOf":[{"type":"object","additionalProperties":{"$ref":"#/$defs/R"}},{"type":"null"}],"description":"M."},
				"l":{"type":"array","items":{"$ref":"#/$defs/R"},"description":"L."},
				"h":{"type":"string","pattern":"^[0-9a-f]{64}$","description":"H."}},
				"$defs":{"R":{"properties":{"x":{"type":"boolean","description":"X."}}},"Unused":{"properties":{"y":{"type":"number","description":"Y."}}}}}`,
			want: []string{
				"| `m` | object of [R](#r) or null | no | M. |",
				"| `l` | array of [R](#r) | no | L. |",
				"| `h` | string, matching `^[0-9a-f]{64}$` | no | H. |",
				"#### R", "| `x` | boolean | no | X. |",
				"#### Unused",
			},
		},
		{
			name:   "Undescribed",
			schema: `{"title":"T","properties":{"a":{"type":"string"}}}`,
			err:    "T.a has no description",
		},
		{
			name:   "StaleNote",
			schema: `{"title":"T","properties":{"a":{"type":"string","description":"A."}}}`,
			notes:  map[string]string{"T.a": "A again.", "T.gone": "Gone."},
			err:    "notes name fields the schema does not have, or that it describes itself: T.a, T.gone",
		},
		{
			name:   "DanglingRef",
			schema: `{"title":"T","properties":{"a":{"$ref":"#/$defs/Nope","description":"A."}}}`,
			err:    "#/$defs/Nope does not resolve",
		},
		{
			name:   "NotJSON",
			schema: `{"title":`,
			err:    "not JSON",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := docgen.StateTables([]byte(tt.schema), tt.notes)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w+"\n") {
					t.Errorf("output lacks the line %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestSplice(t *testing.T) {
	tests := []struct {
		name string // case
		doc  string // the document
		want string // the result; "" when Splice must fail
	}{
		{"OK", "a\n<b>\nold\n<e>\nz\n", "a\n<b>\nnew\n<e>\nz\n"},
		{"Empty", "<b>\n<e>\n", "<b>\nnew\n<e>\n"},
		{"NoBegin", "a\n<e>\n", ""},
		{"Twice", "<b>\n<e>\n<b>\n<e>\n", ""},
		{"Reversed", "<e>\nx\n<b>\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := docgen.Splice(tt.doc, "<b>", "<e>", "new\n")
			if tt.want == "" {
				if err == nil {
					t.Fatalf("Splice = %q, want an error", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Splice = %q, %v; want %q", got, err, tt.want)
			}
			inner, err := docgen.Between(got, "<b>", "<e>")
			if err != nil || inner != "new\n" {
				t.Fatalf("Between = %q, %v", inner, err)
			}
		})
	}
}

func TestBlocks(t *testing.T) {
	md := "# T\n\n<!-- example: Example_x -->\n```go\nfunc f() {}\n```\n\ntext\n```\nplain\n```\n<!-- not a marker\n```sh\nls\n```\n"
	blocks, err := docgen.Blocks(md)
	if err != nil {
		t.Fatal(err)
	}
	want := []docgen.Block{
		{Lang: "go", Text: "func f() {}\n", Line: 4, Key: "example", Value: "Example_x"},
		{Lang: "", Text: "plain\n", Line: 9},
		{Lang: "sh", Text: "ls\n", Line: 13},
	}
	if len(blocks) != len(want) {
		t.Fatalf("%d blocks, want %d: %+v", len(blocks), len(want), blocks)
	}
	for i := range want {
		if blocks[i] != want[i] {
			t.Errorf("block %d = %+v, want %+v", i, blocks[i], want[i])
		}
	}
	if _, err := docgen.Blocks("```go\nunclosed\n"); err == nil {
		t.Error("an unclosed block was accepted")
	}
}

func TestContains(t *testing.T) {
	code := "func f() {\n\tx := 1\n\tif x > 0 {\n\t\ty := 2\n\t}\n}\n"
	tests := []struct {
		name  string // case
		block string // the block looked for
		want  bool
	}{
		{"Dedented", "x := 1\nif x > 0 {\n\ty := 2\n}\n", true},
		{"Exact", "\tx := 1\n", true},
		{"Whole", code, true},
		{"NotContiguous", "x := 1\ny := 2\n", false},
		{"Drifted", "x := 2\n", false},
		{"SpacesAreNotTabs", "  x := 1\n", false},
		{"Empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := docgen.Contains(code, tt.block); got != tt.want {
				t.Errorf("Contains(%q) = %v, want %v", tt.block, got, tt.want)
			}
		})
	}
}
