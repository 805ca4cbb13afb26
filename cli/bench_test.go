package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/internal/bench"
	"github.com/seahaven/seahaven/openenv"
)

// runBench runs `seahaven bench` with args through Main and returns its
// stdout, stderr and error.
func runBench(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	m := exampleMain()
	m.Stdout, m.Stderr = &stdout, &stderr
	err := m.Run(context.Background(), append([]string{"bench"}, args...))
	return stdout.String(), stderr.String(), err
}

func TestBenchCommand_URL(t *testing.T) {
	backend, err := app.New(company.World, app.Config{InstanceRoot: t.TempDir(), Checkpoints: t.TempDir(), DefaultFixture: company.AcmeID})
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
	out := filepath.Join(t.TempDir(), "report.json")
	stdout, stderr, err := runBench(t, "--url", ts.URL, "--sessions", "2", "--calls", "10",
		"--tool-mix", "invoice:2,list_staff:1", "--args", `invoice={"amount":250}`, "--no-floors", "--settle", "10s", "--json", out)
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, stderr)
	}
	for _, want := range []string{"latency", "invoice", "list_staff", "throughput:", "errors: 0", "back to baseline"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the table has no %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "bench: ") {
		t.Errorf("no progress on stderr:\n%s", stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("--json: %v", err)
	}
	if rep.Calls < 10 || rep.Errors != 0 || rep.Settings.ToolMix != "invoice:2,list_staff:1" || rep.Settings.URL != ts.URL {
		t.Errorf("report: calls %d, errors %d, settings %+v", rep.Calls, rep.Errors, rep.Settings)
	}
}

func TestBenchCommand_Errors(t *testing.T) {
	for _, tt := range []struct {
		name   string
		args   []string // bench's arguments
		errMsg string   // a substring of the error
	}{
		{"BadToolMix", []string{"--tool-mix", "invoice:0"}, "must be a positive integer"},
		{"BadArgs", []string{"--args", "invoice={"}, "arguments of invoice are not JSON"},
		{"ArgsWithoutTool", []string{"--args", `={}`}, "want tool=JSON"},
		{"Positional", []string{"extra"}, "bench takes no arguments"},
		{"BadStorage", []string{"--storage", "cloud"}, `--storage "cloud"`},
		{"NoServer", []string{"--url", "http://127.0.0.1:1", "--no-floors"}, "did not answer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, err := runBench(t, tt.args...)
			if err == nil || !strings.Contains(err.Error()+stderr, tt.errMsg) {
				t.Fatalf("err = %v (stderr %q), want one containing %q", err, stderr, tt.errMsg)
			}
		})
	}
}
