package sqlitestore

import (
	"context"
	"errors"
	"slices"
	"strconv"
)

// Frame is one level of a store's transaction: the outermost frame is a
// BEGIN IMMEDIATE transaction, inner frames are savepoints. A Frame belongs
// to its store's goroutine and lives until Commit or Rollback.
type Frame struct {
	s      *Store
	name   string // savepoint name; "" for the outermost frame
	ddlSeq uint64 // the connection's ddlSeq at Begin
	done   bool   // guarded by s.mu
}

// Begin opens a frame: BEGIN IMMEDIATE when the store is in autocommit mode,
// otherwise a SAVEPOINT inside the running transaction. Frames nest; end each
// with Commit or Rollback, innermost first.
func (s *Store) Begin(ctx context.Context) (*Frame, error) {
	var f *Frame
	err := s.do(ctx, true, func(cn *conn) error {
		s.syncFramesLocked()
		if cn.c.GetAutocommit() {
			if err := s.lockModeLocked(cn); err != nil {
				return err
			}
			if _, err := cn.exec("BEGIN IMMEDIATE", nil); err != nil {
				return err
			}
			f = &Frame{s: s, ddlSeq: cn.ddlSeq}
		} else {
			name := "sqlitestore_" + strconv.Itoa(len(s.frames)+1)
			if _, err := cn.exec("SAVEPOINT "+name, nil); err != nil {
				return err
			}
			f = &Frame{s: s, name: name, ddlSeq: cn.ddlSeq}
		}
		s.frames = append(s.frames, f)
		return nil
	})
	return f, err
}

// syncFramesLocked ends every frame when SQLite has left the transaction on
// its own (an interrupted write, an out-of-memory error, a ROLLBACK run
// through Exec).
func (s *Store) syncFramesLocked() {
	if len(s.frames) > 0 && !s.inTxnLocked() {
		for _, f := range s.frames {
			f.done = true
		}
		s.frames = nil
	}
}

// Commit commits the frame: COMMIT for the outermost frame, RELEASE for a
// savepoint. It returns ErrFrameDone after Commit or Rollback, ErrFrameOrder
// while an inner frame is open, and ErrRolledBack when SQLite already rolled
// the transaction back. When COMMIT itself fails (a deferred foreign key, for
// one) and the transaction is still open, the frame stays open for Rollback.
func (f *Frame) Commit() error {
	s := f.s
	return s.do(context.Background(), false, func(cn *conn) error {
		if f.done {
			return ErrFrameDone
		}
		s.syncFramesLocked()
		if f.done {
			return ErrRolledBack
		}
		if len(s.frames) == 0 {
			f.done = true
			return ErrRolledBack
		}
		if s.frames[len(s.frames)-1] != f {
			return ErrFrameOrder
		}
		sql := "COMMIT"
		if f.name != "" {
			sql = "RELEASE " + f.name
		}
		if _, err := cn.exec(sql, nil); err != nil {
			s.syncFramesLocked()
			return err
		}
		f.done = true
		s.frames = s.frames[:len(s.frames)-1]
		return nil
	})
}

// Rollback undoes the frame and ends it, together with any inner frames still
// open: ROLLBACK for the outermost frame, ROLLBACK TO and RELEASE for a
// savepoint. It is a no-op after Commit or Rollback, so it can be deferred.
func (f *Frame) Rollback() error {
	s := f.s
	err := s.do(context.Background(), false, func(cn *conn) error {
		if f.done {
			return nil
		}
		s.syncFramesLocked()
		i := slices.Index(s.frames, f)
		if i < 0 {
			f.done = true
			return nil
		}
		for _, inner := range s.frames[i:] {
			inner.done = true
		}
		s.frames = s.frames[:i]
		if cn.ddlSeq != f.ddlSeq {
			cn.metaDirty = true // the rollback may undo schema changes
		}
		if f.name == "" {
			_, err := cn.exec("ROLLBACK", nil)
			return err
		}
		if _, err := cn.exec("ROLLBACK TO "+f.name, nil); err != nil {
			return err
		}
		_, err := cn.exec("RELEASE "+f.name, nil)
		return err
	})
	if errors.Is(err, ErrClosed) {
		return nil // closing the store rolled the transaction back
	}
	return err
}
