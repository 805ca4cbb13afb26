package yamlnode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ErrEmpty is the error DecodeOne returns for text that holds no YAML
// document (empty, or only comments and blank lines).
var ErrEmpty = errors.New("yaml: no document")

// DocumentError is text DecodeOne refuses for its shape rather than its
// syntax: a second document, or a first that is not a YAML document.
type DocumentError struct {
	// Line is the 1-based line of the offending document.
	Line int
	// Msg says what is wrong: "holds more than one YAML document" or "is
	// not a YAML document".
	Msg string
}

// Error returns Msg.
func (e *DocumentError) Error() string { return e.Msg }

// DecodeOne parses data as exactly one YAML document and returns its
// content node, with aliases followed (see Deref). It returns ErrEmpty for
// text with no document, a *DocumentError for a second document or a
// malformed one, and yaml.v3's own error for text that is not valid YAML
// (see ErrorLine), but for a tab in an indentation, which names the line
// of the tab itself. The first document's syntax errors are reported
// before the second document's.
func DecodeOne(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ErrEmpty
		}
		return nil, tabLine(data, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, &DocumentError{Line: extra.Line, Msg: "holds more than one YAML document"}
	case !errors.Is(err, io.EOF):
		return nil, tabLine(data, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &DocumentError{Line: doc.Line, Msg: "is not a YAML document"}
	}
	return Deref(doc.Content[0]), nil
}

// tabLine corrects the line of a yaml.v3 error about a tab character.
// yaml.v3 names the line where the token it was scanning began (a plain
// scalar's first line, a block scalar's indicator), which is often the line
// above the tab; the tab is on the first line from there whose indentation
// holds one. Any other error is returned as it is.
func tabLine(data []byte, err error) error {
	line, msg, ok := ErrorLine(err)
	if !ok || !strings.Contains(msg, "tab character") {
		return err
	}
	for i, l := range bytes.Split(data, []byte("\n")) {
		indent := l[:len(l)-len(bytes.TrimLeft(l, " \t"))]
		if i+1 >= line && bytes.IndexByte(indent, '\t') >= 0 {
			if i+1 == line {
				return err
			}
			return fmt.Errorf("yaml: line %d: %s", i+1, msg)
		}
	}
	return err
}

// errorLineRE picks the line out of a yaml.v3 error message.
var errorLineRE = regexp.MustCompile(`line (\d+): (.*)`)

// ErrorLine splits a yaml.v3 error message, less its "yaml: " prefix, at
// the first "line N: " in it. When there is one, ok is true, line is N and
// msg is the rest of that line of the message; otherwise line is 0 and msg
// is the whole message.
func ErrorLine(err error) (line int, msg string, ok bool) {
	msg = strings.TrimPrefix(err.Error(), "yaml: ")
	if m := errorLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		return line, m[2], true
	}
	return 0, msg, false
}

// KeyError is a mapping key Pairs refuses.
type KeyError struct {
	// Line is the offending key's line.
	Line int
	// Key names what errors blame: the repeated key's path (see Join) for
	// a duplicate, the mapping's for a key that is not a string.
	Key string
	// Msg says what is wrong: "keys must be strings, not a mapping" or
	// "duplicate key (first at line 3)".
	Msg string
}

// Error returns Msg.
func (e *KeyError) Error() string { return e.Msg }

// Join returns the path of key in the mapping at path: "path.key", or key
// alone at the top ("").
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Pairs calls fn with each key and value of mapping m, whose path is path,
// in order, aliases followed, and the key's path (Join). Before calling fn
// it refuses a key that is not a string, or that repeats an earlier key,
// with a *KeyError. It stops at the first error, its own or fn's, and
// returns it.
func Pairs(m *yaml.Node, path string, fn func(k, v *yaml.Node, key string) error) error {
	first := make(map[string]int, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := Deref(m.Content[i]), Deref(m.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return &KeyError{Line: k.Line, Key: path, Msg: "keys must be strings, not " + Describe(k)}
		}
		if line, dup := first[k.Value]; dup {
			return &KeyError{Line: k.Line, Key: Join(path, k.Value), Msg: "duplicate key (first at line " + strconv.Itoa(line) + ")"}
		}
		first[k.Value] = k.Line
		if err := fn(k, v, Join(path, k.Value)); err != nil {
			return err
		}
	}
	return nil
}
