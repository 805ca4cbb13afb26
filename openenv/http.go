package openenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/seahaven/seahaven/internal/runecut"
	"github.com/seahaven/seahaven/schemas"
)

// SessionHeader selects the session of POST /reset, POST /step, GET /state
// and POST /inspect. Without it they use one server-wide default HTTP
// session, made on first use. A reset naming an id that is not live makes a
// session with that id; the other routes answer 404 for it. Every reply of
// these routes carries the header with the session's id.
const SessionHeader = "X-Seahaven-Session"

// sessionIDPattern is what a client-chosen session id may look like.
var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,255}$`)

// routes builds the HTTP handler.
func (s *Server) routes() http.Handler {
	// In production mode the description omits the episode routes.
	openAPI := openAPIDoc
	if s.cfg.Production {
		openAPI = productionOpenAPI
	}
	r := s.router(openAPI)
	r.Get("/fixtures", s.serveFixtures)
	r.Get("/composition", s.serveComposition)
	r.Get("/tasks", s.serveTasks)
	r.Get("/sessions", s.serveSessions)
	r.Get("/sessions/{ref}/watch", s.serveWatch)
	r.Get("/debug/runtime", s.serveRuntime)
	r.Get("/ready", s.serveProbe(false))
	r.Get("/accepting", s.serveProbe(true))
	r.Get("/checkpoints/latest", s.serveLatest)
	r.Method(http.MethodGet, "/metrics", s.serveMetrics())
	if !s.cfg.Production {
		r.Post("/reset", serveOp(s, parseReset, true, (*session).resetReply))
		r.Post("/step", serveOp(s, parseStepBody, false, (*session).postStep))
		r.Get("/state", serveOp(s, nil, false, withoutData((*session).state)))
		r.Post("/inspect", serveOp(s, parseInspect, false, (*session).inspect))
		r.Post("/grade", serveOp(s, noBody, false, withoutData((*session).grade)))
		r.Post("/checkpoint", serveOp(s, noBody, false, withoutData((*session).checkpoint)))
	}
	r.Post("/mcp", s.serveMCP)
	r.Delete("/mcp", s.serveMCPDelete)
	r.Get("/ws", s.serveWS)
	return r
}

// router returns a router with the routes both listeners serve but POST
// and DELETE /mcp, which the agent listener marks as its own, and with
// openAPI's description at /openapi.json.
func (s *Server) router(openAPI func() ([]byte, error)) chi.Router {
	r := chi.NewRouter()
	// HEAD is GET without the body (probes and load balancers send it).
	r.Use(middleware.GetHead)
	r.NotFound(notFound(r))
	r.MethodNotAllowed(methodNotAllowed(r))
	r.Get("/health", serveHealth)
	r.Get("/metadata", s.serveMetadata)
	r.Get("/schema", s.serveSchema)
	r.Get("/openapi.json", serveOpenAPI(openAPI))
	return r
}

// writeJSON writes v as a JSON response. It is for the server's own small
// replies (health, readiness, a refusal); every other reply goes through
// Server.respond, which bounds it.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := encode(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = encode(detail{fmt.Sprintf("response cannot be encoded as JSON: %v", err)})
	}
	writeHeader(w, status)
	w.Write(b)
}

// writeHeader writes a JSON reply's header: its content type, and on a 503
// (a refusal the client may retry: at capacity, a call still running, a
// shutdown, a failing host) Retry-After: 1, which a client or proxy that
// retries waits for.
func writeHeader(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
}

// respond writes v as a JSON response of at most MaxReplyBytes, within
// WriteTimeout. A larger one is replaced by the error that says so.
func (s *Server) respond(w http.ResponseWriter, status int, v any) {
	b, err := encode(v)
	switch {
	case err != nil:
		status = http.StatusInternalServerError
		b = mustEncode(detail{fmt.Sprintf("response cannot be encoded as JSON: %v", err)})
	case len(b) > s.cfg.MaxReplyBytes:
		perr := s.replyTooLarge(len(b))
		status, b = perr.httpStatus(), mustEncode(perr.httpBody())
	}
	s.writeBody(w, status, b)
}

// writeRPC writes v, a JSON-RPC response or a batch's responses, as
// respond does: a reply over MaxReplyBytes is replaced by the JSON-RPC
// error that says so, under id, in a standard client's shape when std is
// set (see standardReply).
func (s *Server) writeRPC(w http.ResponseWriter, v any, id json.RawMessage, std bool) {
	shape := func(resp rpcResponse) rpcResponse {
		if std {
			return standardReply(resp)
		}
		return resp
	}
	b, err := encode(v)
	if err == nil && len(b) > s.cfg.MaxReplyBytes {
		perr := s.replyTooLarge(len(b))
		if b, err = encode(shape(rpcProto(id, perr))); err == nil && len(b) > s.cfg.MaxReplyBytes {
			b, err = encode(shape(rpcProto(nullID, perr))) // the id itself is too long
		}
	}
	if err != nil {
		s.respond(w, http.StatusOK, shape(rpcFailure(nullID, rpcInternalError, fmt.Sprintf("response cannot be encoded as JSON: %v", err), nil)))
		return
	}
	s.writeBody(w, http.StatusOK, b)
}

// replyTooLarge logs a reply of n bytes over MaxReplyBytes, with the log
// attributes attrs before its own, and returns the error sent instead.
func (s *Server) replyTooLarge(n int, attrs ...any) *protoError {
	s.log.Warn("openenv: a reply exceeds the reply limit", append(attrs, "bytes", n, "limit", s.cfg.MaxReplyBytes)...)
	return newError(codeReplyTooLarge, "The reply of %d bytes exceeds the limit of %d bytes on a reply (the server's max-reply-bytes)", n, s.cfg.MaxReplyBytes)
}

// writeBody writes an encoded JSON response, bounded by WriteTimeout: a
// client that stops reading cannot hold the handler.
func (s *Server) writeBody(w http.ResponseWriter, status int, b []byte) {
	if d := s.cfg.WriteTimeout; d > 0 {
		// It covers the flush after the handler returns too; net/http
		// clears it once the response is finished. A writer that cannot
		// set one (ErrNotSupported) writes without.
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
	}
	writeHeader(w, status)
	w.Write(b)
}

// writeError writes a protoError in FastAPI's error shape.
func (s *Server) writeError(w http.ResponseWriter, perr *protoError) {
	s.respond(w, perr.httpStatus(), perr.httpBody())
}

// readBody reads a request body of at most MaxMessageBytes. On a failure
// it returns the part of the body it read with the error.
//
// A body whose Content-Length already exceeds MaxMessageBytes is refused
// at once, unread, and the connection is closed after the reply: waiting
// for bytes the server will not take would answer a client that sends
// less than it announced only at the read timeout.
//
// The error of a failed read is logged, not sent: it names the
// connection's addresses.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *protoError) {
	if r.ContentLength > s.cfg.MaxMessageBytes {
		w.Header().Set("Connection", "close")
		return nil, s.bodyTooLarge()
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxMessageBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return b, s.bodyTooLarge()
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.log.Debug("openenv: a request body was not sent within the read timeout", "method", r.Method, "path", r.URL.Path, "read", len(b), "err", err)
		return b, newError(codeSlowBody, "Reading the request body failed: it was not sent within the server's read timeout")
	case err != nil:
		s.log.Debug("openenv: a request body was cut short by its client", "method", r.Method, "path", r.URL.Path, "read", len(b), "err", err)
		msg := "the client sent less than it announced"
		if strings.Contains(err.Error(), "chunk") { // net/http's "malformed chunked encoding", "invalid byte in chunk length"
			msg = "its chunked encoding does not parse"
		}
		return b, newError(codeBadBody, "Reading the request body failed: %s", msg)
	}
	if isJSON, isUTF8 := jsonMediaType(r.Header.Get("Content-Type")); len(b) > 0 && (!isJSON || !isUTF8) {
		// A page of any site may send a text/plain body without asking
		// first (a "simple" cross-origin request); a JSON body is never one.
		// JSON is UTF-8 (RFC 8259; MCP's messages MUST be): a body declared
		// in another charset would be misread as UTF-8.
		how := "send the body as application/json"
		if isJSON {
			how += ", in UTF-8 (charset=utf-8, or no charset)"
		}
		return nil, newError(codeMediaType, "Content-Type %q is not supported: %s", runecut.Echo(r.Header.Get("Content-Type")), how)
	}
	if ce := r.Header.Get("Content-Encoding"); len(b) > 0 && ce != "" && !strings.EqualFold(ce, "identity") {
		// Read as it came, a compressed body would be refused as JSON that
		// does not parse, which says nothing of why.
		return nil, newError(codeMediaType, "Content-Encoding %q is not supported: send the body uncompressed", runecut.Echo(ce))
	}
	return b, nil
}

// bodyTooLarge is the error of a request body over MaxMessageBytes.
func (s *Server) bodyTooLarge() *protoError {
	return newError(codeTooLarge, "Request body exceeds the limit of %d bytes", s.cfg.MaxMessageBytes)
}

// jsonMediaType reports whether a Content-Type header names JSON,
// application/json or a +json type with any parameters, and whether it
// leaves the body in UTF-8: no charset, or utf-8 (or its label utf8) in any
// case.
func jsonMediaType(ct string) (isJSON, isUTF8 bool) {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return false, false
	}
	cs, ok := params["charset"]
	return true, !ok || strings.EqualFold(cs, "utf-8") || strings.EqualFold(cs, "utf8")
}

// httpSession returns the session a request names with SessionHeader, or
// the default HTTP session, and whether the request made it. create allows
// making a session for an id that is not live (reset only).
func (s *Server) httpSession(r *http.Request, create bool) (ss *session, made bool, perr *protoError) {
	if n := len(r.Header.Values(SessionHeader)); n > 1 {
		return nil, false, invalid([]fieldError{{Type: "duplicate_key", Loc: []any{"header", SessionHeader},
			Msg: repeatedHeader(SessionHeader, n), Input: mustEncode(r.Header.Values(SessionHeader))}})
	}
	id := r.Header.Get(SessionHeader)
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == "" {
		if s.defaultHTTP != nil {
			return s.defaultHTTP, false, nil
		}
		ss, perr := s.newSessionLocked(TransportHTTP, "")
		if perr != nil {
			return nil, false, perr
		}
		s.defaultHTTP = ss
		return ss, true, nil
	}
	if ss, ok := s.sessions[id]; ok {
		if create && s.shutdown && ss.ctx.Err() != nil {
			// A reset of a session the shutdown has stopped (drained, say,
			// its restore sent back here) starts an episode this server
			// will not hold: it is refused as a new session would be, and
			// not told to restore the checkpoint it may be restoring.
			return nil, false, shuttingDown()
		}
		return ss, false, nil
	}
	if !create {
		return nil, false, s.unknownSession(r.Context(), id)
	}
	if !sessionIDPattern.MatchString(id) {
		return nil, false, invalid([]fieldError{{Type: "string_pattern_mismatch", Loc: []any{"header", SessionHeader},
			Msg: "String should match pattern '" + sessionIDPattern.String() + "'", Input: mustEncode(id)}})
	}
	ss, perr = s.newSessionLocked(TransportHTTP, id)
	return ss, perr == nil, perr
}

// heldSession returns the live session r names (SessionHeader given once,
// or none: the default session), if this server holds one; it makes none.
func (s *Server) heldSession(r *http.Request) *session {
	if len(r.Header.Values(SessionHeader)) > 1 {
		return nil
	}
	s.mu.Lock()
	ss := s.defaultHTTP
	if id := r.Header.Get(SessionHeader); id != "" {
		ss = s.sessions[id]
	}
	s.mu.Unlock()
	if ss == nil || ss.ctx.Err() != nil {
		return nil
	}
	return ss
}

// repeatedHeader is the message refusing a request that sends the header
// name n times: of a header naming a session, the server would act on one
// value and a proxy routing on it perhaps on another.
func repeatedHeader(name string, n int) string {
	return fmt.Sprintf("Header %s is sent %d times: send it once", name, n)
}

// serveOp serves an HTTP episode route: act's result, given the request's
// body read with parse (nil: the route reads no body), on the live session
// the request names (X-Seahaven-Session, or the default session; create as
// httpSession).
//
// A session the request made whose first act failed (a refused reset) is
// ended: it holds no episode, and must hold no slot, nor be stepped as if
// the reset had succeeded.
func serveOp[T, R any](s *Server, parse func([]byte, []any) (T, []fieldError), create bool, act func(*session, context.Context, T) (R, *protoError)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, perr := parseBody(s, w, r, parse)
		var ss *session
		var made bool
		if perr == nil {
			ss, made, perr = s.httpSession(r, create)
		}
		if perr != nil {
			if ss = s.heldSession(r); ss != nil {
				// Refused before it reached its live session: still the
				// session's reply, which names it for a proxy to learn.
				w.Header().Set(SessionHeader, ss.id)
			}
			s.writeError(w, perr)
			return
		}
		res, perr := act(ss, r.Context(), req)
		if perr != nil {
			if !made || !ss.discardUnused() {
				w.Header().Set(SessionHeader, ss.id)
			}
			s.writeError(w, perr)
			return
		}
		if made && create && r.Header.Get(SessionHeader) != "" {
			// A named session lives here now: a server that drained it must
			// no longer send its requests back to that checkpoint.
			if rs, ok := s.backend.(Restorer); ok {
				if err := rs.Undrained(ss.id); err != nil {
					s.log.Warn("openenv: the session's drain record could not be removed", "session", ss.ref, "err", err)
				}
			}
		}
		w.Header().Set(SessionHeader, ss.id)
		s.respond(w, http.StatusOK, res)
	}
}

// withoutData is act as the act of a route whose body carries no data.
func withoutData[R any](act func(*session, context.Context) (R, *protoError)) func(*session, context.Context, struct{}) (R, *protoError) {
	return func(ss *session, ctx context.Context, _ struct{}) (R, *protoError) { return act(ss, ctx) }
}

// postStep runs the step of a POST /step body. timeout_s, when given,
// shortens the call's timeout (it never extends StepTimeout).
func (ss *session) postStep(ctx context.Context, req stepBody) (stepReply, *protoError) {
	timeout := ss.srv.cfg.StepTimeout
	if req.TimeoutS != nil {
		// At least a nanosecond: a duration of 0 would be no bound at all.
		d := max(time.Duration(float64(*req.TimeoutS)*float64(time.Second)), time.Nanosecond)
		if timeout <= 0 || d < timeout {
			timeout = d
		}
	}
	return ss.step(ctx, req.action, timeout)
}

// parseBody reads a request's body, when parse is not nil: JSON with no
// key named twice in one object, parsed ({} when empty) with parse, at
// ["body"].
func parseBody[T any](s *Server, w http.ResponseWriter, r *http.Request, parse func([]byte, []any) (T, []fieldError)) (req T, perr *protoError) {
	if parse == nil {
		return req, nil
	}
	body, perr := s.readBody(w, r)
	if perr == nil && len(body) == 0 {
		body = []byte("{}")
	} else if perr == nil {
		perr = checkJSON(body, []any{"body"})
	}
	if perr != nil {
		return req, perr
	}
	req, errs := parse(body, []any{"body"})
	if len(errs) > 0 {
		return req, invalid(errs)
	}
	return req, nil
}

// serveMetadata serves GET /metadata in OpenEnv's EnvironmentMetadata shape.
func (s *Server) serveMetadata(w http.ResponseWriter, r *http.Request) {
	s.serveInfo(w, func(info Info) any {
		return metadata{Name: info.Name, Description: info.Description, Version: info.Version}
	})
}

// serveInfo answers with what of the Backend's Info reply returns.
func (s *Server) serveInfo(w http.ResponseWriter, reply func(Info) any) {
	info, perr := s.info()
	if perr != nil {
		s.writeError(w, perr)
		return
	}
	s.respond(w, http.StatusOK, reply(info))
}

// serveSchema serves GET /schema: the action, observation and state schemas.
func (s *Server) serveSchema(w http.ResponseWriter, _ *http.Request) {
	out := map[string]json.RawMessage{} // encoded with its keys sorted
	for _, name := range []string{"action", "observation", "state"} {
		b, err := schemas.Get(name)
		if err != nil {
			s.writeError(w, newError(codeExecution, "%v", err))
			return
		}
		out[name] = b
	}
	s.respond(w, http.StatusOK, out)
}

// serveFixtures serves GET /fixtures.
func (s *Server) serveFixtures(w http.ResponseWriter, _ *http.Request) {
	s.serveInfo(w, func(info Info) any {
		list := slices.Clone(nonNil(info.Fixtures))
		for i := range list {
			list[i].Default = list[i].ID == info.DefaultFixture
		}
		return list
	})
}

// serveTasks serves GET /tasks: the tasks a reset may name.
func (s *Server) serveTasks(w http.ResponseWriter, _ *http.Request) {
	s.serveInfo(w, func(info Info) any { return nonNil(info.Tasks) })
}

// serveSessions serves GET /sessions: the monitoring list, without ids.
func (s *Server) serveSessions(w http.ResponseWriter, _ *http.Request) {
	s.respond(w, http.StatusOK, s.Sessions())
}

// noBody parses a body that must be an empty object.
func noBody(b []byte, loc []any) (struct{}, []fieldError) {
	return struct{}{}, decodeObject(b, loc, &struct{}{})
}
