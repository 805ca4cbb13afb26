package argschema

import (
	"bytes"
	"cmp"
	"reflect"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"
)

// numeric is what the checks know of an integer or number node beyond its
// schema: its Go kind, and its bounds as read, which an integer kind's
// checks compare and its published schema writes exactly, where the
// schema's float64 minimum and maximum round past 2^53
// (9223372036854775807 to 9223372036854775808).
type numeric struct {
	kind     reflect.Kind
	min, max *number // nil when the node has none
}

// integer reports whether the node is of an integer kind.
func (num numeric) integer() bool {
	return num.kind >= reflect.Int && num.kind <= reflect.Uintptr
}

// compare compares the numbers n and m read for the node's kind: an
// integer kind's exactly, any other's as float64.
func (num numeric) compare(n, m number) int {
	switch {
	case num.kind >= reflect.Uint && num.kind <= reflect.Uintptr:
		return cmp.Compare(n.u, m.u)
	case num.integer():
		return cmp.Compare(n.i, m.i)
	}
	return cmp.Compare(n.f, m.f)
}

// text writes the bound n of the node as JSON, for messages: an integer
// kind's as its digits.
func (num numeric) text(n number) string {
	if num.integer() {
		return literal(n.value(num.kind))
	}
	return literal(n.f)
}

// setBound sets the minimum, or with upper the maximum, of the number
// node p to n, or clears it when n is nil: in the schema as a float64, and
// as read for the checks and for marshalBounds.
func (a *adapter) setBound(p *jsonschema.Schema, upper bool, n *number) {
	num := a.nums[p]
	dst, exact := &p.Minimum, &num.min
	if upper {
		dst, exact = &p.Maximum, &num.max
	}
	*dst, *exact = nil, n
	if n != nil {
		f := n.f
		*dst = &f
	}
	a.nums[p] = num
}

// marshalBounds encodes the schema s as marshal does, with the minimum and
// maximum of each integer node of nums written as the integer read, where
// the library writes their float64, which rounds past 2^53
// (9223372036854775807 as 9223372036854776000).
func marshalBounds(s *jsonschema.Schema, nums map[*jsonschema.Schema]numeric) ([]byte, error) {
	b, err := marshal(s)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	enc := jsontext.NewEncoder(&out, jsontext.EscapeForJS(true))
	if err := copyBounds(dec, enc, s, nums); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// copyBounds copies the next value, the schema s marshalled, from dec to
// enc, writing the bounds of its integer nodes as nums holds them. The
// nodes below s are the values of its properties, items and
// additionalProperties; every other member is copied as it is.
func copyBounds(dec *jsontext.Decoder, enc *jsontext.Encoder, s *jsonschema.Schema, nums map[*jsonschema.Schema]numeric) error {
	copyValue := func() error {
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		return enc.WriteValue(v)
	}
	copyToken := func() (jsontext.Token, error) {
		tok, err := dec.ReadToken()
		if err != nil {
			return tok, err
		}
		return tok, enc.WriteToken(tok)
	}
	if s == nil || dec.PeekKind() != '{' { // true or false
		return copyValue()
	}
	if _, err := copyToken(); err != nil {
		return err
	}
	for dec.PeekKind() != '}' {
		key, err := copyToken()
		if err != nil {
			return err
		}
		num := nums[s]
		switch key.String() {
		case "properties":
			if _, err := copyToken(); err != nil {
				return err
			}
			for err == nil && dec.PeekKind() != '}' {
				var name jsontext.Token
				if name, err = copyToken(); err == nil {
					err = copyBounds(dec, enc, s.Properties[name.String()], nums)
				}
			}
			if err == nil {
				_, err = copyToken()
			}
		case "items":
			err = copyBounds(dec, enc, s.Items, nums)
		case "additionalProperties":
			err = copyBounds(dec, enc, s.AdditionalProperties, nums)
		case "minimum", "maximum":
			bound := num.min
			if key.String() == "maximum" {
				bound = num.max
			}
			switch {
			case bound == nil || !num.integer():
				err = copyValue()
			case num.kind >= reflect.Uint:
				if err = dec.SkipValue(); err == nil {
					err = enc.WriteToken(jsontext.Uint(bound.u))
				}
			default:
				if err = dec.SkipValue(); err == nil {
					err = enc.WriteToken(jsontext.Int(bound.i))
				}
			}
		default:
			err = copyValue()
		}
		if err != nil {
			return err
		}
	}
	_, err := copyToken()
	return err
}
