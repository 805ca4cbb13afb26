package app

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/openenv"
)

// TestNew_RelativeInstanceRoot: a relative instance root (serve's
// --instances given as such) is taken from the working directory, and
// resets open instances in it, where every reset failed ("Options.Path
// must be an absolute path") on a server that had started.
func TestNew_RelativeInstanceRoot(t *testing.T) {
	t.Chdir(t.TempDir())
	b, err := New(company.World, Config{DefaultFixture: company.AcmeID, InstanceRoot: "instances", Checkpoints: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	srv := openenv.NewServer(b, openenv.Config{Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		srv.Shutdown(context.Background())
	})
	resp, err := http.Post(ts.URL+"/reset", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("reset with a relative instance root: %d, want 200", resp.StatusCode)
	}
}
