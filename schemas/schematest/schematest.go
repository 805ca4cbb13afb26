// Package schematest checks JSON documents against the schemas of package
// schemas with an independent JSON Schema validator,
// github.com/santhosh-tekuri/jsonschema/v6, so a test of the server does not
// grade its wire messages with the server's own code.
//
// Everything in this package is safe for concurrent use.
package schematest

import (
	"bytes"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/seahaven/seahaven/schemas"
)

// baseURL is the $id prefix of every schema file.
const baseURL = "https://github.com/seahaven/seahaven/schemas/"

// Validate checks the JSON document doc against the schema called name
// ("action" or "action.json"). It returns nil when doc matches, a
// *jsonschema.ValidationError when it does not, and another error when doc
// is not one JSON value or name is unknown (wrapping schemas.ErrUnknown).
func Validate(name string, doc []byte) error {
	set, err := load()
	if err != nil {
		return err
	}
	name = strings.TrimSuffix(name, ".json")
	sch, ok := set[name]
	if !ok {
		return fmt.Errorf("%w %q", schemas.ErrUnknown, name)
	}
	return sch.Validate(doc)
}

// load compiles every embedded schema once.
var load = sync.OnceValues(func() (map[string]*Schema, error) {
	c := jsonschema.NewCompiler()
	names := schemas.Names()
	for _, name := range names {
		b, err := fs.ReadFile(schemas.FS, name+".json")
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("schematest: %s.json: %w", name, err)
		}
		if err := c.AddResource(baseURL+name+".json", doc); err != nil {
			return nil, fmt.Errorf("schematest: %s.json: %w", name, err)
		}
	}
	set := make(map[string]*Schema, len(names))
	for _, name := range names {
		sch, err := c.Compile(baseURL + name + ".json")
		if err != nil {
			return nil, fmt.Errorf("schematest: %s.json: %w", name, err)
		}
		set[name] = &Schema{sch}
	}
	return set, nil
})

// Schema is a JSON Schema document compiled by the independent validator,
// such as a tool's input or output schema.
type Schema struct{ s *jsonschema.Schema }

// Compile compiles the JSON Schema document schema.
func Compile(schema []byte) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("schematest: schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		return nil, fmt.Errorf("schematest: %w", err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		return nil, fmt.Errorf("schematest: %w", err)
	}
	return &Schema{s}, nil
}

// Validate checks the JSON document doc against s: nil when it matches, a
// *jsonschema.ValidationError when it does not, another error when doc is
// not one JSON value.
func (s *Schema) Validate(doc []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("schematest: document is not JSON: %w", err)
	}
	return s.s.Validate(inst)
}
