package argschema

import (
	"slices"
	"strconv"

	"github.com/seahaven/seahaven/internal/jsonquote"
)

// node is one schema object. appendJSON writes its keywords in a fixed
// order, so a schema is byte-identical on every call.
type node struct {
	types           []string // "type": a string when one, an array when more; absent when none
	description     string
	format          string
	contentEncoding string
	enum            []string // JSON literals
	minimum         string   // JSON number literal; "" when absent
	maximum         string
	maxLength       int // meaningful when hasMaxLength
	hasMaxLength    bool
	def             []byte // JSON of the default; nil when absent
	items           *node
	hasProperties   bool
	properties      []property
	required        []string
	additional      *node // additionalProperties schema
	closed          bool  // additionalProperties false
}

// property is one named entry of "properties".
type property struct {
	name   string
	schema *node
}

// clone returns a shallow copy of n whose slices may be appended to freely.
func (n *node) clone() *node {
	c := *n
	c.types = slices.Clip(c.types)
	c.enum = slices.Clip(c.enum)
	return &c
}

// nullable returns a copy of n that also accepts null.
func (n *node) nullable() *node {
	c := n.clone()
	if len(c.types) > 0 && !slices.Contains(c.types, "null") {
		c.types = append(c.types, "null")
	}
	if len(c.enum) > 0 && !slices.Contains(c.enum, "null") {
		c.enum = append(c.enum, "null")
	}
	return c
}

func (n *node) appendJSON(b []byte) []byte {
	b = append(b, '{')
	start := len(b)
	key := func(k string) {
		if len(b) > start {
			b = append(b, ',')
		}
		b = jsonquote.Append(b, k)
		b = append(b, ':')
	}
	switch len(n.types) {
	case 0:
	case 1:
		key("type")
		b = jsonquote.Append(b, n.types[0])
	default:
		key("type")
		b = append(b, '[')
		for i, t := range n.types {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonquote.Append(b, t)
		}
		b = append(b, ']')
	}
	if n.description != "" {
		key("description")
		b = jsonquote.Append(b, n.description)
	}
	if n.format != "" {
		key("format")
		b = jsonquote.Append(b, n.format)
	}
	if n.contentEncoding != "" {
		key("contentEncoding")
		b = jsonquote.Append(b, n.contentEncoding)
	}
	if len(n.enum) > 0 {
		key("enum")
		b = append(b, '[')
		for i, lit := range n.enum {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, lit...)
		}
		b = append(b, ']')
	}
	if n.minimum != "" {
		key("minimum")
		b = append(b, n.minimum...)
	}
	if n.maximum != "" {
		key("maximum")
		b = append(b, n.maximum...)
	}
	if n.hasMaxLength {
		key("maxLength")
		b = strconv.AppendInt(b, int64(n.maxLength), 10)
	}
	if n.def != nil {
		key("default")
		b = append(b, n.def...)
	}
	if n.items != nil {
		key("items")
		b = n.items.appendJSON(b)
	}
	if n.hasProperties {
		key("properties")
		b = append(b, '{')
		for i, p := range n.properties {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonquote.Append(b, p.name)
			b = append(b, ':')
			b = p.schema.appendJSON(b)
		}
		b = append(b, '}')
	}
	if len(n.required) > 0 {
		key("required")
		b = append(b, '[')
		for i, r := range n.required {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonquote.Append(b, r)
		}
		b = append(b, ']')
	}
	if n.additional != nil {
		key("additionalProperties")
		b = n.additional.appendJSON(b)
	} else if n.closed {
		key("additionalProperties")
		b = append(b, "false"...)
	}
	return append(b, '}')
}
