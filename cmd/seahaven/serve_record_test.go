package main

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
	var stderr bytes.Buffer
	m := NewMain()
	m.Stdout, m.Stderr = io.Discard, &stderr
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	errc := make(chan error, 1)
	cmd := &ServeCommand{m: m, Listening: func(addr string) { addrc <- addr }}
	go func() {
		errc <- cmd.Run(ctx, []string{"--addr", "127.0.0.1:0", "--instances", t.TempDir(), "--log-level", "error", "--record", dir})
	}()
	var base string
	select {
	case addr := <-addrc:
		base = "http://" + addr
	case err := <-errc:
		t.Fatalf("serve ended before listening: %v\n%s", err, stderr.String())
	}
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
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr.String())
	}

	var stdout bytes.Buffer
	g := NewMain()
	g.Stdout, g.Stderr = &stdout, io.Discard
	file := filepath.Join(dir, "cli-1.jsonl")
	if err := g.Run(context.Background(), []string{"grade", "--world", "company", file}); err != nil {
		t.Fatalf("grade: %v\n%s", err, stdout.String())
	}
	if !strings.HasPrefix(stdout.String(), file+": task invoice_750, episode cli-1, 1 call replayed\n") ||
		!strings.HasSuffix(stdout.String(), "  reward 1.00  done true\n") {
		t.Fatalf("grade output:\n%s", stdout.String())
	}
}
