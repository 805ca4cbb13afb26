package openenv_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/schemas/schematest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenSession is the script of testdata/golden/ws_session.jsonl: one /ws
// session through every message type, a tool failure and protocol errors.
var goldenSession = []struct {
	msg   string
	valid bool // msg matches the client_message schema
}{
	{`{"type":"reset","data":{"seed":7,"episode_id":"ep-1","fixture":"base","now":"2026-06-01T09:00:00Z"}}`, true},
	{`{"type":"step","data":{"type":"list_tools"}}`, true},
	{`{"type":"step","data":{"type":"call_tool","tool_name":"echo","arguments":{"message":"Hello!"}}}`, true},
	{`{"type":"step","data":{"type":"call_tool","tool_name":"add","arguments":{"a":5,"b":3}}}`, true},
	{`{"type":"step","data":{"type":"call_tool","tool_name":"fail","arguments":{}}}`, true},
	{`{"type":"step","data":{"type":"call_tool","tool_name":"refund","arguments":{}}}`, true},
	{`{"type":"state"}`, true},
	{`{"type":"inspect","data":{"sql":"SELECT message FROM echoes"}}`, true},
	{`{"type":"inspect","data":{"sql":"SELECT ? AS value","params":[42]}}`, true},
	{`{"type":"inspect","data":{"sql":"SELECT * FROM refunds"}}`, true},
	{`{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":2}}}}`, true},
	{`{"type":"dance"}`, false},
	{`{"type":"step","data":{"type":"call_tool"}}`, false},
	{`{"type":"reset","data":{"seed":-1,"colour":"red"}}`, false},
	{`{"type":"state","data":{}}`, false},
	{`{"type":`, false},
	{`{"type":"close"}`, true},
}

func TestGolden_WSSession(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	c := s.dial(t)
	var out bytes.Buffer
	line := func(key, frame string) {
		var b bytes.Buffer
		if err := json.Compact(&b, []byte(frame)); err != nil {
			// Not JSON (the invalid frame): record it as a string.
			q, _ := json.Marshal(frame)
			b.Reset()
			b.Write(q)
		}
		out.WriteString(`{"` + key + `":` + b.String() + "}\n")
	}
	for _, step := range goldenSession {
		err := schematest.Validate("client_message", []byte(step.msg))
		if step.valid && err != nil {
			t.Errorf("client frame %s: %v", step.msg, err)
		}
		if !step.valid && err == nil {
			t.Errorf("client frame %s matches the schema, want it not to", step.msg)
		}
		line("client", step.msg)
		send(t, c, step.msg)
		if step.msg == `{"type":"close"}` {
			break
		}
		line("server", recv(t, c))
	}
	path := filepath.Join("testdata", "golden", "ws_session.jsonl")
	if *update {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("transcript differs from %s (run with -update if the change is intended):\n%s", path, out.String())
	}
}
