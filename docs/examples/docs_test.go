package examples_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/seahaven/seahaven/docs/internal/docgen"
	"github.com/seahaven/seahaven/schemas"
)

// guides are the Markdown files whose blocks are held to the code, relative
// to the module root.
var guides = []string{"README.md", "docs/authoring.md", "docs/fixtures.md", "docs/eval.md", "docs/protocol.md"}

// root is the module root, two levels above this package.
var root = filepath.Join("..", "..")

// source is the Go code of docs/examples and the packages below it.
type source struct {
	fset  *token.FileSet
	funcs map[string]string       // "Name" or "dir/Name" -> the function's text
	files map[string]string       // "dir/file.go" -> the file's text
	outs  map[string]*doc.Example // "Name" or "dir/Name" -> the example
	tests map[string][]*ast.File  // "" or "dir/" -> its _test.go files
}

func loadSource(t *testing.T) *source {
	t.Helper()
	s := &source{fset: token.NewFileSet(), funcs: map[string]string{}, files: map[string]string{},
		outs: map[string]*doc.Example{}, tests: map[string][]*ast.File{}}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(path)
		s.files[rel] = string(b)
		f, err := parser.ParseFile(s.fset, path, b, parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		prefix := ""
		if dir != "." {
			prefix = dir + "/"
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil {
				continue
			}
			start, end := s.fset.Position(fn.Pos()).Offset, s.fset.Position(fn.End()).Offset
			s.funcs[prefix+fn.Name.Name] = string(b[start:end])
		}
		if strings.HasSuffix(path, "_test.go") {
			s.tests[prefix] = append(s.tests[prefix], f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for prefix, files := range s.tests {
		for _, ex := range doc.Examples(files...) {
			s.outs[prefix+"Example"+ex.Name] = ex // ex.Name is "" or "_suffix"
		}
	}
	return s
}

// readGuide returns a guide's text.
func readGuide(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGuides_GoBlocks holds every Go block of the guides to the code: each
// block needs a marker comment on the line above it naming where it lives,
// `<!-- example: Name -->` for a function of docs/examples (or
// `dir/Name` for one in a package below it) or `<!-- example: dir/file.go -->`
// for a whole file, and must appear there verbatim, line for line, leading
// tabs aside.
func TestGuides_GoBlocks(t *testing.T) {
	src := loadSource(t)
	for _, name := range guides {
		t.Run(name, func(t *testing.T) {
			blocks, err := docgen.Blocks(readGuide(t, name))
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range blocks {
				if b.Lang != "go" {
					continue
				}
				where := fmt.Sprintf("%s:%d", name, b.Line)
				if b.Key != "example" {
					t.Errorf("%s: a Go block without <!-- example: ... --> right above it", where)
					continue
				}
				code, ok := src.funcs[b.Value]
				if strings.HasSuffix(b.Value, ".go") {
					code, ok = src.files[b.Value]
				}
				if !ok {
					t.Errorf("%s: the marker names %q, which is no function or file in docs/examples", where, b.Value)
					continue
				}
				if !docgen.Contains(code, b.Text) {
					t.Errorf("%s: the block is not in %s (they drifted); the block:\n%s", where, b.Value, b.Text)
				}
			}
		})
	}
}

// TestGuides_Outputs holds every block marked `<!-- output: Name -->` to
// the `// Output:` of that Example.
func TestGuides_Outputs(t *testing.T) {
	src := loadSource(t)
	for _, name := range guides {
		t.Run(name, func(t *testing.T) {
			blocks, err := docgen.Blocks(readGuide(t, name))
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range blocks {
				if b.Key != "output" {
					continue
				}
				where := fmt.Sprintf("%s:%d", name, b.Line)
				ex, ok := src.outs[b.Value]
				if !ok {
					t.Errorf("%s: the marker names %q, which is no Example in docs/examples", where, b.Value)
					continue
				}
				if ex.Output == "" {
					t.Errorf("%s: %s has no // Output:", where, b.Value)
					continue
				}
				if strings.TrimSpace(b.Text) != strings.TrimSpace(ex.Output) {
					t.Errorf("%s: the block differs from the output of %s (they drifted); the output:\n%s", where, b.Value, ex.Output)
				}
			}
		})
	}
}

// TestGuides_GoldenTranscripts holds every block marked
// `<!-- golden: ws_session.jsonl -->` to that golden WebSocket transcript of
// the server's own tests (openenv/testdata/golden): the block's lines,
// `→ <client frame>` and `← <server frame>`, must be a contiguous run of
// the file. docs/protocol.md must have at least one.
func TestGuides_GoldenTranscripts(t *testing.T) {
	inProtocol := 0
	for _, name := range guides {
		blocks, err := docgen.Blocks(readGuide(t, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			if b.Key != "golden" {
				continue
			}
			if name == "docs/protocol.md" {
				inProtocol++
			}
			where := fmt.Sprintf("%s:%d", name, b.Line)
			golden, err := goldenTranscript(b.Value)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			if !docgen.Contains(golden, b.Text) {
				t.Errorf("%s: the transcript is not a run of openenv/testdata/golden/%s (they drifted); the golden transcript:\n%s", where, b.Value, golden)
			}
		}
	}
	if inProtocol == 0 {
		t.Error("docs/protocol.md has no <!-- golden: ... --> transcript")
	}
}

// goldenTranscript renders a golden file's lines as `→ frame` and `← frame`.
func goldenTranscript(name string) (string, error) {
	if strings.ContainsAny(name, `/\`) {
		return "", fmt.Errorf("golden file %q is not a plain name", name)
	}
	b, err := os.ReadFile(filepath.Join(root, "openenv", "testdata", "golden", name))
	if err != nil {
		return "", err
	}
	var out strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return "", fmt.Errorf("%s: %v", name, err)
		}
		switch {
		case line["client"] != nil:
			fmt.Fprintf(&out, "→ %s\n", frame(line["client"]))
		case line["server"] != nil:
			fmt.Fprintf(&out, "← %s\n", frame(line["server"]))
		default:
			return "", fmt.Errorf("%s: a line that is neither client nor server: %s", name, sc.Text())
		}
	}
	return out.String(), sc.Err()
}

// frame is a recorded frame as it went over the wire: a JSON string in the
// golden file stands for a frame that was not JSON.
func frame(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// TestEval_StateTables holds the state document's tables in docs/eval.md
// to schemas/state.json. Run `go run ./docs/gen` to regenerate them.
func TestEval_StateTables(t *testing.T) {
	schema, err := schemas.Get("state")
	if err != nil {
		t.Fatal(err)
	}
	want, err := docgen.StateTables(schema, docgen.Notes)
	if err != nil {
		t.Fatal(err)
	}
	got, err := docgen.Between(readGuide(t, "docs/eval.md"), docgen.StateBegin, docgen.StateEnd)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("the state tables in docs/eval.md differ from schemas/state.json; run `go run ./docs/gen`. Generated:\n%s", want)
	}
}

// linkRE matches a Markdown link's target; codeRE a fenced block or an
// inline code span, which hold no links.
var (
	linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeRE = regexp.MustCompile("(?ms)^```.*?^```$|`[^`\n]*`")
)

// TestGuides_Links checks that every relative link of the guides names a
// file or directory of the repository and, for a Markdown file, one of its
// headings when the link has a fragment.
func TestGuides_Links(t *testing.T) {
	for _, name := range guides {
		md := codeRE.ReplaceAllString(readGuide(t, name), "")
		for _, m := range linkRE.FindAllStringSubmatch(md, -1) {
			target, fragment, _ := strings.Cut(m[1], "#")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path := filepath.Join(root, filepath.Dir(name), target)
			if target == "" {
				path = filepath.Join(root, name)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s, which does not exist", name, m[1])
				continue
			}
			if fragment == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(anchors(string(b)), fragment) {
				t.Errorf("%s links to %s, which names no heading of %s", name, m[1], filepath.Base(path))
			}
		}
	}
}

// anchors returns the fragment ids GitHub gives a Markdown file's headings:
// lowercase, spaces as hyphens, punctuation other than - and _ dropped, and
// -1, -2 … after a repeated id.
func anchors(md string) []string {
	md = regexp.MustCompile("(?ms)^```.*?^```$").ReplaceAllString(md, "")
	seen := map[string]int{}
	var out []string
	for _, line := range strings.Split(md, "\n") {
		heading, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		id := b.String()
		if n := seen[id]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", id, n))
		} else {
			out = append(out, id)
		}
		seen[id]++
	}
	return out
}
