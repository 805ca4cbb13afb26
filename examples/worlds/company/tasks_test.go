package company_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/task"
)

// call is one scripted call. When lookup is set, it is a query on the
// inspection view whose single value replaces $1 in args.
type call struct {
	tool, args, lookup string
}

// solutions are scripted correct solutions, one per task.
var solutions = map[string][]call{
	"invoice_750": {
		{tool: "invoice", args: `{"amount": 750}`},
	},
	"refund_eu_charge": {
		{tool: "eu_list_charges", args: `{}`},
		{tool: "eu_refund_charge", args: `{"charge_id": "$1"}`, lookup: "SELECT id FROM payments_eu.charges"},
	},
	"shop_order_1999": {
		{tool: "shop_place_order", args: `{"total": 1999}`},
		{tool: "pay_list_charges", args: `{"limit": 5}`},
	},
	"hire_liskov": {
		{tool: "hire", args: `{"name": "Barbara Liskov", "role": "engineer"}`},
		{tool: "chat_send_message", args: `{"channel": "engineering", "text": "Please welcome Barbara Liskov to the team!", "author": "Ada Lovelace"}`},
	},
	"refund_cancelled_order": {
		{tool: "shop_list_orders", args: `{}`},
		{tool: "pay_refund_charge", args: `{"charge_id": "$1"}`, lookup: "SELECT charge_id FROM shop.orders WHERE total = 4999"},
		{tool: "chat_send_message", args: `{"channel": "general", "text": "Order $1 was cancelled and refunded."}`, lookup: "SELECT id FROM shop.orders WHERE total = 4999"},
	},
}

// wrong are scripted wrong solutions, each with the check it must fail.
var wrong = []struct {
	name  string // what goes wrong
	task  string // task id
	calls []call // the script
	fails string // a check that must fail
}{
	{"WrongAmount", "invoice_750", []call{{tool: "invoice", args: `{"amount": 7500}`}}, "invoice filed"},
	{"ExtraInvoice", "invoice_750", []call{{tool: "invoice", args: `{"amount": 750}`}, {tool: "invoice", args: `{"amount": 750}`}}, "invoice filed"},
	{"RefundsTheWrongCharge", "refund_eu_charge", []call{
		{tool: "pay_refund_charge", args: `{"charge_id": "$1"}`, lookup: "SELECT id FROM payments.charges WHERE amount = 120000"},
	}, "no collateral damage"},
	{"RightChargePlusAnExtraWrite", "refund_eu_charge", []call{
		{tool: "eu_refund_charge", args: `{"charge_id": "$1"}`, lookup: "SELECT id FROM payments_eu.charges"},
		{tool: "chat_send_message", args: `{"channel": "general", "text": "Refunded the EU charge."}`},
	}, "no collateral damage"},
	{"ChargesTheEUAccount", "shop_order_1999", []call{{tool: "eu_create_charge", args: `{"amount": 1999}`}}, "EU account untouched"},
	{"AnnouncedInGeneralOnly", "hire_liskov", []call{{tool: "hire", args: `{"name": "Barbara Liskov", "role": "engineer"}`}}, "announced in #engineering"},
	{"WrongRole", "hire_liskov", []call{
		{tool: "hire", args: `{"name": "Barbara Liskov"}`},
		{tool: "chat_send_message", args: `{"channel": "engineering", "text": "Welcome Barbara Liskov"}`},
	}, "staff row"},
	{"RefundsTheInvoiceToo", "refund_cancelled_order", []call{
		{tool: "pay_refund_charge", args: `{"charge_id": "$1"}`, lookup: "SELECT charge_id FROM shop.orders WHERE total = 4999"},
		{tool: "pay_refund_charge", args: `{"charge_id": "$1"}`, lookup: "SELECT charge_id FROM invoices WHERE amount = 120000"},
		{tool: "chat_send_message", args: `{"channel": "general", "text": "Order $1 refunded."}`, lookup: "SELECT id FROM shop.orders WHERE total = 4999"},
	}, "invoice charge untouched"},
	{"NoNote", "refund_cancelled_order", []call{
		{tool: "pay_refund_charge", args: `{"charge_id": "$1"}`, lookup: "SELECT charge_id FROM shop.orders WHERE total = 4999"},
	}, "note in #general"},
}

func mustTasks(tb testing.TB) []env.Task {
	tb.Helper()
	tasks, err := task.ForWorld(company.World)
	if err != nil {
		tb.Fatal(err)
	}
	return tasks
}

func mustOpen(tb testing.TB, id string) *task.Episode {
	tb.Helper()
	t, ok := task.Find(mustTasks(tb), id)
	if !ok {
		tb.Fatalf("no task %q", id)
	}
	ep, err := task.Open(context.Background(), company.World, t, composition.Options{Dir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ep.Close() })
	return ep
}

// run makes the scripted calls; every call must succeed.
func run(tb testing.TB, ep *task.Episode, calls []call) {
	tb.Helper()
	ctx := context.Background()
	for _, c := range calls {
		args := c.args
		if c.lookup != "" {
			rows, err := ep.Instance().Inspect().Query(ctx, c.lookup)
			if err != nil || len(rows.Values) != 1 {
				tb.Fatalf("lookup %q: %v rows, %v", c.lookup, rows, err)
			}
			args = strings.ReplaceAll(args, "$1", fmt.Sprint(rows.Values[0][0]))
		}
		if _, err := ep.CallJSON(ctx, c.tool, []byte(args)); err != nil {
			tb.Fatalf("%s %s: %v", c.tool, args, err)
		}
	}
}

func mustGrade(tb testing.TB, ep *task.Episode) task.Result {
	tb.Helper()
	res, err := ep.Grade(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

func TestTasks_Declared(t *testing.T) {
	tasks := mustTasks(t)
	difficulty := map[string]int{}
	fromGo := 0
	for _, tk := range tasks {
		difficulty[tk.Difficulty]++
		if strings.HasPrefix(tk.Source, "tasks.go:") {
			fromGo++
		}
		if tk.Fixture != company.AcmeID {
			t.Errorf("%s: fixture %q, want acme", tk.ID, tk.Fixture)
		}
		if _, ok := solutions[tk.ID]; !ok {
			t.Errorf("task %s has no scripted solution", tk.ID)
		}
	}
	if len(tasks) < 5 || fromGo < 2 || len(tasks)-fromGo < 2 {
		t.Errorf("%d tasks, %d in Go: want at least 5, at least 2 in Go and 2 in tasks.yaml", len(tasks), fromGo)
	}
	if difficulty["easy"] == 0 || difficulty["medium"] == 0 || difficulty["hard"] == 0 {
		t.Errorf("difficulties %v: want easy, medium and hard", difficulty)
	}
}

func TestTasks_Solutions(t *testing.T) {
	for _, tk := range mustTasks(t) {
		t.Run(tk.ID, func(t *testing.T) {
			ep := mustOpen(t, tk.ID)
			run(t, ep, solutions[tk.ID])
			res := mustGrade(t, ep)
			if res.Reward != 1 || !res.Done {
				var b strings.Builder
				res.WriteText(&b)
				t.Fatalf("reward %v done %v, want 1 and done:\n%s", res.Reward, res.Done, &b)
			}
		})
	}
}

func TestTasks_DoingNothing(t *testing.T) {
	for _, tk := range mustTasks(t) {
		t.Run(tk.ID, func(t *testing.T) {
			res := mustGrade(t, mustOpen(t, tk.ID))
			if res.Reward != 0 || res.Done || !res.Idle {
				t.Fatalf("reward %v done %v idle %v with no calls, want 0, not done, idle", res.Reward, res.Done, res.Idle)
			}
		})
	}
}

func TestTasks_WrongSolutions(t *testing.T) {
	for _, tt := range wrong {
		t.Run(tt.name, func(t *testing.T) {
			ep := mustOpen(t, tt.task)
			run(t, ep, tt.calls)
			res := mustGrade(t, ep)
			if res.Reward >= 1 {
				t.Fatalf("reward %v, want below 1", res.Reward)
			}
			for _, c := range res.Checks {
				if c.Name == tt.fails {
					if c.Passed {
						t.Fatalf("check %q passed: %s", c.Name, c.Detail)
					}
					return
				}
			}
			t.Fatalf("no check %q", tt.fails)
		})
	}
}

// A second hire cannot be undone: the Go check ends the episode with a
// reward below 1.
func TestTasks_HireTwiceEndsTheEpisode(t *testing.T) {
	ep := mustOpen(t, "hire_liskov")
	run(t, ep, []call{
		{tool: "hire", args: `{"name": "Barbara Liskov", "role": "engineer"}`},
		{tool: "hire", args: `{"name": "Barbara Liskov", "role": "engineer"}`},
	})
	res := mustGrade(t, ep)
	if !res.Done || res.Reward >= 1 {
		t.Fatalf("reward %v done %v, want below 1 and done", res.Reward, res.Done)
	}
}

// The allow list keeps the other tools away from the agent.
func TestTasks_AllowList(t *testing.T) {
	ep := mustOpen(t, "hire_liskov")
	_, err := ep.CallJSON(context.Background(), "pay_create_charge", []byte(`{"amount": 5}`))
	te, ok := env.AsToolError(err)
	if !ok || te.Kind != env.KindNotFound {
		t.Fatalf("err = %v, want a tool_not_found ToolError", err)
	}
	if n := len(ep.Instance().ChangeLog()); n != 0 {
		t.Fatalf("%d change records after a refused call", n)
	}
	if got := len(ep.Tools()); got != 4 {
		t.Fatalf("%d tools listed, want 4", got)
	}
}
