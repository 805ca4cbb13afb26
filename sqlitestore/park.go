package sqlitestore

import (
	"slices"
	"time"
)

// Parked connections (Options.ShareKey).
//
// Opening a connection costs far more than using one: the driver gives each
// connection its own fresh memory, and first touches of fresh memory are
// page faults. A store of a shared key therefore opens its connection on a
// slot of the rebind VFS, whose file can be swapped; when the store lets the
// connection go, the connection is parked on its pool's shelf for the key,
// unbound from the file, and the next store of the key rebinds it to its own
// file. What a connection keeps between stores, and how each part is reset:
//
//   - the page cache: dropped at each rebind (ReleaseMemory), so no page of
//     another file is ever read; files of equal change counters would
//     otherwise look unchanged;
//   - the parsed schema: kept, which is why the key must name the initial
//     content and a store whose schema changed never shares again; the
//     schema cookie is also checked at every park and rebind;
//   - prepared statements: kept (same schema);
//   - locks: none while parked (normal locking mode, verified on the slot);
//   - random(), randomblob() and 'now': read the bound store's stream and
//     clock;
//   - the preupdate hook and last_insert_rowid(): removed and reset;
//   - PRAGMAs, temporary objects, attached databases, functions or hooks set
//     through the raw connection: a connection given any of these is closed,
//     never parked. total_changes() keeps counting across stores.

// shares reports whether the store's connections come from and go to its
// pool's shelf.
func (s *Store) shares() bool { return s.shelf != "" && !s.private }

// rebindLocked takes a parked connection of the store's shelf and binds it
// to the store's file; nil when there is none or it does not fit, in which
// case the caller opens a new connection.
func (s *Store) rebindLocked() *conn {
	if !s.shares() {
		return nil
	}
	for {
		cn := s.pool.unpark(s.shelf)
		if cn == nil {
			return nil
		}
		if err := cn.slot.bind(s.path); err != nil {
			// The store's file is the problem, not the connection: park it
			// again, and let a fresh open report the error.
			if !s.pool.park(s.shelf, cn) {
				guard(cn.close)
			}
			return nil
		}
		if s.bindLocked(cn) {
			return cn
		}
		guard(cn.close)
		if !s.shares() {
			return nil
		}
	}
}

// bindLocked checks the file a parked connection was just bound to and gives
// the connection the store's state. It reports false, with the connection
// unusable, when the file does not match the connection's schema (then the
// store stops sharing) or cannot be read.
func (s *Store) bindLocked(cn *conn) bool {
	// The header's schema cookie, read from the file: nothing writes the
	// file while its store is locked and its connection unbound.
	if v, err := cn.slot.cookie(); err != nil {
		return false
	} else if v != s.baseCookie {
		s.private = true
		return false
	}
	if cn.c.ReleaseMemory() != nil {
		return false
	}
	cn.c.SetLastInsertRowID(0)
	cn.random, cn.now, cn.txns = s.rng.Uint64, s.clock, 0
	cn.meta, cn.metaVersion, cn.metaDirty = nil, 0, true
	cn.layout, cn.loadSeq, cn.loadInTxn, cn.txnSeq, cn.renameSeq = new(layoutLog), 0, false, 0, 0
	cn.rolledBack, cn.changedAfter = false, false
	s.adoptMetaLocked(cn, s.baseCookie)
	return true
}

// lockModeLocked runs before a write transaction begins. A parkable
// connection of an ExclusiveLock store starts each binding in normal locking
// mode, which costs a few lock calls per transaction but nothing to park; on
// its second write transaction in one binding (a busy store) it turns to
// exclusive mode, which makes later transactions cheaper and costs two
// statements at the next park.
func (s *Store) lockModeLocked(cn *conn) error {
	if cn.slot == nil || cn.exclusive || !s.exclusive {
		return nil
	}
	if cn.txns++; cn.txns < 2 {
		return nil
	}
	// PRAGMA locking_mode acts when it is prepared, so it is never cached.
	if err := cn.c.Exec("PRAGMA locking_mode=EXCLUSIVE"); err != nil {
		return err
	}
	cn.exclusive = true
	return nil
}

// parkLocked unbinds the store's released connection and parks it on the
// shelf. It reports false when the connection must be closed instead: the
// store does not share, the connection carries state of its own, its file's
// schema changed, it still holds the file's lock, or the shelf is full.
func (s *Store) parkLocked(cn *conn) bool {
	if cn.slot == nil {
		return false
	}
	if cn.ddl || cn.exposed {
		s.private = true
	}
	if !s.shares() || cn.tainted || !cn.c.GetAutocommit() {
		return false
	}
	cn.c.PreUpdateHook(nil)
	if cn.exclusive {
		// In normal locking mode the lock goes with the next access.
		// (PRAGMA locking_mode acts when it is prepared, so it is never
		// cached.)
		if cn.c.Exec("PRAGMA locking_mode=NORMAL; SELECT 1 FROM main.sqlite_schema LIMIT 1;") != nil {
			return false
		}
		cn.exclusive = false
	}
	if cn.slot.locked() {
		return false
	}
	// With no lock held every commit is in the file.
	if v, err := cn.slot.cookie(); err != nil || v != s.baseCookie {
		s.private = err == nil
		return false
	}
	if cn.slot.unbind() != nil {
		return false
	}
	cn.store, cn.random, cn.now = nil, nil, nil
	return s.pool.park(s.shelf, cn)
}

// parked is a connection on a pool's shelf.
type parked struct {
	cn    *conn
	since time.Time
}

// MaxParked is the most connections a pool with the given MaxOpen keeps
// parked: a quarter of MaxOpen, at least one. Parked connections hold no
// file descriptor but keep their memory and memory maps.
func MaxParked(maxOpen int) int { return max(maxOpen/4, 1) }

// park puts an unbound connection on the shelf; false when the shelf is
// full (the caller closes the connection).
func (p *Pool) park(shelf string, cn *conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nParked >= MaxParked(p.MaxOpen) {
		return false
	}
	if p.shelves == nil {
		p.shelves = map[string][]parked{}
	}
	p.shelves[shelf] = append(p.shelves[shelf], parked{cn, time.Now()})
	p.nParked++
	p.startSweeperLocked()
	return true
}

// unpark takes the most recently parked connection of a shelf, or nil.
func (p *Pool) unpark(shelf string) *conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.shelves[shelf]
	if len(l) == 0 {
		return nil
	}
	cn := l[len(l)-1].cn
	l[len(l)-1] = parked{}
	if len(l) == 1 {
		delete(p.shelves, shelf)
	} else {
		p.shelves[shelf] = l[:len(l)-1]
	}
	p.nParked--
	return cn
}

// Parked returns the number of connections parked in the pool (open, bound
// to no store).
func (p *Pool) Parked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nParked
}

// CloseParked closes every parked connection. The pool's sweeper also closes
// the ones parked for IdleAfter.
func (p *Pool) CloseParked() {
	p.closeParked(time.Time{})
}

// closeParked closes the connections parked before cutoff (all of them for
// a zero cutoff).
func (p *Pool) closeParked(cutoff time.Time) {
	var due []*conn
	p.mu.Lock()
	for shelf, l := range p.shelves {
		keep := slices.DeleteFunc(l, func(pc parked) bool {
			if cutoff.IsZero() || pc.since.Before(cutoff) {
				due = append(due, pc.cn)
				return true
			}
			return false
		})
		if len(keep) == 0 {
			delete(p.shelves, shelf)
		} else {
			p.shelves[shelf] = keep
		}
	}
	p.nParked -= len(due)
	p.mu.Unlock()
	for _, cn := range due {
		guard(cn.close)
	}
	if len(due) > 0 {
		p.stopIfEmpty()
	}
}
