package schemas

import (
	"strings"
	"testing"
)

func TestLint(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   string // a substring of the error; "" when the schema is accepted
	}{
		{"Supported", `{"type":"object","properties":{"a":{"type":["string","null"],"maxLength":3}},"required":["a"],"additionalProperties":false}`, ""},
		{"UnsupportedKeyword", `{"type":"object","minProperties":1}`, `unsupported keyword "minProperties"`},
		{"NestedUnsupported", `{"properties":{"a":{"format":"uuid","uniqueItems":true}}}`, `#/properties/a: unsupported keyword "format"`},
		{"UnknownType", `{"type":"int"}`, `unknown type "int"`},
		{"DanglingRef", `{"$ref":"#/$defs/Nope"}`, `does not resolve`},
		{"UnknownFile", `{"$ref":"nope.json"}`, `names no schema file`},
		{"SiblingRef", `{"$ref":"action.json#/$defs/ListToolsAction"}`, ""},
		{"BadPattern", `{"pattern":"("}`, "pattern:"},
		{"EmptyOneOf", `{"oneOf":[]}`, "non-empty array"},
	}
	set, err := loadSet()
	if err != nil {
		t.Fatalf("the embedded schemas do not load: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := decode([]byte(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			docs := map[string]any{"test.json": doc}
			for k, v := range set.docs {
				docs[k] = v
			}
			scratch := &schemaSet{docs: docs}
			err = scratch.lint("test.json", doc, "#")
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("want accepted, got %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
