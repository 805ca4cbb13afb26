package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// HealthcheckCommand probes a running server's /health, for container
// HEALTHCHECKs in images that have no curl: it exits 0 when the server
// answers 200 {"status":"healthy"} and 1 otherwise.
type HealthcheckCommand struct {
	m *Main
}

// Run runs `seahaven healthcheck`.
func (c *HealthcheckCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet(c.m, "healthcheck")
	url := fs.String("url", envOr("SEAHAVEN_HEALTHCHECK_URL", healthURL(envOr("SEAHAVEN_ADDR", ":8000"))),
		"the URL to probe; when not given, /health on 127.0.0.1 at the port of SEAHAVEN_ADDR (env SEAHAVEN_HEALTHCHECK_URL)")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	if err := parseNoArgs(c.m, fs, args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := probe(ctx, *url); err != nil {
		return fmt.Errorf("healthcheck %s: %w", *url, err)
	}
	fmt.Fprintln(c.m.Stdout, "healthy")
	return nil
}

// healthURL is the /health URL of a server listening on addr, reached on
// the loopback interface when addr names no host or all of them.
func healthURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://127.0.0.1:8000/health"
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/health"
}

// probe GETs url and checks for 200 {"status":"healthy"}.
func probe(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return errors.New("no answer before the timeout")
		}
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	var h struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(body, &h); err != nil || h.Status != "healthy" {
		return fmt.Errorf("unexpected body %q", strings.TrimSpace(string(body)))
	}
	return nil
}
