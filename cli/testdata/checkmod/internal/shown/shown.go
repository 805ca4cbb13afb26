// Package shown declares a world in an internal package at the module root,
// which the check program can import.
package shown

import "github.com/seahaven/seahaven/env"

// World is a world that checks clean.
var World = env.NewWorld(env.WorldSpec{Name: "shown", Version: "1.0.0"})
