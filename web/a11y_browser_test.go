package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestUI_Browser_Accessibility checks what a screen reader needs of the
// page: every control has a name (a label, an aria-label or its text), the
// connection's status is a live region, and the tab shown is marked as the
// current one.
func TestUI_Browser_Accessibility(t *testing.T) {
	fixturesDir, _ := mustFixtures(t)
	base := mustServeCompany(t, fixturesDir)
	ctx := mustBrowser(t)
	listenPageErrors(t, ctx)

	run(t, ctx, "open a tool's form",
		openToolForm(base, "hire", "name"))
	unnamed, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("input, select, textarea, button")]
		.filter((e) => !e.labels?.length && !e.getAttribute("aria-label") && !(e.tagName === "BUTTON" && e.textContent.trim()))
		.map((e) => e.tagName.toLowerCase() + "#" + e.id)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(unnamed) != 0 {
		t.Errorf("controls without a name: %q", unnamed)
	}
	// The connection's state changes on its own: a live region says so.
	if role, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("ws-status").getAttribute("role") || ""`)); err != nil || role != "status" {
		t.Errorf("#ws-status role = %q (%v), want status", role, err)
	}
	for _, tab := range []string{"console", "playground"} {
		run(t, ctx, "show "+tab, chromedp.Navigate(base+"/web/#"+tab), chromedp.WaitVisible(chromedp.ID(tab)))
		current, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#tabs a[aria-current="page"]')].map((a) => a.dataset.tab)`))
		if err != nil {
			t.Fatal(err)
		}
		if len(current) != 1 || current[0] != tab {
			t.Errorf("tabs marked current on #%s: %q, want [%s]", tab, current, tab)
		}
	}
}
