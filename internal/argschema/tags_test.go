package argschema_test

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/seahaven/seahaven/internal/argschema"
	"github.com/seahaven/seahaven/internal/wirejson"
)

// tagInner is the struct the table's fields of a struct type hold.
type tagInner struct {
	B int `json:"b"`
}

// exported returns an exported field with the json tag tag.
func exported(name, tag string) argschema.TagField {
	return argschema.TagField{Name: name, Tag: tag, HasTag: true, Exported: true}
}

// TestTagError pins what json v2 refuses in the json tags of one struct's
// fields, and which field it blames. Where the fields can be built with
// reflect.StructOf, json v2 itself must refuse the struct with the same
// words.
func TestTagError(t *testing.T) {
	embeddedStruct := func(tag string, hasTag bool) argschema.TagField {
		return argschema.TagField{Name: "Inner", Tag: tag, HasTag: hasTag, Exported: true, Embedded: true, Struct: true}
	}
	for _, tc := range []struct {
		name   string
		fields []argschema.TagField
		index  int    // the field blamed, -1 for none
		want   string // the error, "" for none
	}{
		{"Plain", []argschema.TagField{exported("A", "a,omitempty"), exported("B", "b,omitzero,string"), {Name: "C", Exported: true}}, -1, ""},
		{"Skipped", []argschema.TagField{exported("A", "-"), exported("B", "-,omitempty")}, -1, ""},
		{"Unknown option", []argschema.TagField{exported("A", "a,inline"), exported("B", ",unknown")}, -1, ""},
		{"Case", []argschema.TagField{exported("A", "a,case:ignore"), exported("B", "b,case:strict,omitempty")}, -1, ""},
		{"Embed", []argschema.TagField{exported("Rest", ",embed"), embeddedStruct("", false), embeddedStruct(",inline", true)}, -1, ""},
		{"Repeated option", []argschema.TagField{exported("A", "a"), exported("B", "b,omitempty,omitempty")}, 1,
			"Go struct field B has duplicate appearance of `omitempty` tag option (tag `json:\"b,omitempty,omitempty\"`)"},
		{"Repeated unknown option", []argschema.TagField{exported("A", "a,inline,inline")}, 0,
			"Go struct field A has duplicate appearance of `inline` tag option (tag `json:\"a,inline,inline\"`)"},
		{"Misspelt option", []argschema.TagField{exported("A", "a,omitEmpty")}, 0,
			"Go struct field A has invalid appearance of `omitEmpty` tag option; specify `omitempty` instead (tag `json:\"a,omitEmpty\"`)"},
		{"Quoted name", []argschema.TagField{exported("A", "'a'")}, 0,
			"Go struct field A has malformed `json` tag: invalid character '\\'' at start of option (expecting Unicode letter) (tag `json:\"'a'\"`)"},
		{"Unbalanced quote", []argschema.TagField{exported("A", "'a,omitempty")}, 0,
			"Go struct field A has malformed `json` tag: invalid character '\\'' at start of option (expecting Unicode letter) (tag `json:\"'a,omitempty\"`)"},
		{"Space in name", []argschema.TagField{exported("A", `a b"c`)}, 0,
			"Go struct field A has malformed `json` tag: invalid character ' ' before next option (expecting ',') (tag `json:\"a b\\\"c\"`)"},
		{"Invalid UTF-8 name", []argschema.TagField{exported("A", "a\xff")}, 0,
			"Go struct field A has JSON object name \"a\\xff\" with invalid UTF-8 (tag `json:\"a\\xff\"`)"},
		{"Trailing comma", []argschema.TagField{exported("A", "a,omitempty,")}, 0,
			"Go struct field A has malformed `json` tag: invalid trailing ',' character (tag `json:\"a,omitempty,\"`)"},
		{"Named -", []argschema.TagField{exported("A", "-,")}, 0,
			"Go struct field A has malformed `json` tag: invalid trailing ',' character (tag `json:\"-,\"`)"},
		{"Quoted option", []argschema.TagField{exported("A", "a,'omitempty'")}, 0,
			"Go struct field A has malformed `json` tag: invalid character '\\'' at start of option (expecting Unicode letter) (tag `json:\"a,'omitempty'\"`)"},
		{"Unknown case", []argschema.TagField{exported("A", "a,case:bogus")}, 0,
			"Go struct field A has unknown `case:bogus` tag value (tag `json:\"a,case:bogus\"`)"},
		{"Case without value", []argschema.TagField{exported("A", "a,case")}, 0,
			"Go struct field A is missing value for `case` tag option; specify `case:ignore` or `case:strict` instead (tag `json:\"a,case\"`)"},
		{"Both cases", []argschema.TagField{exported("A", "a,case:ignore,case:strict")}, 0,
			"Go struct field A cannot have both `case:ignore` and `case:strict` tag options (tag `json:\"a,case:ignore,case:strict\"`)"},
		{"Format not last", []argschema.TagField{exported("A", "a,format:RFC3339,omitempty")}, 0,
			"Go struct field A has `format` tag option that was not specified last (tag `json:\"a,format:RFC3339,omitempty\"`)"},
		{"Format", []argschema.TagField{exported("A", "a"), exported("B", "b,omitempty,format:RFC3339")}, 1,
			"Go struct field B has unsupported `format` tag option (tag `json:\"b,omitempty,format:RFC3339\"`)"},
		{"Format, then another refusal", []argschema.TagField{exported("A", "a,format:RFC3339"), exported("B", "b,omitempty,omitempty")}, 1,
			"Go struct field B has duplicate appearance of `omitempty` tag option (tag `json:\"b,omitempty,omitempty\"`)"},
		{"Format without value", []argschema.TagField{exported("A", "a,format")}, 0,
			"Go struct field A is missing value for `format` tag option (tag `json:\"a,format\"`)"},
		{"Unterminated format", []argschema.TagField{exported("A", "a,format:'2006")}, 0,
			"Go struct field A has malformed value for `format` tag option: single-quoted string not terminated: '2006... (tag `json:\"a,format:'2006\"`)"},
		{"Embed with omitempty", []argschema.TagField{exported("ID", "id"), exported("Rest", ",embed,omitempty")}, 1,
			"Go struct field Rest cannot have any options other than `embed` specified (tag `json:\",embed,omitempty\"`)"},
		{"Embed with a name", []argschema.TagField{exported("Rest", "rest,embed")}, 0,
			"Go struct field Rest cannot have any options other than `embed` specified (tag `json:\"rest,embed\"`)"},
		{"Embedded struct with omitempty", []argschema.TagField{embeddedStruct(",omitempty", true)}, 0,
			"Go struct field Inner cannot have any options other than `embed` specified (tag `json:\",omitempty\"`)"},
		{"Embedded non-struct", []argschema.TagField{{Name: "Tags", Exported: true, Embedded: true}}, 0,
			"embedded Go struct field Tags of non-struct type must be explicitly given a JSON name"},
		{"Unexported with a tag", []argschema.TagField{exported("A", "a"), {Name: "b", Tag: "b", HasTag: true}}, 1,
			"unexported Go struct field b cannot have non-ignored `json:\"b\"` tag"},
		{"Unexported with an empty tag", []argschema.TagField{{Name: "b", HasTag: true}}, 0,
			"unexported Go struct field b cannot have non-ignored `json:\"\"` tag"},
		{"Unexported skipped", []argschema.TagField{{Name: "b", Tag: "-", HasTag: true}, {Name: "c"}}, -1, ""},
		{"Unexported embedded non-struct", []argschema.TagField{{Name: "tags", Tag: "tags", HasTag: true, Embedded: true}}, 0,
			"Go struct field tags is not exported (tag `json:\"tags\"`)"},
		{"Same name", []argschema.TagField{exported("A", "x"), exported("C", "c"), exported("B", "x,omitempty")}, 2,
			`Go struct fields A and B conflict over JSON object name "x"`},
		{"Same name, one by Go", []argschema.TagField{{Name: "X", Exported: true}, exported("B", "X")}, 1,
			`Go struct fields X and B conflict over JSON object name "X"`},
		{"Same name, other case", []argschema.TagField{exported("A", "x"), exported("B", "X")}, -1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i, err := argschema.TagError(tc.fields)
			if i != tc.index || fmt.Sprint(err) != cmpOr(tc.want, "<nil>") {
				t.Errorf("TagError = %d, %v\nwant %d, %s", i, err, tc.index, tc.want)
			}
			typ := structOf(tc.fields)
			if typ == nil {
				return
			}
			v2err := jsonv2Error(typ)
			if want := tagless(tc.want); fmt.Sprint(v2err) != cmpOr(want, "<nil>") {
				t.Errorf("json v2 says %v of %v, want %s", v2err, typ, want)
			}
		})
	}
}

// TestTagErrors gives each field its own error: a field whose tag json v2
// refuses still holds its name, which a later field then conflicts with.
func TestTagErrors(t *testing.T) {
	errs := argschema.TagErrors([]argschema.TagField{
		exported("A", "a,omitempty,omitempty"), exported("B", "b"), exported("C", "a"), exported("D", "d,omit_empty"),
		exported("E", "e,format:RFC3339"),
	})
	want := []string{
		"Go struct field A has duplicate appearance of `omitempty` tag option (tag `json:\"a,omitempty,omitempty\"`)",
		"<nil>",
		`Go struct fields A and C conflict over JSON object name "a"`,
		"Go struct field D has invalid appearance of `omit_empty` tag option; specify `omitempty` instead (tag `json:\"d,omit_empty\"`)",
		"Go struct field E has unsupported `format` tag option (tag `json:\"e,format:RFC3339\"`)",
	}
	for i, err := range errs {
		if fmt.Sprint(err) != want[i] {
			t.Errorf("field %d: %v, want %s", i, err, want[i])
		}
	}
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// structOf builds a struct of fields, each of type int (a map for embed, a
// time for format), or nil when reflect.StructOf cannot: an unexported or
// Go embedded field.
func structOf(fields []argschema.TagField) reflect.Type {
	var sfs []reflect.StructField
	for _, f := range fields {
		if !f.Exported || f.Embedded {
			return nil
		}
		typ := reflect.TypeFor[int]()
		switch {
		case strings.Contains(f.Tag, "embed"):
			typ = reflect.TypeFor[map[string]any]()
		case strings.Contains(f.Tag, "format"):
			typ = reflect.TypeFor[time.Time]()
		}
		tag := reflect.StructTag("")
		if f.HasTag {
			tag = reflect.StructTag("json:" + strconv.Quote(f.Tag))
		}
		sfs = append(sfs, reflect.StructField{Name: f.Name, Type: typ, Tag: tag})
	}
	return reflect.StructOf(sfs)
}

// jsonv2Error returns the cause of json v2's refusal of struct type t,
// when it first decodes into it.
func jsonv2Error(t reflect.Type) error {
	err := jsonv2.Unmarshal([]byte("{}"), reflect.New(t).Interface())
	var se *jsonv2.SemanticError
	if errors.As(err, &se) && se.Err != nil {
		return se.Err
	}
	return err
}

// tagless removes the tag TagError adds to json v2's words.
func tagless(msg string) string {
	if i := strings.LastIndex(msg, " (tag `json:"); i >= 0 {
		return msg[:i]
	}
	return msg
}

// Structs with the shapes of json tags json v2 refuses, which vet lets by.
type (
	tagEmbedded struct {
		tagInner `json:",omitempty"`
		ID       int `json:"id"`
	}
	tagNamedEmbed struct {
		Rest map[string]any `json:"rest,embed"`
	}
	tagNonStruct  []string
	tagEmbeddedNS struct {
		tagNonStruct //lint:ignore U1000 the embedding is what this case tests
	}
	tagUnexported struct {
		ID   int    `json:"id"`
		note string `json:""` //lint:ignore U1000 the tag is what this case tests
	}
	tagBadCase struct {
		A int `json:"a"`
		//lint:ignore SA5008 the option is what this case tests
		B int `json:"b,case:Ignore"`
	}
	tagConflict struct {
		X int
		Y int `json:"X"`
	}
	tagHolder struct {
		ID    int             `json:"id"`
		Items []*tagConflict  `json:"items"`
		Back  *tagHolder      `json:"back"`
		Inner tagUnexported   `json:"inner"`
		More  map[string]bool `json:"more"`
	}
)

// TestRefusedTag_AsJSONv2 refuses each struct with json v2's own words,
// and the tag; and as deep in a type as it is, with the Go path of the
// field that holds it.
func TestRefusedTag_AsJSONv2(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[tagEmbedded](), reflect.TypeFor[tagNamedEmbed](), reflect.TypeFor[tagEmbeddedNS](),
		reflect.TypeFor[tagUnexported](), reflect.TypeFor[tagBadCase](), reflect.TypeFor[tagConflict](),
	} {
		v2err := jsonv2Error(typ)
		if v2err == nil {
			t.Fatalf("json v2 takes %v", typ)
		}
		err := argschema.RefusedTag(typ)
		if err == nil {
			t.Errorf("RefusedTag(%v) = nil, want json v2's %v", typ, v2err)
			continue
		}
		if got := tagless(strings.TrimPrefix(err.Error(), "argschema: "+typ.String()+": ")); got != v2err.Error() {
			t.Errorf("RefusedTag(%v) = %v, want json v2's %v", typ, err, v2err)
		}
		// A struct deeper in is refused too, after the path to it.
		holder := reflect.StructOf([]reflect.StructField{{Name: "Rows", Type: reflect.SliceOf(typ), Tag: `json:"rows"`}})
		if err := argschema.RefusedTag(holder); err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("argschema: %v field Rows: ", holder)) {
			t.Errorf("RefusedTag(%v) = %v", holder, err)
		}
	}
	if err, want := argschema.RefusedTag(reflect.TypeFor[tagHolder]()), "argschema: argschema_test.tagHolder field Items: Go struct fields X and Y conflict over JSON object name \"X\""; fmt.Sprint(err) != want {
		t.Errorf("RefusedTag(tagHolder) = %v, want %s", err, want)
	}
}

// TestRefusedTag_Server shows why a result is refused: the server's
// encoding writes each of these structs, json v2's legacy error semantics
// ignoring the tags json v2 refuses, some in a shape the output schema
// does not describe.
func TestRefusedTag_Server(t *testing.T) {
	type quoted struct {
		//lint:ignore SA5008 the malformed name is what this case tests
		A string `json:"'a"`
	}
	b, err := wirejson.Marshal(quoted{A: "v"})
	if err != nil || string(b) != `{"A":"v"}` {
		t.Errorf("the server writes quoted as %s, %v", b, err)
	}
	if s := argschema.OutputOf(reflect.TypeFor[quoted]()).Schema; !strings.Contains(string(s), `"'a"`) {
		t.Errorf("output schema %s", s)
	}
	// A format option, which json v2 takes only with an option the server
	// does not give, fails every value instead.
	type format struct {
		At time.Time `json:"at,format:RFC3339"`
	}
	if _, err := wirejson.Marshal(format{}); err == nil {
		t.Error("the server writes a format option")
	}
	if err := argschema.RefusedTag(reflect.TypeFor[[]format]()); err == nil {
		t.Error("RefusedTag(format) = nil")
	}
	for _, v := range []any{quoted{}, tagNamedEmbed{}, tagUnexported{}, tagConflict{}, tagBadCase{}} {
		if _, err := wirejson.Marshal(v); err != nil {
			t.Errorf("the server refuses %T: %v", v, err)
		}
		if err := argschema.RefusedTag(reflect.TypeOf(v)); err == nil {
			t.Errorf("RefusedTag(%T) = nil", v)
		}
	}
}

// TestSchema_RefusedTagDeep refuses arguments whose json tag json v2
// refuses in a struct deeper in, which json v2 itself refuses only when an
// argument first holds one, as it refuses them at the top.
func TestSchema_RefusedTagDeep(t *testing.T) {
	type args struct {
		Rows []tagConflict `json:"rows"`
	}
	_, err := argschema.Schema(reflect.TypeFor[args]())
	if want := "argschema: argschema_test.args field Rows: Go struct fields X and Y conflict over JSON object name \"X\""; fmt.Sprint(err) != want {
		t.Errorf("Schema = %v, want %s", err, want)
	}
	type repeated struct {
		//lint:ignore SA5008 the repeated option is what this case tests
		At *string `json:"at,omitempty,omitempty"`
	}
	type top struct {
		In repeated `json:"in"`
	}
	_, err = argschema.Schema(reflect.TypeFor[top]())
	if want := "argschema: argschema_test.top field In: Go struct field At has duplicate appearance of `omitempty` tag option (tag `json:\"at,omitempty,omitempty\"`)"; fmt.Sprint(err) != want {
		t.Errorf("Schema = %v, want %s", err, want)
	}
}
