package company

import (
	"context"
	"strings"

	"github.com/seahaven/seahaven/env"
)

// The company's tasks declared in Go; more live in fixtures/tasks.yaml.
// Both run over the acme fixture.

// HireLiskov asks for a hire and an announcement of it in #engineering.
var HireLiskov = env.Task{
	ID:          "hire_liskov",
	Instruction: "Hire Barbara Liskov as an engineer and announce her in the #engineering channel.",
	Difficulty:  "medium",
	Fixture:     AcmeID,
	Tools:       []string{"hire", "list_staff", "chat_send_message", "chat_read_channel"},
	Checks: []env.Check{
		{Name: "staff row", SQL: "SELECT count(*) FROM staff WHERE name = 'Barbara Liskov' AND role = 'engineer'", Equals: 1},
		{Name: "announced in #engineering", SQL: "SELECT count(*) > 0 FROM chat.messages WHERE channel = 'engineering' AND body LIKE '%Liskov%'"},
		{Name: "hired once", Func: hiredOnce},
		{Name: "no collateral damage", OnlyChanged: []string{"main.staff:insert", "chat.messages:insert"}},
	},
}

// hiredOnce reads the change log: Barbara Liskov is hired exactly once. A
// second hire cannot be undone (there is no tool to let someone go), so it
// ends the episode.
func hiredOnce(_ context.Context, _ env.Inspector, log []env.ChangeRecord) (env.GradeResult, error) {
	n := 0
	for _, r := range log {
		if r.World == "main" && r.Table == "staff" && r.Op == env.OpInsert && r.After["name"] == "Barbara Liskov" {
			n++
		}
	}
	switch n {
	case 0:
		return env.Fail("expected one hire of Barbara Liskov, found none"), nil
	case 1:
		return env.Pass("one hire of Barbara Liskov"), nil
	}
	res := env.Fail("expected one hire of Barbara Liskov, found %d", n)
	res.Done = true
	return res, nil
}

// RefundCancelledOrder is a multi-step task: find the order, refund its
// charge on the account the shop shares with the company, and leave a note.
var RefundCancelledOrder = env.Task{
	ID: "refund_cancelled_order",
	Instruction: "A customer cancelled the shop order of 4999 cents. Refund its charge on the company's payment account, " +
		"then post a note in the #general channel that includes the order's id.",
	Difficulty: "hard",
	Fixture:    AcmeID,
	Tools:      []string{"shop_list_orders", "pay_list_charges", "pay_refund_charge", "chat_send_message", "chat_read_channel"},
	Checks: []env.Check{
		{Name: "order's charge refunded", Weight: 2,
			SQL: "SELECT c.refunded FROM shop.orders o JOIN payments.charges c ON c.id = o.charge_id WHERE o.total = 4999", Equals: 1},
		{Name: "invoice charge untouched", SQL: "SELECT refunded FROM payments.charges WHERE amount = 120000", Equals: 0},
		{Name: "note in #general", Func: notedCancelledOrder},
		{Name: "no collateral damage", OnlyChanged: []string{"payments.charges:update", "chat.messages:insert"}},
	},
}

// notedCancelledOrder looks for a #general message, posted during the
// episode, that names the cancelled order.
func notedCancelledOrder(ctx context.Context, v env.Inspector, log []env.ChangeRecord) (env.GradeResult, error) {
	rows, err := v.Rows(ctx, "SELECT id FROM shop.orders WHERE total = 4999")
	if err != nil {
		return env.GradeResult{}, err
	}
	if len(rows) != 1 {
		return env.Fail("expected one order of 4999 cents, found %d", len(rows)), nil
	}
	id, _ := rows[0]["id"].(string)
	for _, r := range log {
		if r.World != "chat" || r.Table != "messages" || r.Op != env.OpInsert || r.After["channel"] != "general" {
			continue
		}
		if body, _ := r.After["body"].(string); strings.Contains(body, id) {
			return env.Pass("a #general message names order %s", id), nil
		}
	}
	return env.Fail("expected a new #general message naming order %s, found none", id), nil
}

func init() {
	World.AddTask(HireLiskov)
	World.AddTask(RefundCancelledOrder)
}
