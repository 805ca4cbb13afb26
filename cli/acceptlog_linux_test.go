package cli

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/seahaven/seahaven/internal/testfs"
)

// TestServeCommand_AcceptErrorLogged runs serve out of file descriptors
// when a connection arrives: net/http's report of the failed accept is a
// JSON line of serve's log, where it was a line of plain text on the
// process's stderr, outside --log-format and the log's stream.
func TestServeCommand_AcceptErrorLogged(t *testing.T) {
	var stderr testfs.Buffer
	m := exampleMain()
	m.Stdout, m.Stderr = &stderr, &stderr
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan string, 1)
	errc := make(chan error, 1)
	cmd := &ServeCommand{m: m, Listening: func(addr string) { addrc <- addr }}
	go func() {
		errc <- cmd.Run(ctx, []string{"--addr", "127.0.0.1:0", "--instances", t.TempDir(), "--log-level", "warn", "--log-format", "json"})
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-errc:
		t.Fatalf("serve: %v", err)
	}

	// The one descriptor left is the client's; the server's accept finds none.
	restore := testfs.ExhaustFiles(t, 128, 1)
	conn, dialErr := net.Dial("tcp", addr)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "Accept error") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	restore()
	if dialErr != nil {
		t.Fatalf("dial: %v", dialErr)
	}
	conn.Close()
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("serve: %v", err)
	}
	found := false
	for line := range strings.Lines(stderr.String()) {
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("a line of the log is not JSON: %q", line)
			continue
		}
		found = found || rec.Level == "WARN" && strings.HasPrefix(rec.Msg, "http: Accept error: ")
	}
	if !found {
		t.Errorf("no JSON line at WARN reports the failed accept in:\n%s", stderr.String())
	}
}
