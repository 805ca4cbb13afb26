package crm_test

import (
	"context"
	"fmt"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/docs/examples/crm"
)

// The agent's surface: the CRM's own tools in registration order, then what
// payments contributes under its prefix, minus the blocked refund_charge.
func Example() {
	ctx := context.Background()
	inst, err := composition.Open(ctx, crm.World, composition.Options{Seed: 7})
	if err != nil {
		panic(err)
	}
	defer inst.Close()
	for _, t := range inst.Tools() {
		fmt.Println(t.Name)
	}
	out, err := inst.CallJSON(ctx, "add_customer", []byte(`{"email": "ada@example.com", "plan": "pro"}`))
	fmt.Printf("%+v %v\n", out, err)
	// Output:
	// add_customer
	// list_customers
	// charge_customer
	// pay_create_charge
	// pay_list_charges
	// {ID:6cd6ee76-a303-4182-ae08-08d724f9fe42 Email:ada@example.com Plan:pro Seats:1} <nil>
}
