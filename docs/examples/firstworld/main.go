// Command firstworld is the README's first world: one table, one typed
// tool, one instance.
package main

import (
	"context"
	"fmt"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
)

var Payments = env.NewWorld(env.WorldSpec{
	Name: "payments", Version: "1.0.0",
	Schema: `CREATE TABLE charges (id TEXT PRIMARY KEY, amount INTEGER NOT NULL) STRICT;`,
})

type ChargeArgs struct {
	Amount int64 `json:"amount" doc:"Amount in cents." min:"1"`
}
type Charge struct {
	ID     string `json:"id"`
	Amount int64  `json:"amount"`
}

var CreateCharge = env.Tool(Payments, "create_charge", "Charge the account and return the charge.",
	func(c *env.Ctx, in ChargeArgs) (Charge, error) {
		ch := Charge{ID: c.IDs.UUID(), Amount: in.Amount}
		_, err := c.DB.Exec("INSERT INTO charges (id, amount) VALUES (?, ?)", ch.ID, ch.Amount)
		return ch, err
	})

func main() {
	inst, _ := composition.Open(context.Background(), Payments, composition.Options{Seed: 7})
	defer inst.Close()
	out, _ := inst.CallJSON(context.Background(), "create_charge", []byte(`{"amount": 500}`))
	fmt.Println(out.(Charge).Amount) // 500
}
