package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/env"
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
		openToolForm(base, "invoice", "amount"),
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
		openToolForm(base, "invoice", "amount"),
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
	episode := func() string {
		t.Helper()
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("episode").dataset.episode`))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// refused types seed and presses Reset: the seed's error and the
	// reset's say want, and no reset is made.
	refused := func(seed, want string) {
		t.Helper()
		before := episode()
		run(t, ctx, "reset with seed "+seed,
			chromedp.Evaluate[chromedp.Void](`document.getElementById("reset-seed").value = ""`),
			chromedp.SendKeys(chromedp.ID("reset-seed"), seed),
			chromedp.WaitVisible(chromedp.CSS(seedError)),
			chromedp.Click(chromedp.ID("reset-btn")),
			chromedp.WaitVisible(chromedp.ID("reset-error")))
		for _, sel := range []string{seedError, "#reset-error"} {
			if got := textOf(t, ctx, sel); !strings.Contains(got, want) {
				t.Errorf("seed %s: %s says %q, want %q", seed, sel, got, want)
			}
		}
		if got := episode(); got != before {
			t.Errorf("seed %s: episode %q, want %q: no reset made", seed, got, before)
		}
	}
	// accepted types seed, names the episode id and presses Reset: the
	// episode's facts end with the seed.
	accepted := func(seed, id string) {
		t.Helper()
		run(t, ctx, "reset with seed "+seed,
			chromedp.Evaluate[chromedp.Void](`document.getElementById("reset-seed").value = ""`),
			chromedp.SetValue(chromedp.ID("reset-episode"), id),
			chromedp.SendKeys(chromedp.ID("reset-seed"), seed),
			chromedp.WaitNotVisible(chromedp.CSS(seedError)),
			chromedp.Click(chromedp.ID("reset-btn")),
			chromedp.WaitVisible(chromedp.CSS(`#episode[data-episode="`+id+`"]`)),
			chromedp.WaitNotVisible(chromedp.ID("reset-error")))
		if got := strings.Join(strings.Fields(textOf(t, ctx, "#episode")), " "); !strings.HasSuffix(got, "seed "+seed) {
			t.Errorf("episode facts %q, want seed %s", got, seed)
		}
	}
	run(t, ctx, "open the page",
		chromedp.Navigate(base+"/web/"),
		chromedp.WaitVisible(chromedp.CSS(`#ws-status[data-state="open"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#episode[data-steps="0"]`)),
		chromedp.WaitEnabled(chromedp.ID("reset-btn"))) // not still busy with the first reset
	refused("-1", "≥ 0")
	refused("1e", "seed must be an integer")
	accepted("7", "seeded")
	// The server takes seeds up to 2^63-1: one past it, the same Number
	// as 2^63-1, is refused under the seed, exactly.
	refused("9223372036854775808", "≤ 9223372036854775807")
	accepted("9223372036854775807", "seeded-max")
}

// boundsWorld has a tool whose bounds are past 2^53: an int64 tagged with
// its kind's whole range, which its schema publishes as written,
// -9223372036854775808 and 9223372036854775807, and a string whose
// maxLength is 2^53+1.
var boundsWorld = env.NewWorld(env.WorldSpec{
	Name:        "bounds",
	Version:     "1.0.0",
	Description: "A tool whose schema bounds an integer past 2^53.",
	Schema:      `CREATE TABLE counts (n INTEGER NOT NULL) STRICT;`,
})

// countArgs are the arguments of the bounds world's count tool.
type countArgs struct {
	N    int64  `json:"n" doc:"The count." min:"-9223372036854775808" max:"9223372036854775807"`
	Note string `json:"note,omitempty" doc:"A note on the count." maxlen:"9007199254740993"`
}

var _ = env.Tool(boundsWorld, "count", "Record the count given and return it.", func(c *env.Ctx, in countArgs) (countArgs, error) {
	_, err := c.DB.Exec("INSERT INTO counts (n) VALUES (?)", in.N)
	return in, err
})

// A task of the bounds world whose check weighs 10^16, past 2^53, which
// the state document writes as its digits.
func init() {
	boundsWorld.AddTask(env.Task{
		ID:          "count_once",
		Instruction: "Record one count.",
		Checks:      []env.Check{{Name: "one count", SQL: "SELECT count(*) FROM counts", Equals: 1, Weight: 1e16}},
	})
}

// TestUI_Browser_FormBoundsPast2to53 opens the form of a tool whose schema
// bounds an integer and a string's length past 2^53: the fields' types
// show the bounds as the schema writes them, a number over the maximum says so under the field
// with it, and one within is called, where before the form was not built,
// as the bounds parseJSON keeps as their text threw where they were put
// into the type and the input's min and max. 2^63, one past the int64's
// max, is refused in the page, where before the schema published the max
// as the float64 2^63 (9223372036854776000) and the page let it through
// to the server's refusal.
func TestUI_Browser_FormBoundsPast2to53(t *testing.T) {
	base := mustServeWorld(t, boundsWorld, app.Config{}, "")
	ctx := mustBrowser(t)
	listenPageErrors(t, ctx)

	const n = `#tool-fields input[name="n"]`
	const fieldError = `#tool-fields .field .error`
	run(t, ctx, "open the count tool",
		openToolForm(base, "count", "n"))
	types, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#tool-fields .field .type")].map((el) => el.textContent.trim())`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"integer, ≥ -9223372036854775808, ≤ 9223372036854775807", "string, ≤ 9007199254740993 chars"}; strings.Join(types, "; ") != strings.Join(want, "; ") {
		t.Errorf("the fields' types = %q, want %q", types, want)
	}
	run(t, ctx, "type a count over the maximum",
		chromedp.SendKeys(chromedp.CSS(n), "9223372036854775808"),
		chromedp.WaitVisible(chromedp.CSS(fieldError)))
	if got := textOf(t, ctx, fieldError); !strings.Contains(got, "n must be ≤ 9223372036854775807") {
		t.Errorf("the field's error = %q, want it to name n and its maximum 9223372036854775807", got)
	}
	run(t, ctx, "call with a count within the bounds",
		chromedp.Evaluate[chromedp.Void](`document.querySelector(`+"`"+n+"`"+`).value = ""`),
		chromedp.SendKeys(chromedp.CSS(n), "9223372036854775807"),
		chromedp.WaitNotVisible(chromedp.CSS(fieldError)),
		chromedp.Click(chromedp.ID("call-btn")),
		chromedp.WaitVisible(chromedp.CSS(`#episode[data-steps="1"]`)),
		chromedp.WaitVisible(chromedp.ID("call-output")))
	if got := textOf(t, ctx, "#call-output"); !strings.Contains(got, "9223372036854775807") {
		t.Errorf("the call's result = %q, want the count 9223372036854775807", got)
	}
}

// TestUI_Browser_GradingWeightPast2to53 plays a task whose check weighs
// 10^16: the grading shows the weight as its digits, where before the
// weight parseJSON keeps as its text threw where it was put into the
// check's line, and no grading was drawn.
func TestUI_Browser_GradingWeightPast2to53(t *testing.T) {
	base := mustServeWorld(t, boundsWorld, app.Config{}, "")
	ctx := mustBrowser(t)
	listenPageErrors(t, ctx)

	const n = `#tool-fields input[name="n"]`
	run(t, ctx, "reset into the task and record a count",
		chromedp.Navigate(base+"/web/#playground"),
		chromedp.WaitVisible(chromedp.CSS(`#ws-status[data-state="open"]`)),
		chromedp.WaitReady(chromedp.CSS(`#reset-task option[value="count_once"]`)),
		chromedp.SetValue(chromedp.ID("reset-task"), "count_once"),
		chromedp.WaitEnabled(chromedp.ID("reset-btn")),
		chromedp.Click(chromedp.ID("reset-btn")),
		chromedp.WaitVisible(chromedp.CSS(`#grading[data-task="count_once"]`)),
		chromedp.Click(chromedp.CSS(`#tools [data-tool="count"]`), chromedp.NodeVisible),
		chromedp.WaitVisible(chromedp.CSS(n)),
		chromedp.SendKeys(chromedp.CSS(n), "1"),
		chromedp.WaitEnabled(chromedp.ID("call-btn")),
		chromedp.Click(chromedp.ID("call-btn")),
		chromedp.WaitVisible(chromedp.CSS(`#grading[data-reward="1"][data-done="true"]`)))
	if got := textOf(t, ctx, `#grading li[data-check="one count"]`); !strings.Contains(got, "1.00 × 10000000000000000") {
		t.Errorf("the check's line = %q, want its score and weight, 1.00 × 10000000000000000", got)
	}
}
