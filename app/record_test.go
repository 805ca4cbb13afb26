package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/openenv"
)

// TestRecord_MCPCallWrittenAtOnce: an MCP tools/call, which no grading
// follows, is on disk in its episode's recording as soon as it is
// answered, in a task episode as in one without a task, so a server
// killed right after keeps it. Before, its line was held for a grading
// that never came, until the episode's next call or its close.
func TestRecord_MCPCallWrittenAtOnce(t *testing.T) {
	dir := t.TempDir()
	be := newTestBackend(t, Config{DefaultFixture: company.AcmeID, RecordDir: dir})
	srv := openenv.NewServer(be, openenv.Config{Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		srv.Shutdown(context.Background())
	})
	rpc := func(body string) string {
		t.Helper()
		resp, err := http.Post(ts.URL+"/mcp", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	for _, params := range []string{`{"task":"invoice_750"}`, `{}`} {
		created := rpc(`{"jsonrpc":"2.0","id":1,"method":"openenv/session/create","params":` + params + `}`)
		sid, _, _ := strings.Cut(strings.TrimPrefix(created[strings.Index(created, `"session_id":"`):], `"session_id":"`), `"`)
		if reply := rpc(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"session_id":"` + sid + `","name":"invoice","arguments":{"amount":750}}}`); strings.Contains(reply, `"error"`) {
			t.Fatalf("tools/call: %s", reply)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		found := false
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), `"tool":"invoice"`) && strings.Count(string(b), "\n") == 2 && !strings.Contains(string(b), `"end"`) {
				found = true
				os.Remove(f) // the next episode's is then the only one
			}
		}
		if !found {
			t.Errorf("create %s: no recording holds the header and the call while the session lives (files %v)", params, files)
		}
		rpc(`{"jsonrpc":"2.0","id":3,"method":"openenv/session/close","params":{"session_id":"` + sid + `"}}`)
	}
}
