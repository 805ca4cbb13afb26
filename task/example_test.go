package task_test

import (
	"context"
	"fmt"
	"os"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/task"
)

// A task of the company world, solved in two calls and graded after each.
func ExampleOpen() {
	ctx := context.Background()
	tasks, err := task.ForWorld(company.World)
	if err != nil {
		panic(err)
	}
	t, _ := task.Find(tasks, "refund_eu_charge")
	fmt.Println(t.Instruction)
	ep, err := task.Open(ctx, company.World, t, composition.Options{})
	if err != nil {
		panic(err)
	}
	defer ep.Close()

	out, _ := ep.CallJSON(ctx, "eu_list_charges", nil)
	res, _ := ep.Grade(ctx)
	fmt.Printf("reward %.2f done %t\n", res.Reward, res.Done)

	charge := out.([]env.Row)[0]
	ep.CallJSON(ctx, "eu_refund_charge", []byte(fmt.Sprintf(`{"charge_id": %q}`, charge["id"])))
	res, _ = ep.Grade(ctx)
	res.WriteText(os.Stdout)
	// Output:
	// Refund the charge on the EU payments account.
	// reward 0.00 done false
	//   PASS  EU charge refunded (weight 2): expected 1, found 1
	//   PASS  no collateral damage (weight 1): 1 change, all to payments_eu.charges:update
	//   reward 1.00  done true
}
