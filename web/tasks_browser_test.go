package web_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/examples/worlds/company"
)

// TestUI_Browser_Tasks plays a task episode in the page and watches one a
// client of its own drives: the task picker shows the instruction, a call
// shows the reward, done and every check, the timeline names the rows the
// call changed (as node.table), and the Watch tab follows another session
// as its client steps it.
func TestUI_Browser_Tasks(t *testing.T) {
	fixturesDir, _ := mustFixtures(t)
	// The company's tasks file, beside the fixtures, holds invoice_750.
	tasks, err := os.ReadFile(filepath.Join(compositiontest.FixturesDir(t, company.World), "tasks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fixturesDir, "tasks.yaml"), tasks, 0o644); err != nil {
		t.Fatal(err)
	}
	base := mustServeCompany(t, fixturesDir)
	ctx := mustBrowser(t)
	listenPageErrors(t, ctx)

	t.Run("PlayATask", func(t *testing.T) {
		run(t, ctx, "open /web and pick a task",
			chromedp.Navigate(base+"/web/#playground"),
			chromedp.WaitVisible(chromedp.CSS(`#ws-status[data-state="open"]`)),
			chromedp.WaitReady(chromedp.CSS(`#reset-task option[value="invoice_750"]`)),
			chromedp.SetValue(chromedp.ID("reset-task"), "invoice_750"),
			chromedp.Evaluate[chromedp.Void](`document.getElementById("reset-task").dispatchEvent(new Event("change"))`),
			chromedp.WaitVisible(chromedp.ID("task-instruction")))
		if got := textOf(t, ctx, "#task-instruction"); !strings.Contains(got, "Invoice the client 750 cents") {
			t.Errorf("instruction = %q", got)
		}
		run(t, ctx, "reset into the task and file the invoice",
			chromedp.WaitEnabled(chromedp.ID("reset-btn")), // not still busy with the last one
			chromedp.Click(chromedp.ID("reset-btn")),
			chromedp.WaitVisible(chromedp.CSS(`#grading[data-task="invoice_750"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#tools [data-tool="invoice"]`)),
			chromedp.Click(chromedp.CSS(`#tools [data-tool="invoice"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#tool-fields input[name="amount"]`)),
			chromedp.SendKeys(chromedp.CSS(`#tool-fields input[name="amount"]`), "750"),
			chromedp.WaitEnabled(chromedp.ID("call-btn")), // not still busy with the last one
			chromedp.Click(chromedp.ID("call-btn")),
			chromedp.WaitVisible(chromedp.CSS(`#grading[data-reward="1"][data-done="true"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#timeline .step[data-step="1"][data-tool="invoice"]`)))
		checks, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#grading li.pass")].map(li => li.dataset.check)`))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(checks, "|") != "invoice filed|charged on the company account|no collateral damage" {
			t.Errorf("passed checks %v, want the task's three", checks)
		}
		where, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#timeline .step[data-step='1'] .change")].map(c => c.dataset.where)`))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(where, " ") != "main.invoices payments.charges" {
			t.Errorf("the step's changed rows are in %v, want main.invoices and payments.charges", where)
		}
		if got := textOf(t, ctx, `#timeline .step[data-step="1"] h3`); !strings.Contains(got, "reward 1.00") || !strings.Contains(got, "done") {
			t.Errorf("timeline step = %q, want its reward and done", got)
		}
		shot(t, ctx, "task")
	})

	t.Run("WatchAnotherClient", func(t *testing.T) {
		// A trainer's session, driven over /ws by this test.
		_, send := otherClient(t, base)
		send(`{"type":"reset","data":{"task":"invoice_750","episode_id":"trainer-episode"}}`)
		send(`{"type":"step","data":{"type":"call_tool","tool_name":"invoice","arguments":{"amount":0}}}`)
		run(t, ctx, "watch the trainer's session",
			chromedp.Click(chromedp.CSS(`#tabs a[data-tab="sessions"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#session-table tr[data-episode="trainer-episode"] button.watch`)),
			chromedp.Click(chromedp.CSS(`#session-table tr[data-episode="trainer-episode"] button.watch`)),
			chromedp.WaitVisible(chromedp.CSS(`#watch-timeline .step.failed[data-step="1"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#watch-grading[data-task="invoice_750"]`)))
		if got := textOf(t, ctx, `#watch-timeline .step[data-step="1"] .error`); !strings.Contains(got, "invalid_args") {
			t.Errorf("the refused step = %q, want its invalid_args error", got)
		}
		// The trainer steps on; the watch follows without a click.
		send(`{"type":"step","data":{"type":"call_tool","tool_name":"invoice","arguments":{"amount":750}}}`)
		run(t, ctx, "the watch follows the trainer",
			chromedp.WaitVisible(chromedp.CSS(`#watch-timeline .step.ok[data-step="2"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#watch-grading[data-reward="1"][data-done="true"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#watch-facts[data-steps="2"]`)))
		shot(t, ctx, "watch")
	})
}
