// Package auth is middleware: nothing here may make an instance.
package auth

import (
	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
)

func Gate(ctx env.Context, w *env.World) {
	composition.Open(ctx, w, composition.Options{}) // want `under middleware/`
}
