package examples_test

import (
	"errors"
	"fmt"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/payments"
)

// What is knowable at an AddWorld line panics there; what depends on the
// whole tree is an error from the seal, naming the AddWorld behind it.
func Example_authoringSealErrors() {
	company := newWorld("company")
	func() {
		defer func() { fmt.Println("panic:", recover()) }()
		company.AddWorld(payments.World, env.ToolAllowList("create_charge"), env.ToolBlockList("refund_charge"))
	}()

	chat := newWorld("chat")
	env.Tool(chat, "list_charges", "A chat tool that happens to share a name.", stub("list_charges"))
	company.AddWorld(payments.World)
	company.AddWorld(chat)
	_, err := composition.Seal(company)
	var bug *env.WorldBug
	fmt.Println(errors.As(err, &bug), err)
	// Output:
	// panic: company.AddWorld(payments) at seal_test.go:18: give ToolAllowList or ToolBlockList, not both
	// true company.AddWorld(chat, Name "chat") at seal_test.go:24: two routes produce the tool name "list_charges": this one and company.AddWorld(payments, Name "payments") at seal_test.go:23
}
