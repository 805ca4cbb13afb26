package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Frame is one level of a store's transaction: the outermost frame is a
// BEGIN IMMEDIATE transaction, inner frames are savepoints. A Frame belongs
// to its store's goroutine and lives until Commit or Rollback.
type Frame struct {
	s      *Store
	name   string // savepoint name; "" for the outermost frame
	ddlSeq uint64 // the connection's ddlSeq at Begin
	// rollbacks is the connection's count of transactions rolled back at
	// Begin: once it moves, the transaction the frames began is gone,
	// even if the raw connection has begun another since.
	rollbacks uint64

	// s.mu guards done and savepoints.
	done bool
	// savepoints are the savepoints a user of the store opened in this
	// frame (SAVEPOINT) since it began or, when a frame began inside it,
	// since that frame began: the ones RELEASE and ROLLBACK TO may name.
	savepoints []string
}

// Begin opens a frame: BEGIN IMMEDIATE when the store is in autocommit mode,
// otherwise a SAVEPOINT inside the running transaction. Frames nest; end each
// with Commit or Rollback, innermost first. While a frame is open whose
// transaction SQLite rolled back on its own, Begin fails with an error
// wrapping ErrRolledBack: a new transaction would commit what the lost one's
// owner means to roll back.
func (s *Store) Begin(ctx context.Context) (*Frame, error) {
	var f *Frame
	err := s.do(ctx, true, func(cn *conn) error {
		if s.lostLocked(cn) {
			return errTxnLost
		}
		fr := &Frame{s: s, ddlSeq: cn.ddlSeq, rollbacks: cn.rollbacks}
		sql := "BEGIN IMMEDIATE"
		if cn.c.GetAutocommit() {
			s.rawCommit = false
			s.harvestWritesLocked() // what autocommitted before it stays
			if err := s.lockModeLocked(cn); err != nil {
				return err
			}
		} else {
			fr.name = frameSavepoint + strconv.Itoa(len(s.frames)+1)
			sql = "SAVEPOINT " + fr.name
		}
		if _, err := cn.exec(sql, nil); err != nil {
			return err
		}
		f = fr
		if len(s.frames) > 0 {
			// The savepoints opened before the new frame can no longer be
			// named: releasing or rolling back to one would undo or merge
			// the new frame's work from outside it.
			s.frames[len(s.frames)-1].savepoints = nil
		}
		s.frames = append(s.frames, f)
		return nil
	})
	return f, err
}

// errRawCommit is what Commit returns for a frame whose transaction a
// COMMIT or END on the raw connection rolled back.
var errRawCommit = fmt.Errorf("%w: a COMMIT or END run on the raw connection (Store.Conn) while frames were open rolled it back, for the store's transactions are its frames", ErrRolledBack)

// frameSavepoint begins the names of the savepoints of inner frames.
const frameSavepoint = "sqlitestore_"

// errTxnLost is returned for a statement run while a frame is open whose
// transaction SQLite has rolled back.
var errTxnLost = fmt.Errorf("%w: statements are refused until its frames end", ErrRolledBack)

// allowLocked refuses a statement of Exec, Query or ExecScript as Exec's
// doc says. A statement run while a frame's transaction is lost would run
// in autocommit, and its writes would stay when the frame's owner rolls back.
func (s *Store) allowLocked(cn *conn, text string, info stmtInfo) error {
	switch {
	case info.kind == stmtTxn || info.kind == stmtOwnSavepoint || info.kind == stmtSavepoint && cn.c.GetAutocommit():
		return fmt.Errorf("%w: %s", ErrTransactionControl, abbreviate(text, 200))
	case s.lostLocked(cn):
		return errTxnLost
	case s.outOfScopeLocked(info):
		return fmt.Errorf("%w: %s", ErrSavepointScope, abbreviate(text, 200))
	case len(s.captures) > 0 && vacuumsInPlace(text):
		return fmt.Errorf("%w: %s", ErrVacuum, abbreviate(text, 200))
	case info.pragma != "":
		return fmt.Errorf("%w (%s): %s", ErrPragma, strings.ToLower(info.pragma), abbreviate(text, 200))
	}
	return nil
}

// vacuumsInPlace reports whether stmt, one statement, is a VACUUM of the
// store's own file rather than a VACUUM INTO another. SQLite's authorizer
// sees no VACUUM when it is prepared, so the text tells, read as SQLite's
// grammar has it: VACUUM, an optional schema name, then INTO or not,
// with comments anywhere between.
func vacuumsInPlace(stmt string) bool {
	rest, ok := keyword(stmt, "vacuum")
	if !ok {
		return false
	}
	if _, into := keyword(rest, "into"); into {
		return false
	}
	_, into := keyword(skipName(skipFiller(rest)), "into")
	return !into
}

// keyword reports whether sql, past leading whitespace and comments,
// begins with the keyword kw (in any case) as a whole word, and returns
// what follows it.
func keyword(sql, kw string) (string, bool) {
	sql = skipFiller(sql)
	if !hasPrefixFold(sql, kw) || len(sql) > len(kw) && isIdentByte(sql[len(kw)]) {
		return "", false
	}
	return sql[len(kw):], true
}

// isDropOrAlter reports whether sql begins with the keyword DROP or ALTER.
func isDropOrAlter(sql string) bool {
	_, drop := keyword(sql, "drop")
	_, alter := keyword(sql, "alter")
	return drop || alter
}

// skipName returns what follows the name sql begins with: an identifier,
// or a name quoted as SQLite quotes them ("…", […], `…` or '…', a quote
// doubled inside). A text that begins with no name is returned unchanged.
func skipName(sql string) string {
	if sql == "" {
		return sql
	}
	closing := sql[0]
	switch closing {
	case '"', '`', '\'':
	case '[':
		closing = ']'
	default:
		return strings.TrimLeftFunc(sql, func(r rune) bool { return r >= utf8.RuneSelf || isIdentByte(byte(r)) })
	}
	for i := 1; i < len(sql); i++ {
		if sql[i] != closing {
			continue
		}
		if closing != ']' && i+1 < len(sql) && sql[i+1] == closing {
			i++ // a doubled quote
			continue
		}
		return sql[i+1:]
	}
	return ""
}

// isIdentByte reports whether b may continue an unquoted SQL identifier.
func isIdentByte(b byte) bool {
	return b == '_' || b == '$' || b >= '0' && b <= '9' || b|0x20 >= 'a' && b|0x20 <= 'z' || b >= utf8.RuneSelf
}

// noteSavepointLocked updates the innermost frame's savepoints after a
// savepoint statement ran.
func (s *Store) noteSavepointLocked(info stmtInfo) {
	if len(s.frames) == 0 {
		return
	}
	f := s.frames[len(s.frames)-1]
	switch i := f.savepoint(info.savepoint); info.kind {
	case stmtSavepoint:
		f.savepoints = append(f.savepoints, info.savepoint)
	case stmtRelease:
		if i >= 0 {
			f.savepoints = f.savepoints[:i] // it and every savepoint opened after it
		}
	case stmtRollbackTo:
		if i >= 0 {
			f.savepoints = f.savepoints[:i+1] // the savepoints opened after it
		}
	}
}

// rawSavepointLocked decides, for a savepoint statement prepared on the
// raw connection while frames are open, whether it may run, and notes it
// as Exec notes its own (noteSavepointLocked). A RELEASE or ROLLBACK TO
// may name only a savepoint opened since the innermost frame began, and
// no statement the savepoints of the store's own frames: a ROLLBACK TO
// of one opened before a DB.Transaction or nested call would undo work
// whose records that frame already kept, and a RELEASE would merge the
// frame into the transaction around it.
func (s *Store) rawSavepointLocked(info stmtInfo) bool {
	if len(s.frames) == 0 {
		return true
	}
	if info.kind == stmtOwnSavepoint || s.outOfScopeLocked(info) {
		return false
	}
	s.noteSavepointLocked(info)
	return true
}

// outOfScopeLocked reports whether info is a RELEASE or ROLLBACK TO,
// while frames are open, of a savepoint not opened since the innermost
// frame began (ErrSavepointScope).
func (s *Store) outOfScopeLocked(info stmtInfo) bool {
	return (info.kind == stmtRelease || info.kind == stmtRollbackTo) && len(s.frames) > 0 &&
		s.frames[len(s.frames)-1].savepoint(info.savepoint) < 0
}

// savepoint returns the index in f.savepoints of the savepoint SQLite finds
// by name (the latest, names compared without case), or -1.
func (f *Frame) savepoint(name string) int {
	for i := len(f.savepoints) - 1; i >= 0; i-- {
		if SameName(f.savepoints[i], name) {
			return i
		}
	}
	return -1
}

// lostLocked reports whether frames are open whose transaction has ended
// (see endLostLocked). A transaction the raw connection began after that
// is not theirs: committed as theirs, it would keep writes whose records
// went with the frames. cn is nil when the connection is closed.
func (s *Store) lostLocked(cn *conn) bool {
	return len(s.frames) > 0 && (cn == nil || cn.c.GetAutocommit() || cn.rollbacks != s.frames[0].rollbacks)
}

// endLostLocked ends f and the frames inside it when SQLite has left the
// transaction on its own (an interrupted write, an out-of-memory error, a
// RAISE(ROLLBACK), a ROLLBACK on the raw connection) and reports whether it
// had. The frames around f stay open, so the store keeps refusing
// statements (errTxnLost) until their owners end them too: the owner of an
// outer frame means to roll back whatever runs before it ends. When the
// last frame ends, a transaction the raw connection began since the loss
// is rolled back: what it wrote was written under the lost frames, whose
// records are gone.
//
// cn is nil when the connection is closed: a connection is not released
// while frames are open, so its transaction ended with it.
func (s *Store) endLostLocked(cn *conn, f *Frame) bool {
	if !s.lostLocked(cn) {
		return false
	}
	s.endFramesLocked(f)
	if len(s.frames) == 0 && cn != nil {
		cn.rollbackOpen()
	}
	s.dropWritesLocked() // the transaction's pages were rolled back
	switch {
	case cn == nil:
		// The metadata kept from the closed connection may have been
		// loaded inside the lost transaction.
		s.meta = nil
	case cn.ddlSeq != f.ddlSeq:
		cn.metaDirty = true // the rollback undid the frame's schema changes
	}
	return true
}

// endFramesLocked ends f and the frames inside it, and reports whether f was
// open.
func (s *Store) endFramesLocked(f *Frame) bool {
	f.done = true
	i := slices.Index(s.frames, f)
	if i < 0 {
		return false
	}
	for _, inner := range s.frames[i:] {
		inner.done = true
	}
	s.frames = s.frames[:i]
	return true
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
		if s.endLostLocked(cn, f) || !slices.Contains(s.frames, f) {
			f.done = true
			if s.rawCommit {
				return errRawCommit
			}
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
			if f.name != "" {
				err = s.loseLocked(cn, err)
			} else {
				s.dropWritesLocked() // the transaction rolled back
			}
			s.endLostLocked(cn, f)
			return err
		}
		s.harvestWritesLocked()
		s.endFramesLocked(f)
		return nil
	})
}

// loseLocked rolls back the transaction of a frame whose savepoint is gone
// (err, its RELEASE or ROLLBACK TO, failed): a RELEASE or ROLLBACK TO on
// the raw connection of a savepoint opened before the frame ended it, and
// merged the frame's work into the transaction around it, where the
// frame's owner can neither commit it alone nor undo it. Every frame of
// the store is then lost (see endLostLocked).
func (s *Store) loseLocked(cn *conn, err error) error {
	cn.rollbackOpen()
	return fmt.Errorf("%w: a savepoint of its frames was gone: %w", ErrRolledBack, err)
}

// Rollback undoes the frame and ends it, together with any inner frames still
// open: ROLLBACK for the outermost frame, ROLLBACK TO and RELEASE for a
// savepoint. It is a no-op after Commit or Rollback, so it can be deferred.
func (f *Frame) Rollback() error {
	s := f.s
	err := s.do(context.Background(), false, func(cn *conn) error {
		if f.done || s.endLostLocked(cn, f) || !s.endFramesLocked(f) {
			return nil
		}
		if cn.ddlSeq != f.ddlSeq {
			cn.metaDirty = true // the rollback may undo schema changes
		}
		if f.name == "" {
			_, err := cn.exec("ROLLBACK", nil)
			s.dropWritesLocked()
			return err
		}
		if _, err := cn.exec("ROLLBACK TO "+f.name, nil); err != nil {
			return s.loseLocked(cn, err)
		}
		_, err := cn.exec("RELEASE "+f.name, nil)
		return err
	})
	if errors.Is(err, ErrClosed) {
		return nil // closing the store rolled the transaction back
	}
	return err
}
