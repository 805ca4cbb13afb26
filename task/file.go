package task

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/internal/yamlnode"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/fixture"
)

// FileName is the name of the tasks file beside a world's fixtures:
// <FixturesDir>/tasks.yaml.
const FileName = "tasks.yaml"

// FileError is a tasks file that Parse refuses. It names the file, the
// line and the offending key.
type FileError struct {
	// Path is the file.
	Path string
	// Line is the 1-based line, or 0 when none is known.
	Line int
	// Key is the offending key, such as "tasks[1].checks[0].weight"; empty
	// for a problem with the file as a whole.
	Key string
	// Msg says what is wrong.
	Msg string
}

// Error returns "path:line: key: message", leaving out unknown parts.
func (e *FileError) Error() string {
	s := e.Path
	if e.Line > 0 {
		s += fmt.Sprintf(":%d", e.Line)
	}
	if e.Key != "" {
		s += ": " + e.Key
	}
	return s + ": " + e.Msg
}

// fileDoc is the whole tasks file.
type fileDoc struct {
	Tasks []fileTask `yaml:"tasks"`
}

// fileTask is one task of the file.
type fileTask struct {
	ID          string               `yaml:"id"`
	Instruction string               `yaml:"instruction"`
	Difficulty  string               `yaml:"difficulty"`
	Fixture     string               `yaml:"fixture"`
	Now         string               `yaml:"now"`
	Seed        *int64               `yaml:"seed"`
	Startup     map[string]yaml.Node `yaml:"startup"`
	Tools       []string             `yaml:"tools"`
	Checks      []fileCheck          `yaml:"checks"`
	// NoChangeCorrect is env.Task.NoChangeCorrect.
	NoChangeCorrect bool `yaml:"no_change_correct"`
}

// fileCheck is one check of a task.
type fileCheck struct {
	Name        string      `yaml:"name"`
	Weight      float64     `yaml:"weight"`
	SQL         string      `yaml:"sql"`
	Args        []yaml.Node `yaml:"args"`
	Equals      yaml.Node   `yaml:"equals"`
	OnlyChanged []string    `yaml:"only_changed"`
	MustChange  []string    `yaml:"must_change"`
	Unchanged   []string    `yaml:"unchanged"`
}

// ferr returns a *FileError; Parse sets its Path.
func ferr(line int, key, format string, args ...any) error {
	return &FileError{Line: line, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// MaxFileBytes is the size of the largest tasks file Parse and ReadFile read.
const MaxFileBytes = 4 << 20

// maxValues bounds the values of a tasks file, its aliases followed: every
// reader of the file (its check, its decoding) builds or walks each.
const maxValues = 1_000_000

// Parse reads the contents of the tasks file at path strictly: one YAML
// document holding a mapping with a tasks list. It refuses unknown keys,
// duplicate keys and values of the wrong type (a number where a string is
// wanted, a float where an integer is), naming the key and its line, then
// validates every task (env.Task.Validate) and refuses a repeated id.
// A text larger than MaxFileBytes, or of more than a million values once
// its aliases are followed, is refused before it is read further.
//
// Errors are *FileError values naming path; each task's Source is
// "<base name of path>:<line>".
func Parse(path string, data []byte) (_ []env.Task, err error) {
	defer func() {
		if fe, ok := errors.AsType[*FileError](err); ok {
			fe.Path = path
		}
	}()
	if len(data) > MaxFileBytes {
		return nil, ferr(0, "", "is %d bytes, more than the %d a tasks file may hold", len(data), MaxFileBytes)
	}
	root, err := yamlnode.DecodeOne(data)
	var de *yamlnode.DocumentError
	switch {
	case errors.Is(err, yamlnode.ErrEmpty):
		return nil, ferr(0, "", "is empty: want a mapping with a tasks list")
	case errors.As(err, &de):
		return nil, ferr(de.Line, "", "%s", de.Msg)
	case err != nil:
		return nil, yamlError(err)
	}
	if line, over := yamlnode.Oversized(root, maxValues); over {
		return nil, ferr(line, "", "holds more than %d values with its aliases followed (a value an alias names counts each time it is named)", maxValues)
	}
	if err := checkNode(root, reflect.TypeFor[fileDoc](), ""); err != nil {
		return nil, err
	}
	var fd fileDoc
	if err := root.Decode(&fd); err != nil {
		// checkNode refuses everything yaml.v3 does; this is a backstop.
		return nil, yamlError(err)
	}
	// checkNode let through null or a mapping whose one key is tasks.
	if root.Kind != yaml.MappingNode || len(root.Content) == 0 {
		return nil, ferr(root.Line, "tasks", "missing required key")
	}
	taskNodes := yamlnode.Deref(root.Content[1]).Content
	out := make([]env.Task, 0, len(fd.Tasks))
	first := map[string]int{}
	for i, ft := range fd.Tasks {
		line := taskNodes[i].Line
		key := fmt.Sprintf("tasks[%d]", i)
		t, err := ft.task(key)
		if err != nil {
			return nil, err
		}
		t.Source = fmt.Sprintf("%s:%d", filepath.Base(path), line)
		if err := t.Validate(); err != nil {
			return nil, ferr(line, key, "%v", err)
		}
		if t.Fixture != "" {
			// A directory name under the fixtures directory: one that could
			// leave it is no fixture, rather than one that is missing.
			if err := fixture.ValidID(t.Fixture); err != nil {
				return nil, ferr(valueLine(taskNodes[i], "fixture", line), key+".fixture", "%v", err)
			}
		}
		if prev, dup := first[t.ID]; dup {
			return nil, ferr(line, key+".id", "task %q is already declared at line %d", t.ID, prev)
		}
		first[t.ID] = line
		out = append(out, t.Normalize())
	}
	return out, nil
}

// valueLine returns the line of the value of key in the mapping n, or def
// when it has none.
func valueLine(n *yaml.Node, key string, def int) int {
	n = yamlnode.Deref(n)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1].Line
		}
	}
	return def
}

func (ft fileTask) task(key string) (env.Task, error) {
	t := env.Task{
		ID: ft.ID, Instruction: ft.Instruction, Difficulty: ft.Difficulty, Fixture: ft.Fixture,
		Now: ft.Now, Seed: ft.Seed, Tools: ft.Tools, NoChangeCorrect: ft.NoChangeCorrect,
	}
	if ft.Startup != nil {
		t.Startup = map[string]any{}
		// In the file's order, so that of several bad keywords the error
		// names the first, not one picked by map iteration.
		byLine := func(a, b string) int { return cmp.Compare(ft.Startup[a].Line, ft.Startup[b].Line) }
		for _, k := range slices.SortedFunc(maps.Keys(ft.Startup), byLine) {
			n := ft.Startup[k]
			v, err := nodeValue(&n, fmt.Sprintf("%s.startup.%s", key, k))
			if err != nil {
				return env.Task{}, err
			}
			t.Startup[k] = v
		}
	}
	for j, fc := range ft.Checks {
		ckey := fmt.Sprintf("%s.checks[%d]", key, j)
		c := env.Check{
			Name: fc.Name, Weight: fc.Weight, SQL: fc.SQL,
			OnlyChanged: fc.OnlyChanged, MustChange: fc.MustChange, Unchanged: fc.Unchanged,
		}
		if fc.Args != nil {
			c.Args = []any{}
			for i, n := range fc.Args {
				v, err := nodeValue(&n, fmt.Sprintf("%s.args[%d]", ckey, i))
				if err != nil {
					return env.Task{}, err
				}
				c.Args = append(c.Args, v)
			}
		}
		if fc.Equals.Kind != 0 {
			eq := yamlnode.Deref(&fc.Equals)
			if eq.Kind == yaml.ScalarNode && eq.ShortTag() == "!!null" {
				return env.Task{}, ferr(eq.Line, ckey+".equals", "null cannot be expected: select \"x IS NULL\" and expect 1")
			}
			v, err := nodeValue(eq, ckey+".equals")
			if err != nil {
				return env.Task{}, err
			}
			c.Equals = v
		}
		t.Checks = append(t.Checks, c)
	}
	return t, nil
}

// nodeValue returns a YAML value as JSON would hold it: nil, bool, int64,
// float64, string (timestamps keep their text), []any and map[string]any.
func nodeValue(n *yaml.Node, key string) (any, error) {
	n = yamlnode.Deref(n)
	switch n.Kind {
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			v, err := nodeValue(item, fmt.Sprintf("%s[%d]", key, i))
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := yamlnode.Deref(n.Content[i])
			if _, dup := out[k.Value]; dup {
				return nil, &FileError{Line: k.Line, Key: key + "." + k.Value, Msg: "duplicate key"}
			}
			v, err := nodeValue(n.Content[i+1], key+"."+k.Value)
			if err != nil {
				return nil, err
			}
			out[k.Value] = v
		}
		return out, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool":
			return scalarValue[bool](n, key, "")
		case "!!int":
			return scalarValue[int64](n, key, "integer out of range: "+n.Value)
		case "!!float":
			return scalarValue[float64](n, key, "")
		}
		return n.Value, nil
	}
	return nil, &FileError{Line: n.Line, Key: key, Msg: "want a value, got " + yamlnode.Describe(n)}
}

// scalarValue decodes a scalar node as a T. A failure is a *FileError
// saying msg, or the decoder's own message when msg is "".
func scalarValue[T any](n *yaml.Node, key, msg string) (any, error) {
	var v T
	if err := n.Decode(&v); err != nil {
		return nil, &FileError{Line: n.Line, Key: key, Msg: cmp.Or(msg, err.Error())}
	}
	return v, nil
}

// yamlError turns a yaml.v3 error into a *FileError with its line.
func yamlError(err error) error {
	if te, ok := errors.AsType[*yaml.TypeError](err); ok && len(te.Errors) > 0 {
		err = errors.New(te.Errors[0])
	}
	line, msg, ok := yamlnode.ErrorLine(err)
	if ok {
		return &FileError{Line: line, Msg: msg}
	}
	return &FileError{Msg: "not valid YAML: " + msg}
}

// yamlNames returns the yaml key of each field of struct type t, in order.
func yamlNames(t reflect.Type) ([]string, map[string]reflect.Type) {
	var names []string
	types := map[string]reflect.Type{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		names = append(names, name)
		types[name] = f.Type
	}
	return names, types
}

var yamlNodeType = reflect.TypeFor[yaml.Node]()

// checkNode checks n against the Go type it will be decoded into, more
// strictly than yaml.v3 does: unknown and duplicate keys, and scalars of
// the wrong YAML type (yaml.v3 turns 1 into "1" and accepts 1.0 for an
// integer). key is n's dotted path for messages. Null is accepted
// anywhere: it leaves the field at its zero value.
func checkNode(n *yaml.Node, t reflect.Type, key string) error {
	n = yamlnode.Deref(n)
	bad := func(want string) error { return &FileError{Line: n.Line, Key: key, Msg: yamlnode.Want(n, want)} }
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == yamlNodeType, t.Kind() == reflect.Interface:
		return nil
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return bad("a mapping")
		}
		names, types := yamlNames(t)
		return checkMapping(n, key, func(k *yaml.Node, sub string) (reflect.Type, error) {
			ft, ok := types[k.Value]
			if !ok {
				return nil, &FileError{Line: k.Line, Key: sub, Msg: fmt.Sprintf("unknown key (known keys: %s)", strings.Join(names, ", "))}
			}
			return ft, nil
		})
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			return bad("a mapping")
		}
		return checkMapping(n, key, func(*yaml.Node, string) (reflect.Type, error) { return t.Elem(), nil })
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return bad("a list")
		}
		for i, item := range n.Content {
			if err := checkNode(item, t.Elem(), fmt.Sprintf("%s[%d]", key, i)); err != nil {
				return err
			}
		}
		return nil
	}
	want, ok := scalarKinds[t.Kind()]
	if !ok {
		return fmt.Errorf("task: checkNode: unhandled type %s", t)
	}
	if n.Kind != yaml.ScalarNode || !slices.Contains(want.tags, n.ShortTag()) {
		return bad(want.name)
	}
	return nil
}

// scalarKinds are the scalar field kinds of the tasks file: what a value
// of each is called in messages, and the YAML tags it accepts.
var scalarKinds = map[reflect.Kind]struct {
	name string
	tags []string
}{
	reflect.String:  {"a string", []string{"!!str", "!!timestamp"}},
	reflect.Int64:   {"an integer", []string{"!!int"}},
	reflect.Float64: {"a number", []string{"!!int", "!!float"}},
	reflect.Bool:    {"a boolean", []string{"!!bool"}},
}

// checkMapping checks a mapping's keys (strings, no duplicates) and each
// value against the type elem returns for its key.
func checkMapping(n *yaml.Node, key string, elem func(k *yaml.Node, sub string) (reflect.Type, error)) error {
	err := yamlnode.Pairs(n, key, func(k, v *yaml.Node, sub string) error {
		t, err := elem(k, sub)
		if err != nil {
			return err
		}
		return checkNode(v, t, sub)
	})
	if ke, ok := errors.AsType[*yamlnode.KeyError](err); ok {
		return &FileError{Line: ke.Line, Key: ke.Key, Msg: ke.Msg}
	}
	return err
}

// ForWorld returns the world's tasks: those declared in Go with AddTask,
// then those of the tasks file beside its fixtures (tasks.yaml in its
// FixturesDir or, when it has none, in its embedded Fixtures), if there is
// one. An embedded file is read where it is embedded and named
// EmbeddedPath(w) in errors, never by a copy on disk. It is
// ForWorldDir(w, "").
func ForWorld(w *env.World) ([]env.Task, error) { return ForWorldDir(w, "") }

// EmbeddedPath is how errors name the tasks file embedded in a world's
// Fixtures: "<world> embedded fixtures/tasks.yaml".
func EmbeddedPath(w *env.World) string {
	return w.Name() + " embedded fixtures/" + FileName
}

// ForWorldDir is ForWorld reading the tasks file of fixturesDir instead of
// the world's own, unless fixturesDir is "". It refuses an id declared
// twice (in Go, in the file, or in both), and a task that does not fit the
// world's composition: a tool in its allow list that is not on the
// surface, a startup keyword no hook accepts, or a table pattern naming no
// node.
func ForWorldDir(w *env.World, fixturesDir string) ([]env.Task, error) {
	if dir := cmp.Or(fixturesDir, w.Spec().FixturesDir); dir != "" {
		return ForWorldFS(w, os.DirFS(dir), filepath.Join(dir, FileName))
	}
	return ForWorldFS(w, w.Spec().Fixtures, EmbeddedPath(w))
}

// ReadFile reads the tasks file (FileName) of a fixtures file system. It
// must be a regular file, or a symbolic link to one: anything else is
// refused before it is opened (a named pipe would be waited on forever, a
// device might never end); and it is read to at most MaxFileBytes and one
// more byte, which Parse then refuses. A missing file is an error wrapping
// fs.ErrNotExist.
func ReadFile(fixtures fs.FS) ([]byte, error) {
	fi, err := fs.Stat(fixtures, FileName)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%v)", FileName, fi.Mode().Type())
	}
	f, err := fixtures.Open(FileName)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
}

// ForWorldFS is ForWorldDir reading the tasks file of a fixtures file
// system (nil reads none), named path in errors.
func ForWorldFS(w *env.World, fixtures fs.FS, path string) ([]env.Task, error) {
	tasks := w.Tasks()
	if fixtures != nil {
		data, err := ReadFile(fixtures)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("task: %s: %w", path, err)
		default:
			fromFile, err := Parse(path, data)
			if err != nil {
				return nil, err
			}
			tasks = append(tasks, fromFile...)
		}
	}
	seen := map[string]string{}
	for _, t := range tasks {
		if prev, dup := seen[t.ID]; dup {
			return nil, fmt.Errorf("task: %s: task %q is declared twice (%s and %s)", w.Name(), t.ID, prev, t.Source)
		}
		seen[t.ID] = t.Source
	}
	if len(tasks) == 0 {
		return tasks, nil
	}
	s, err := composition.Seal(w)
	if err != nil {
		return nil, err
	}
	for _, t := range tasks {
		if err := Fits(s, t); err != nil {
			return nil, fmt.Errorf("task: %s (%s): %w", t.ID, t.Source, err)
		}
	}
	return tasks, nil
}

// Fits checks that a task fits a sealed composition: every tool of its
// allow list is on the surface, every startup keyword is accepted by a
// hook of the tree, and every table pattern of its checks names a node.
// The error names the key at fault.
func Fits(s *composition.Sealed, t env.Task) error {
	return shapeOf(s).fits(t)
}

// Find returns the task of that id in tasks.
func Find(tasks []env.Task, id string) (env.Task, bool) {
	i := slices.IndexFunc(tasks, func(t env.Task) bool { return t.ID == id })
	if i < 0 {
		return env.Task{}, false
	}
	return tasks[i], true
}
