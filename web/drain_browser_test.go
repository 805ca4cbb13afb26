package web_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// mustDrainedPage serves the company world from two replicas behind one
// address (as behind a proxy) sharing their checkpoint directory, opens
// the page, resets the episode "drained-episode" and takes a step, then
// drains the first replica, the second taking over the address. It returns
// the browser showing the session drained, the checkpoint directory and
// the checkpoint the drain took.
func mustDrainedPage(t *testing.T) (ctx context.Context, checkpoints, id string) {
	t.Helper()
	fixturesDir, _ := mustFixtures(t)
	checkpoints = t.TempDir()
	first, firstMux := mustCompanyReplica(t, fixturesDir, checkpoints, openenv.Config{DrainCheckpoints: true})
	_, secondMux := mustCompanyReplica(t, fixturesDir, checkpoints, openenv.Config{})
	var current atomic.Pointer[http.Handler]
	current.Store(&firstMux)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*current.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	ctx = mustBrowser(t)
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
	return ctx, checkpoints, latest.ID
}

// TestUI_Browser_DrainRestore drains the server of the page's session:
// the session closes with 1012 and the checkpoint the drain took, which the
// page names and offers to restore, and restores into a new session on the
// replica that takes over (behind the same address, as behind a proxy),
// at the step its episode was at, where before it only offered a new
// session.
func TestUI_Browser_DrainRestore(t *testing.T) {
	ctx, _, id := mustDrainedPage(t)
	shot(t, ctx, "drained")
	if got := textOf(t, ctx, "#banner"); !strings.Contains(got, id) {
		t.Errorf("banner = %q, want it to name the checkpoint %s", got, id)
	}
	run(t, ctx, "restore the checkpoint",
		chromedp.Click(chromedp.ID("restore-checkpoint")),
		chromedp.WaitVisible(chromedp.CSS(`#ws-status[data-state="open"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#episode[data-episode="drained-episode"][data-steps="1"]`)),
		chromedp.WaitNotVisible(chromedp.ID("restore-checkpoint")),
		chromedp.WaitVisible(chromedp.CSS(`#timeline .step[data-step="1"][data-tool="list_staff"]`)))
}

// TestUI_Browser_DrainRestoreRefused restores a drained session's
// checkpoint that the new session cannot read (its directory moved away,
// as when it expired): the refusal is shown, the drained session's
// episode facts, tools, timeline and change log are gone, as the new
// session has no episode, and the checkpoint's id is left in the reset
// form's Checkpoint field, whose Reset restores it once it can be read,
// the episode's other fields set aside, where before the page offered the
// checkpoint no more.
func TestUI_Browser_DrainRestoreRefused(t *testing.T) {
	ctx, checkpoints, id := mustDrainedPage(t)
	dir, away := filepath.Join(checkpoints, id), filepath.Join(t.TempDir(), id)
	if err := os.Rename(dir, away); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "restore the checkpoint, gone",
		chromedp.Click(chromedp.ID("restore-checkpoint")),
		chromedp.WaitVisible(chromedp.CSS(`#ws-status[data-state="open"]`)),
		chromedp.WaitVisible(chromedp.ID("reset-error")))
	if got := textOf(t, ctx, "#reset-error"); !strings.Contains(got, "Restoring checkpoint "+id) {
		t.Errorf("reset error = %q, want it to say restoring %s was refused", got, id)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[document.getElementById("reset-checkpoint").value,
		String(document.getElementById("reset-new").disabled), document.getElementById("reset-episode").value]`))
	if err != nil {
		t.Fatal(err)
	}
	// The episode id the page reset with is still in the form, set aside.
	if want := []string{id, "true", "drained-episode"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("checkpoint, other fields disabled, episode id = %q, want %q", got, want)
	}
	// The new session has no episode: nothing of the drained one's is
	// shown, as if it were the new session's.
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[JSON.stringify(document.getElementById("episode").dataset),
		document.getElementById("episode").textContent, document.getElementById("tools").textContent,
		String(document.getElementById("tool-detail").hidden), document.getElementById("timeline").textContent,
		document.getElementById("grading").textContent, document.getElementById("changelog").textContent]`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"{}", "", "", "true", "", "", ""}; strings.Join(shown, "|") != strings.Join(want, "|") {
		t.Errorf("episode data, episode, tools, tool detail hidden, timeline, grading, change log = %q, want %q: the drained session's gone", shown, want)
	}

	if err := os.Rename(away, dir); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "restore it again from the form",
		chromedp.WaitEnabled(chromedp.ID("reset-btn")),
		chromedp.Click(chromedp.ID("reset-btn")),
		chromedp.WaitVisible(chromedp.CSS(`#episode[data-episode="drained-episode"][data-steps="1"]`)),
		chromedp.WaitNotVisible(chromedp.ID("reset-error")),
		chromedp.WaitVisible(chromedp.CSS(`#timeline .step[data-step="1"][data-tool="list_staff"]`)))
}
