package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestUI_Browser_Readable: what the reader opened and reads stays so.
// A console value of a million characters is cut, saying how long it is,
// where the page grew to 127,000 pixels; a Watch tab's sections the reader
// opened stay open across its polls, where each second's redraw closed
// them; and a session with more steps than the server keeps says the
// older are not kept.
func TestUI_Browser_Readable(t *testing.T) {
	fixturesDir, _ := mustFixtures(t)
	base := mustServeCompany(t, fixturesDir)
	ctx := mustBrowser(t)
	listenPageErrors(t, ctx)

	run(t, ctx, "run a query of a long value",
		chromedp.Navigate(base+"/web/#console"),
		chromedp.WaitVisible(chromedp.ID("sql")),
		chromedp.SetValue(chromedp.ID("sql"), "SELECT printf('%.*c', 1000000, 'x') AS big, 'after' AS next"),
		chromedp.Click(chromedp.ID("sql-run")),
		chromedp.WaitVisible(chromedp.CSS("#sql-result td .cut")))
	if got := textOf(t, ctx, "#sql-result td .cut"); !strings.Contains(got, "1,000,000 characters in all") {
		t.Errorf("the cut note = %q, want it to give the value's length", got)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelector("#sql-result td").textContent.length`)); err != nil || n > 10200 {
		t.Errorf("the long value's cell holds %d characters (%v), want it cut near 10,000", n, err)
	}

	_, send := otherClient(t, base)
	send(`{"type":"reset","data":{"episode_id":"read-on"}}`)
	for range 201 {
		send(`{"type":"step","data":{"type":"call_tool","tool_name":"list_staff","arguments":{}}}`)
	}
	run(t, ctx, "watch the session and open a step's arguments",
		chromedp.Click(chromedp.CSS(`#tabs a[data-tab="sessions"]`)),
		chromedp.Click(chromedp.CSS(`#session-table tr[data-episode="read-on"] button.watch`)),
		chromedp.WaitVisible(chromedp.CSS(`#watch-timeline .step[data-step="201"]`)),
		chromedp.Click(chromedp.CSS(`#watch-timeline .step[data-step="201"] details summary`)))
	if got := textOf(t, ctx, "#watch-count"); !strings.Contains(got, "steps before 2 are not kept") {
		t.Errorf("the step count = %q, want it to say the oldest step is not kept", got)
	}
	before := textOf(t, ctx, "#watch-updated")
	run(t, ctx, "let the tab poll twice", chromedp.Sleep(2500*time.Millisecond))
	if textOf(t, ctx, "#watch-updated") == before {
		t.Fatal("the Watch tab did not poll")
	}
	if open, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('#watch-timeline .step[data-step="201"] details').open`)); err != nil || !open {
		t.Errorf("the arguments opened before the polls: open %v (%v), want open", open, err)
	}
}
