package openenv_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seahaven/seahaven/openenv"
)

// Two listeners: the trainer's serves every route, the agent sandbox's only
// /mcp and discovery. Both ask for the token.
func ExampleServer_AgentHandler() {
	srv := openenv.NewServer(greeter{}, openenv.Config{Token: "s3cret", Logger: slog.New(slog.DiscardHandler)})
	infra := httptest.NewServer(srv.Handler())
	defer infra.Close()
	agent := httptest.NewServer(srv.AgentHandler())
	defer agent.Close()
	defer srv.Shutdown(context.Background())

	call := func(base, method, path, token string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		who := "agent"
		if base == infra.URL {
			who = "infra"
		}
		fmt.Println(who, method, path, resp.StatusCode)
	}
	call(agent.URL, "POST", "/mcp", "")
	call(agent.URL, "POST", "/mcp", "s3cret")
	call(agent.URL, "GET", "/state", "s3cret")
	call(infra.URL, "GET", "/state", "s3cret")
	call(infra.URL, "GET", "/health", "")
	// Output:
	// agent POST /mcp 401
	// agent POST /mcp 200
	// agent GET /state 404
	// infra GET /state 200
	// infra GET /health 200
}

// The server's Prometheus registry, served at /metrics, takes collectors
// of the program's own.
func ExampleServer_Registry() {
	srv := openenv.NewServer(greeter{}, openenv.Config{MaxSessions: 8, Logger: slog.New(slog.DiscardHandler)})
	srv.Registry().MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "trainer_generation", Help: "The policy generation being trained.",
	}, func() float64 { return 42 }))
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	defer srv.Shutdown(context.Background())

	resp, err := http.Post(ts.URL+"/mcp", "application/json", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	resp, err = http.Get(ts.URL + "/metrics")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		for _, name := range []string{"seahaven_sessions_max", "seahaven_tool_calls_total", "trainer_generation"} {
			if strings.HasPrefix(line, name) {
				fmt.Println(line)
			}
		}
	}
	// Output:
	// seahaven_sessions_max 8
	// seahaven_tool_calls_total{outcome="ok",tool="greet"} 1
	// trainer_generation 42
}
