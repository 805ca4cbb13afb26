package yamlnode_test

import (
	"errors"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/seahaven/seahaven/internal/yamlnode"
)

func TestDecodeOne(t *testing.T) {
	root, err := yamlnode.DecodeOne([]byte("# head\na: &x 1\nb: *x\n"))
	if err != nil {
		t.Fatalf("DecodeOne: %v", err)
	}
	if root.Kind != yaml.MappingNode || root.Line != 2 {
		t.Errorf("root = kind %v line %d, want a mapping at line 2", root.Kind, root.Line)
	}
	alias, err := yamlnode.DecodeOne([]byte("&x [1]\n"))
	if err != nil || alias.Kind != yaml.SequenceNode {
		t.Errorf("DecodeOne(anchored list) = %v, %v; want the list", alias, err)
	}

	for _, text := range []string{"", "# only a comment\n", "\n\n"} {
		if _, err := yamlnode.DecodeOne([]byte(text)); !errors.Is(err, yamlnode.ErrEmpty) {
			t.Errorf("DecodeOne(%q) = %v, want ErrEmpty", text, err)
		}
	}

	_, err = yamlnode.DecodeOne([]byte("a: 1\n---\nb: 2\n"))
	var de *yamlnode.DocumentError
	if !errors.As(err, &de) || de.Line != 2 || de.Msg != "holds more than one YAML document" {
		t.Errorf("two documents: %#v, want a DocumentError at line 2 (the \"---\")", err)
	}

	// Syntax errors are yaml.v3's own, the first document's before the second's.
	for _, tt := range []struct {
		text string
		line int
	}{
		{"a: [1\n", 1},
		{"a: 1\n---\nb: [\n", 3},
		// A tab in an indentation is named at its own line, not at the
		// line of the token yaml.v3 was scanning.
		{"a: 1\n\tb: 2\n", 2},
		{"tasks:\n  - id: x\n\tfixture: y\n", 3},
		{"a:\n  - b\n\t- c\n", 3},
		{"a: 1\nc: |\n  x\n\ty\n", 4},
		{"a: 1\n---\nb:\n  - c\n\t- d\n", 5},
	} {
		_, err := yamlnode.DecodeOne([]byte(tt.text))
		if err == nil || errors.Is(err, yamlnode.ErrEmpty) || errors.As(err, &de) {
			t.Errorf("DecodeOne(%q) = %v, want a yaml.v3 error", tt.text, err)
			continue
		}
		if line, _, ok := yamlnode.ErrorLine(err); !ok || line != tt.line {
			t.Errorf("DecodeOne(%q) = %v, want an error at line %d", tt.text, err, tt.line)
		}
	}
}

func TestErrorLine(t *testing.T) {
	for _, tt := range []struct {
		err  string
		line int
		msg  string
		ok   bool
	}{
		{"yaml: line 3: did not find expected key", 3, "did not find expected key", true},
		{"yaml: control characters are not allowed", 0, "control characters are not allowed", false},
		{"line 7: cannot unmarshal !!str `x` into int64", 7, "cannot unmarshal !!str `x` into int64", true},
		{"yaml: line 2: first\nsecond", 2, "first", true},
		{"yaml: unknown anchor 'a' referenced", 0, "unknown anchor 'a' referenced", false},
	} {
		line, msg, ok := yamlnode.ErrorLine(errors.New(tt.err))
		if line != tt.line || msg != tt.msg || ok != tt.ok {
			t.Errorf("ErrorLine(%q) = %d, %q, %v; want %d, %q, %v", tt.err, line, msg, ok, tt.line, tt.msg, tt.ok)
		}
	}
}

func TestPairs(t *testing.T) {
	mapping := func(text string) *yaml.Node {
		t.Helper()
		n, err := yamlnode.DecodeOne([]byte(text))
		if err != nil {
			t.Fatalf("DecodeOne(%q): %v", text, err)
		}
		return n
	}

	var got []string
	err := yamlnode.Pairs(mapping("a: &x 1\nb: *x\n"), "m", func(k, v *yaml.Node, key string) error {
		got = append(got, key+"="+v.Value)
		return nil
	})
	if err != nil || len(got) != 2 || got[0] != "m.a=1" || got[1] != "m.b=1" {
		t.Errorf("Pairs = %q, %v; want [m.a=1 m.b=1] with the alias followed", got, err)
	}

	for _, tt := range []struct {
		text string
		path string // the mapping's
		line int
		key  string // the key the error blames
		msg  string
	}{
		{"a: 1\n2: x\n", "m", 2, "m", "keys must be strings, not the integer 2"},
		{"a: 1\n<<: {b: 2}\n", "", 2, "", "keys must be strings, not a value tagged !!merge"},
		{"a: 1\nb: 2\na: 3\n", "m", 3, "m.a", "duplicate key (first at line 1)"},
		{"a: 1\nb: 2\na: 3\n", "", 3, "a", "duplicate key (first at line 1)"},
	} {
		calls := 0
		err := yamlnode.Pairs(mapping(tt.text), tt.path, func(*yaml.Node, *yaml.Node, string) error { calls++; return nil })
		var ke *yamlnode.KeyError
		if !errors.As(err, &ke) || ke.Line != tt.line || ke.Key != tt.key || ke.Msg != tt.msg || ke.Error() != tt.msg {
			t.Errorf("Pairs(%q) = %#v, want a KeyError at line %d blaming %q: %q", tt.text, err, tt.line, tt.key, tt.msg)
		}
		if want := tt.line - 1; calls != want {
			t.Errorf("Pairs(%q) called fn %d times, want %d (the keys before the bad one)", tt.text, calls, want)
		}
	}

	stop := errors.New("stop")
	calls := 0
	err = yamlnode.Pairs(mapping("a: 1\nb: 2\n"), "", func(*yaml.Node, *yaml.Node, string) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("Pairs with a failing fn = %v after %d calls, want its error after 1", err, calls)
	}
}

func TestWant(t *testing.T) {
	for _, tt := range []struct {
		text, want, msg string
	}{
		{"1", "a string", "want a string, got the integer 1 (quote it to make it a string)"},
		{"null", "a string", "want a string, got null"},
		{"[1]", "a string", "want a string, got a list"},
		{"x", "an integer", `want an integer, got the string "x"`},
	} {
		n, err := yamlnode.DecodeOne([]byte(tt.text))
		if err != nil {
			t.Fatalf("DecodeOne(%q): %v", tt.text, err)
		}
		if got := yamlnode.Want(n, tt.want); got != tt.msg {
			t.Errorf("Want(%s, %q) = %q, want %q", tt.text, tt.want, got, tt.msg)
		}
	}
}
