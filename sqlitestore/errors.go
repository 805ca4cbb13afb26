package sqlitestore

import (
	"context"
	"errors"
	"strings"
	"syscall"

	"github.com/ncruces/go-sqlite3"

	"github.com/seahaven/seahaven/internal/runecut"
)

// Sentinel errors. Each is documented on the functions that return it.
var (
	// ErrClosed is returned by every operation on a closed Store or Inspector.
	ErrClosed = errors.New("sqlitestore: closed")
	// ErrOutOfMemory is wrapped by the error returned when a statement runs a
	// connection out of its memory cap (Options.MaxMemory).
	ErrOutOfMemory = errors.New("sqlitestore: out of memory")
	// ErrReadOnly is wrapped by the error returned when a statement on an
	// Inspector tries to write, attach, detach, change the schema or set a pragma.
	ErrReadOnly = errors.New("sqlitestore: the inspection connection is read-only")
	// ErrTransaction is wrapped by the error returned when a statement on an
	// Inspector would begin or end a transaction or a savepoint.
	ErrTransaction = errors.New("sqlitestore: the inspection connection refuses transaction control")
	// ErrFrameOrder is returned by Frame.Commit when an inner frame is still open.
	ErrFrameOrder = errors.New("sqlitestore: frame has open inner frames")
	// ErrFrameDone is returned by Frame.Commit after the frame was committed or
	// rolled back.
	ErrFrameDone = errors.New("sqlitestore: frame already committed or rolled back")
	// ErrRolledBack is returned by Frame.Commit when SQLite rolled the whole
	// transaction back on its own (an interrupted write, an out-of-memory
	// error, a RAISE(ROLLBACK) or an OR ROLLBACK conflict, a ROLLBACK on the
	// raw connection), and wrapped by the error of every Exec, Query and
	// ExecScript statement run while such a frame is open.
	ErrRolledBack = errors.New("sqlitestore: transaction was rolled back")
	// ErrTransactionControl is wrapped by the error Exec, Query and
	// ExecScript return for a statement that would begin, commit or roll
	// back a transaction, which belong to the store's frames (Begin).
	ErrTransactionControl = errors.New("sqlitestore: transaction control refused: the store's transactions are its frames")
	// ErrAttach is wrapped by the error Exec, Query and ExecScript return
	// for an ATTACH or DETACH: a store's connection reads and writes its
	// own file only, so that every change it makes is in its change log
	// and no statement reaches another store's file. Evals read every store
	// at once through an Inspector.
	ErrAttach = errors.New("sqlitestore: ATTACH and DETACH refused: a store's connection reads and writes its own file only, so that every change is in its change log")
	// ErrSavepointScope is wrapped by the error Exec, Query and ExecScript
	// return for a RELEASE or ROLLBACK TO, run in a frame, that names no
	// savepoint opened in that frame since it began or since the last frame
	// that began inside it: one opened before would undo or merge work of a
	// frame from outside it.
	ErrSavepointScope = errors.New("sqlitestore: savepoint refused: it was not opened in the current frame since its last inner frame began")
	// ErrVacuum is wrapped by the error Exec, Query and ExecScript return
	// for a VACUUM of the store's file while a capture runs: it may give
	// the rows of a table without a declared primary key other rowids, and
	// the rowid keys their changes, so the changes captured before it
	// would name other rows than those after it. A VACUUM INTO another
	// file is allowed.
	ErrVacuum = errors.New("sqlitestore: VACUUM refused while changes are captured: it may renumber the rowids that key the changes of tables without a primary key")
	// ErrPragma is wrapped by the error Exec, Query and ExecScript return
	// for a PRAGMA that sets journal_mode, writable_schema or
	// schema_version: the store rolls failed calls back through its
	// journal, and change capture reads the schema SQLite keeps. Reading
	// them is allowed.
	ErrPragma = errors.New("sqlitestore: PRAGMA refused: the store keeps this setting its own")
	// ErrCaptureOrder is returned by Capture.Finish when a capture started after
	// it is still running.
	ErrCaptureOrder = errors.New("sqlitestore: capture finished before the captures started after it")
	// ErrCaptureDone is returned by Capture.Finish on a capture that already ended.
	ErrCaptureDone = errors.New("sqlitestore: capture already finished")
	// ErrStorage is wrapped by every *Error that reports a failure of the
	// store's files rather than of a statement: an I/O error (SQLITE_IOERR),
	// a full disk (SQLITE_FULL), a file that cannot be opened
	// (SQLITE_CANTOPEN, a file moved or deleted while open), a file that is
	// not a database or is corrupt; and so is every error of a store's own
	// file operations (creating, writing or opening its file) that the file
	// system failed. Such an error says nothing about the
	// SQL that ran into it: the same statement on healthy storage would
	// have run. When the operating system said why (out of space, out of
	// file descriptors), the error wraps its syscall.Errno too.
	ErrStorage = errors.New("sqlitestore: storage failure")
)

// Error is an error reported by SQLite, translated by this package. Its
// message is SQLite's own ("sqlitestore: UNIQUE constraint failed:
// charges.id"), and it wraps the driver's error, so errors.Is and errors.As
// see both.
type Error struct {
	// Code is SQLite's primary result code (19 for SQLITE_CONSTRAINT).
	Code int
	// ExtendedCode is SQLite's extended result code (1555 for
	// SQLITE_CONSTRAINT_PRIMARYKEY).
	ExtendedCode int
	// Message is SQLite's message, without any prefix.
	Message string
	// Statement is the statement of a script that failed, when the error came
	// from running several statements; empty otherwise.
	Statement string

	causes []error
}

// isStorageCode reports whether an SQLite result code reports a failure of
// the files under a connection rather than of its statement (see
// ErrStorage). Of the SQLITE_READONLY codes only those about the file are:
// writing through a read-only connection is the statement's fault.
func isStorageCode(code sqlite3.ExtendedErrorCode) bool {
	switch code.Code() {
	case sqlite3.IOERR, sqlite3.FULL, sqlite3.CANTOPEN, sqlite3.CORRUPT, sqlite3.NOTADB, sqlite3.NOLFS, sqlite3.PROTOCOL:
		return true
	}
	switch code {
	case sqlite3.READONLY_DBMOVED, sqlite3.READONLY_DIRECTORY, sqlite3.READONLY_CANTINIT, sqlite3.READONLY_RECOVERY, sqlite3.READONLY_CANTLOCK:
		return true
	}
	return false
}

// Error returns "sqlitestore: " followed by SQLite's message, and the failing
// statement of a script when there is one.
func (e *Error) Error() string {
	if e.Statement == "" {
		return "sqlitestore: " + e.Message
	}
	return "sqlitestore: " + e.Message + " (in statement: " + abbreviate(e.Statement, 200) + ")"
}

// Unwrap returns the driver's error and, where they apply, the context's
// error, ErrOutOfMemory or ErrReadOnly.
func (e *Error) Unwrap() []error { return e.causes }

// IsConstraint reports whether err is a constraint violation reported by
// SQLite (UNIQUE, NOT NULL, CHECK, FOREIGN KEY, PRIMARY KEY).
func IsConstraint(err error) bool {
	e, ok := errors.AsType[*Error](err)
	return ok && e.Code == int(sqlite3.CONSTRAINT)
}

// formatError is the one place where errors from the SQLite driver become
// package errors. It keeps SQLite's message and wraps the driver error; when
// ctx is done and SQLite reports an interruption, the result also wraps
// ctx.Err() and its cause (context.Cause), and says the cause. Errors that
// did not come from the driver are returned unchanged.
func formatError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*Error](err); ok {
		return err
	}
	var code sqlite3.ExtendedErrorCode
	switch v := err.(type) {
	case *sqlite3.Error:
		code = v.ExtendedCode()
	case sqlite3.ErrorCode:
		code = v.ExtendedCode()
	case sqlite3.ExtendedErrorCode:
		code = v
	default:
		return err
	}
	msg := strings.TrimPrefix(err.Error(), code.Error())
	msg = strings.TrimPrefix(msg, ": ")
	if msg == "" {
		msg = strings.TrimPrefix(code.Error(), "sqlite3: ")
	}
	out := &Error{
		Code:         int(code.Code()),
		ExtendedCode: int(code),
		Message:      msg,
		causes:       []error{err},
	}
	if code.Code() == sqlite3.INTERRUPT && ctx != nil && ctx.Err() != nil {
		out.Message = "interrupted: " + context.Cause(ctx).Error()
		out.causes = append(out.causes, doneCauses(ctx)...)
	}
	if isStorageCode(code) {
		out.causes = append(out.causes, ErrStorage)
		if code.Code() == sqlite3.FULL && !errors.Is(err, syscall.ENOSPC) {
			// Stores set no page limit: SQLITE_FULL is the file system.
			out.causes = append(out.causes, syscall.ENOSPC)
		}
	}
	return out
}

// newError is an *Error of the primary result code code that SQLite did
// not report.
func newError(code sqlite3.ErrorCode, msg string, causes ...error) *Error {
	return &Error{Code: int(code), ExtendedCode: int(code), Message: msg, causes: causes}
}

// contextError reports a context that was done before a statement started.
func contextError(ctx context.Context) error {
	return newError(sqlite3.INTERRUPT, "interrupted: "+context.Cause(ctx).Error(), doneCauses(ctx)...)
}

// doneCauses is why the done ctx is done: its error and, when it was
// cancelled with a cause (context.WithCancelCause), that cause too.
func doneCauses(ctx context.Context) []error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == err {
		return []error{err}
	}
	return []error{err, cause}
}

// guard runs fn and turns a driver panic for SQLITE_NOMEM into an error.
// Any other panic is a bug and is re-raised.
func guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			nomem, ok := r.(error)
			if !ok || !strings.Contains(nomem.Error(), "out of memory") {
				panic(r)
			}
			err = newError(sqlite3.NOMEM, "out of memory (the connection's memory cap was reached)", ErrOutOfMemory, nomem)
		}
	}()
	return fn()
}

// fullError makes a failed write say what most likely caused it. The
// driver reports every failed write, running out of space included, as
// SQLITE_IOERR_WRITE ("disk I/O error") and drops the operating system's
// error; and a rollback journal kept in memory gives the space back before
// the error returns. So when the file system holding dir is still out of
// space, the error says the disk is full and wraps syscall.ENOSPC;
// otherwise it says that the write failed and the disk may be full. The
// result keeps SQLite's codes.
func fullError(err error, dir string) error {
	e, ok := errors.AsType[*Error](err)
	if !ok || e.ExtendedCode != int(sqlite3.IOERR_WRITE) || errors.Is(err, syscall.ENOSPC) {
		return err
	}
	if free, ok := FreeSpace(dir); ok && free < spaceFloor {
		e.Message = "database or disk is full: the file system has no space left"
		e.causes = append(e.causes, syscall.ENOSPC)
	} else if !strings.HasSuffix(e.Message, mayBeFull) {
		e.Message += mayBeFull
	}
	return err
}

// spaceFloor is the free space below which a failed write is taken to be
// the file system running out: less than two of SQLite's largest pages.
const spaceFloor = 128 << 10

// mayBeFull ends the message of a failed write whose cause is unknown.
const mayBeFull = ": writing to the file failed (the disk may be full)"

// readOnlyError marks an authorization failure on an Inspector, and a
// write its read-only files refused (one to an R*Tree's shadow table, which
// the authorizer lets the R*Tree prepare).
func readOnlyError(err error) error {
	if e, ok := errors.AsType[*Error](err); ok && (e.Code == int(sqlite3.AUTH) || e.Code == int(sqlite3.READONLY)) {
		e.Message += " (the inspection connection is read-only)"
		e.causes = append(e.causes, ErrReadOnly)
	}
	return err
}

// transactionError is the refusal of the transaction-control statement stmt
// (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE or ROLLBACK TO) on an
// Inspector.
func transactionError(stmt string) error {
	return newError(sqlite3.AUTH, stmt+" is not allowed on the inspection connection: each query reads in a transaction of its own, "+
		"which ends with the query, so that no lock is held between queries", ErrTransaction)
}

// abbreviate trims s, folds its runs of white space into one space and
// cuts it after at most n bytes, at a character boundary, with an
// ellipsis.
func abbreviate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return runecut.Prefix(s, n) + "…"
}
