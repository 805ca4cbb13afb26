package bench_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/examples/worlds/payments"
	"github.com/seahaven/seahaven/internal/bench"
	"github.com/seahaven/seahaven/openenv"
)

// TestRun_DefaultMixOfAnotherWorld: with no tool mix, a server of a world
// that lists no invoice (the default mix's tool, the company's) is called
// through its first tool, and the report says so; a mix that is given is
// never replaced.
func TestRun_DefaultMixOfAnotherWorld(t *testing.T) {
	backend, err := app.New(payments.World, app.Config{InstanceRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv := openenv.NewServer(backend, openenv.Config{Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		srv.Shutdown(context.Background())
		backend.Close()
	})
	rep, err := bench.Run(context.Background(), bench.Config{URL: ts.URL, Sessions: 1, Calls: 5, SkipFloors: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Settings.ToolMix != "create_charge:1" || rep.Latency["call_tool:create_charge"].Count == 0 || rep.Errors != 0 {
		t.Errorf("tool mix %q, create_charge calls %d, errors %d (%v): want create_charge called without error",
			rep.Settings.ToolMix, rep.Latency["call_tool:create_charge"].Count, rep.Errors, rep.ErrorSamples)
	}
	given, _ := bench.ParseToolMix(bench.DefaultToolMix)
	if _, err := bench.Run(context.Background(), bench.Config{URL: ts.URL, Sessions: 1, Calls: 5, SkipFloors: true, ToolMix: given}); err == nil {
		t.Errorf("a given mix naming invoice ran against payments; want it refused")
	}
}
