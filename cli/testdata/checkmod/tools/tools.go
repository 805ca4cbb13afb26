// Package tools holds helpers for tool functions.
package tools

import (
	"context"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
)

// Scratch makes a throwaway instance: never from code that runs in a call.
func Scratch(ctx context.Context, w *env.World) error {
	inst, err := composition.Open(ctx, w, composition.Options{})
	if err != nil {
		return err
	}
	return inst.Close()
}
