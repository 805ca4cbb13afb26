package openenv_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/schemas/schematest"
)

// octet is a named byte: encoding/json writes a slice of it as base64.
type octet byte

// legacyResult holds what json v2 writes otherwise than encoding/json by
// default.
type legacyResult struct {
	Hash  [4]byte     `json:"hash"`
	Tag   []octet     `json:"tag"`
	Count int         `json:"count,omitempty"`
	OK    bool        `json:"ok,omitempty"`
	Num   json.Number `json:"num"`
	Inner struct {
		N int `json:"n,omitempty"`
	} `json:"inner,omitempty"`
}

// TestCall_ResultEncodedAsEncodingJSON: a tool's result reaches the client
// as encoding/json writes it, which its output schema describes and a
// trajectory records: an [N]byte as an array of numbers, a []~byte as
// base64, omitempty leaving out 0 and false, a json.Number as its number.
// json v2's defaults wrote the
// [4]byte as base64 (against the schema's array of four integers, which
// an MCP client validating structuredContent refuses), a []octet as an
// array, 0 and false where encoding/json leaves them out and a
// json.Number as a string; and a
// result struct with two fields of one name, which encoding/json writes
// without either (and the output schema describes so), failed every call.
func TestCall_ResultEncodedAsEncodingJSON(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "legacy", Version: "1", Schema: "CREATE TABLE t (id INTEGER PRIMARY KEY) STRICT;"})
	res := legacyResult{Hash: [4]byte{1, 2, 3, 4}, Tag: []octet("hi"), Num: "12345678901234567890.25"}
	env.Tool(w, "legacy", "Returns values json v2 writes otherwise.", func(c *env.Ctx, _ struct{}) (legacyResult, error) {
		return res, nil
	})
	// Two fields of one name, built at run time since go vet refuses them
	// written out.
	dup := reflect.New(reflect.StructOf([]reflect.StructField{
		{Name: "A", Type: reflect.TypeFor[int](), Tag: `json:"dup"`},
		{Name: "B", Type: reflect.TypeFor[int](), Tag: `json:"dup"`},
		{Name: "C", Type: reflect.TypeFor[int](), Tag: `json:"c"`},
	})).Elem()
	dup.Field(0).SetInt(1)
	dup.Field(1).SetInt(2)
	dup.Field(2).SetInt(3)
	env.Tool(w, "dup", "Returns a struct with two fields of one name.", func(c *env.Ctx, _ struct{}) (any, error) {
		return dup.Interface(), nil
	})
	s := mustServeWorld(t, w, app.Config{}, openenv.Config{})
	want, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var reply struct {
		Result struct {
			StructuredContent json.RawMessage `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"legacy"}}`)), &reply); err != nil {
		t.Fatal(err)
	}
	if got := string(reply.Result.StructuredContent); got != string(want) {
		t.Errorf("structuredContent %s, want %s", got, want)
	}
	var list struct {
		Result struct {
			Tools []struct {
				OutputSchema json.RawMessage `json:"outputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(s.rpc(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)), &list); err != nil || len(list.Result.Tools) != 2 {
		t.Fatalf("tools/list: %v, %+v", err, list)
	}
	schema, err := schematest.Compile(list.Result.Tools[0].OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(reply.Result.StructuredContent); err != nil {
		t.Errorf("structuredContent %s does not match the output schema %s: %v", reply.Result.StructuredContent, list.Result.Tools[0].OutputSchema, err)
	}
	if got, want := s.rpc(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"dup"}}`), `"structuredContent":{"result":{"c":3}}`; !strings.Contains(got, want) {
		t.Errorf("tools/call dup: %s, want it to hold %s, as encoding/json writes the result", got, want)
	}
}
