package cli

import (
	"github.com/seahaven/seahaven/examples/worlds/chat"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/examples/worlds/payments"
	"github.com/seahaven/seahaven/examples/worlds/shop"
)

// exampleMain is the program cmd/seahaven runs: the CLI over the example
// worlds, company first.
func exampleMain() *Main { return New(company.World, payments.World, shop.World, chat.World) }
