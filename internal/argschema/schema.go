package argschema

import (
	"slices"
	"strconv"
	"unicode/utf8"
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
		b = appendString(b, k)
		b = append(b, ':')
	}
	switch len(n.types) {
	case 0:
	case 1:
		key("type")
		b = appendString(b, n.types[0])
	default:
		key("type")
		b = append(b, '[')
		for i, t := range n.types {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, t)
		}
		b = append(b, ']')
	}
	if n.description != "" {
		key("description")
		b = appendString(b, n.description)
	}
	if n.format != "" {
		key("format")
		b = appendString(b, n.format)
	}
	if n.contentEncoding != "" {
		key("contentEncoding")
		b = appendString(b, n.contentEncoding)
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
			b = appendString(b, p.name)
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
			b = appendString(b, r)
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

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD;
// <, > and & are left as they are.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
