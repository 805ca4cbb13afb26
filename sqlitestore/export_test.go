package sqlitestore

import (
	"github.com/ncruces/go-sqlite3"
	"reflect"
	"time"
)

func init() { verifyEvents = true }

// NoVerifyEvents turns off, for tb, the cross-check of captured images
// against rows read back, which benchmarks must not pay.
func NoVerifyEvents(tb interface{ Cleanup(func()) }) {
	verifyEvents = false
	tb.Cleanup(func() { verifyEvents = true })
}

// ReleaseDue runs the idle release of one sweep as if the time were now,
// without touching the sweeper goroutine.
func (p *Pool) ReleaseDue(now time.Time) { p.releaseDue(now) }

// Sweeping reports whether the pool's sweeper goroutine is running.
func (p *Pool) Sweeping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sweepStop != nil
}

// WaitSweepers waits until no pool's sweeper goroutine runs.
func WaitSweepers() { sweepers.Wait() }

// Shares reports whether the store's connections are parked and rebound.
func (s *Store) Shares() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shares()
}

// LockedExclusive reports whether the store's open connection is in
// exclusive locking mode.
func (s *Store) LockedExclusive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cn != nil && s.cn.exclusive
}

// FileMapped reports whether the store's open connection reads and writes
// its file through a memory mapping.
func (s *Store) FileMapped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cn != nil && s.cn.slot != nil && s.cn.slot.mapped()
}

// BeginForTest opens a read transaction on the inspector's connection, as
// a statement that slipped past the authorizer would, and reads in it.
func (i *Inspector) BeginForTest() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.ending = true
	defer func() { i.ending = false }()
	return i.cn.c.Exec("BEGIN; SELECT count(*) FROM main.sqlite_schema;")
}

// Autocommit reports whether the inspector's connection is outside any
// transaction.
func (i *Inspector) Autocommit() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.cn.c.GetAutocommit()
}

// MetaTables returns the address of the capture metadata the store's open
// connection uses (0 when it has none loaded).
func (s *Store) MetaTables() uintptr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cn == nil || s.cn.meta == nil {
		return 0
	}
	return reflect.ValueOf(s.cn.meta).Pointer()
}

// StmtMemory is the memory the inspector's prepared statements hold.
func (i *Inspector) StmtMemory() int64 {
	i.mu.Lock()
	defer i.mu.Unlock()
	n, _, _ := i.cn.c.Status(sqlite3.DBSTATUS_STMT_USED, false)
	return n
}
