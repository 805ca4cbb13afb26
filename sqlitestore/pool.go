package sqlitestore

import (
	"container/list"
	"sync"
)

// Pool caps the number of connections open across many stores. Stores opened
// with Options.Pool register their connection while it is open; when more
// than MaxOpen are open, the pool releases the least recently used stores that
// are neither pinned nor in a transaction (and not running a statement at that
// moment). A released store reopens on its next operation. Open connections
// may exceed MaxOpen while stores are pinned, in a transaction or busy.
//
// A Pool is safe for concurrent use.
type Pool struct {
	// MaxOpen is the number of open connections above which idle stores are
	// released. Set it before the pool is first used.
	MaxOpen int

	mu  sync.Mutex // guards lru and every member store's poolElem
	lru list.List  // stores with an open connection, most recently used first
}

// NewPool returns a pool that keeps at most maxOpen connections open (at
// least one).
func NewPool(maxOpen int) *Pool {
	return &Pool{MaxOpen: max(maxOpen, 1)}
}

// Open returns the number of connections currently open through the pool.
func (p *Pool) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lru.Len()
}

// add registers a store whose connection just opened as the most recently
// used.
func (p *Pool) add(s *Store) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.poolElem == nil {
		s.poolElem = p.lru.PushFront(s)
	} else {
		p.lru.MoveToFront(s.poolElem)
	}
}

// touch marks a store as the most recently used.
func (p *Pool) touch(s *Store) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.poolElem != nil {
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
		excess := p.lru.Len() - p.MaxOpen
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
			if s.releaseIdle() {
				released++
			}
		}
		if released == 0 {
			return // every candidate is busy; the next operation settles again
		}
	}
}
