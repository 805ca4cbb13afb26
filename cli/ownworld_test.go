package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestOwnWorld follows docs/authoring.md's "Your own binary" as a world
// author would: a module of its own, a world written by `new world` (its
// fixtures embedded, a task in Go), the guide's one-line main, go generate,
// and a -trimpath build. The binary then checks its module, verifies its
// fixtures, serves its world (from another directory, so only what is
// built in can serve) through a solved episode over /ws and another over
// /mcp, and grades the episodes it recorded.
func TestOwnWorld(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and serves a module of its own")
	}
	dir := filepath.Join(t.TempDir(), "library")
	mustModule(t, dir, "example.com/library")
	if _, stderr, err := runNew(t, "world", "--dir", dir, "library"); err != nil {
		t.Fatalf("new world: %v\n%s", err, stderr)
	}
	if err := os.MkdirAll(filepath.Join(dir, "cmd", "library"), 0o755); err != nil {
		t.Fatal(err)
	}
	main, err := os.ReadFile(filepath.Join("..", "docs", "examples", "testdata", "library", "cmd", "library", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cmd", "library", "main.go"), main, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "library")
	for _, args := range [][]string{
		{"generate", "./..."},
		{"build", "-trimpath", "-o", bin, "./cmd/library"},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	elsewhere := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = elsewhere
		cmd.Env = childEnv()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("library %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := run("check", "-C", dir, "./..."); !strings.Contains(out, "library check: ok: ") {
		t.Errorf("library check: %s", out)
	}
	if out := run("fixtures", "verify"); !strings.Contains(out, "demo ") || !strings.Contains(out, " ok ") {
		t.Errorf("library fixtures verify:\n%s", out)
	}
	if out := run("serve", "-h"); !strings.Contains(out, "the world to serve: library") || !strings.HasPrefix(out, "Usage of library serve:\n") {
		t.Errorf("library serve -h names no world library, or names itself otherwise:\n%s", out)
	}

	record := t.TempDir()
	s := startServeIn(t, elsewhere, bin, "--record", record)
	base := "http://" + s.addr
	ctx := context.Background()

	// /ws: the task's episode, solved in one step.
	c, _, err := websocket.Dial(ctx, "ws://"+s.addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	ws := func(msg string) map[string]any {
		t.Helper()
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		if err := json.Unmarshal(b, &out); err != nil || out["type"] == "error" {
			t.Fatalf("%s: %s", msg, b)
		}
		return out["data"].(map[string]any)
	}
	ws(`{"type":"reset","data":{"task":"restock_washers","episode_id":"ws-1"}}`)
	step := ws(`{"type":"step","data":{"type":"call_tool","tool_name":"add_item","arguments":{"name":"washer","quantity":100}}}`)
	if step["reward"] != float64(1) || step["done"] != true {
		t.Errorf("/ws step: %v, want reward 1 and done", step)
	}
	state := ws(`{"type":"state"}`)
	if state["world"] != "library" || state["fixture"].(map[string]any)["id"] != "demo" {
		t.Errorf("/ws state: world %v, fixture %v; want library from demo", state["world"], state["fixture"])
	}
	c.Close(websocket.StatusNormalClosure, "")

	// /mcp: a standard client's episode of the task, graded by the trainer.
	client := mcp.NewClient(&mcp.Implementation{Name: "own-world", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp?task=restock_washers&episode_id=mcp-1", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("mcp connect: %v", err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 3 {
		t.Fatalf("mcp tools/list: %v %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_item", Arguments: map[string]any{"name": "washer", "quantity": 100}})
	if err != nil || res.IsError {
		t.Fatalf("mcp add_item: %v %v", res, err)
	}
	grade, err := http.Post(base+"/mcp", "application/json", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"seahaven/grade","params":{"session_id":"`+cs.ID()+`"}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(grade.Body)
	grade.Body.Close()
	if !strings.Contains(string(b), `"reward":1,"done":true`) {
		t.Errorf("seahaven/grade of the MCP episode: %s", b)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("mcp close: %v", err)
	}

	// The recorded episodes replay and grade to the same reward.
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := s.wait(t); err != nil {
		t.Fatalf("serve: %v\n%s", err, s.log())
	}
	files, _ := filepath.Glob(filepath.Join(record, "*.jsonl"))
	var episodes []string
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "ws-1.") || strings.HasPrefix(filepath.Base(f), "mcp-1.") {
			episodes = append(episodes, f)
		}
	}
	if len(episodes) != 2 {
		t.Fatalf("recorded %v, want the ws-1 and mcp-1 episodes", files)
	}
	if out := run(append([]string{"grade"}, episodes...)...); strings.Count(out, "reward 1.00  done true") != 2 {
		t.Errorf("library grade:\n%s", out)
	}
}
