// Package tools holds tool functions: nothing here may make an instance.
package tools

import (
	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
)

func Helper(ctx env.Context, w *env.World) {
	composition.Open(ctx, w, composition.Options{}) // want `composition.Open in package sh208/app/tools, whose code runs inside calls \(it is under tools/\)`
}
