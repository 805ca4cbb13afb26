package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/ncruces/go-sqlite3"
)

// do runs fn with the store's connection under its lock, with ctx installed as
// the connection's interrupt, driver panics for SQLITE_NOMEM recovered and
// driver errors translated. When open is false and the connection is
// released, fn receives nil instead of a reopened connection. A panic on its
// way up through do leaves the store unlocked.
func (s *Store) do(ctx context.Context, open bool, fn func(cn *conn) error) error {
	err := func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.doLocked(ctx, open, fn)
	}()
	if s.pool != nil {
		s.pool.settle()
	}
	return err
}

func (s *Store) doLocked(ctx context.Context, open bool, fn func(cn *conn) error) error {
	if s.closed {
		return ErrClosed
	}
	if ctx.Err() != nil {
		return contextError(ctx)
	}
	err := guard(func() error {
		if s.cn == nil && !open {
			return formatError(ctx, fn(nil))
		}
		cn, err := s.connLocked(ctx)
		if err != nil {
			return err
		}
		if cn.c.GetAutocommit() {
			if cn.layout.rawRename && !cn.alterPending() {
				v, err := schemaVersion(cn.c)
				if err != nil {
					return err
				}
				cn.layout.forgetRaw(v != cn.metaVersion)
			}
			cn.txnSeq = cn.layout.seq // what is noted before this cannot be rolled back
		}
		old, own := cn.c.SetInterrupt(ctx), cn.own
		cn.own = true
		defer func() {
			cn.c.SetInterrupt(old)
			cn.own = own
			cn.erasing, cn.colDrop = "", nil // a DROP's erasing ends with the operation that ran it
		}()
		return formatError(ctx, fn(cn))
	})
	if err != nil {
		err = fullError(err, filepath.Dir(s.path))
	}
	if errors.Is(err, ErrOutOfMemory) {
		if s.cn != nil {
			// The driver panicked past the statement's own noteUndo; running
			// out of memory may have rolled the transaction back.
			s.cn.noteUndo()
		}
		s.afterOOMLocked()
	}
	return err
}

// connLocked returns the open connection, opening it if it was released.
func (s *Store) connLocked(ctx context.Context) (*conn, error) {
	if s.cn != nil {
		if s.pool != nil {
			s.pool.touch(s)
		}
		return s.cn, nil
	}
	if err := s.materializeLocked(); err != nil {
		return nil, err
	}
	cn := s.rebindLocked()
	if cn == nil {
		var err error
		if cn, err = s.openLocked(ctx); err != nil {
			return nil, err
		}
	}
	cn.store = s
	if len(s.captures) > 0 {
		s.installHookLocked(cn)
	}
	s.cn = cn
	s.dropWritesLocked() // what it wrote for another store, or in its setup, is not this store's
	if s.pool != nil {
		s.pool.add(s)
	}
	return cn, nil
}

// openLocked opens a new connection to the store's file and sets it up.
func (s *Store) openLocked(ctx context.Context) (*conn, error) {
	uri := fileURI(s.path, "rw")
	var slot *rebindFile
	if s.shares() {
		var err error
		if slot, uri, err = newSlot(s.path); err != nil {
			return nil, &opError{"open", s.path, err}
		}
	}
	cn, err := openConn(ctx, uri, s.maxMemory, s.clock, s.rng.Uint64)
	if err != nil {
		if slot != nil {
			slot.Close()
		}
		return nil, &opError{"open", s.path, err}
	}
	cn.slot = slot
	ok := false
	defer func() {
		if !ok { // an error, or a panic on its way up
			cn.close()
		}
	}()
	if err := s.setupLocked(ctx, cn); err != nil {
		return nil, &opError{"open", s.path, err}
	}
	ok = true
	return cn, nil
}

// setupLocked applies the store-only settings to a new connection.
func (s *Store) setupLocked(ctx context.Context, cn *conn) error {
	old := cn.c.SetInterrupt(ctx)
	defer cn.c.SetInterrupt(old)
	// The file's own schema must be readable: this also rejects files that
	// are not databases.
	if _, err := cn.query("SELECT count(*) FROM main.sqlite_schema", nil); err != nil {
		return formatError(ctx, err)
	}
	// Instance stores are disposable copies: no fsync, and the rollback
	// journal in memory rather than WAL (the package doc says why).
	if err := cn.c.Exec("PRAGMA synchronous=OFF;"); err != nil {
		return formatError(ctx, err)
	}
	if s.exclusive && cn.slot == nil {
		// A parkable connection turns exclusive on its second write
		// transaction (see lockModeLocked).
		if err := cn.c.Exec("PRAGMA locking_mode=EXCLUSIVE;"); err != nil {
			return formatError(ctx, err)
		}
		cn.exclusive = true
	}
	if mode, err := pragma(cn.c, "PRAGMA journal_mode=MEMORY", (*sqlite3.Stmt).ColumnText); err != nil {
		return formatError(ctx, err)
	} else if mode != "memory" {
		return fmt.Errorf("sqlitestore: journal_mode stayed %q instead of memory", mode)
	}
	if s.meta != nil {
		if v, err := schemaVersion(cn.c); err == nil {
			s.adoptMetaLocked(cn, v)
		}
	}
	// A frame's transaction may end without the store ending it (see
	// Store.lostLocked); every end by rollback is counted.
	cn.c.RollbackHook(func() { cn.rollbacks++ })
	return formatError(ctx, cn.c.SetAuthorizer(cn.watchSchema))
}

// adoptMetaLocked gives a connection the capture metadata the store saved
// from its last connection when the file's schema cookie v is the one it was
// loaded at: the file is changed only through this store, so the metadata
// still holds.
func (s *Store) adoptMetaLocked(cn *conn, v int64) {
	if s.meta != nil && s.metaVersion == v {
		cn.meta, cn.metaVersion, cn.metaDirty = s.meta, v, false
	}
}

// pragma runs a PRAGMA that returns one value, without caching the
// statement, and reads the value with col (the zero value when there is no
// row).
func pragma[T any](c *sqlite3.Conn, sql string, col func(*sqlite3.Stmt, int) T) (T, error) {
	var v T
	st, _, err := c.Prepare(sql)
	if err != nil {
		return v, err
	}
	defer st.Close()
	if st.Step() {
		v = col(st, 0)
	}
	return v, st.Err()
}

// afterOOMLocked drops a connection that ran out of memory, which returns
// its memory to the system; one in a transaction, or with frames open whose
// transaction the error rolled back, is kept so the frames can still end.
func (s *Store) afterOOMLocked() {
	if s.cn == nil || s.holdsTxnLocked() {
		return
	}
	s.cn.tainted = true // close it, not park it
	guard(s.closeConnLocked)
}

// closeConnLocked closes the connection, if open, and leaves the pool.
func (s *Store) closeConnLocked() error {
	if s.cn == nil {
		return nil
	}
	s.harvestWritesLocked()
	cn := s.cn
	s.cn = nil
	s.undo++
	if s.pool != nil {
		s.pool.remove(s)
	}
	s.meta = nil
	if cn.meta != nil && !cn.metaDirty {
		s.meta, s.metaVersion = cn.meta, cn.metaVersion
	}
	if s.parkLocked(cn) {
		return nil
	}
	err := cn.close()
	if s.pool != nil {
		s.pool.stopIfEmpty()
	}
	return formatError(context.Background(), err)
}

func (s *Store) inTxnLocked() bool {
	return s.cn != nil && !s.cn.c.GetAutocommit()
}

// holdsTxnLocked reports whether the store's connection must stay open: it
// is in a transaction, or frames are open whose transaction SQLite rolled
// back on its own, which their owners still have to end on it.
func (s *Store) holdsTxnLocked() bool {
	return len(s.frames) > 0 || s.inTxnLocked()
}
