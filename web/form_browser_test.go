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

// TestUI_Browser_FormBounds types amounts outside the invoice tool's
// schema bounds (minimum 1, maximum 10^12): the page says under the field
// what is wrong, naming the field and the bound, keeps what was typed and
// makes no call, where the browser's own tooltip refused the form and
// vanished; an amount within them is called.
func TestUI_Browser_FormBounds(t *testing.T) {
	fixturesDir, _ := mustFixtures(t)
	base := mustServeCompany(t, fixturesDir)
	ctx := mustBrowser(t)
	listenPageErrors(t, ctx)

	const amount = `#tool-fields input[name="amount"]`
	const fieldError = `#tool-fields .field .error`
	run(t, ctx, "call with an amount over the maximum",
		chromedp.Navigate(base+"/web/"),
		chromedp.WaitVisible(chromedp.CSS(`#ws-status[data-state="open"]`)),
		chromedp.Click(chromedp.CSS(`#tools [data-tool="invoice"]`), chromedp.NodeVisible),
		chromedp.WaitVisible(chromedp.CSS(amount)),
		chromedp.SendKeys(chromedp.CSS(amount), "1000000000001"),
		chromedp.WaitEnabled(chromedp.ID("call-btn")),
		chromedp.Click(chromedp.ID("call-btn")),
		chromedp.WaitVisible(chromedp.CSS(fieldError)),
		chromedp.WaitVisible(chromedp.ID("call-error")))
	if got := textOf(t, ctx, fieldError); !strings.Contains(got, "amount") || !strings.Contains(got, "≤ 1000000000000") {
		t.Errorf("the field's error = %q, want it to name amount and its maximum 1000000000000", got)
	}
	if got := textOf(t, ctx, "#call-error"); !strings.Contains(got, "≤ 1000000000000") {
		t.Errorf("the call's error = %q, want the maximum", got)
	}
	state, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[document.querySelector(`+"`"+amount+"`"+`).value,
		String(document.getElementById("call-result").hidden), document.getElementById("episode").dataset.steps]`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"1000000000001", "true", "0"}; strings.Join(state, " ") != strings.Join(want, " ") {
		t.Errorf("input, result hidden, steps = %q, want %q: the input kept, no call made", state, want)
	}

	clear := chromedp.Evaluate[chromedp.Void](`document.querySelector(` + "`" + amount + "`" + `).value = ""`)
	run(t, ctx, "type an amount under the minimum",
		clear,
		chromedp.SendKeys(chromedp.CSS(amount), "0"),
		chromedp.WaitVisible(chromedp.CSS(fieldError)))
	if got := textOf(t, ctx, fieldError); !strings.Contains(got, "amount") || !strings.Contains(got, "≥ 1") {
		t.Errorf("the field's error = %q, want it to name amount and its minimum 1", got)
	}

	run(t, ctx, "call with an amount within the bounds",
		clear,
		chromedp.SendKeys(chromedp.CSS(amount), "5"),
		chromedp.WaitNotVisible(chromedp.CSS(fieldError)),
		chromedp.Click(chromedp.ID("call-btn")),
		chromedp.WaitVisible(chromedp.CSS(`#episode[data-steps="1"]`)),
		chromedp.WaitVisible(chromedp.ID("call-output")))
}

// TestUI_Browser_ResetSeedChecked types seeds a reset refuses into the
// reset form, as the tool form is checked: -1 (under the minimum) and 1e
// (text no number, which the input reads as empty) each say under the
// seed what is wrong and reset nothing, where the browser's own tooltip
// refused -1 and 1e reset with no seed at all; 7 resets with seed 7. The
// bound above is checked exactly: 2^63 is refused under the seed, where
// before the page let it pass, as the same Number as 2^63-1, and only the
// server's refusal said so, and 2^63-1 resets with it.
func TestUI_Browser_ResetSeedChecked(t *testing.T) {
	fixturesDir, _ := mustFixtures(t)
	base := mustServeCompany(t, fixturesDir)
	ctx := mustBrowser(t)
	listenPageErrors(t, ctx)

	const seedError = "#reset-seed-error"
	clear := chromedp.Evaluate[chromedp.Void](`document.getElementById("reset-seed").value = ""`)
	run(t, ctx, "reset with seed -1",
		chromedp.Navigate(base+"/web/"),
		chromedp.WaitVisible(chromedp.CSS(`#ws-status[data-state="open"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#episode[data-steps="0"]`)),
		chromedp.WaitEnabled(chromedp.ID("reset-btn")), // not still busy with the first reset
		chromedp.SetValue(chromedp.ID("reset-episode"), "seeded"),
		chromedp.SendKeys(chromedp.ID("reset-seed"), "-1"),
		chromedp.WaitVisible(chromedp.CSS(seedError)),
		chromedp.Click(chromedp.ID("reset-btn")),
		chromedp.WaitVisible(chromedp.ID("reset-error")))
	if got := textOf(t, ctx, seedError); !strings.Contains(got, "seed") || !strings.Contains(got, "≥ 0") {
		t.Errorf("the seed's error = %q, want it to name seed and its minimum 0", got)
	}
	if got := textOf(t, ctx, "#reset-error"); !strings.Contains(got, "≥ 0") {
		t.Errorf("the reset's error = %q, want the minimum", got)
	}

	run(t, ctx, "reset with seed 1e",
		clear,
		chromedp.SendKeys(chromedp.ID("reset-seed"), "1e"),
		chromedp.WaitVisible(chromedp.CSS(seedError)),
		chromedp.Click(chromedp.ID("reset-btn")),
		chromedp.WaitVisible(chromedp.ID("reset-error")))
	if got := textOf(t, ctx, seedError); !strings.Contains(got, "seed must be an integer") {
		t.Errorf("the seed's error = %q, want it to say seed must be an integer", got)
	}
	// Both refusals were made before sending anything: the episode is the
	// first reset's, not "seeded".
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("episode").dataset.episode`)); err != nil || got == "seeded" {
		t.Errorf("episode %q (%v), want the first reset's: no reset made", got, err)
	}

	run(t, ctx, "reset with seed 7",
		clear,
		chromedp.SendKeys(chromedp.ID("reset-seed"), "7"),
		chromedp.WaitNotVisible(chromedp.CSS(seedError)),
		chromedp.Click(chromedp.ID("reset-btn")),
		chromedp.WaitVisible(chromedp.CSS(`#episode[data-episode="seeded"]`)),
		chromedp.WaitNotVisible(chromedp.ID("reset-error")))
	if got := strings.Join(strings.Fields(textOf(t, ctx, "#episode")), " "); !strings.HasSuffix(got, "seed 7") {
		t.Errorf("episode facts %q, want seed 7", got)
	}

	// The server takes seeds up to 2^63-1: one past it, the same Number
	// as 2^63-1, is refused under the seed, exactly.
	run(t, ctx, "reset with seed 2^63",
		clear,
		chromedp.SetValue(chromedp.ID("reset-episode"), "seeded-max"),
		chromedp.SendKeys(chromedp.ID("reset-seed"), "9223372036854775808"),
		chromedp.WaitVisible(chromedp.CSS(seedError)),
		chromedp.Click(chromedp.ID("reset-btn")),
		chromedp.WaitVisible(chromedp.ID("reset-error")))
	if got := textOf(t, ctx, seedError); !strings.Contains(got, "seed") || !strings.Contains(got, "≤ 9223372036854775807") {
		t.Errorf("the seed's error = %q, want it to name seed and its maximum 9223372036854775807", got)
	}
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("episode").dataset.episode`)); err != nil || got != "seeded" {
		t.Errorf("episode %q (%v), want seeded: no reset made", got, err)
	}
	run(t, ctx, "reset with seed 2^63-1",
		clear,
		chromedp.SendKeys(chromedp.ID("reset-seed"), "9223372036854775807"),
		chromedp.WaitNotVisible(chromedp.CSS(seedError)),
		chromedp.Click(chromedp.ID("reset-btn")),
		chromedp.WaitVisible(chromedp.CSS(`#episode[data-episode="seeded-max"]`)),
		chromedp.WaitNotVisible(chromedp.ID("reset-error")))
	if got := strings.Join(strings.Fields(textOf(t, ctx, "#episode")), " "); !strings.HasSuffix(got, "seed 9223372036854775807") {
		t.Errorf("episode facts %q, want seed 9223372036854775807", got)
	}
}
