package env

import (
	"errors"
	"fmt"
	"runtime"
)

// Tool error kinds. They are the OpenEnv error_type values an agent sees.
const (
	// KindExecution is a tool that ran and failed.
	KindExecution = "execution_error"
	// KindInvalidArgs is a call whose arguments do not match the tool's input schema.
	KindInvalidArgs = "invalid_args"
	// KindNotFound is a call naming no tool on the surface.
	KindNotFound = "tool_not_found"
	// KindTimeout is a call interrupted by its deadline.
	KindTimeout = "timeout"
)

// ToolError is an error an agent may see. Tools return it (or a type of their
// own) to say what went wrong in the product's own words. The engine also
// returns it for calls refused before a tool runs: an unknown tool name
// (KindNotFound) or bad arguments (KindInvalidArgs).
type ToolError struct {
	// Kind is one of the Kind constants.
	Kind string
	// Message is the text the agent sees.
	Message string
	// Err is the underlying cause, if any; it is not shown to the agent.
	Err error
}

// Error returns the message.
func (e *ToolError) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *ToolError) Unwrap() error { return e.Err }

// Errorf returns a *ToolError of KindExecution with a formatted message.
func Errorf(format string, args ...any) *ToolError {
	return &ToolError{Kind: KindExecution, Message: fmt.Sprintf(format, args...)}
}

// ErrNoStep is wrapped by the *ToolError of an agent call that is no step
// of the episode: one that ran nothing (it waited for the instance's
// previous call until its context ended) or that its caller cancelled
// (its context ended, other than by its deadline) before it changed
// anything. The engine took back its call number and its step of a
// step-mode clock, as for InfraError.NoStep, and neither an episode nor a
// server counts or records it, so the same call made again runs and
// replays as this one would have.
var ErrNoStep = errors.New("the call is no step of the episode")

// WorldBug is a mistake of a world's author: a bad registration, a tree that
// does not seal, a handle used after its call, an instance opened inside a
// call. Misuse visible at a registration line panics with a *WorldBug from
// that line; whole-tree problems are returned as errors wrapping one.
type WorldBug struct {
	// Message says what is wrong. Messages the spec quotes match it exactly.
	Message string
	// Where is the file:line of the registration at fault, when one is known.
	Where string
	// Err is the underlying cause, if any.
	Err error
}

// Error returns the message.
func (b *WorldBug) Error() string { return b.Message }

// Unwrap returns the cause.
func (b *WorldBug) Unwrap() error { return b.Err }

// Bugf returns a *WorldBug with a formatted message.
func Bugf(format string, args ...any) *WorldBug {
	return &WorldBug{Message: fmt.Sprintf(format, args...)}
}

// mustWorld panics with a *WorldBug at where when w, the world a
// registration (what) is made on, is nil: a world assigned in an init
// function is still nil when the package's variables are initialised, and
// a registration on it would fail with a nil pointer dereference instead.
func mustWorld(w *World, what, where string) {
	if w == nil {
		panic(&WorldBug{Message: what + ": the world is nil: a world assigned in an init function is still nil when package-level variables " +
			"are initialised; declare it as a package-level variable, var World = env.NewWorld(...)", Where: where})
	}
}

// callerLine returns "file:line" of the call to the function that calls it.
func callerLine() string {
	_, file, line, ok := runtime.Caller(2)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s:%d", file, line)
}

// Infrastructure fault kinds: what failed on the host, as InfraError.Kind
// and the fault label of the server's metrics say it.
const (
	// FaultDiskFull is a file system out of space (or over its quota).
	FaultDiskFull = "disk_full"
	// FaultTooManyFiles is a process or system out of file descriptors.
	FaultTooManyFiles = "too_many_open_files"
	// FaultStorage is any other failure of the files an instance lives in:
	// an I/O error, a file or directory that is gone or cannot be opened.
	FaultStorage = "storage_error"
)

// InfraError is a failure of the host an instance runs on (its disk, its
// file descriptors, its files), not of the world or of the agent: the same
// call on a healthy host would have run. The engine returns it instead of
// whatever a tool made of the failure, so it never becomes a tool result an
// agent is trained on; a server reports it as its own protocol error.
// Message is safe to show a client (it names no server path); Err keeps the
// cause, paths and all, for the server's log.
type InfraError struct {
	// Kind is one of the Fault constants.
	Kind string
	// Message says what failed and what became of the operation, without
	// naming any file.
	Message string
	// Err is the underlying cause; it is not shown to clients.
	Err error
	// NoStep says the failure was an agent call's that changed nothing, so
	// it is no step of the episode: the engine took back its call number
	// and its step of a step-mode clock, and neither an episode nor a
	// server counts it, so a retry once the host recovers runs as the call
	// would have. The engine decides it, once, for the error a call
	// returns; it is false for a call that changed something and for any
	// other operation.
	NoStep bool
}

// Error returns the message and the cause.
func (e *InfraError) Error() string {
	if e.Err == nil {
		return e.Message
	}
	return e.Message + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *InfraError) Unwrap() error { return e.Err }
