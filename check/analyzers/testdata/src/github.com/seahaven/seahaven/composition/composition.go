// Package composition is a minimal stand-in for Seahaven's engine, with the
// same Open signature (env.Context standing in for context.Context), for the analyzers' tests.
package composition

import "github.com/seahaven/seahaven/env"

type Options struct{ Fixture string }

type Instance struct{}

func Open(ctx env.Context, world *env.World, opts Options) (*Instance, error) { return nil, nil }
