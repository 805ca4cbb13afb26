// Command local declares a world in a main package.
package main

import (
	"fmt"

	"example.com/checkmod/worlds/ledger"

	"github.com/seahaven/seahaven/env"
)

// World is declared in a main package, which nothing can import.
var World = env.NewWorld(env.WorldSpec{Name: "local", Version: "1.0.0"})

func main() {
	World.AddWorld(ledger.World)
	fmt.Println(World.Name())
}
