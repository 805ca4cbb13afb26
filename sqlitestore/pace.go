package sqlitestore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// PaceBurst is the running time a Pacer lets its queries bank while idle:
// a short query never waits, a long one runs at the Pacer's rate once it
// has used the burst.
const PaceBurst = 50 * time.Millisecond

// A Pacer bounds the share of the CPU that the queries given it (in
// ReadLimit.Pacer) take together, so that a few clients sending
// CPU-heavy read-only queries cannot starve everything else the process
// runs. While a paced query runs, SQLite polls it every 1,000 virtual
// machine steps; at each poll the running time since the previous one is
// charged to the Pacer, and when the paced queries together have run more
// than their share of the wall-clock time since the Pacer was made (plus
// PaceBurst banked while idle), the query pauses until the share catches
// up. Running time is read as wall-clock time between polls, so a query
// that the scheduler holds off the CPU is charged as if it ran: under load
// paced queries slow down more, never less. A pause ends early when the
// query's context is done.
//
// A nil *Pacer paces nothing. A Pacer is safe for concurrent use.
type Pacer struct {
	rate float64 // running time allowed per unit of wall-clock time

	mu     sync.Mutex    // guards tokens, last and paused
	tokens time.Duration // running time available now; negative: owed
	last   time.Time     // when tokens was last credited
	paused time.Duration // total time queries spent paused
}

// NewPacer returns a Pacer whose queries together run at most cpus CPUs'
// worth of time (0.5: half of one CPU; 2: two CPUs). cpus must be > 0.
func NewPacer(cpus float64) *Pacer {
	if cpus <= 0 {
		panic("sqlitestore: NewPacer with cpus <= 0")
	}
	return &Pacer{rate: cpus, tokens: PaceBurst, last: time.Now()}
}

// Paused returns the total time paced queries have spent paused.
func (p *Pacer) Paused() time.Duration {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// charge takes ran from the available running time and returns how long
// the query should pause to stay within the share.
func (p *Pacer) charge(ran time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.tokens = min(PaceBurst, p.tokens+time.Duration(float64(now.Sub(p.last))*p.rate))
	p.last = now
	p.tokens -= ran
	if p.tokens >= 0 {
		return 0
	}
	return time.Duration(float64(-p.tokens) / p.rate)
}

// interrupt returns the context a paced query's connection is given as its
// interrupt context: SQLite's progress handler calls its Err every 1,000
// virtual machine steps, which is where the query is charged and paused.
// With a nil p it returns ctx.
func (p *Pacer) interrupt(ctx context.Context) context.Context {
	if p == nil {
		return ctx
	}
	c := &pacedContext{Context: ctx, p: p}
	c.last.Store(time.Now().UnixNano())
	return c
}

// pacedContext is ctx whose Err charges the running time since its last
// call to a Pacer and pauses while the Pacer says so. Only the connection
// running the query holds it (as its interrupt context).
type pacedContext struct {
	context.Context
	p    *Pacer
	last atomic.Int64 // UnixNano of the previous poll
}

// Err charges the time since the previous poll and pauses when the share
// is used up, then returns the parent's error.
func (c *pacedContext) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	now := time.Now()
	wait := c.p.charge(time.Duration(now.UnixNano() - c.last.Swap(now.UnixNano())))
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.Done():
			t.Stop()
		}
		end := time.Now()
		c.p.mu.Lock()
		c.p.paused += end.Sub(now)
		c.p.mu.Unlock()
		// The pause is not running time.
		c.last.Store(end.UnixNano())
	}
	return c.Context.Err()
}
