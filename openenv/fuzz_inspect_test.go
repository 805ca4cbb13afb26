package openenv_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/schemas/schematest"
)

// inspectFuzzConfig makes the reply and row limits small enough for fuzzed
// queries to reach them.
var inspectFuzzConfig = openenv.Config{
	MaxSessions: 1 << 16, StepTimeout: 2 * time.Second, InspectTimeout: 100 * time.Millisecond,
	MaxMessageBytes: fuzzLimit, MaxReplyBytes: openenv.MinReplyBytes, InspectRowLimit: 20,
}

// FuzzWorldInspect sends one inspect query, arbitrary SQL and params, on a
// /ws session of the company world, then a tool call that writes. The reply
// is one valid frame no larger than MaxReplyBytes; an inspect reply holds
// at most InspectRowLimit rows and says why when it is truncated; and the
// write that follows commits at once, so the query left no transaction or
// lock behind, whatever it was.
func FuzzWorldInspect(f *testing.F) {
	for _, seed := range []struct{ sql, params string }{
		{`SELECT count(*) FROM payments.charges WHERE amount > ?`, `[100]`},
		{`SELECT ? AS a, ? AS b, ? AS c`, `["x", 9223372036854775808, 1.5]`},
		{`SELECT ?`, `[-9223372036854775809]`},
		{`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 1000) SELECT zeroblob(16000000) FROM c`, ``},
		{`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 50) SELECT x, hex(randomblob(2000)) FROM c`, ``},
		{`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 100000) SELECT x FROM c ORDER BY randomblob(1000)`, ``},
		{`SELECT random(), randomblob(8)`, ``},
		{`BEGIN`, ``},
		{`BEGIN IMMEDIATE`, ``},
		{`SAVEPOINT s`, ``},
		{`ROLLBACK`, ``},
		{`COMMIT`, ``},
		{`PRAGMA temp_store = FILE`, ``},
		{`CREATE TEMP TABLE t AS SELECT * FROM staff`, ``},
		{`SELECT * FROM staff, payments.charges`, `null`},
		{`SELECT 1 AS "` + strings.Repeat("c", 2000) + `", 2, 3`, `[]`},
		{`SELECT group_concat(name) FROM staff`, `{}`},
		{`DELETE FROM staff`, ``},
	} {
		f.Add(seed.sql, seed.params)
	}
	s := mustServeCompany(f, inspectFuzzConfig)

	f.Fuzz(func(t *testing.T, sql, params string) {
		data := map[string]any{"sql": sql}
		if params != "" && json.Valid([]byte(params)) {
			data["params"] = json.RawMessage(params)
		}
		msg := mustJSON(t, map[string]any{"type": "inspect", "data": data})
		if len(msg) > fuzzLimit {
			t.Skip("over the message limit")
		}
		c := s.dial(t)
		send(t, c, string(msg))
		reply := recvRaw(t, c)
		if len(reply) > inspectFuzzConfig.MaxReplyBytes {
			t.Fatalf("reply of %d bytes, over the limit of %d", len(reply), inspectFuzzConfig.MaxReplyBytes)
		}
		if err := schematest.Validate("server_message", []byte(reply)); err != nil {
			t.Fatalf("reply %.300s: %v", reply, err)
		}
		checkRefusals(t, []byte(reply))
		var r struct {
			Type string `json:"type"`
			Data struct {
				Rows      []json.RawMessage `json:"rows"`
				Truncated bool              `json:"truncated"`
				Reason    *string           `json:"truncated_reason"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(reply), &r); err != nil {
			t.Fatal(err)
		}
		if r.Type == "inspect" {
			if len(r.Data.Rows) > inspectFuzzConfig.InspectRowLimit {
				t.Errorf("%d rows, over the limit of %d", len(r.Data.Rows), inspectFuzzConfig.InspectRowLimit)
			}
			if r.Data.Truncated != (r.Data.Reason != nil) || (r.Data.Reason != nil && !strings.Contains(*r.Data.Reason, "limit")) {
				t.Errorf("truncated %v with reason %v: want a reason naming the limit exactly when truncated", r.Data.Truncated, r.Data.Reason)
			}
		}
		write := roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"chat_send_message","arguments":{"channel":"general","text":"after"}}}`)
		if e := field(t, write, "data.observation.error"); e != nil {
			t.Fatalf("a write after the query %q failed: %v", sql, e)
		}
		c.CloseNow()
		s.settle(t)
	})
}
