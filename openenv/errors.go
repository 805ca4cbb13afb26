package openenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/runecut"
)

// Error codes of WebSocket error frames (OpenEnv's WSErrorCode).
const (
	codeInvalidJSON = "INVALID_JSON"
	codeUnknownType = "UNKNOWN_TYPE"
	codeValidation  = "VALIDATION_ERROR"
	codeExecution   = "EXECUTION_ERROR"
	codeCapacity    = "CAPACITY_REACHED"
	codeFactory     = "FACTORY_ERROR"
	codeSession     = "SESSION_ERROR"
)

// Codes that exist only inside the server; each travels as one of the codes
// above on /ws.
const (
	codeQuery          = "QUERY_ERROR"       // an inspect statement failed
	codeUnknownSession = "UNKNOWN_SESSION"   // a session id names no session
	codeTooLarge       = "MESSAGE_TOO_LARGE" // a frame or body over MaxMessageBytes
	codeShuttingDown   = "SHUTTING_DOWN"     // Shutdown has begun
	codeReplyTooLarge  = "REPLY_TOO_LARGE"   // a reply over MaxReplyBytes
	codeEpisodeDone    = "EPISODE_DONE"      // a step after the task graded the episode done
	codeNoTask         = "NO_TASK"           // a grade request for an episode without a task
	codeSuperseded     = "SUPERSEDED"        // a request of an attempt a restore fenced
	codeNoCheckpoints  = "NO_CHECKPOINTS"    // a checkpoint or restore the backend cannot do
	codeNoCheckpoint   = "NO_CHECKPOINT"     // an episode with no checkpoint in the store
	codeMediaType      = "UNSUPPORTED_MEDIA" // a request body that is not application/json
	codeBadBody        = "BAD_BODY"          // a request body cut short by its client
	codeSlowBody       = "SLOW_BODY"         // a request body not sent within the read timeout
	codeCallRunning    = "CALL_RUNNING"      // a request that waited in vain for a call past its deadline
	// codeInfrastructure is a failure of the host (an *env.InfraError): a
	// full disk, no file descriptors left, instance files gone. It is never
	// a tool result: the client gets this error, with the fault's kind.
	codeInfrastructure = "INFRASTRUCTURE_ERROR"
)

// JSON-RPC 2.0 error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
	rpcInternalError  = -32603
	rpcServerError    = -32000

	// MCP 2026-07-28's: headers that do not match the body, or a
	// protocol version the server does not speak.
	rpcHeaderMismatch     = -32020
	rpcUnsupportedVersion = -32022
)

// codes translates every protocol error code to each transport, in one place.
var codes = map[string]struct {
	ws   string // code of the /ws error frame
	http int    // HTTP status of the stateful HTTP routes
	rpc  int    // JSON-RPC error code
}{
	codeInvalidJSON:    {codeInvalidJSON, http.StatusUnprocessableEntity, rpcParseError},
	codeUnknownType:    {codeUnknownType, http.StatusBadRequest, rpcMethodNotFound},
	codeValidation:     {codeValidation, http.StatusUnprocessableEntity, rpcInvalidParams},
	codeExecution:      {codeExecution, http.StatusInternalServerError, rpcInternalError},
	codeCapacity:       {codeCapacity, http.StatusServiceUnavailable, rpcServerError},
	codeFactory:        {codeFactory, http.StatusInternalServerError, rpcServerError},
	codeSession:        {codeSession, http.StatusInternalServerError, rpcInternalError},
	codeQuery:          {codeExecution, http.StatusBadRequest, rpcInternalError},
	codeUnknownSession: {codeSession, http.StatusNotFound, rpcInvalidParams},
	codeTooLarge:       {codeSession, http.StatusRequestEntityTooLarge, rpcInvalidRequest},
	codeShuttingDown:   {codeSession, http.StatusServiceUnavailable, rpcServerError},
	codeReplyTooLarge:  {codeExecution, http.StatusInternalServerError, rpcInternalError},
	codeEpisodeDone:    {codeSession, http.StatusConflict, rpcServerError},
	codeNoTask:         {codeSession, http.StatusConflict, rpcInvalidParams},
	codeSuperseded:     {codeSession, http.StatusConflict, rpcServerError},
	codeNoCheckpoints:  {codeSession, http.StatusNotImplemented, rpcServerError},
	codeNoCheckpoint:   {codeSession, http.StatusNotFound, rpcInvalidParams},
	codeMediaType:      {codeValidation, http.StatusUnsupportedMediaType, rpcInvalidRequest},
	codeBadBody:        {codeSession, http.StatusBadRequest, rpcInvalidRequest},
	codeSlowBody:       {codeSession, http.StatusRequestTimeout, rpcInvalidRequest},
	codeCallRunning:    {codeSession, http.StatusServiceUnavailable, rpcServerError},
	codeInfrastructure: {codeExecution, http.StatusServiceUnavailable, rpcServerError},
}

// protoError is a failure reported to a client: an error frame on /ws, an
// HTTP error on the stateful routes, a JSON-RPC error on /mcp.
type protoError struct {
	code    string       // one of the code constants
	message string       // the text the client sees
	errors  []fieldError // the failures of a validation error
	more    int          // the failures past maxProblems, counted, not listed
	extra   errorExtra   // what the error carries beside its message
	// noStep marks an infrastructure error of a call that changed nothing
	// (env.InfraError.NoStep): no step of the episode.
	noStep bool
}

// Error returns the message.
func (e *protoError) Error() string { return e.message }

// fieldError is one validation failure, in pydantic's shape.
type fieldError struct {
	Type  string          `json:"type"`
	Loc   []any           `json:"loc"`
	Msg   string          `json:"msg"`
	Input json.RawMessage `json:"input"`
	// Ctx says more of the failure, as pydantic's ctx does: a JSON decode
	// error's reason, {"error": …}, as FastAPI reports it.
	Ctx *errorCtx `json:"ctx,omitempty"`

	// more, when not 0, makes this entry a count of problems found but not
	// built, past the maxProblems a reply lists (see decodeMembers).
	more int
}

// errorCtx is a fieldError's ctx.
type errorCtx struct {
	Error string `json:"error"`
}

// frame renders e as a /ws error frame.
func (e *protoError) frame() wsFrame {
	data := errorData{Message: e.message, Code: codes[e.code].ws, errorExtra: e.extra}
	if e.code == codeValidation {
		errs := nonNil(e.errors)
		data.Errors = &errs
	}
	return wsFrame{"error", data}
}

// httpStatus is the HTTP status of e on the stateful routes.
func (e *protoError) httpStatus() int { return codes[e.code].http }

// httpBody renders e as a FastAPI-style error body: a list of failures for a
// validation error, else the message, with the code alongside.
func (e *protoError) httpBody() httpError {
	if (e.code == codeValidation || e.code == codeInvalidJSON) && len(e.errors) > 0 {
		if e.more > 0 {
			// The body is the list alone: its last entry says it was cut.
			return httpError{Detail: append(e.errors[:len(e.errors):len(e.errors)], fieldError{
				Type: "too_many_errors", Loc: []any{"body"}, Input: json.RawMessage("null"),
				Msg: fmt.Sprintf("and %d more problems, not listed (a reply lists the first %d)", e.more, maxProblems),
			})}
		}
		return httpError{Detail: e.errors, errorExtra: e.extra}
	}
	return httpError{Detail: e.message, Code: codes[e.code].ws, errorExtra: e.extra}
}

// rpcError renders e as a JSON-RPC error object.
func (e *protoError) rpcError() *rpcError {
	var data any
	if e.extra != (errorExtra{}) {
		data = e.extra
	}
	return &rpcError{Code: codes[e.code].rpc, Message: e.message, Data: data}
}

// newError returns a protoError with a formatted message.
func newError(code, format string, args ...any) *protoError {
	return &protoError{code: code, message: fmt.Sprintf(format, args...)}
}

// invalid returns a validation error listing errs, each bounded. The
// message names each offending location, so a client that shows only the
// message still learns what to fix.
func invalid(errs []fieldError) *protoError {
	listed := make([]fieldError, 0, min(len(errs), maxProblems))
	more := 0
	for _, fe := range errs {
		switch {
		case fe.more > 0:
			more += fe.more
		case len(listed) < maxProblems:
			listed = append(listed, fe.bounded())
		default:
			more++
		}
	}
	errs = listed
	msg := "Invalid message: " + summary(errs)
	if more > 0 {
		msg += fmt.Sprintf("; and %d more problems, not listed", more)
	}
	return &protoError{code: codeValidation, message: msg, errors: errs, more: more}
}

// maxProblems is the most problems a validation error lists: a message of
// a million keys nobody asked for gets a refusal of a few KiB naming the
// first ones, not a reply larger than any limit.
const maxProblems = 100

// bounded returns fe with its input, each key of its location and its
// message (which may quote the input) cut to runecut.MaxEcho by
// runecut.Echo and echoJSON; fe's own location is left as it was.
func (fe fieldError) bounded() fieldError {
	if slices.ContainsFunc(fe.Loc, func(l any) bool { k, ok := l.(string); return ok && len(k) > runecut.MaxEcho }) {
		loc := make([]any, len(fe.Loc))
		for i, l := range fe.Loc {
			if k, ok := l.(string); ok {
				l = runecut.Echo(k)
			}
			loc[i] = l
		}
		fe.Loc = loc
	}
	fe.Msg = runecut.Echo(fe.Msg)
	fe.Input = echoJSON(fe.Input)
	return fe
}

// echoJSON returns raw, an input, when it is at most runecut.MaxEcho bytes
// long; else a JSON string holding runecut.Echo of the string raw encodes,
// or of raw's own text when it is another value, so the error still shows
// how the input began.
func echoJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) <= runecut.MaxEcho {
		return raw
	}
	text := string(raw)
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		text = s
	}
	return mustEncode(runecut.Echo(text))
}

// summary names each failure of errs at its location.
func summary(errs []fieldError) string {
	parts := make([]string, len(errs))
	for i, fe := range errs {
		parts[i] = locString(fe.Loc) + ": " + fe.Msg
	}
	return strings.Join(parts, "; ")
}

// locString joins a loc as a dotted path ("data.seed").
func locString(loc []any) string {
	if len(loc) == 0 {
		return "(message)"
	}
	parts := make([]string, len(loc))
	for i, l := range loc {
		parts[i] = fmt.Sprint(l)
	}
	return strings.Join(parts, ".")
}

// capacityError is the refusal of a session at a limit; format takes the
// active sessions and the limit.
func capacityError(format string, active, limit int) *protoError {
	return &protoError{
		code:    codeCapacity,
		message: fmt.Sprintf(format, active, limit),
		extra:   errorExtra{ActiveSessions: active, MaxSessions: limit},
	}
}

// Operations an infrastructure error can fail, as the op label of
// seahaven_infrastructure_errors_total says them.
const (
	opReset   = "reset"
	opCall    = "call"
	opInspect = "inspect"
	opGrade   = "grade"
	opFence   = "fence" // reading the fence of a session's attempt, before its step or checkpoint
)

// infraFailure returns the protocol error of err when err is a failure of
// the host (an *env.InfraError), after counting it and logging it with its
// cause, paths and all; nil for any other error. The client's message is
// the InfraError's, which names no path, and the error carries its kind as
// fault and its NoStep.
func (s *Server) infraFailure(ctx context.Context, op string, err error) *protoError {
	var ie *env.InfraError
	if err == nil || !errors.As(err, &ie) {
		return nil
	}
	s.observeInfra(ctx, op, ie)
	return &protoError{
		code:    codeInfrastructure,
		message: fmt.Sprintf("infrastructure error (%s) during %s: %s", ie.Kind, op, ie.Message),
		extra:   errorExtra{Fault: ie.Kind},
		noStep:  ie.NoStep,
	}
}

// OptionError is what Backend.Open returns for a reset option that names
// something the backend does not have: a fixture or a task id, or a startup
// keyword. The server reports it as a VALIDATION_ERROR located at the
// option, with Message, which should name the value and list the ones that
// exist, and must name no server path.
type OptionError struct {
	// Option is the reset data key: "fixture", "task" or "startup".
	Option string
	// Value is the value the reset gave, the error's input: an id, or the
	// object of startup keywords.
	Value any
	// Message says what is wrong.
	Message string
}

// Error returns the message.
func (e *OptionError) Error() string { return e.Message }

// field renders e as a validation failure of the option under loc.
func (e *OptionError) field(loc []any) fieldError {
	input, _ := json.Marshal(e.Value)
	return fieldError{Type: "value_error", Loc: at(loc, e.Option), Msg: e.Message, Input: input}
}

// nonNil turns a nil slice into an empty one so it encodes as [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
