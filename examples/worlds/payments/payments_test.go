package payments_test

import (
	"context"
	"fmt"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/payments"
)

// The payments world alone is a composition of one node, "main".
func Example() {
	ctx := context.Background()
	inst, err := composition.Open(ctx, payments.World, composition.Options{Seed: 1, Now: "2026-06-01T09:00:00.000Z"})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	charge, err := env.Call(ctx, inst, payments.CreateCharge, payments.ChargeArgs{Amount: 500})
	if err != nil {
		panic(err)
	}
	fmt.Println(charge.Amount)
	_, err = inst.CallJSON(ctx, "create_charge", []byte(`{"amount": 0}`))
	fmt.Println(err)
	_, err = inst.CallJSON(ctx, "refund_charge", []byte(`{"charge_id": "nope"}`))
	fmt.Println(err)
	rows, _ := inst.Inspect().Rows(ctx, "SELECT amount, created_at FROM charges")
	fmt.Println(rows)
	for _, r := range inst.ChangeLog() {
		fmt.Println(r.World, r.Table, r.Op, r.After["amount"])
	}
	// Output:
	// 500
	// invalid arguments: field "amount": value 0 is less than minimum 1
	// no refundable charge "nope"
	// [map[amount:500 created_at:2026-06-01 09:00:00]]
	// main charges insert 500
}
