package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/web"
)

// chromiumPath is where Debian's chromium package installs the browser.
const chromiumPath = "/usr/bin/chromium"

var screenshots = flag.String("screenshots", "", "save a PNG of each panel of the browser test into this directory")

// mustFixtures makes a fixtures directory holding a copy of acme and a
// fork of it, acme-fork, frozen with one more invoice. It returns the
// directory and the fork's sidecar.
func mustFixtures(tb testing.TB) (string, *fixture.Sidecar) {
	tb.Helper()
	dir := tb.TempDir()
	src := filepath.Join(compositiontest.FixturesDir(tb, company.World), "acme")
	if err := os.CopyFS(filepath.Join(dir, "acme"), os.DirFS(src)); err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	inst, err := composition.Open(ctx, company.World, composition.Options{Fixture: "acme", FixturesDir: dir, Dir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	defer inst.Close()
	if _, err := inst.CallJSON(ctx, "invoice", json.RawMessage(`{"amount":1200}`)); err != nil {
		tb.Fatal(err)
	}
	fork, err := inst.Freeze(ctx, "acme-fork", "Acme after one more invoice.", composition.FreezeOptions{FixturesDir: dir})
	if err != nil {
		tb.Fatal(err)
	}
	return dir, fork
}

// mustServeCompany serves the company world from fixturesDir, with the UI
// mounted at /web as `seahaven serve` mounts it, and returns its base URL.
func mustServeCompany(tb testing.TB, fixturesDir string) string {
	tb.Helper()
	return mustServeCompanyToken(tb, fixturesDir, "")
}

// mustServeCompanyToken is mustServeCompany for a server with a token: the
// UI signs in (web.HandlerWithAuth) and the API asks for the token.
func mustServeCompanyToken(tb testing.TB, fixturesDir, token string) string {
	tb.Helper()
	return mustServeCompanyConfig(tb, app.Config{FixturesDir: fixturesDir}, token)
}

// mustServeCompanyConfig is mustServeCompanyToken with the backend's
// config cfg, whose default fixture is acme and whose directories are the
// test's own.
func mustServeCompanyConfig(tb testing.TB, cfg app.Config, token string) string {
	tb.Helper()
	cfg.DefaultFixture = "acme"
	return mustServeWorld(tb, company.World, cfg, token)
}

// mustServeWorld serves the world w with the backend's config cfg, whose
// directories are the test's own, as mustServeCompanyConfig serves the
// company world.
func mustServeWorld(tb testing.TB, w *env.World, cfg app.Config, token string) string {
	tb.Helper()
	cfg.InstanceRoot, cfg.Checkpoints = tb.TempDir(), tb.TempDir()
	backend, err := app.New(w, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	srv := openenv.NewServer(backend, openenv.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Token: token})
	mux := http.NewServeMux()
	ui := web.Handler()
	if token != "" {
		ui = web.HandlerWithAuth(srv)
	}
	ui = srv.BrowserGuard(ui) // as seahaven serve mounts it: its origin checks hold at /web
	mux.Handle("/web/", ui)
	mux.Handle("/web", ui)
	mux.Handle("/", srv.Handler())
	ts := httptest.NewServer(mux)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		ts.Close()
		backend.Close()
	})
	return ts.URL
}

// mustBrowser starts a headless Chromium with a fresh profile and returns a
// tab's context. Without Chromium the test is skipped, unless CI is set.
func mustBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but %s is missing (%v): install Debian's chromium package", chromiumPath, err)
		}
		t.Skipf("browser test skipped: %s is missing (install Debian's chromium package to run it)", chromiumPath)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 960),
	}
	// The deadline bounds a hung browser; it is not an assertion on speed.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}
	return bctx
}

// pageErrors collects uncaught exceptions thrown by the page's scripts.
type pageErrors struct{ ch chan string }

// listenPageErrors collects the page's uncaught exceptions, and fails the
// test with them when it ends.
func listenPageErrors(t *testing.T, ctx context.Context) {
	t.Helper()
	pe := &pageErrors{ch: make(chan string, 16)}
	err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			msg := e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
			select {
			case pe.ch <- msg:
			default:
			}
		}
	})
	if err != nil {
		t.Fatalf("listening to the page: %v", err)
	}
	t.Cleanup(func() { pe.check(t) })
}

func (pe *pageErrors) check(t *testing.T) {
	t.Helper()
	for {
		select {
		case msg := <-pe.ch:
			t.Errorf("uncaught exception in the page: %s", msg)
		default:
			return
		}
	}
}

// otherClient opens a /ws session on base for a client other than the
// page, closed when the test ends, and returns it with send, which sends one
// message and reads its reply.
func otherClient(t *testing.T, base string) (*websocket.Conn, func(msg string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c, func(msg string) {
		t.Helper()
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// stepTimeout bounds one group of browser actions, so a selector that never
// matches fails the test with its name instead of hanging it. It is not an
// assertion on speed.
const stepTimeout = 20 * time.Second

// textOf returns the text content of the first element matching sel,
// waiting for it to be visible.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	run(t, ctx, "waiting for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	s, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

// run runs browser actions, failing the test with what was being done.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(sctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// openToolForm opens the page at base, once its WebSocket is open, and
// the form of tool, until its input field shows.
func openToolForm(base, tool, field string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Navigate(base+"/web/"),
		chromedp.WaitVisible(chromedp.CSS(`#ws-status[data-state="open"]`)),
		chromedp.Click(chromedp.CSS(`#tools [data-tool="`+tool+`"]`), chromedp.NodeVisible),
		chromedp.WaitVisible(chromedp.CSS(`#tool-fields input[name="`+field+`"]`)))
}

// shot saves a screenshot of the page when -screenshots names a directory.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if *screenshots == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(*screenshots, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*screenshots, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// inspectHTTP runs a query over the public HTTP API on a session of its own,
// reset from acme, to learn what the fixture holds independently of the UI.
func inspectHTTP(t *testing.T, base, sql string) [][]any {
	t.Helper()
	post := func(path, body string) []byte {
		req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(openenv.SessionHeader, "browser-test-reference")
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d %s %v", path, res.StatusCode, b, err)
		}
		return b
	}
	post("/reset", `{"fixture":"acme"}`)
	var out struct {
		Rows [][]any `json:"rows"`
	}
	if err := json.Unmarshal(post("/inspect", fmt.Sprintf(`{"sql":%q}`, sql)), &out); err != nil {
		t.Fatal(err)
	}
	return out.Rows
}

func TestUI_Browser(t *testing.T) {
	fixturesDir, fork := mustFixtures(t)
	base := mustServeCompany(t, fixturesDir)
	ctx := mustBrowser(t)
	listenPageErrors(t, ctx)

	// What the fixture holds, learnt over HTTP, not through the page.
	rows := inspectHTTP(t, base, "SELECT count(*) FROM payments.charges")
	if len(rows) != 1 || len(rows[0]) != 1 {
		t.Fatalf("count over HTTP: %v", rows)
	}
	charges, ok := rows[0][0].(float64)
	if !ok {
		t.Fatalf("count over HTTP is %T, want a number", rows[0][0])
	}

	t.Run("Open", func(t *testing.T) {
		run(t, ctx, "open /web",
			chromedp.Navigate(base+"/web"),
			chromedp.WaitVisible(chromedp.CSS(`#ws-status[data-state="open"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#tools [data-tool="invoice"]`)))
		url, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		if url != base+"/web/" {
			t.Errorf("location = %s, want %s/web/ (the redirect)", url, base)
		}
		if signOut, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.getElementById("sign-out").hidden`)); err != nil || signOut {
			t.Errorf("a server without a token shows a sign-out button (%v)", err)
		}
		if got := textOf(t, ctx, "#world"); !strings.Contains(got, "company") {
			t.Errorf("header world = %q, want it to name company", got)
		}
	})

	t.Run("ResetFromAcme", func(t *testing.T) {
		run(t, ctx, "reset from acme",
			chromedp.SetValue(chromedp.ID("reset-fixture"), "acme"),
			chromedp.SetValue(chromedp.ID("reset-seed"), "0"),
			chromedp.SetValue(chromedp.ID("reset-episode"), "browser-test-episode"),
			chromedp.WaitEnabled(chromedp.ID("reset-btn")), // not still busy with the last one
			chromedp.Click(chromedp.ID("reset-btn")),
			chromedp.WaitVisible(chromedp.CSS(`#episode[data-episode="browser-test-episode"][data-fixture="acme"][data-steps="0"]`)))
		if got := textOf(t, ctx, "#episode"); !strings.Contains(got, "acme") {
			t.Errorf("episode facts = %q, want the fixture acme", got)
		}
	})

	t.Run("CallInvoiceThroughForm", func(t *testing.T) {
		run(t, ctx, "fill the invoice form",
			chromedp.Click(chromedp.CSS(`#tools [data-tool="invoice"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#tool-fields input[name="amount"]`)),
			chromedp.SendKeys(chromedp.CSS(`#tool-fields input[name="amount"]`), "500"),
			chromedp.WaitEnabled(chromedp.ID("call-btn")), // not still busy with the last one
			chromedp.Click(chromedp.ID("call-btn")),
			chromedp.WaitVisible(chromedp.ID("call-output")),
			chromedp.WaitVisible(chromedp.CSS(`#changelog .change[data-where="main.invoices"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#changelog .change[data-where="payments.charges"]`)))
		var result struct {
			Amount   int    `json:"amount"`
			ChargeID string `json:"charge_id"`
		}
		if err := json.Unmarshal([]byte(textOf(t, ctx, "#call-output")), &result); err != nil {
			t.Fatalf("result is not the invoice JSON: %v", err)
		}
		if result.Amount != 500 || result.ChargeID == "" {
			t.Errorf("result = %+v, want amount 500 and a charge id", result)
		}
		inv := textOf(t, ctx, `#changelog .change[data-where="main.invoices"]`)
		charge := textOf(t, ctx, `#changelog .change[data-where="payments.charges"]`)
		for _, c := range []struct{ name, text, want string }{
			{"invoice op", inv, "insert"},
			{"invoice amount", inv, "500"},
			{"invoice charge id", inv, result.ChargeID},
			{"charge op", charge, "insert"},
			{"charge key", charge, result.ChargeID},
			{"charge writer", charge, "create_charge (internal)"},
		} {
			if !strings.Contains(strings.ToLower(c.text), strings.ToLower(c.want)) {
				t.Errorf("%s: change entry %q does not contain %q", c.name, c.text, c.want)
			}
		}
		if got := textOf(t, ctx, `#changelog .call[data-call="1"] h3`); !strings.Contains(got, "invoice") {
			t.Errorf("call heading = %q, want it to name invoice", got)
		}
		shot(t, ctx, "playground")
	})

	t.Run("ConsoleCount", func(t *testing.T) {
		run(t, ctx, "count charges in the console",
			chromedp.Click(chromedp.CSS(`#tabs a[data-tab="console"]`)),
			chromedp.WaitVisible(chromedp.ID("sql")),
			chromedp.SetValue(chromedp.ID("sql"), "SELECT count(*) FROM payments.charges"),
			chromedp.Click(chromedp.ID("sql-run")),
			chromedp.WaitVisible(chromedp.CSS("#sql-result td")))
		want := strconv.Itoa(int(charges) + 1)
		if got := strings.TrimSpace(textOf(t, ctx, "#sql-result td")); got != want {
			t.Errorf("count(*) in the console = %q, want %s (acme's %v charges and the invoice's)", got, want, charges)
		}
		if got := textOf(t, ctx, "#sql-result th"); got != "count(*)" {
			t.Errorf("column = %q, want count(*)", got)
		}
	})

	t.Run("ConsoleExactIntegers", func(t *testing.T) {
		// Integers past 2^53, in a parameter and in a result, stay exact:
		// the page neither rounds what it sends nor what it shows.
		run(t, ctx, "select big integers",
			chromedp.SetValue(chromedp.ID("sql"), "SELECT ? AS p, 9007199254740993 AS big, ? + 0 AS again"),
			chromedp.SetValue(chromedp.ID("sql-params"), "[9007199254740995, -9223372036854775807]"),
			chromedp.Click(chromedp.ID("sql-run")),
			chromedp.WaitVisible(chromedp.CSS(`#sql-result th`)))
		cells, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#sql-result td")].map(td => td.textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"9007199254740995", "9007199254740993", "-9223372036854775807"}; strings.Join(cells, " ") != strings.Join(want, " ") {
			t.Errorf("cells %q, want %q", cells, want)
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("sql-params").value = ""`)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ConsoleInfinities", func(t *testing.T) {
		// A parameter past the float range is sent as written, which the
		// server binds as the infinity of its sign, not as null; numbers,
		// exact integers past 2^53 included, are set as numbers.
		run(t, ctx, "select infinities",
			chromedp.SetValue(chromedp.ID("sql"), "SELECT ? AS p, ? AS n, typeof(?1) AS t, 9007199254740993 AS big"),
			chromedp.SetValue(chromedp.ID("sql-params"), "[1e999, -1e999]"),
			chromedp.Click(chromedp.ID("sql-run")),
			chromedp.WaitVisible(chromedp.CSS(`#sql-result th`)))
		cells, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#sql-result td")].map(td => td.className + ":" + td.textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"num:Infinity", "num:-Infinity", ":real", "num:9007199254740993"}; strings.Join(cells, " ") != strings.Join(want, " ") {
			t.Errorf("cells %q, want %q", cells, want)
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("sql-params").value = ""`)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ConsoleRefusesWrites", func(t *testing.T) {
		run(t, ctx, "run a DELETE",
			chromedp.SetValue(chromedp.ID("sql"), "DELETE FROM invoices"),
			chromedp.Click(chromedp.ID("sql-run")),
			chromedp.WaitVisible(chromedp.ID("sql-error")))
		if got := textOf(t, ctx, "#sql-error"); !strings.Contains(got, "read-only") {
			t.Errorf("error = %q, want it to say the connection is read-only", got)
		}
		cells, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#sql-result td").length`))
		if err != nil {
			t.Fatal(err)
		}
		if cells != 0 {
			t.Errorf("a refused query left %d result cells", cells)
		}
		shot(t, ctx, "console")
	})

	t.Run("Composition", func(t *testing.T) {
		run(t, ctx, "open the composition",
			chromedp.Click(chromedp.CSS(`#tabs a[data-tab="composition"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#tree .node[data-path="main"]`)))
		paths, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#tree .node[data-path]")].map(n => n.dataset.path)`))
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"main", "payments", "shop", "payments_eu", "chat"}
		if strings.Join(paths, " ") != strings.Join(want, " ") {
			t.Errorf("tree nodes = %v, want %v", paths, want)
		}
		if got := textOf(t, ctx, `#tree .node[data-ref="payments"]`); !strings.Contains(got, "payments") {
			t.Errorf("shop's payments edge = %q, want a reference to the shared payments node", got)
		}
		eu := textOf(t, ctx, `#tree .node[data-path="payments_eu"]`)
		if !strings.Contains(eu, "scope eu") {
			t.Errorf("payments_eu node = %q, want scope eu", eu)
		}
		edge := textOf(t, ctx, `#tree .edge[data-edge="payments_eu"]`)
		for _, w := range []string{"eu_", "store eu"} {
			if !strings.Contains(edge, w) {
				t.Errorf("payments_eu edge = %q, want %q", edge, w)
			}
		}
		shot(t, ctx, "composition")
	})

	t.Run("Sessions", func(t *testing.T) {
		run(t, ctx, "open the sessions",
			chromedp.Click(chromedp.CSS(`#tabs a[data-tab="sessions"]`)),
			// The table may still show a refresh from before the last
			// step: wait for one that counts it.
			chromedp.WaitVisible(chromedp.CSS(`#session-table tr.mine[data-steps="1"]`)))
		if got := textOf(t, ctx, `#session-table tr.mine td.num`); got != "1" {
			t.Errorf("this page's step count = %q, want 1", got)
		}
		if got := textOf(t, ctx, "#sessions-pill"); !strings.HasPrefix(got, "sessions: ") || got == "sessions: 0" {
			t.Errorf("sessions pill = %q, want a live count", got)
		}
		// Client-chosen text (an episode id) wraps, and its bidi controls
		// stay inside it.
		style, err := chromedp.Run(ctx, chromedp.Evaluate[string](
			`(s => s.overflowWrap + " " + s.unicodeBidi)(getComputedStyle(document.querySelector("#session-table code")))`))
		if err != nil {
			t.Fatal(err)
		}
		if style != "anywhere isolate" {
			t.Errorf("a code cell's overflow-wrap and unicode-bidi = %q, want anywhere isolate", style)
		}
		shot(t, ctx, "sessions")
	})

	t.Run("WatchEnded", func(t *testing.T) {
		// A session watched until it ends: the tab says so, stops polling
		// it, where it asked for it every second for good, and no longer
		// shows its facts and timeline, which looked live below the
		// message.
		c, send := otherClient(t, base)
		send(`{"type":"reset","data":{"episode_id":"watched-then-gone"}}`)
		send(`{"type":"step","data":{"type":"call_tool","tool_name":"list_staff","arguments":{}}}`)
		run(t, ctx, "watch a session of another client",
			chromedp.Click(chromedp.CSS(`#tabs a[data-tab="sessions"]`)),
			chromedp.Click(chromedp.CSS(`#session-table tr[data-episode="watched-then-gone"] button.watch`)),
			chromedp.WaitNotVisible(chromedp.ID("watch-empty")),
			chromedp.WaitVisible(chromedp.CSS(`#watch-timeline .step[data-step="1"]`)))
		c.Close(websocket.StatusNormalClosure, "")
		run(t, ctx, "see it end", chromedp.WaitVisible(chromedp.ID("watch-empty")))
		if got := textOf(t, ctx, "#watch-error"); !strings.Contains(got, "the session has ended") {
			t.Errorf("watch error = %q, want it to say the session has ended", got)
		}
		if got := textOf(t, ctx, "#watch-ref"); got != "—" {
			t.Errorf("watching %q, want nothing", got)
		}
		left, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`["watch-facts", "watch-grading", "watch-timeline", "watch-count", "watch-updated"]
			.filter((id) => document.getElementById(id).textContent.trim() !== "")`))
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 0 {
			t.Errorf("the ended session is still shown in %q, want nothing", left)
		}
	})

	t.Run("EpisodeIdOfAnotherClient", func(t *testing.T) {
		// Another client's session has the episode id this page then
		// resets with: the page's timeline and its row are its own.
		_, send := otherClient(t, base)
		send(`{"type":"reset","data":{"episode_id":"shared-ep"}}`)
		send(`{"type":"step","data":{"type":"call_tool","tool_name":"list_staff","arguments":{}}}`)
		send(`{"type":"step","data":{"type":"call_tool","tool_name":"list_staff","arguments":{}}}`)
		run(t, ctx, "open a new page and reset with the same episode id",
			chromedp.Navigate(base+"/web/"),
			chromedp.WaitVisible(chromedp.CSS(`#ws-status[data-state="open"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#tabs a[data-tab="playground"]`)),
			chromedp.Click(chromedp.CSS(`#tabs a[data-tab="playground"]`)),
			chromedp.SetValue(chromedp.ID("reset-episode"), "shared-ep"),
			chromedp.WaitEnabled(chromedp.ID("reset-btn")),
			chromedp.Click(chromedp.ID("reset-btn")),
			chromedp.WaitVisible(chromedp.CSS(`#episode[data-episode="shared-ep"][data-steps="0"]`)),
			chromedp.Click(chromedp.CSS(`#tabs a[data-tab="sessions"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#session-table tr.mine[data-episode="shared-ep"]`)))
		mine, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#session-table tr.mine")].map(r => r.dataset.steps)`))
		if err != nil {
			t.Fatal(err)
		}
		if len(mine) != 1 || mine[0] != "0" {
			t.Errorf("rows marked this page's: steps %q, want one, with 0 steps", mine)
		}
		count, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("timeline-count").textContent`))
		if err != nil {
			t.Fatal(err)
		}
		if count != "" {
			t.Errorf("the page's timeline counts %q, want no step", count)
		}
		run(t, ctx, "back to the playground", chromedp.Click(chromedp.CSS(`#tabs a[data-tab="playground"]`)))
	})

	t.Run("Fixtures", func(t *testing.T) {
		acme, err := fixture.Read(fixturesDir, "acme")
		if err != nil {
			t.Fatal(err)
		}
		run(t, ctx, "open the fixtures",
			chromedp.Click(chromedp.CSS(`#tabs a[data-tab="fixtures"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#fixture-list .fixture[data-fixture="acme-fork"]`)))
		shot(t, ctx, "fixtures")
		for _, sc := range []*fixture.Sidecar{acme, fork} {
			hashes := map[string]string{"main": sc.FileSHA256}
			for _, n := range sc.Nodes {
				hashes[n.Path] = n.FileSHA256
			}
			for path, sum := range hashes {
				sel := fmt.Sprintf(`#fixture-list .fixture[data-fixture=%q] tr[data-node=%q]`, sc.ID, path)
				if got := textOf(t, ctx, sel); !strings.Contains(got, sum) {
					t.Errorf("%s %s row = %q, want its file hash %s", sc.ID, path, got, sum)
				}
			}
		}
		for _, c := range []struct{ id, want string }{
			{"acme", "none"},
			{"acme-fork", "acme"},
		} {
			if got := textOf(t, ctx, fmt.Sprintf(`#fixture-list .fixture[data-fixture=%q] .chain`, c.id)); !strings.HasPrefix(got, c.want) {
				t.Errorf("%s parents = %q, want %q", c.id, got, c.want)
			}
		}
		run(t, ctx, "reset from the fork",
			chromedp.Click(chromedp.CSS(`#fixture-list .fixture[data-fixture="acme-fork"] button`)),
			chromedp.WaitVisible(chromedp.CSS(`#episode[data-fixture="acme-fork"][data-steps="0"]`)))
	})

	t.Run("ControlToolForm", func(t *testing.T) {
		// The control tool's schema has an enum and nullable fields: the
		// form gives a select and optional inputs, and the clock moves.
		const now = "2027-01-02T03:04:05.000Z"
		run(t, ctx, "reset with control tools and set the clock",
			chromedp.Click(chromedp.CSS(`#tabs a[data-tab="playground"]`)),
			chromedp.Click(chromedp.ID("reset-control")),
			chromedp.WaitEnabled(chromedp.ID("reset-btn")), // not still busy with the last one
			chromedp.Click(chromedp.ID("reset-btn")),
			chromedp.Click(chromedp.CSS(`#tools [data-tool="seahaven_control"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#tool-fields select[name="action"]`)),
			chromedp.SetValue(chromedp.CSS(`#tool-fields select[name="action"]`), "1"),
			chromedp.SendKeys(chromedp.CSS(`#tool-fields input[name="now"]`), "2027-01-02T03:04:05Z"),
			chromedp.WaitEnabled(chromedp.ID("call-btn")), // not still busy with the last one
			chromedp.Click(chromedp.ID("call-btn")),
			chromedp.WaitVisible(chromedp.CSS(`#episode[data-now="`+now+`"]`)))
		if got := textOf(t, ctx, "#episode"); !strings.Contains(got, now) {
			t.Errorf("episode facts = %q, want now %s", got, now)
		}
	})

	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("the browser test ran past its deadline")
	}
}

// TestUI_Browser_Token signs in to a server that has a token: the page asks
// for it, refuses a wrong one, and with the right one loads the UI, whose
// fetches and WebSocket then carry the session cookie, on the tab its
// address asked for before the sign-in.
func TestUI_Browser_Token(t *testing.T) {
	fixturesDir, _ := mustFixtures(t)
	const token = "browser-test-token"
	base := mustServeCompanyToken(t, fixturesDir, token)
	ctx := mustBrowser(t)
	listenPageErrors(t, ctx)

	run(t, ctx, "open /web#console",
		chromedp.Navigate(base+"/web#console"),
		chromedp.WaitVisible(chromedp.ID("token")))
	run(t, ctx, "sign in with a wrong token",
		chromedp.SendKeys(chromedp.ID("token"), "wrong"),
		chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS(`[role="alert"]`)))
	if got := textOf(t, ctx, `[role="alert"]`); !strings.Contains(got, "not this server") {
		t.Errorf("alert = %q", got)
	}
	run(t, ctx, "sign in",
		chromedp.WaitVisible(chromedp.ID("token")), // the page the refusal served, with an empty field
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS(`#ws-status[data-state="open"]`)),
		chromedp.WaitReady(chromedp.CSS(`#tools [data-tool="invoice"]`)))
	// The fragment, which the server never sees, came through the sign-in
	// and the refusal before it.
	if url, err := chromedp.Run(ctx, chromedp.Location()); err != nil || url != base+"/web/#console" {
		t.Errorf("location after signing in = %s (%v), want %s/web/#console", url, err, base)
	}
	run(t, ctx, "see the console", chromedp.WaitVisible(chromedp.ID("sql")))
	if got := textOf(t, ctx, "#world"); !strings.Contains(got, "company") {
		t.Errorf("header world = %q, want it to name company (GET /composition with the cookie)", got)
	}
	// The sign-out button ends the cookie: the page is the sign-in form,
	// and the next sign-in works as the first.
	run(t, ctx, "sign out",
		chromedp.Click(chromedp.ID("sign-out"), chromedp.NodeVisible),
		chromedp.WaitVisible(chromedp.ID("token")))
	if res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{}); err != nil || len(res.Cookies) != 0 {
		t.Errorf("cookies after sign-out: %v (%v)", res.Cookies, err)
	}
	run(t, ctx, "sign in again",
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS(`#ws-status[data-state="open"]`)))
	// Signed out behind the page's back (its cookie gone, as when the
	// server's token changes), the page turns back into the sign-in form
	// at its next request, rather than showing 401s it cannot act on.
	if _, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "see the sign-in form again", chromedp.WaitVisible(chromedp.ID("token")))
	// The API still refuses a request without credentials.
	res, err := http.Get(base + "/composition")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /composition without credentials = %d, want 401", res.StatusCode)
	}
}
