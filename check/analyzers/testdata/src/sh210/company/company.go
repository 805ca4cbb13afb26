// Package company tags its tools' fields with options json v2 knows and
// options it ignores.
package company

import (
	"sh210/shared"

	"github.com/seahaven/seahaven/env"
)

var World = env.NewWorld(env.WorldSpec{Name: "company", Version: "1"})

// Value stands in for jsontext.Value.
type Value []byte

type Base struct {
	ID string `json:"id"`
}

type Line struct {
	SKU   string         `json:"sku"`
	Attrs map[string]any `json:"attrs,unknown"` // want `field Attrs of Line, in the result of tool "report", has the json tag option "unknown", which json v2 does not know: json v2 ignores it, and writes the field as a member "attrs" of its own; to write the entries of a map\[string\]T or jsontext.Value field as members of the object \(json v2's "embedded fallback", which collects unknown members\), the option is "embed"`
}

type Report struct {
	Base  Base            `json:",inline"` // want `field Base of Report, in the result of tool "report", has the json tag option "inline", which json v2 does not know: json v2 ignores it, and writes the field as a member "Base" of its own; json v2's option is "embed"`
	Lines []*Line         `json:"lines"`
	ByKey map[string]Line `json:"by_key"`
	Next  *Report         `json:"next,omitempty"`
	Extra Value           `json:",embed"`
	Plain string          `json:"inline"`
	When  string          `json:",format:'a,inline'"` // want "field When of Report, .*: Go struct field When has unsupported `format` tag option"
	Inner struct {
		More map[string]any `json:",omitempty,inline"` // want `field More of Report.Inner, in the result`
	} `json:"inner"`
	Note   string `json:"note,omitEmpty"`        // want "field Note of Report, in the result of tool \"report\", has a json tag json v2 refuses, and env.Tool refuses it when the tool registers: Go struct field Note has invalid appearance of `omitEmpty` tag option; specify `omitempty` instead \\(tag `json:\\\"note,omitEmpty\\\"`\\)"
	Kept   string `json:"kept,omitempty,Inline"` // want `field Kept of Report, in the result of tool "report", has the json tag option "Inline", which json v2 does not know: json v2 ignores it, and writes the field as a member "kept" of its own`
	hidden string `json:",inline"`               // want "field hidden of Report, in the result of tool \"report\", has a json tag json v2 refuses, and env.Tool refuses it when the tool registers: unexported Go struct field hidden cannot have non-ignored `json:\\\",inline\\\"` tag"
	Own    Custom `json:"own"`
}

// Custom encodes itself, so its fields' tags are not read.
type Custom struct {
	Rest map[string]any `json:",inline"`
}

func (Custom) MarshalJSON() ([]byte, error) { return nil, nil }

// Args embeds Base with an ignored option, which changes nothing, and
// names Base with one, which does.
type Args struct {
	Base   `json:",inline"`
	Named  Base `json:"named,inline"` // want `field Named of Args, in the arguments of tool "both"`
	Shared Both `json:"shared"`
}

type Both struct {
	Rest map[string]any `json:",unknown"` // want `field Rest of Both, in the arguments of tool "both", has the json tag option "unknown", which json v2 does not know: json v2 ignores it, and env.Tool refuses it: arguments are held to the tool's schema, which admits no member it does not name`
}

type Search struct {
	Limit  int  `json:"limit,omit_zero"` // want "field Limit of Search, in the arguments of tool \"search\", has a json tag json v2 refuses, and env.Tool refuses it when the tool registers: Go struct field Limit has invalid appearance of `omit_zero` tag option; specify `omitzero` instead"
	Filter Base `json:"filter,inline"`   // want `field Filter of Search, in the arguments of tool "search", has the json tag option "inline", which json v2 does not know: json v2 ignores it, and env.Tool refuses it: to take a struct's fields as members of the arguments, embed the struct as an untagged Go embedded field \(json v2's own option, "embed", is refused in arguments too\)`
}

var Report_ = env.Tool(World, "report", "Reports.",
	func(c *env.Ctx, _ struct{}) (Report, error) { return Report{}, nil })

// Both's field is reached from a result first, then from an argument.
var Out = env.Tool(World, "out", "Returns Both.",
	func(c *env.Ctx, _ struct{}) ([]Both, error) { return nil, nil })

var Both_ = env.Tool(World, "both", "Takes Both.",
	func(c *env.Ctx, _ Args) (any, error) { return nil, nil })

var Search_ = env.Tool(World, "search", "Searches.",
	func(c *env.Ctx, in Search) (any, error) { return nil, nil })

var Page = env.Tool(World, "page", "Returns a page.", // want `field Rest of shared.Page, in the result of tool "page", has the json tag option "inline"`
	func(c *env.Ctx, _ struct{}) (*shared.Page, error) { return nil, nil })

// A hook's keywords are not a tool's arguments.
func hook(c *env.Ctx, _ Search) error { return nil }

func init() { env.OnStartup(World, hook) }

// Wrapped's field is reported once, for both its instances.
type Wrapped[T any] struct {
	Data T `json:",inline"` // want `field Data of Wrapped, in the result of tool "ints"`
}

var Ints = env.Tool(World, "ints", "Returns ints.",
	func(c *env.Ctx, _ struct{}) (Wrapped[int], error) { return Wrapped[int]{}, nil })

var Strings = env.Tool(World, "strings", "Returns strings.",
	func(c *env.Ctx, _ struct{}) (Wrapped[string], error) { return Wrapped[string]{}, nil })

// Tagged has a field of each shape of json tag json v2 refuses; each is
// reported, not only the first.
type Tagged struct {
	Repeated string             `json:"repeated,omitempty,omitempty"` // want "field Repeated of Tagged, in the result of tool \"tagged\", has a json tag json v2 refuses, and env.Tool refuses it when the tool registers: Go struct field Repeated has duplicate appearance of `omitempty` tag option"
	Quoted   string             `json:"'quoted"`                      // want "field Quoted of Tagged, .*: Go struct field Quoted has malformed `json` tag: invalid character '\\\\'' at start of option \\(expecting Unicode letter\\)"
	Rest     map[string]any     `json:"rest,embed"`                   // want "field Rest of Tagged, .*: Go struct field Rest cannot have any options other than `embed` specified"
	More     map[string]any     `json:",embed,omitempty"`             // want "field More of Tagged, .*: Go struct field More cannot have any options other than `embed` specified"
	Case     string             `json:"case,case:bogus"`              // want "field Case of Tagged, .*: Go struct field Case has unknown `case:bogus` tag value"
	Same     string             `json:"repeated"`                     // want "field Same of Tagged, .*: Go struct fields Repeated and Same conflict over JSON object name \"repeated\""
	Base     `json:",omitzero"` // want "field Base of Tagged, .*: Go struct field Base cannot have any options other than `embed` specified"
	Fine     string             `json:"fine,omitzero,case:ignore"`
	Also     string             `json:"also,inline"` // want `field Also of Tagged, in the result of tool "tagged", has the json tag option "inline"`
}

var Tagged_ = env.Tool(World, "tagged", "Returns Tagged.",
	func(c *env.Ctx, _ struct{}) (map[string][]Tagged, error) { return nil, nil })

// Deep reaches a refused tag in another package's struct, reported at the
// registration.
type Deep struct {
	Rows []shared.Row `json:"rows"`
}

var Deep_ = env.Tool(World, "deep", "Takes Deep.", // want "field Name of shared.Row, in the arguments of tool \"deep\", has a json tag json v2 refuses, and env.Tool refuses it when the tool registers: Go struct fields ID and Name conflict over JSON object name \"id\""
	func(c *env.Ctx, in Deep) (any, error) { return nil, nil })
