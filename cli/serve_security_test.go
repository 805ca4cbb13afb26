package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// serveOnce runs serve with args until it listens, makes the requests of
// check against its base URL, and stops it. It returns serve's error when
// serve ends before listening.
func serveOnce(t *testing.T, args []string, check func(base string)) error {
	t.Helper()
	started := false
	stderr, err := serveBriefly(t, args, func(base string) {
		started = true
		check(base)
	})
	if !started {
		return err
	}
	if err != nil {
		t.Errorf("serve: %v\n%s", err, stderr)
	}
	return nil
}

// status makes one request and returns its status.
func status(t *testing.T, method, url, auth string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestServeCommand_Security(t *testing.T) {
	t.Run("TokenFromEnv", func(t *testing.T) {
		t.Setenv("SEAHAVEN_TOKEN", "from-the-env\n")
		err := serveOnce(t, nil, func(base string) {
			if got := status(t, "GET", base+"/metadata", ""); got != http.StatusUnauthorized {
				t.Errorf("without the token: %d", got)
			}
			if got := status(t, "GET", base+"/metadata", "Bearer from-the-env"); got != http.StatusOK {
				t.Errorf("with the token (its trailing newline dropped): %d", got)
			}
			// The web UI mounted beside the protocol routes asks for it.
			resp, err := http.Get(base + "/web/")
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `name="token"`) || strings.Contains(string(page), "app.js") {
				t.Errorf("/web/ without the token: %d, want the sign-in page, not the inspector:\n%.300s", resp.StatusCode, page)
			}
			if got := status(t, "GET", base+"/health", ""); got != http.StatusOK {
				t.Errorf("/health: %d", got)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("TokenFlagWins", func(t *testing.T) {
		t.Setenv("SEAHAVEN_TOKEN", "from-the-env")
		err := serveOnce(t, []string{"--token", "from-the-flag"}, func(base string) {
			if got := status(t, "GET", base+"/metadata", "Bearer from-the-env"); got != http.StatusUnauthorized {
				t.Errorf("with the env token: %d", got)
			}
			if got := status(t, "GET", base+"/metadata", "Bearer from-the-flag"); got != http.StatusOK {
				t.Errorf("with the flag token: %d", got)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("HelpHidesToken", func(t *testing.T) {
		t.Setenv("SEAHAVEN_TOKEN", "do-not-print-me")
		var out bytes.Buffer
		m := exampleMain()
		m.Stdout, m.Stderr = &out, &out
		m.Run(context.Background(), []string{"serve", "-h"})
		if strings.Contains(out.String(), "do-not-print-me") {
			t.Error("serve -h prints the token")
		}
	})

	t.Run("OpenAddressServes", func(t *testing.T) {
		// With a token, or told to, the server listens where other hosts
		// reach it.
		for _, args := range [][]string{
			{"--addr", "0.0.0.0:0", "--token", "t0ken"},
			{"--addr", "0.0.0.0:0", "--insecure-no-token"},
			{"--agent-addr", "0.0.0.0:0", "--agent-token", "ag3nt"},
		} {
			if err := serveOnce(t, args, func(string) {}); err != nil {
				t.Errorf("%v: %v", args, err)
			}
		}
	})

	t.Run("LoopbackByDefault", func(t *testing.T) {
		var out bytes.Buffer
		m := exampleMain()
		m.Stdout, m.Stderr = &out, &out
		(&ServeCommand{m: m}).Run(context.Background(), []string{"-h"})
		if !strings.Contains(out.String(), `(default "127.0.0.1:8000")`) {
			t.Errorf("serve -h does not show the loopback default address:\n%s", out.String())
		}
	})

	t.Run("ProductionFromEnv", func(t *testing.T) {
		t.Setenv("SEAHAVEN_PRODUCTION", "true")
		var help bytes.Buffer
		m := exampleMain()
		m.Stdout, m.Stderr = &help, &help
		(&ServeCommand{m: m}).Run(context.Background(), []string{"-h"})
		_, production, _ := strings.Cut(help.String(), "-production")
		production, _, _ = strings.Cut(production, "\n  -")
		err := serveOnce(t, nil, func(base string) {
			for _, r := range []struct{ method, path string }{{"POST", "/reset"}, {"POST", "/step"}, {"GET", "/state"}, {"POST", "/inspect"}, {"POST", "/grade"}, {"POST", "/checkpoint"}} {
				if got := status(t, r.method, base+r.path, ""); got != http.StatusNotFound {
					t.Errorf("%s %s in production: %d, want 404", r.method, r.path, got)
				}
				// serve -h names each route production mode removes.
				if !strings.Contains(production, r.method+" "+r.path+",") && !strings.Contains(production, r.method+" "+r.path+" ") {
					t.Errorf("serve -h does not say --production removes %s %s: %q", r.method, r.path, production)
				}
			}
			if got := status(t, "GET", base+"/metadata", ""); got != http.StatusOK {
				t.Errorf("/metadata in production: %d", got)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ProductionFlagOverridesEnv", func(t *testing.T) {
		t.Setenv("SEAHAVEN_PRODUCTION", "true")
		err := serveOnce(t, []string{"--production=false"}, func(base string) {
			if got := status(t, "POST", base+"/reset", ""); got != http.StatusOK {
				t.Errorf("POST /reset with --production=false: %d", got)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	for _, tt := range []struct {
		name string
		env  map[string]string
		args []string
		err  string
	}{
		{"BadProductionEnv", map[string]string{"SEAHAVEN_PRODUCTION": "ture"}, nil, `SEAHAVEN_PRODUCTION="ture": want true or false`},
		{"BadMaxSessionsEnv", map[string]string{"SEAHAVEN_MAX_SESSIONS": "lots"}, nil, `SEAHAVEN_MAX_SESSIONS="lots": want an integer (the variable of --max-sessions)`},
		{"BadIdleTimeoutEnv", map[string]string{"SEAHAVEN_IDLE_TIMEOUT": "forever"}, nil, `SEAHAVEN_IDLE_TIMEOUT="forever": want a duration such as 30s, 5m or 1h (the variable of --idle-timeout)`},
		{"BadRateEnv", map[string]string{"SEAHAVEN_LARGE_MESSAGE_RATE": "fast"}, nil, `SEAHAVEN_LARGE_MESSAGE_RATE="fast": want an integer`},
		{"OpenAddressWithoutToken", nil, []string{"--addr", "0.0.0.0:0"}, "is reachable from other hosts and no token is set"},
		{"OpenAgentAddressWithoutToken", nil, []string{"--agent-addr", "0.0.0.0:0"}, "--agent-addr 0.0.0.0:0 is reachable from other hosts and no token is set"},
		// The agent token is a way out the agent listener's refusal names.
		{"OpenAgentAddressWaysOut", nil, []string{"--agent-addr", "0.0.0.0:0"}, ": set SEAHAVEN_AGENT_TOKEN (or --agent-token) or SEAHAVEN_TOKEN (or --token), listen on 127.0.0.1, or pass --insecure-no-token"},
		{"AgentTokenIsTheToken", map[string]string{"SEAHAVEN_TOKEN": "shared", "SEAHAVEN_AGENT_TOKEN": "shared\n"}, []string{"--agent-addr", "127.0.0.1:0"},
			"the agent token (SEAHAVEN_AGENT_TOKEN, --agent-token) is the token (SEAHAVEN_TOKEN, --token)"},
		// Origins no browser sends, whose pages would be refused 403.
		{"OriginWithoutScheme", map[string]string{"SEAHAVEN_ALLOWED_ORIGINS": "https://ok.example, ui.example.com"}, nil,
			`--allowed-origins "ui.example.com": it is not an http or https URL; write each origin as a page's Origin header names it`},
		{"OriginWildcard", nil, []string{"--allowed-origins", "*"}, `--allowed-origins "*": it is not an http or https URL`},
		{"OriginWithPath", nil, []string{"--allowed-origins", "https://ui.example.com/app"}, `it has more than a scheme, a host and a port`},
		{"OriginDefaultPort", nil, []string{"--allowed-origins", "https://ui.example.com:443"}, `a browser leaves the scheme's default port out of Origin`},
		{"WorldTraversal", nil, []string{"--world", "../../etc"}, `unknown world "../../etc"`},
		{"DefaultFixtureTraversal", nil, []string{"--fixture", "../acme"}, `invalid id "../acme"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			err := serveOnce(t, tt.args, func(string) { t.Error("serve started") })
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("err %v, want one containing %q", err, tt.err)
			}
		})
	}
}
