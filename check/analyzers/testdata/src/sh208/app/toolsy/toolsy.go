// Package toolsy only looks like a tools package.
package toolsy

import (
	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
)

func Helper(ctx env.Context, w *env.World) {
	composition.Open(ctx, w, composition.Options{})
}
