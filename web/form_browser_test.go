package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestUI_Browser_FormExactIntegers types an integer past 2^53 into a tool's
// integer field: the arguments the call sends carry the digits typed, not
// the nearest number a JavaScript Number holds.
func TestUI_Browser_FormExactIntegers(t *testing.T) {
	fixturesDir, _ := mustFixtures(t)
	base := mustServeCompany(t, fixturesDir)
	ctx := mustBrowser(t)
	listenPageErrors(t, ctx)

	run(t, ctx, "type a large amount",
		chromedp.Navigate(base+"/web/"),
		chromedp.WaitVisible(chromedp.CSS(`#ws-status[data-state="open"]`)),
		chromedp.Click(chromedp.CSS(`#tools [data-tool="invoice"]`), chromedp.NodeVisible),
		chromedp.WaitVisible(chromedp.CSS(`#tool-fields input[name="amount"]`)),
		chromedp.SendKeys(chromedp.CSS(`#tool-fields input[name="amount"]`), "9007199254740993"))
	args, err := chromedp.Run(ctx, chromedp.Value(chromedp.ID("tool-args")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(args, "9007199254740993") {
		t.Errorf("arguments %q, want the amount as typed, 9007199254740993", args)
	}
}
