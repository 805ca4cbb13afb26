package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthURL(t *testing.T) {
	for _, tt := range []struct {
		addr string // SEAHAVEN_ADDR
		want string // the URL probed
	}{
		{":8000", "http://127.0.0.1:8000/health"},
		{"0.0.0.0:9000", "http://127.0.0.1:9000/health"},
		{"[::]:8000", "http://[::1]:8000/health"},
		{"10.1.2.3:80", "http://10.1.2.3:80/health"},
		{"localhost:8080", "http://localhost:8080/health"},
		{"no-port", "http://127.0.0.1:8000/health"},
	} {
		if got := healthURL(tt.addr); got != tt.want {
			t.Errorf("healthURL(%q) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

func TestHealthcheckCommand(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int    // what the server answers
		body   string // ...with this body
		err    string // in the error; "" means exit 0
	}{
		{"OK", http.StatusOK, `{"status":"healthy"}`, ""},
		{"Unhealthy", http.StatusOK, `{"status":"degraded"}`, `unexpected body "{\"status\":\"degraded\"}"`},
		{"NotJSON", http.StatusOK, `healthy`, "unexpected body"},
		{"ServerError", http.StatusServiceUnavailable, `{"detail":"down"}`, `status 503: {"detail":"down"}`},
		{"NotFound", http.StatusNotFound, `{"detail":"Not Found"}`, "status 404"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/health" || r.Method != http.MethodGet {
					http.Error(w, "wrong request "+r.Method+" "+r.URL.Path, http.StatusTeapot)
					return
				}
				w.WriteHeader(tt.status)
				w.Write([]byte(tt.body))
			}))
			defer ts.Close()
			var out bytes.Buffer
			m := exampleMain()
			m.Stdout, m.Stderr = &out, &out
			err := m.Run(context.Background(), []string{"healthcheck", "--url", ts.URL + "/health"})
			if tt.err == "" {
				if err != nil || strings.TrimSpace(out.String()) != "healthy" {
					t.Errorf("err %v, output %q", err, out.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err %v, want one containing %q", err, tt.err)
			}
			if code := exitCode(err); code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
		})
	}

	t.Run("NoServer", func(t *testing.T) {
		ts := httptest.NewServer(http.NotFoundHandler())
		url := ts.URL + "/health"
		ts.Close()
		m := exampleMain()
		m.Stdout, m.Stderr = &bytes.Buffer{}, &bytes.Buffer{}
		if err := m.Run(context.Background(), []string{"healthcheck", "--url", url}); err == nil || exitCode(err) != 1 {
			t.Errorf("err %v, want exit 1", err)
		}
	})

	t.Run("LiveServer", func(t *testing.T) {
		// Against `seahaven serve`, with a token: /health needs none.
		live := mustServeLive(t)
		t.Setenv("SEAHAVEN_ADDR", strings.TrimPrefix(live.base, "http://"))
		m := exampleMain()
		var out bytes.Buffer
		m.Stdout, m.Stderr = &out, &out
		if err := m.Run(context.Background(), []string{"healthcheck"}); err != nil {
			t.Errorf("healthcheck of a running server (SEAHAVEN_ADDR): %v", err)
		}
	})

	t.Run("ExtraArgument", func(t *testing.T) {
		m := exampleMain()
		m.Stdout, m.Stderr = &bytes.Buffer{}, &bytes.Buffer{}
		if err := m.Run(context.Background(), []string{"healthcheck", "http://x"}); err == nil || !strings.Contains(err.Error(), "no arguments") {
			t.Errorf("err %v", err)
		}
	})
}
