package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeCommand_Record serves the company world with --record, solves a
// task over HTTP, shuts the server down, and re-grades the recorded
// trajectory with seahaven grade.
func TestServeCommand_Record(t *testing.T) {
	dir := t.TempDir()
	started := false
	stderr, err := serveBriefly(t, []string{"--record", dir}, func(base string) {
		started = true
		post := func(path, body string) map[string]any {
			t.Helper()
			res, err := http.Post(base+path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var out map[string]any
			if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusOK {
				t.Fatalf("POST %s: %d %v %v", path, res.StatusCode, out, err)
			}
			return out
		}
		post("/reset", `{"task": "invoice_750", "episode_id": "cli-1"}`)
		out := post("/step", `{"action": {"type": "call_tool", "tool_name": "invoice", "arguments": {"amount": 750}}}`)
		if out["reward"] != float64(1) || out["done"] != true {
			t.Fatalf("step reply %v, want reward 1 and done", out)
		}
	})
	if !started {
		t.Fatalf("serve ended before listening: %v\n%s", err, stderr)
	}
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr)
	}

	var stdout bytes.Buffer
	g := exampleMain()
	g.Stdout, g.Stderr = &stdout, io.Discard
	files, err := filepath.Glob(filepath.Join(dir, "cli-1.*.jsonl"))
	if err != nil || len(files) != 1 {
		t.Fatalf("recorded %q (%v), want one cli-1.<start>.<random>.jsonl", files, err)
	}
	file := files[0]
	if err := g.Run(context.Background(), []string{"grade", "--world", "company", file}); err != nil {
		t.Fatalf("grade: %v\n%s", err, stdout.String())
	}
	if !strings.HasPrefix(stdout.String(), file+": task invoice_750, episode cli-1, 1 call replayed\n") ||
		!strings.HasSuffix(stdout.String(), "  reward 1.00  done true\n") {
		t.Fatalf("grade output:\n%s", stdout.String())
	}
}
