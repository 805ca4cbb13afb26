package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/task"
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

// TestServeCommand_RecordRefusedRestore: of two restores replacing one
// attempt, the one refused restored nothing and leaves no recording; the
// episode's recordings are the one of the attempt it replaced and the one
// of its successor.
func TestServeCommand_RecordRefusedRestore(t *testing.T) {
	dir := t.TempDir()
	started := false
	stderr, err := serveBriefly(t, []string{"--record", dir, "--checkpoints", t.TempDir()}, func(base string) {
		started = true
		addr := strings.TrimPrefix(base, "http://")
		a := dialWS(t, addr)
		a.send(`{"type":"reset","data":{"episode_id":"refused-1"}}`)
		a.send(`{"type":"step","data":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Ada"}}}`)
		id, attempt, _ := a.checkpoint()
		restore := fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q,"replaces":%q}}`, id, attempt)
		if reply := dialWS(t, addr).send(restore); !strings.Contains(reply, `"type":"observation"`) {
			t.Fatalf("the first restore: %s", reply)
		}
		if reply := dialWS(t, addr).send(restore); !strings.Contains(reply, "was already superseded") {
			t.Fatalf("the second restore: %s, want it refused", reply)
		}
	})
	if !started || err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "refused-1.*.jsonl"))
	var restored int
	for _, f := range files {
		tr, err := task.ReadTrajectoryFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Header.Checkpoint != "" {
			restored++
		}
	}
	if len(files) != 2 || restored != 1 {
		t.Errorf("recorded %d trajectories, %d of them of restored episodes, want 2 and 1: the refused restore's episode is none", len(files), restored)
	}
}
