// Command seahaven serves, checks and manages Seahaven worlds.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := NewMain()
	if err := m.Run(ctx, os.Args[1:]); err != nil {
		m.fail(err)
		stop()
		os.Exit(exitCode(err))
	}
}
