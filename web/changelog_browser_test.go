package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/seahaven/seahaven/app"
)

// TestUI_Browser_TruncatedLog calls tools on a server whose change log
// bound keeps only the newest records: the change log says how many of the
// oldest were dropped, and the timeline's first step says its rows are gone
// rather than that it changed none.
func TestUI_Browser_TruncatedLog(t *testing.T) {
	fixturesDir, _ := mustFixtures(t)
	// An invoice writes two rows; the bound keeps the last call's alone.
	base := mustServeCompanyConfig(t, app.Config{FixturesDir: fixturesDir, MaxChangeLogBytes: 700}, "")
	ctx := mustBrowser(t)
	listenPageErrors(t, ctx)

	run(t, ctx, "open the page",
		openToolForm(base, "invoice", "amount"),
		chromedp.SendKeys(chromedp.CSS(`#tool-fields input[name="amount"]`), "500"))
	for _, step := range []string{"1", "2", "3"} {
		run(t, ctx, "call invoice "+step,
			chromedp.WaitEnabled(chromedp.ID("call-btn")),
			chromedp.Click(chromedp.ID("call-btn")),
			chromedp.WaitVisible(chromedp.CSS(`#timeline .step[data-step="`+step+`"]`)))
	}
	note := textOf(t, ctx, "#changelog .truncated")
	if !strings.Contains(note, "oldest change records were dropped") || !strings.Contains(note, "700 bytes") {
		t.Errorf("change log note = %q, want it to say the oldest records were dropped under the 700-byte bound", note)
	}
	if got := textOf(t, ctx, "#changes-count"); !strings.Contains(got, "older dropped") {
		t.Errorf("change log count = %q, want it to count the dropped records", got)
	}
	if got := textOf(t, ctx, `#timeline .step[data-step="1"] h3`); !strings.Contains(got, "2 rows changed") || !strings.Contains(got, "dropped") {
		t.Errorf("step 1 heading = %q, want its 2 rows, dropped from the log", got)
	}
	if got := textOf(t, ctx, `#timeline .step[data-step="3"] h3`); !strings.Contains(got, "2 rows changed") || strings.Contains(got, "dropped") {
		t.Errorf("step 3 heading = %q, want its 2 rows, none dropped", got)
	}
}
