// Package company adds worlds in every way a name can be spelled.
package company

import (
	"facts/payments"

	"github.com/seahaven/seahaven/env"
)

const chatName = "chat"

var Chat = env.NewWorld(env.WorldSpec{Name: "chat", Version: "1.0.0"}) // want Chat:"world chat children \\[\\]"

var World = env.NewWorld(env.WorldSpec{Name: "company", Version: "0.1.0"}) // want World:"world company children \\[payments payments_eu chat audit\\]"

func init() {
	World.AddWorld(payments.World, env.ToolPrefix("pay_"))
	World.AddWorld(payments.World, env.Name("payments_eu"), env.Store("eu"))
	World.AddWorld(Chat, env.Name(chatName))
}

var _ = func() bool {
	World.AddWorld(Chat, env.Name("audit"), env.ToolAllowList())
	return true
}()
