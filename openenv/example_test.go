package openenv_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/openenv"
)

// greeter is a one-tool world: greet(name) returns a greeting.
type greeter struct{}

var greetTools = []env.ToolInfo{{
	Name:        "greet",
	Description: "Greet someone.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
}}

func (greeter) Info() openenv.Info {
	return openenv.Info{Name: "greeter", Version: "1.0.0", Description: "Says hello.", Tools: greetTools}
}

func (greeter) Open(_ context.Context, opts openenv.OpenOptions) (openenv.Instance, error) {
	return &greeting{opts: opts}, nil
}

// greeting is one greeter episode.
type greeting struct {
	opts  openenv.OpenOptions
	names []string
}

func (g *greeting) Tools() []env.ToolInfo { return greetTools }

func (g *greeting) CallJSON(_ context.Context, name string, args json.RawMessage) (any, error) {
	if name != "greet" {
		return nil, &env.ToolError{Kind: env.KindNotFound, Message: fmt.Sprintf("unknown tool %q", name)}
	}
	var in struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(args, &in); err != nil || in.Name == "" {
		return nil, &env.ToolError{Kind: env.KindInvalidArgs, Message: "greet: name is required"}
	}
	g.names = append(g.names, in.Name)
	return "Hello, " + in.Name + "!", nil
}

func (g *greeting) State() env.StateDoc {
	return env.StateDoc{World: "greeter", WorldVersion: "1.0.0", Seed: g.opts.Seed, Now: "2026-06-01T09:00:00.000Z", ClockMode: env.ClockFrozen}
}

func (g *greeting) Inspect(_ context.Context, sql string, _ []any, _ openenv.InspectLimit) (openenv.InspectRows, error) {
	if sql != "SELECT name FROM greeted" {
		return openenv.InspectRows{}, errors.New("no such table")
	}
	rows := make([][]any, len(g.names))
	for i, n := range g.names {
		rows[i] = []any{n}
	}
	return openenv.InspectRows{Columns: []string{"name"}, Rows: rows}, nil
}

func (g *greeting) Close() error { return nil }

// An episode over the WebSocket, as OpenEnv clients run it.
func ExampleNewServer() {
	srv := openenv.NewServer(greeter{}, openenv.Config{Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	defer srv.Shutdown(context.Background())

	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/ws", nil)
	if err != nil {
		panic(err)
	}
	defer c.CloseNow()
	for _, msg := range []string{
		`{"type":"reset","data":{"seed":7,"episode_id":"ep-1"}}`,
		`{"type":"step","data":{"type":"call_tool","tool_name":"greet","arguments":{"name":"Ada"}}}`,
		`{"type":"inspect","data":{"sql":"SELECT name FROM greeted"}}`,
	} {
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			panic(err)
		}
		_, reply, err := c.Read(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Println(string(reply))
	}
	c.Write(ctx, websocket.MessageText, []byte(`{"type":"close"}`))
	// Output:
	// {"type":"observation","data":{"observation":{},"reward":null,"done":false}}
	// {"type":"observation","data":{"observation":{"tool_name":"greet","result":{"content":[{"type":"text","text":"\"Hello, Ada!\"","annotations":null,"meta":null}],"structured_content":{"result":"Hello, Ada!"},"meta":null,"data":"Hello, Ada!","is_error":false},"error":null},"reward":null,"done":false}}
	// {"type":"inspect","data":{"columns":["name"],"rows":[["Ada"]],"truncated":false}}
}

// A tool call over JSON-RPC, as MCP clients make it.
func ExampleServer_Handler() {
	srv := openenv.NewServer(greeter{}, openenv.Config{Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	defer srv.Shutdown(context.Background())

	resp, err := http.Post(ts.URL+"/mcp", "application/json", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Grace"}}}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// 200 {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\"Hello, Grace!\"","annotations":null,"meta":null}],"structured_content":{"result":"Hello, Grace!"},"meta":null,"data":"Hello, Grace!","is_error":false,"structuredContent":{"result":"Hello, Grace!"},"isError":false}}
}

// Sessions lists live sessions; Shutdown ends them.
func ExampleServer_Sessions() {
	srv := openenv.NewServer(greeter{}, openenv.Config{Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/reset", strings.NewReader(`{"episode_id":"grading-1"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(openenv.SessionHeader, "grader")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	for _, s := range srv.Sessions() {
		fmt.Println(s.ID, s.Transport, s.EpisodeID, s.StepCount)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		panic(err)
	}
	fmt.Println(len(srv.Sessions()), "sessions after Shutdown")
	// Output:
	// grader http grading-1 0
	// 0 sessions after Shutdown
}
