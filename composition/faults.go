package composition

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/sqlitestore"
)

// Fault returns err as an *env.InfraError when it reports a failure of the
// host rather than of a world or an agent, and nil otherwise: a store's
// storage failure (sqlitestore.ErrStorage), any file-system error (an
// *fs.PathError), or an operating system out of space or of file
// descriptors. what says what became of the operation ("the call could not
// complete") and ends the error's message, which names no path. An
// *env.InfraError in err's chain is returned as it is. Code around the
// engine that touches files of its own (recording trajectories) uses it to
// report its failures the way the engine reports its own.
//
// Instances touch files only in their own directory, which no call names,
// so any file-system error is the host's.
func Fault(err error, what string) *env.InfraError {
	if err == nil {
		return nil
	}
	if ie, ok := errors.AsType[*env.InfraError](err); ok {
		return ie
	}
	var pe *fs.PathError
	switch {
	case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT):
		return &env.InfraError{Kind: env.FaultDiskFull, Message: "the server's disk is full; " + what, Err: err}
	case errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE):
		return &env.InfraError{Kind: env.FaultTooManyFiles, Message: "the server has too many open files; " + what, Err: err}
	case errors.Is(err, sqlitestore.ErrStorage) || errors.As(err, &pe) || errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EROFS):
		return &env.InfraError{Kind: env.FaultStorage, Message: "the server's storage failed; " + what, Err: err}
	}
	return nil
}
