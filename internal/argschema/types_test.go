package argschema_test

import (
	"encoding/json"
	"time"
)

// Types shared by the tests, examples and benchmarks.

type Money struct {
	Amount   int64  `json:"amount" doc:"Amount in minor units." min:"0"`
	Currency string `json:"currency" enum:"usd, eur, gbp" default:"usd"`
}

type Base struct {
	RequestID string `json:"request_id,omitempty" doc:"Idempotency key." maxlen:"64"`
}

type LineItem struct {
	SKU string `json:"sku"`
	Qty uint8  `json:"qty" min:"1" max:"99"`
}

type Options struct {
	Notify bool `json:"notify,omitempty"`
}

// RichArgs exercises every supported type and tag.
type RichArgs struct {
	Base
	Customer string            `json:"customer" doc:"Customer id: \"cus_…\" <b>&</b>."`
	Price    Money             `json:"price"`
	Items    []LineItem        `json:"items" doc:"What is bought."`
	Note     *string           `json:"note" maxlen:"140"`
	Priority *int              `json:"priority" enum:"1,2,3"`
	Rate     float64           `json:"rate,omitempty" min:"0" max:"1.5"`
	Ratio    float32           `json:"ratio" default:"0.25"`
	Capture  bool              `json:"capture" default:"true"`
	Due      time.Time         `json:"due,omitzero" doc:"When payment is due."`
	Receipt  []byte            `json:"receipt,omitempty"`
	Tags     map[string]string `json:"tags,omitempty"`
	Extra    json.RawMessage   `json:"extra,omitempty"`
	Any      any               `json:"any,omitempty"`
	Retries  uint32            `json:"retries" default:"3"`
	Matrix   [][]float64       `json:"matrix,omitempty"`
	Options  *Options          `json:"options"`
	Labels   []string          `json:"labels" default:"[\"new\"]"`
	Skipped  string            `json:"-"`
	internal int               //lint:ignore U1000 an unexported field the schema must skip
	NoTag    int
}

type A struct {
	Name string `json:"name"`
	X    int    `json:"x"`
}

type B struct {
	Name string `json:"name"`
	Y    int    `json:"y"`
}

type C struct {
	Name string `json:"name"`
	W    int    `json:"w"`
}

type inner struct {
	V int `json:"v"`
}

// Embedded covers encoding/json's flattening: A.Name and B.Name collide at
// one depth and are dropped; C is deeper, so Top wins over C.Name; the
// unexported embedded struct's exported field is promoted; Tagged is an
// embedded struct with a name, so it is not flattened.
type Embedded struct {
	A
	*B
	Deeper
	inner
	Tagged Options `json:"tagged"`
}

type Deeper struct {
	C
	Top string `json:"w"`
}

// Args is the struct most Decode tests use.
type Args struct {
	Amount   int64             `json:"amount"`
	Currency string            `json:"currency,omitempty" enum:"usd,eur"`
	Small    int8              `json:"small,omitempty"`
	Count    uint16            `json:"count,omitempty" min:"1" max:"10"`
	Ratio    float32           `json:"ratio,omitempty"`
	Flag     bool              `json:"flag,omitempty"`
	Memo     string            `json:"memo,omitempty" maxlen:"5"`
	Level    *int              `json:"level" enum:"1,2,3"`
	Temp     float64           `json:"temp,omitempty" min:"-273.15"`
	Items    []Item            `json:"items,omitempty"`
	Meta     map[string]int    `json:"meta,omitempty"`
	Any      any               `json:"any,omitempty"`
	Raw      json.RawMessage   `json:"raw,omitempty"`
	When     time.Time         `json:"when,omitzero"`
	Blob     []byte            `json:"blob,omitempty"`
	Nested   *Item             `json:"nested"`
	Names    map[string]string `json:"names,omitempty"`
}

type Item struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

// Defaults has a default on every kind of field.
type Defaults struct {
	Currency string    `json:"currency" default:"usd" enum:"usd,eur"`
	Retries  uint8     `json:"retries" default:"3"`
	Ratio    float64   `json:"ratio" default:"0.5"`
	Capture  bool      `json:"capture" default:"true"`
	Due      time.Time `json:"due" default:"2026-06-01T10:00:00+01:00"`
	Tags     []string  `json:"tags" default:"[\"a\",\"b\"]"`
	Limit    *int      `json:"limit" default:"10"`
	Note     *string   `json:"note"`
	Item     Item      `json:"item" default:"{\"sku\":\"x\",\"qty\":1}"`
	Blob     []byte    `json:"blob" default:"aGk="`
}

// ChargeArgs is the three-field struct of a typical tool call.
type ChargeArgs struct {
	Amount   int64   `json:"amount" doc:"Amount in cents." min:"1"`
	Currency string  `json:"currency" enum:"usd,eur" default:"usd"`
	Memo     *string `json:"memo" maxlen:"140"`
}
