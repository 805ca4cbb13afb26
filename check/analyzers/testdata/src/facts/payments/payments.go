// Package payments declares a world that adds nothing.
package payments

import "github.com/seahaven/seahaven/env"

var World = env.NewWorld(env.WorldSpec{Name: "payments", Version: "1.0.0"}) // want World:"world payments children \\[\\]"

// unexported worlds get facts too.
var ledger = env.NewWorld(env.WorldSpec{"ledger", "1.0.0", "", ""}) // want ledger:"world ledger children \\[\\]"

var notAWorld = 3

var _ = ledger
var _ = notAWorld
