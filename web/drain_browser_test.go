package web_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/web"
)

// mustCompanyReplica is one replica of the company world with the UI
// mounted at /web, as `seahaven serve` mounts it, whose checkpoints are in
// the directory checkpoints, shared with the other replicas. It returns the
// server and its handler, which no listener serves.
func mustCompanyReplica(tb testing.TB, fixturesDir, checkpoints string, cfg openenv.Config) (*openenv.Server, http.Handler) {
	tb.Helper()
	backend, err := app.New(company.World, app.Config{FixturesDir: fixturesDir, DefaultFixture: "acme", InstanceRoot: tb.TempDir(), Checkpoints: checkpoints})
	if err != nil {
		tb.Fatal(err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := openenv.NewServer(backend, cfg)
	mux := http.NewServeMux()
	ui := srv.BrowserGuard(web.Handler())
	mux.Handle("/web/", ui)
	mux.Handle("/web", ui)
	mux.Handle("/", srv.Handler())
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		backend.Close()
	})
	return srv, mux
}

// TestUI_Browser_DrainRestore drains the server of the page's session:
// the session closes with 1012 and the checkpoint the drain took, which the
// page names and offers to restore, and restores into a new session on the
// replica that takes over (behind the same address, as behind a proxy),
// at the step its episode was at, where before it only offered a new
// session.
func TestUI_Browser_DrainRestore(t *testing.T) {
	fixturesDir, _ := mustFixtures(t)
	checkpoints := t.TempDir()
	first, firstMux := mustCompanyReplica(t, fixturesDir, checkpoints, openenv.Config{DrainCheckpoints: true})
	_, secondMux := mustCompanyReplica(t, fixturesDir, checkpoints, openenv.Config{})
	var current atomic.Pointer[http.Handler]
	current.Store(&firstMux)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*current.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	ctx := mustBrowser(t)
	listenPageErrors(t, ctx)

	run(t, ctx, "reset and take a step",
		chromedp.Navigate(ts.URL+"/web/"),
		chromedp.WaitVisible(chromedp.CSS(`#ws-status[data-state="open"]`)),
		chromedp.SetValue(chromedp.ID("reset-episode"), "drained-episode"),
		chromedp.WaitEnabled(chromedp.ID("reset-btn")), // not still busy with the first reset
		chromedp.Click(chromedp.ID("reset-btn")),
		chromedp.WaitVisible(chromedp.CSS(`#episode[data-episode="drained-episode"][data-steps="0"]`)),
		chromedp.Click(chromedp.CSS(`#tools [data-tool="list_staff"]`), chromedp.NodeVisible),
		chromedp.WaitEnabled(chromedp.ID("call-btn")),
		chromedp.Click(chromedp.ID("call-btn")),
		chromedp.WaitVisible(chromedp.CSS(`#episode[data-episode="drained-episode"][data-steps="1"]`)))

	// The first replica drains; the second takes its address.
	current.Store(&secondMux)
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := first.Shutdown(sctx); err != nil {
		t.Fatalf("draining the first replica: %v", err)
	}
	res, err := http.Get(ts.URL + "/checkpoints/latest?episode_id=drained-episode")
	if err != nil {
		t.Fatal(err)
	}
	var latest struct {
		ID       string `json:"checkpoint_id"`
		Revision int    `json:"revision"`
	}
	err = json.NewDecoder(res.Body).Decode(&latest)
	res.Body.Close()
	if err != nil || latest.ID == "" || latest.Revision != 1 {
		t.Fatalf("the episode's newest checkpoint: %+v (%v), want the drain's, at step 1", latest, err)
	}

	run(t, ctx, "see the session drained", chromedp.WaitVisible(chromedp.ID("restore-checkpoint")))
	shot(t, ctx, "drained")
	if got := textOf(t, ctx, "#banner"); !strings.Contains(got, latest.ID) {
		t.Errorf("banner = %q, want it to name the checkpoint %s", got, latest.ID)
	}
	run(t, ctx, "restore the checkpoint",
		chromedp.Click(chromedp.ID("restore-checkpoint")),
		chromedp.WaitVisible(chromedp.CSS(`#ws-status[data-state="open"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#episode[data-episode="drained-episode"][data-steps="1"]`)),
		chromedp.WaitNotVisible(chromedp.ID("restore-checkpoint")),
		chromedp.WaitVisible(chromedp.CSS(`#timeline .step[data-step="1"][data-tool="list_staff"]`)))
}
