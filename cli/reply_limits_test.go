package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// post sends a JSON body and returns the status and the reply.
func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

func TestServeCommand_ReplyLimits(t *testing.T) {
	t.Run("TooSmall", func(t *testing.T) {
		_, err := serveBriefly(t, []string{"--max-reply-bytes", "1000"}, func(string) { t.Error("serve started with --max-reply-bytes 1000") })
		if err == nil || !strings.Contains(err.Error(), "--max-reply-bytes 1000: want at least 65536") {
			t.Fatalf("err = %v, want the minimum named", err)
		}
	})

	t.Run("HostileInspect", func(t *testing.T) {
		t.Setenv("SEAHAVEN_MAX_REPLY_BYTES", "100000")
		started := false
		stderr, err := serveBriefly(t, nil, func(base string) {
			started = true
			// A thousand 16 MB rows: the reply holds what fits in the limit.
			status, body := post(t, base+"/inspect", `{"sql":"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 1000) SELECT zeroblob(16000000) FROM c"}`)
			var reply struct {
				Rows      []any  `json:"rows"`
				Truncated bool   `json:"truncated"`
				Reason    string `json:"truncated_reason"`
			}
			if err := json.Unmarshal([]byte(body), &reply); status != http.StatusOK || err != nil {
				t.Fatalf("POST /inspect: %d %.300s (%v)", status, body, err)
			}
			if len(body) > 100000 || len(reply.Rows) != 0 || !reply.Truncated || !strings.Contains(reply.Reason, "past the limit of 100000 bytes on a reply (the server's max-reply-bytes)") {
				t.Errorf("reply of %d bytes, %d rows, truncated %v: %q", len(body), len(reply.Rows), reply.Truncated, reply.Reason)
			}

			// A BEGIN is refused, and the agent's next write commits.
			status, body = post(t, base+"/inspect", `{"sql":"BEGIN"}`)
			if status != http.StatusBadRequest || !strings.Contains(body, "BEGIN is not allowed on the inspection connection") {
				t.Errorf("BEGIN: %d %s", status, body)
			}
			post(t, base+"/inspect", `{"sql":"SELECT count(*) FROM staff"}`)
			start := time.Now()
			status, body = post(t, base+"/step", `{"action":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Barbara Liskov","role":"engineer"}}}`)
			if status != http.StatusOK || !bytes.Contains([]byte(body), []byte(`"error":null`)) {
				t.Errorf("hire after an inspect BEGIN (%s): %d %.300s", time.Since(start), status, body)
			}
		})
		if !started {
			t.Fatalf("serve ended before listening: %v\n%s", err, stderr)
		}
	})
}
