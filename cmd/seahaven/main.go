// Command seahaven serves, checks and manages the example worlds; a world
// author's own command is the same few lines over their worlds.
package main

import (
	"github.com/seahaven/seahaven/cli"
	"github.com/seahaven/seahaven/examples/worlds/chat"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/examples/worlds/payments"
	"github.com/seahaven/seahaven/examples/worlds/shop"
)

func main() { cli.Run(company.World, payments.World, shop.World, chat.World) }
