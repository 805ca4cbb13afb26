package sqlitestore

import (
	"container/list"
	"sync"
	"time"
)

// DefaultIdleAfter is how long a store of a pool may sit unpinned and unused
// before the pool releases its connection, when Pool.IdleAfter is zero.
const DefaultIdleAfter = 2 * time.Second

// minSweepEvery bounds how often the sweeper wakes.
const minSweepEvery = 10 * time.Millisecond

// Pool manages the connections of many stores. Stores opened with
// Options.Pool register their connection while it is open, and the pool
// releases the connections of stores that are neither pinned nor in a
// transaction (and not running a statement at that moment) in two ways:
//
//   - Idle release: a store unpinned and unused for IdleAfter is released by
//     a background sweeper. The sweeper goroutine starts with the first open
//     connection and exits when none is left, so an unused pool holds no
//     goroutine.
//   - Eviction: when more than MaxOpen connections are open, the least
//     recently used stores are released at once. Open connections may exceed
//     MaxOpen while stores are pinned, in a transaction or busy.
//
// A released store reopens on its next operation. Connections of stores
// opened with Options.ShareKey are parked in the pool when released, to be
// rebound to the next store of the same key (at most MaxOpen/4 are parked;
// the sweeper closes those parked for IdleAfter).
//
// A Pool is safe for concurrent use.
type Pool struct {
	// MaxOpen is the number of open connections above which idle stores are
	// released. Set it before the pool is first used, or call SetLimits.
	MaxOpen int
	// IdleAfter is how long a store may stay unpinned and unused before its
	// connection is released. Zero means DefaultIdleAfter; negative turns
	// idle release off. Set it before the pool is first used, or call
	// SetLimits.
	IdleAfter time.Duration

	mu        sync.Mutex    // guards MaxOpen and IdleAfter after first use, lru, sweepStop, shelves, nParked, metas, and every member store's poolElem and lastUse
	lru       list.List     // stores with an open connection, most recently used first
	sweepStop chan struct{} // closed to make the running sweeper goroutine exit; nil when none runs
	shelves   map[string][]parked
	nParked   int
	metas     map[string]map[string]*tableMeta // see sharedMeta
}

// sweepers counts the running sweeper goroutines of every pool.
var sweepers sync.WaitGroup

// maxSharedMetas bounds how many schemas' capture metadata a pool keeps.
const maxSharedMetas = 256

// sharedMeta returns the capture metadata shareMeta kept for key (a
// ShareKey and the untracked tables), or nil. Stores of one ShareKey start
// from the same file, so until one changes its schema they share one
// read-only copy of it instead of loading their own: ten thousand live
// instances would otherwise hold ten thousand copies of each node's.
func (p *Pool) sharedMeta(key string) map[string]*tableMeta {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.metas[key]
}

// shareMeta keeps meta, which no one changes, for key. When the pool keeps
// maxSharedMetas already, it forgets them first (checkpoints make a new
// ShareKey each; the stores keep their own references).
func (p *Pool) shareMeta(key string, meta map[string]*tableMeta) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.metas == nil || len(p.metas) >= maxSharedMetas {
		p.metas = make(map[string]map[string]*tableMeta)
	}
	p.metas[key] = meta
}

// NewPool returns a pool that keeps at most maxOpen connections open (at
// least one) and releases stores idle for DefaultIdleAfter.
func NewPool(maxOpen int) *Pool {
	return &Pool{MaxOpen: max(maxOpen, 1), IdleAfter: DefaultIdleAfter}
}

// SetLimits changes MaxOpen (at least one) and IdleAfter while the pool is
// in use. The new limits apply from the next operation and sweep.
func (p *Pool) SetLimits(maxOpen int, idleAfter time.Duration) {
	p.mu.Lock()
	p.MaxOpen, p.IdleAfter = max(maxOpen, 1), idleAfter
	p.mu.Unlock()
	p.settle()
}

// Open returns the number of connections currently open through the pool.
func (p *Pool) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lru.Len()
}

// IdleDelay returns how long a store may stay unused before the pool
// releases it: IdleAfter with its default applied, or zero when idle release
// is off. Owners of other connections (an inspection view) release theirs
// after the same delay.
func (p *Pool) IdleDelay() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idleAfterLocked()
}

// idleAfterLocked returns the effective idle delay; zero or less means off.
func (p *Pool) idleAfterLocked() time.Duration {
	switch {
	case p.IdleAfter == 0:
		return DefaultIdleAfter
	case p.IdleAfter < 0:
		return 0
	}
	return p.IdleAfter
}

// add registers a store whose connection just opened as the most recently
// used, and starts the sweeper if idle release is on and it is not running.
func (p *Pool) add(s *Store) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.lastUse = time.Now()
	if s.poolElem == nil {
		s.poolElem = p.lru.PushFront(s)
	} else {
		p.lru.MoveToFront(s.poolElem)
	}
	p.startSweeperLocked()
}

// startSweeperLocked starts the sweeper if idle release is on and it is not
// running.
func (p *Pool) startSweeperLocked() {
	if idle := p.idleAfterLocked(); idle > 0 && p.sweepStop == nil {
		stop := make(chan struct{})
		p.sweepStop = stop
		sweepers.Add(1)
		go p.sweepLoop(stop)
	}
}

// stopSweeperLocked makes the running sweeper exit; the next connection
// opened or parked starts a new one.
func (p *Pool) stopSweeperLocked() {
	if p.sweepStop != nil {
		close(p.sweepStop)
		p.sweepStop = nil
	}
}

// stopIfEmpty stops the sweeper when the pool holds no open or parked
// connection, at once rather than at its next sweep, which may be IdleAfter
// away.
func (p *Pool) stopIfEmpty() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lru.Len()+p.nParked == 0 {
		p.stopSweeperLocked()
	}
}

// touch marks a store as the most recently used.
func (p *Pool) touch(s *Store) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.poolElem != nil {
		s.lastUse = time.Now()
		p.lru.MoveToFront(s.poolElem)
	}
}

// remove unregisters a store whose connection closed.
func (p *Pool) remove(s *Store) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.poolElem != nil {
		p.lru.Remove(s.poolElem)
		s.poolElem = nil
	}
}

// settle releases idle stores, least recently used first, until no more than
// MaxOpen connections are open or no candidate can be released now. It never
// waits for a store's lock while holding the pool's: lock order is store, then
// pool.
func (p *Pool) settle() {
	for {
		p.mu.Lock()
		excess := p.lru.Len() - max(p.MaxOpen, 1)
		if excess <= 0 {
			p.mu.Unlock()
			return
		}
		var cands []*Store
		for e := p.lru.Back(); e != nil && len(cands) < 2*excess+4; e = e.Prev() {
			if s := e.Value.(*Store); s.pins.Load() == 0 {
				cands = append(cands, s)
			}
		}
		p.mu.Unlock()
		released := 0
		for _, s := range cands {
			if released == excess {
				break
			}
			if s.releaseIdle(time.Time{}) {
				released++
			}
		}
		if released == 0 {
			return // every candidate is busy; the next operation settles again
		}
	}
}

// sweepLoop is the sweeper goroutine: it releases the stores idle for
// IdleAfter, then sleeps until the next one is due, and exits once no
// connection is open or parked, idle release is turned off, or stop is
// closed.
func (p *Pool) sweepLoop(stop chan struct{}) {
	defer sweepers.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		next, more := p.sweep(time.Now(), stop)
		if !more {
			return
		}
		t.Reset(next)
	}
}

// sweep releases the stores due at now and returns how long to sleep before
// the next sweep. more is false when the sweeper should exit: then it has
// been stopped under the lock, so the next add starts a new sweeper.
func (p *Pool) sweep(now time.Time, stop chan struct{}) (next time.Duration, more bool) {
	p.releaseDue(now)
	if idle := p.IdleDelay(); idle > 0 {
		p.closeParked(now.Add(-idle))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sweepStop != stop {
		return 0, false // stopped while it swept; a new sweeper may run
	}
	idle := p.idleAfterLocked()
	if idle <= 0 || p.lru.Len()+p.nParked == 0 {
		p.stopSweeperLocked()
		return 0, false
	}
	// Sleep until the least recently used store or the oldest parked
	// connection is due, but at least an eighth of IdleAfter (and
	// minSweepEvery): stores falling due together are released in one
	// sweep, and a due store that could not be released (pinned, busy or in
	// a transaction) does not make the sweeper spin.
	next = idle
	if p.lru.Len() > 0 {
		next = p.lru.Back().Value.(*Store).lastUse.Add(idle).Sub(now)
	}
	for _, l := range p.shelves {
		next = min(next, l[0].since.Add(idle).Sub(now))
	}
	return max(next, idle/8, minSweepEvery), true
}

// releaseDue releases every store unpinned and unused for IdleAfter at now
// that is neither in a transaction nor busy.
func (p *Pool) releaseDue(now time.Time) {
	p.mu.Lock()
	idle := p.idleAfterLocked()
	if idle <= 0 {
		p.mu.Unlock()
		return
	}
	cutoff := now.Add(-idle)
	var due []*Store
	for e := p.lru.Back(); e != nil; e = e.Prev() {
		s := e.Value.(*Store)
		if s.lastUse.After(cutoff) {
			break // the rest were used more recently
		}
		if s.pins.Load() == 0 {
			due = append(due, s)
		}
	}
	p.mu.Unlock()
	for _, s := range due {
		s.releaseIdle(cutoff)
	}
}
