package openenv_test

import (
	"encoding/json"
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
	Hash  [4]byte `json:"hash"`
	Tag   []octet `json:"tag"`
	Count int     `json:"count,omitempty"`
	OK    bool    `json:"ok,omitempty"`
	Inner struct {
		N int `json:"n,omitempty"`
	} `json:"inner,omitempty"`
}

// TestCall_ResultEncodedAsEncodingJSON: a tool's result reaches the client
// as encoding/json writes it, which its output schema describes and a
// trajectory records: an [N]byte as an array of numbers, a []~byte as
// base64, omitempty leaving out 0 and false. json v2's defaults wrote the
// [4]byte as base64 (against the schema's array of four integers, which
// an MCP client validating structuredContent refuses), a []octet as an
// array, and 0 and false where encoding/json leaves them out.
func TestCall_ResultEncodedAsEncodingJSON(t *testing.T) {
	w := env.NewWorld(env.WorldSpec{Name: "legacy", Version: "1", Schema: "CREATE TABLE t (id INTEGER PRIMARY KEY) STRICT;"})
	res := legacyResult{Hash: [4]byte{1, 2, 3, 4}, Tag: []octet("hi")}
	env.Tool(w, "legacy", "Returns values json v2 writes otherwise.", func(c *env.Ctx, _ struct{}) (legacyResult, error) {
		return res, nil
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
	if err := json.Unmarshal([]byte(s.rpc(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)), &list); err != nil || len(list.Result.Tools) != 1 {
		t.Fatalf("tools/list: %v, %+v", err, list)
	}
	schema, err := schematest.Compile(list.Result.Tools[0].OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(reply.Result.StructuredContent); err != nil {
		t.Errorf("structuredContent %s does not match the output schema %s: %v", reply.Result.StructuredContent, list.Result.Tools[0].OutputSchema, err)
	}
}
