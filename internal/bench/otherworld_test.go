package bench_test

import (
	"context"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/examples/worlds/payments"
	"github.com/seahaven/seahaven/internal/bench"
)

// TestRun_DefaultMixOfAnotherWorld: with no tool mix, a server of a world
// that lists no invoice (the default mix's tool, the company's) is called
// through its first tool, and the report says so; a mix that is given is
// never replaced.
func TestRun_DefaultMixOfAnotherWorld(t *testing.T) {
	url := serveWorld(t, payments.World, app.Config{Checkpoints: t.TempDir()})
	rep, err := bench.Run(context.Background(), bench.Config{URL: url, Sessions: 1, Calls: 5, SkipFloors: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Settings.ToolMix != "create_charge:1" || rep.Latency["call_tool:create_charge"].Count == 0 || rep.Errors != 0 {
		t.Errorf("tool mix %q, create_charge calls %d, errors %d (%v): want create_charge called without error",
			rep.Settings.ToolMix, rep.Latency["call_tool:create_charge"].Count, rep.Errors, rep.ErrorSamples)
	}
	given, _ := bench.ParseToolMix(bench.DefaultToolMix)
	if _, err := bench.Run(context.Background(), bench.Config{URL: url, Sessions: 1, Calls: 5, SkipFloors: true, ToolMix: given}); err == nil {
		t.Errorf("a given mix naming invoice ran against payments; want it refused")
	}
}

// TestRunCheckpoints_FailedStep: a step whose call fails (a tool the
// server does not list, arguments its schema refuses) ends the checkpoint
// measurement with the call's error, rather than measuring checkpoints of
// an instance that never changed; calls that succeed are measured.
func TestRunCheckpoints_FailedStep(t *testing.T) {
	url := serveWorld(t, payments.World, app.Config{Checkpoints: t.TempDir()})
	step := func(tool, args string) []byte {
		return []byte(`{"type":"step","data":{"type":"call_tool","tool_name":"` + tool + `","arguments":` + args + `}}`)
	}
	for _, tt := range []struct{ tool, args, want string }{
		{"invoice", `{"amount":1}`, `bench: step: the call failed: {"error_type":"tool_not_found"`},
		{"create_charge", `{}`, `bench: step: the call failed: {"error_type":"invalid_args","message":"invalid arguments: missing required field \"amount\""}`},
	} {
		_, err := bench.RunCheckpoints(context.Background(), bench.CheckpointConfig{URL: url, Step: step(tt.tool, tt.args), Calls: 2, Rounds: 1, Fork: 1})
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s %s: %v, want an error starting %s", tt.tool, tt.args, err, tt.want)
		}
	}
	rep, err := bench.RunCheckpoints(context.Background(), bench.CheckpointConfig{URL: url, Step: step("create_charge", `{"amount":5}`), Calls: 2, Rounds: 2, Fork: 2})
	if err != nil || rep.Checkpoint.Count != 2 {
		t.Fatalf("create_charge: %+v, %v; want 2 checkpoints measured", rep, err)
	}
}
