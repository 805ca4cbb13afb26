package cli_test

import (
	"context"
	"fmt"
	"os"

	"github.com/seahaven/seahaven/cli"
	"github.com/seahaven/seahaven/examples/worlds/chat"
	"github.com/seahaven/seahaven/examples/worlds/payments"
)

// A program that carries the command over its own worlds runs a
// subcommand as a library call; the first world is the default of --world.
// (A world author's whole main is cli.Run(library.World).)
func ExampleNew() {
	m := cli.New(payments.World, chat.World)
	m.Stdout = os.Stdout
	fmt.Println("default world:", m.Default)
	if err := m.Run(context.Background(), []string{"fixtures", "-h"}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// default world: payments
	// Usage: seahaven fixtures build|list|verify [--world W] [--dir DIR]
	//
	//   build    run the world's fixture generator into DIR (the world's FixturesDir;
	//            a world that embeds its fixtures needs --dir, its source directory)
	//   list     list the fixtures of DIR (default: the world's own)
	//   verify   make an instance from each fixture: hashes, shape, named fixtures
	//            (a fixture of a world this binary does not serve: its hashes)
	//
	// Worlds: chat, payments
}
