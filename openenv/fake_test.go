package openenv_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/rfc3339"
	"github.com/seahaven/seahaven/openenv"
)

// fakeBackend is a Backend for tests. Its tools are echo(message),
// add(a, b), fail (a *env.ToolError), boom (panics), slow (blocks until
// its context ends) and blob(n) (returns n bytes). It counts open instances and records misuse (a double
// close, a call after close, concurrent use), which fails the test.
type fakeBackend struct {
	t              testing.TB
	defaultFixture string

	open   atomic.Int64 // instances open now
	opened atomic.Int64 // instances ever opened

	// slowStarted receives the episode id of each slow call as it starts.
	slowStarted chan string
	// openGate, when set, holds each Open until it is closed (whatever its
	// context), after sending that context on openStarted.
	openGate    chan struct{}
	openStarted chan context.Context
	// inspectLimit is the limit of the last inspect query.
	inspectLimit atomic.Pointer[openenv.InspectLimit]

	mu   sync.Mutex // guards errs
	errs []string
}

// newFake returns a fakeBackend whose misuse fails t at cleanup.
func newFake(t testing.TB) *fakeBackend {
	b := &fakeBackend{t: t, defaultFixture: "base", slowStarted: make(chan string, 64)}
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.errs {
			t.Errorf("fake backend misuse: %s", e)
		}
	})
	return b
}

func (b *fakeBackend) misuse(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errs = append(b.errs, fmt.Sprintf(format, args...))
}

var fakeFixtures = []openenv.FixtureInfo{
	{ID: "base", Description: "Two customers.", CreatedAt: "2026-01-01T00:00:00.000Z", WorldVersion: "1.2.3"},
	{ID: "child", Description: "Base plus a refund.", ParentID: ptr("base"), CreatedAt: "2026-01-02T00:00:00.000Z", WorldVersion: "1.2.3"},
}

func ptr[T any](v T) *T { return &v }

func fakeTools(control bool) []env.ToolInfo {
	tools := []env.ToolInfo{
		{Name: "echo", Description: "Echo a message.", InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"],"additionalProperties":false}`)},
		{Name: "add", Description: "Add two numbers.", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`)},
		{Name: "fail", Description: "Always fails.", InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)},
		{Name: "boom", Description: "Panics.", InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)},
		{Name: "slow", Description: "Blocks until cancelled."},
		{Name: "blob", Description: "Return n bytes.", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
	}
	if control {
		tools = append(tools, env.ToolInfo{Name: "seahaven_control", Description: "Move the clock.", InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
	return tools
}

func (b *fakeBackend) Info() openenv.Info {
	return openenv.Info{
		Name: "fake", Version: "1.2.3", Description: "A fake world for tests.",
		DefaultFixture: b.defaultFixture, Fixtures: fakeFixtures, Tools: fakeTools(false),
	}
}

func (b *fakeBackend) Open(ctx context.Context, opts openenv.OpenOptions) (openenv.Instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if b.openGate != nil {
		b.openStarted <- ctx
		<-b.openGate
	}
	switch opts.Fixture {
	case "", "base", "child":
	case "panic":
		panic("fixture loader exploded")
	default:
		return nil, fmt.Errorf("unknown fixture %q", opts.Fixture)
	}
	for k := range opts.Startup {
		if k != "greeting" {
			return nil, fmt.Errorf("unknown startup keyword %q", k)
		}
	}
	now := "2026-06-01T09:00:00.000Z"
	if opts.Now != "" {
		t, err := rfc3339.Parse(opts.Now)
		if err != nil {
			return nil, fmt.Errorf("bad now %q: want RFC 3339", opts.Now)
		}
		now = t.UTC().Format(env.TimeFormat)
	}
	clock := opts.ClockMode
	if clock == "" {
		clock = env.ClockFrozen
	}
	b.open.Add(1)
	b.opened.Add(1)
	return &fakeInstance{b: b, opts: opts, now: now, clock: clock}, nil
}

// fakeInstance is one fake episode.
type fakeInstance struct {
	b     *fakeBackend
	opts  openenv.OpenOptions
	now   string
	clock string

	busy   atomic.Int32 // calls in progress; more than one is misuse
	closed atomic.Bool

	echoes  []string
	changes []env.ChangeRecord
	calls   int
}

// enter marks a call and reports misuse; the returned func ends it.
func (in *fakeInstance) enter(what string) func() {
	if in.closed.Load() {
		in.b.misuse("%s after Close", what)
	}
	if in.busy.Add(1) > 1 {
		in.b.misuse("concurrent %s", what)
	}
	return func() { in.busy.Add(-1) }
}

func (in *fakeInstance) Tools() []env.ToolInfo {
	defer in.enter("Tools")()
	return fakeTools(in.opts.ControlTools)
}

func (in *fakeInstance) CallJSON(ctx context.Context, name string, args json.RawMessage) (any, error) {
	defer in.enter("CallJSON")()
	in.calls++
	switch name {
	case "echo":
		var a struct {
			Message *string `json:"message"`
		}
		if err := json.Unmarshal(args, &a); err != nil || a.Message == nil {
			return nil, &env.ToolError{Kind: env.KindInvalidArgs, Message: "echo: message is required and must be a string"}
		}
		in.echoes = append(in.echoes, *a.Message)
		in.changes = append(in.changes, env.ChangeRecord{
			Seq: len(in.changes) + 1, Call: in.calls, Tool: "echo", World: "main", Table: "echoes", Op: env.OpInsert,
			Key: map[string]any{"id": len(in.echoes)}, After: map[string]any{"id": len(in.echoes), "message": *a.Message},
		})
		return struct {
			Message string `json:"message"`
		}{*a.Message}, nil
	case "add":
		var a struct {
			A, B *float64
		}
		if err := json.Unmarshal(args, &a); err != nil || a.A == nil || a.B == nil {
			return nil, &env.ToolError{Kind: env.KindInvalidArgs, Message: "add: a and b are required numbers"}
		}
		return *a.A + *a.B, nil
	case "fail":
		return nil, &env.ToolError{Kind: env.KindExecution, Message: "card declined"}
	case "boom":
		panic("tool exploded")
	case "slow":
		select {
		case in.b.slowStarted <- in.opts.EpisodeID:
		default:
		}
		<-ctx.Done()
		if errors.Is(ctx.Err(), context.Canceled) {
			// Cancelled before it changed anything, as the engine says it.
			return nil, fmt.Errorf("slow interrupted: %w: %w", env.ErrNoStep, ctx.Err())
		}
		return nil, fmt.Errorf("slow interrupted: %w", ctx.Err())
	case "blob":
		var a struct {
			N int `json:"n"`
		}
		if err := json.Unmarshal(args, &a); err != nil || a.N < 0 {
			return nil, &env.ToolError{Kind: env.KindInvalidArgs, Message: "blob: n must be a non-negative integer"}
		}
		return strings.Repeat("x", a.N), nil
	case "seahaven_control":
		if in.opts.ControlTools {
			return map[string]any{"now": in.now}, nil
		}
	}
	if strings.HasSuffix(name, "_boom") { // a backend that fails on a name it does not list
		panic("no tool " + name)
	}
	return nil, &env.ToolError{Kind: env.KindNotFound, Message: fmt.Sprintf("unknown tool %q", name)}
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func (in *fakeInstance) State() env.StateDoc {
	defer in.enter("State")()
	doc := env.StateDoc{
		StateFormat: env.StateFormat, World: "fake", WorldVersion: "1.2.3",
		Seed: in.opts.Seed, Now: in.now, ClockMode: in.clock,
		Composition: map[string]env.CompositionRecord{
			"main": {Path: "main", World: "fake", WorldVersion: "1.2.3", Aliases: []string{}, SchemaHash: hash("CREATE TABLE echoes")},
		},
		ChangeLog: append([]env.ChangeRecord(nil), in.changes...),
	}
	if in.opts.Fixture != "" {
		doc.Fixture = &env.FixtureRef{ID: in.opts.Fixture, FormatVersion: 2, FileSHA256: map[string]string{"main": hash(in.opts.Fixture)}}
	}
	return doc
}

func (in *fakeInstance) Inspect(ctx context.Context, sql string, args []any, lim openenv.InspectLimit) (openenv.InspectRows, error) {
	defer in.enter("Inspect")()
	in.b.inspectLimit.Store(&lim)
	switch sql {
	case "SELECT message FROM echoes":
		rows := [][]any{}
		for _, e := range in.echoes {
			rows = append(rows, []any{e})
		}
		return openenv.InspectRows{Columns: []string{"message"}, Rows: rows}, nil
	case "SELECT n FROM numbers":
		rows := make([][]any, 1500)
		for i := range rows {
			rows[i] = []any{int64(i + 1)}
		}
		return openenv.InspectRows{Columns: []string{"n"}, Rows: rows}, nil
	case "SELECT ? AS value":
		if len(args) != 1 {
			return openenv.InspectRows{}, fmt.Errorf("bind: want 1 parameter, got %d", len(args))
		}
		return openenv.InspectRows{Columns: []string{"value"}, Rows: [][]any{{args[0]}}}, nil
	case "SELECT wide":
		// 100 rows of 10 KiB each.
		rows := make([][]any, 100)
		for i := range rows {
			rows[i] = []any{int64(i + 1), strings.Repeat("w", 10<<10)}
		}
		return openenv.InspectRows{Columns: []string{"n", "text"}, Rows: rows}, nil
	case "SELECT cut":
		// What a backend returns when reading stopped at the byte limit.
		return openenv.InspectRows{Columns: []string{"n"}, Rows: [][]any{{int64(1)}}, Truncated: openenv.TruncatedBytes}, nil
	case "SELECT named":
		// 10 columns with 10 KiB names.
		cols := make([]string, 10)
		for i := range cols {
			cols[i] = strings.Repeat(string(rune('a'+i)), 10<<10)
		}
		return openenv.InspectRows{Columns: cols, Rows: [][]any{}}, nil
	case "SELECT panic":
		panic("inspector exploded")
	case "SELECT sleep":
		<-ctx.Done()
		return openenv.InspectRows{}, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	return openenv.InspectRows{}, fmt.Errorf("no such table: %s", sql)
}

func (in *fakeInstance) Close() error {
	if in.closed.Swap(true) {
		in.b.misuse("instance closed twice")
		return nil
	}
	if in.busy.Load() != 0 {
		in.b.misuse("Close during a call")
	}
	in.b.open.Add(-1)
	return nil
}
