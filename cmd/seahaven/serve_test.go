package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestServeCommand_Web serves the company world on :0 and checks that the
// inspector is mounted at /web beside the protocol routes.
func TestServeCommand_Web(t *testing.T) {
	var stderr bytes.Buffer
	m := NewMain()
	m.Stdout, m.Stderr = io.Discard, &stderr
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	errc := make(chan error, 1)
	cmd := &ServeCommand{m: m, Listening: func(addr string) { addrc <- addr }}
	go func() {
		errc <- cmd.Run(ctx, []string{"--addr", "127.0.0.1:0", "--instances", t.TempDir(), "--log-level", "error"})
	}()
	var base string
	select {
	case addr := <-addrc:
		base = "http://" + addr
	case err := <-errc:
		t.Fatalf("serve ended before listening: %v\n%s", err, stderr.String())
	}
	for _, tc := range []struct {
		name     string
		path     string
		status   int
		contains string // a string the body must contain
	}{
		{"WebRedirectsToPage", "/web", http.StatusOK, `<script type="module" src="app.js">`},
		{"WebAsset", "/web/session.js", http.StatusOK, "export class Session"},
		{"WebUnknownAsset", "/web/missing.js", http.StatusNotFound, ""},
		{"Protocol", "/health", http.StatusOK, `{"status":"healthy"}`},
		{"ProtocolNotFound", "/website", http.StatusNotFound, `{"detail":"Not Found"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := http.Get(base + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tc.status || !strings.Contains(string(body), tc.contains) {
				t.Errorf("GET %s = %d %.200q, want %d containing %q", tc.path, res.StatusCode, body, tc.status, tc.contains)
			}
		})
	}
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("serve: %v\n%s", err, stderr.String())
	}
}
