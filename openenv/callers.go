package openenv

import (
	"sync/atomic"
	"time"
)

// callers runs tool calls (Server.call) on goroutines it keeps for the
// next call while calls keep coming. A call, deep in the SQLite engine,
// grows its goroutine's stack: on a fresh goroutine per call, copying
// those stacks took about 7% of the server's CPU (64 sessions back to
// back). A caller idle for callerIdle exits. Safe for concurrent use once
// made by newCallers.
type callers struct {
	work    chan func()  // unbuffered: an idle caller takes the next call
	running atomic.Int64 // callers, busy or idle
}

// callerIdle is how long a caller waits for another call before it exits.
const callerIdle = time.Second

func newCallers() *callers { return &callers{work: make(chan func())} }

// do runs f on an idle caller, or on a new one when none is idle.
func (c *callers) do(f func()) {
	select {
	case c.work <- f:
	default:
		c.running.Add(1)
		go c.loop(f)
	}
}

// loop runs f, then the calls handed to it, until it has been idle for
// callerIdle.
func (c *callers) loop(f func()) {
	defer c.running.Add(-1)
	idle := time.NewTimer(callerIdle)
	defer idle.Stop()
	for {
		f()
		idle.Reset(callerIdle)
		select {
		case f = <-c.work:
		case <-idle.C:
			return
		}
	}
}
