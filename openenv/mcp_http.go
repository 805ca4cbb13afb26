package openenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/seahaven/seahaven/internal/runecut"
)

// This file holds the /mcp routes over HTTP and a standard MCP client's
// sessions: initialize and the requests in progress it may cancel.
// mcp.go answers each JSON-RPC request, and refusedid.go finds the ids of
// refusals.

// defaultProtocolVersion is the MCP protocol version initialize answers
// when the client asks for one the server does not know: the latest it
// supports, as the specification has it.
const defaultProtocolVersion = "2025-11-25"

// protocolVersions are the MCP protocol versions initialize echoes.
var protocolVersions = map[string]bool{
	"2024-11-05": true, "2025-03-26": true, "2025-06-18": true, "2025-11-25": true,
}

// serveMCP serves POST /mcp. The reply is always HTTP 200 with a JSON-RPC
// response, except for a notification, which gets 202 and no body.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) {
	if s.refuseOrigin(w, r) {
		return
	}
	body, perr := s.readBody(w, r)
	if perr != nil {
		// A standard client's session, and a 2026-07-28 request, get the
		// HTTP status of every other route (413, 408, 400), as Streamable
		// HTTP has it, and 415 goes to every client; OpenEnv's dialect
		// answers 200, as upstream does.
		resp, status := rpcFailure(nullID, rpcInvalidRequest, "Invalid request: "+perr.message, nil), http.StatusOK
		if r.Header.Get(MCPSessionHeader) != "" || r.Header.Get("MCP-Protocol-Version") == modernVersion || perr.code == codeMediaType {
			resp, status = standardReply(resp), perr.httpStatus()
			if perr.code == codeTooLarge && body == nil && r.ContentLength > 0 {
				// Refused for its Content-Length alone: read as much of
				// it as names the id.
				body = s.readIDPrefix(w, r)
			}
			if perr.code != codeMediaType {
				// The Go SDK's client keeps its session after a refused
				// POST only when the reply names the request's id.
				resp.ID = refusedID(body)
			}
		}
		writeJSON(w, status, resp)
		return
	}
	// The refusals of its headers name the request's id, as MCP has every
	// error response to a request whose id can be read do.
	if s.refuseRepeatedMCPHeaders(w, r, refusedID(body)) {
		return
	}
	if v := r.Header.Get("MCP-Protocol-Version"); v != "" && v != modernVersion && !protocolVersions[v] {
		writeJSON(w, http.StatusBadRequest, unsupportedVersion(refusedID(body), v, versionsAt(r.URL.RawQuery), ""))
		return
	}
	if modernRequest(r, body) {
		s.serveModern(w, r, body)
		return
	}
	ctx := r.Context()
	if r.URL.RawQuery != "" {
		// A refusal names the request's id: the Go SDK's client reports a
		// refused POST's error only when its response has one.
		reqID := refusedID(body)
		// Parsed here, not with URL.Query, which drops the pairs it cannot
		// read, and with them reset keys the client asked for.
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, standardReply(rpcFailure(reqID, rpcInvalidParams, "The /mcp URL's query does not parse ("+err.Error()+"): write it as key=value pairs joined by &, each percent-encoded", nil)))
			return
		}
		if _, named := q[modernSessionKey]; named {
			// Not reset data: the session a 2026-07-28 request names.
			writeJSON(w, http.StatusBadRequest, standardReply(rpcFailure(reqID, rpcInvalidParams, "The /mcp URL's "+modernSessionKey+" names the session of "+modernVersion+" requests (MCP-Protocol-Version: "+modernVersion+
				"); this request speaks an older version, whose session is its initialize's or, in OpenEnv's dialect, params.session_id's: drop "+modernSessionKey+" from the URL", nil)))
			return
		}
		req, perr := resetFromQuery(q)
		if perr != nil {
			// A standard client's way to set its episode up: its shape.
			writeJSON(w, http.StatusBadRequest, standardReply(rpcProto(reqID, perr)))
			return
		}
		ctx = context.WithValue(ctx, mcpSetupKey{}, req)
	}
	mode, bound := rpcPost, (*session)(nil)
	if sid := r.Header.Get(MCPSessionHeader); sid != "" {
		bound = s.lookup(sid)
		if !reachable(ctx, bound) || bound.transport != TransportMCP {
			s.unknownMCPSession(ctx, w, sid, bound)
			return
		}
		if bound.ctx.Err() != nil {
			// Ended, but not yet let go (a call past its deadline holds
			// it): the spec's 404 for every request, as once it is gone,
			// a ping or notification, which needs no call slot, too.
			writeJSON(w, http.StatusNotFound, standardReply(s.endedMCPSession(ctx, bound, false)))
			return
		}
		mode = rpcStandard
	} else if r.Header.Get("MCP-Protocol-Version") != "" && !isInitialize(body) {
		if perr := checkJSON(body, nil); perr != nil {
			// No message at all (an initialize cut short, say): refused
			// for what is wrong with it, as on a session, not for a
			// session header its client would then initialize without.
			resp, status := parseFailure(body, perr, true), http.StatusBadRequest
			if perr.code != codeInvalidJSON && string(resp.ID) != "null" {
				status = http.StatusOK
			}
			writeJSON(w, status, standardReply(resp))
			return
		}
		s.sessionRequired(w, body)
		return
	}
	if mode == rpcStandard && jsontext.Value(body).Kind() == '[' {
		if v := requestVersion(r, bound); v >= firstVersionWithoutBatches {
			// The body must be one JSON-RPC message: none of the batch runs.
			writeJSON(w, http.StatusBadRequest, standardReply(rpcFailure(nullID, rpcInvalidRequest,
				"Invalid request: a JSON-RPC batch, which MCP "+firstVersionWithoutBatches+" and later do not have (this session speaks "+v+"): send each message in a POST of its own", nil)))
			return
		}
		s.serveBatch(ctx, w, body, bound)
		return
	}
	resp, status, created := s.handleRPC(ctx, body, bound, mode)
	if mode == rpcStandard && resp.Error != nil && bound.ctx.Err() != nil {
		// The session ended before or while the request ran (its server
		// drained it, say, and has not let it go yet): the spec's 404, as
		// once it is gone, so the client initializes a new session.
		writeJSON(w, http.StatusNotFound, standardReply(s.endedMCPSession(ctx, bound, true)))
		return
	}
	if mode == rpcStandard && status == http.StatusOK && resp.Error != nil && string(resp.ID) == "null" {
		// A message the server refuses without knowing which request it
		// was (one that is not JSON, a notification it cannot take): the
		// HTTP error Streamable HTTP asks for.
		status = http.StatusBadRequest
	}
	if created != "" {
		w.Header().Set(MCPSessionHeader, created)
	}
	if res, ok := resp.Result.(sessionResult); ok && mode == rpcPost && !res.Closed {
		// openenv/session/create made a session: its id in the header
		// the HTTP routes' replies carry, from which a proxy in front of
		// several servers learns where the session lives (its later
		// requests name it only in their bodies).
		w.Header().Set(SessionHeader, res.SessionID)
	}
	if mode == rpcStandard || status != http.StatusOK {
		resp = standardReply(resp)
	}
	switch {
	case status == statusCancelled && acceptsEventStream(r):
		// The specification has the server send no response to a request
		// its client cancelled; a POST with a request is answered with JSON
		// or an event stream, so it gets a stream without a message. (The
		// TypeScript SDK's client keeps the POST open, and reports a
		// response that comes on it as one to a request it does not know.)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
	case status == statusCancelled, status == http.StatusOK:
		// A client that takes no event stream gets the outcome.
		s.writeRPC(w, resp, resp.ID, mode == rpcStandard)
	case status == http.StatusAccepted:
		w.WriteHeader(status)
	default:
		writeJSON(w, status, resp)
	}
}

// acceptsEventStream reports whether r's Accept header names
// text/event-stream, as a Streamable HTTP client's POST does.
func acceptsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			media, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(media), "text/event-stream") {
				return true
			}
		}
	}
	return false
}

// firstVersionWithoutBatches is the MCP protocol version that dropped
// JSON-RPC batches: from it on, a POST's body is one JSON-RPC message.
const firstVersionWithoutBatches = "2025-06-18"

// requestVersion is the MCP protocol version of a standard client's
// request on its session ss: its MCP-Protocol-Version header, else the
// version the session's initialize negotiated, else 2025-03-26, which the
// specification has a server assume when it cannot tell. Versions are
// dates, so they order as strings.
func requestVersion(r *http.Request, ss *session) string {
	if v := r.Header.Get("MCP-Protocol-Version"); v != "" {
		return v
	}
	if ss.mcpVersion != "" {
		return ss.mcpVersion
	}
	return "2025-03-26"
}

// serveBatch answers a JSON-RPC batch on a standard client's session of
// 2025-03-26 or older (the 2025-03-26 specification has clients send
// them; 2025-06-18 dropped them, and serveMCP refuses them there): each
// message is handled in order as if it came alone, and the reply is the
// array of the requests' responses, or 202 and no body when the batch held
// only notifications. An empty batch is one invalid request, as JSON-RPC
// has it. A request the session's end cut short or refused is answered as
// one of its own would be, with its id (endedMCPSession), and so is every
// request after the end, which does not run.
func (s *Server) serveBatch(ctx context.Context, w http.ResponseWriter, body []byte, ss *session) {
	if perr := checkJSON(body, nil); perr != nil && perr.code == codeInvalidJSON {
		writeJSON(w, http.StatusBadRequest, standardReply(parseFailure(body, perr, true)))
		return
	}
	var msgs []jsontext.Value
	if err := jsonv2.Unmarshal(body, &msgs, looseOpts); err != nil || len(msgs) == 0 {
		writeJSON(w, http.StatusBadRequest, standardReply(rpcFailure(nullID, rpcInvalidRequest, "Invalid request: a batch is a non-empty array of JSON-RPC messages", nil)))
		return
	}
	// Each response is encoded as it comes, so the reply is known to fit
	// MaxReplyBytes as it grows: at the message whose response would pass
	// it the batch stops, instead of running calls whose results cannot be
	// sent and holding a reply many times the request's size (a batch of
	// tools/list) before refusing it.
	var resps [][]byte
	size := 1 // the reply's bytes: its brackets, commas and responses
	for i, m := range msgs {
		var resp rpcResponse
		ran := ss.ctx.Err() == nil
		if ran {
			var status int
			if resp, status, _ = s.handleRPC(ctx, m, ss, rpcStandard); status == http.StatusAccepted {
				continue
			}
		} else {
			// The session ended before the message: it does not run (a
			// ping, which needs no session, neither), as a POST of its
			// own would be refused with the 404 before it was read.
			var notification bool
			if resp.ID, notification = batchedID(m); notification {
				continue
			}
		}
		if (!ran || resp.Error != nil) && ss.ctx.Err() != nil {
			// Cut short or refused because the session ended: said as
			// to a request of its own (serveMCP's 404), with its id.
			ended := s.endedMCPSession(ctx, ss, true)
			ended.ID = resp.ID
			resp = ended
		}
		b, err := encode(standardReply(resp))
		if err != nil {
			s.writeRPC(w, standardReply(resp), resp.ID, true) // its reply for a response that cannot be encoded
			return
		}
		if size += len(b) + 1; size > s.cfg.MaxReplyBytes {
			s.log.Warn("openenv: a batch's reply exceeds the reply limit", "message", i+1, "messages", len(msgs), "limit", s.cfg.MaxReplyBytes)
			perr := newError(codeReplyTooLarge, "The batch's reply passed the limit of %d bytes on a reply (the server's max-reply-bytes) at its message %d of %d: it and the messages before it ran, the rest did not, and no response is sent. Send fewer messages at a time.",
				s.cfg.MaxReplyBytes, i+1, len(msgs))
			s.writeRPC(w, standardReply(rpcProto(nullID, perr)), nullID, true)
			return
		}
		resps = append(resps, b)
	}
	if len(resps) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	reply := append([]byte{'['}, bytes.Join(resps, []byte{','})...)
	s.writeBody(w, http.StatusOK, append(reply, ']'))
}

// batchedID is the id of a batch's message, null when it has none or is
// not an object, and whether the message is a notification: a
// notifications/… method sent without an id, which has no response.
func batchedID(m jsontext.Value) (id json.RawMessage, notification bool) {
	fields, _ := members(m)
	raw, hasID := fields["id"]
	if !hasID {
		method, _ := str(fields["method"])
		return nullID, strings.HasPrefix(method, "notifications/")
	}
	return json.RawMessage(raw), false
}

// refuseOrigin answers 403 to a request to /mcp from a page of another
// origin, and reports whether it did. The Streamable HTTP transport:
// servers must validate Origin, so a web page cannot drive or end an
// episode (DNS rebinding included).
func (s *Server) refuseOrigin(w http.ResponseWriter, r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || s.originAllowed(o, r) {
		return false
	}
	writeJSON(w, http.StatusForbidden, standardReply(rpcFailure(nullID, rpcInvalidRequest, originRefused(o), nil)))
	return true
}

// MCPSessionHeader carries a standard MCP client's session: initialize
// issues it, every later request sends it, DELETE /mcp ends it.
const MCPSessionHeader = "Mcp-Session-Id"

// rpcMode is how a JSON-RPC request reached the server.
type rpcMode int

const (
	rpcWS       rpcMode = iota // an mcp message on /ws, bound to the socket's session (OpenEnv's dialect)
	rpcPost                    // POST /mcp without a session header: OpenEnv's dialect, or a standard client's initialize
	rpcStandard                // POST /mcp with Mcp-Session-Id, alone or in a batch: a standard MCP client's session
	rpcModern                  // POST /mcp of MCP 2026-07-28, with no protocol session (handleModern)
)

// serveMCPDelete serves DELETE /mcp: a standard MCP client ends the
// session its Mcp-Session-Id names.
func (s *Server) serveMCPDelete(w http.ResponseWriter, r *http.Request) {
	if s.refuseOrigin(w, r) || s.refuseRepeatedMCPHeaders(w, r, nullID) {
		return
	}
	sid := r.Header.Get(MCPSessionHeader)
	if sid == "" {
		writeJSON(w, http.StatusBadRequest, standardReply(rpcFailure(nullID, rpcInvalidRequest, "DELETE /mcp needs the "+MCPSessionHeader+" header of the session to end", nil)))
		return
	}
	ss := s.lookup(sid)
	if !reachable(r.Context(), ss) || ss.transport != TransportMCP {
		s.unknownMCPSession(r.Context(), w, sid, ss)
		return
	}
	first := ss.stop(closeAbort, "ended by DELETE /mcp")
	ss.end()
	if !first { // another request ended it, or its server drained it, meanwhile
		s.unknownMCPSession(r.Context(), w, sid, nil)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// unknownMCPSession answers a POST or DELETE /mcp whose Mcp-Session-Id
// names no session the request may use (live is the session of that id
// here, if any). The spec: an unknown or ended session is 404, and the
// client starts a new one with initialize; one its server drained is told
// where its episode went.
func (s *Server) unknownMCPSession(ctx context.Context, w http.ResponseWriter, sid string, live *session) {
	writeJSON(w, http.StatusNotFound, standardReply(s.unknownMCPReply(ctx, sid, live)))
}

// unknownMCPReply is unknownMCPSession's JSON-RPC error.
func (s *Server) unknownMCPReply(ctx context.Context, sid string, live *session) rpcResponse {
	if info, ok := s.drainedTo(ctx, sid); ok && live == nil {
		return rpcFailure(nullID, rpcInvalidParams, fmt.Sprintf("%s %s was checkpointed and closed when its server drained: initialize a new session at /mcp?checkpoint=%s to continue its episode at step %d", MCPSessionHeader, sid, info.ID, info.Revision),
			errorExtra{CheckpointID: info.ID})
	}
	return rpcFailure(nullID, rpcInvalidParams, "Unknown "+MCPSessionHeader+": "+runecut.Echo(sid)+" (it ended, or never existed): initialize a new session", nil)
}

// endedMCPSession is the JSON-RPC error of the 404 that answers a standard
// client's request on ss, which ended while the request ran (during) or
// before it: it says why, as closedDuring does in OpenEnv's dialect,
// unless the server drained it, when it names the checkpoint
// (unknownMCPReply).
func (s *Server) endedMCPSession(ctx context.Context, ss *session, during bool) rpcResponse {
	_, reason := ss.closeStatus()
	if _, drained := s.drainedTo(ctx, ss.id); drained || reason == "" {
		return s.unknownMCPReply(ctx, ss.id, nil)
	}
	when := ""
	if during {
		when = " while the request ran"
	}
	return rpcFailure(nullID, rpcInvalidParams, MCPSessionHeader+" "+ss.id+" was closed"+when+" ("+reason+"): initialize a new session", nil)
}

// refuseRepeatedMCPHeaders answers 400, with a JSON-RPC error of the
// given id, a request that sends Mcp-Session-Id, MCP-Protocol-Version,
// or the Mcp-Method or Mcp-Name of a 2026-07-28 request more than once,
// and reports whether it did.
func (s *Server) refuseRepeatedMCPHeaders(w http.ResponseWriter, r *http.Request, id json.RawMessage) bool {
	for _, name := range []string{MCPSessionHeader, "MCP-Protocol-Version", mcpMethodHeader, mcpNameHeader} {
		if n := len(r.Header.Values(name)); n > 1 {
			writeJSON(w, http.StatusBadRequest, standardReply(rpcFailure(id, rpcInvalidRequest, "Invalid request: "+repeatedHeader(name, n), nil)))
			return true
		}
	}
	return false
}

// isInitialize reports whether body, JSON nothing checked yet, is one
// JSON-RPC message whose method is initialize.
func isInitialize(body []byte) bool {
	var m map[string]jsontext.Value
	if jsonv2.Unmarshal(body, &m, strictOpts) != nil {
		return false
	}
	method, _ := str(m["method"])
	return method == "initialize"
}

// sessionRequired refuses, with the 400 the MCP specification gives a
// server that requires sessions, a request that carries
// MCP-Protocol-Version, as a standard client's requests after initialize
// do, but no Mcp-Session-Id: its client has lost its session (ended it
// with DELETE, say). Read as OpenEnv's dialect, which sends no
// MCP-Protocol-Version, its calls would run on an instance nobody sees
// again, and their replies would not be the standard's shape.
func (s *Server) sessionRequired(w http.ResponseWriter, body []byte) {
	writeJSON(w, http.StatusBadRequest, standardReply(rpcFailure(refusedID(body), rpcInvalidRequest,
		"Bad Request: no "+MCPSessionHeader+" header. A standard MCP client (this request carries MCP-Protocol-Version) "+
			"names in every request after initialize the session its initialize started; a session ended with DELETE /mcp is gone: "+
			"initialize a new one. (OpenEnv's dialect sends no MCP-Protocol-Version and names its session in params.session_id.)", nil)))
}

// rpcInitializeSession answers initialize. A standard MCP client's
// initialize on POST /mcp without a session header starts its episode: a
// session of its own (counted against MaxSessions, idling out like any
// other) with its instance opened at once, whose id the reply carries in
// the Mcp-Session-Id header. On /ws (an mcp message) it only negotiates;
// handleRPC refuses it on a standard client's session, which has begun.
func (s *Server) rpcInitializeSession(ctx context.Context, id json.RawMessage, params map[string]jsontext.Value, mode rpcMode) (rpcResponse, int, string) {
	v, ok := str(params["protocolVersion"])
	if !ok {
		return rpcFailure(id, rpcInvalidParams, "Invalid params - initialize needs 'protocolVersion', a string such as "+defaultProtocolVersion, nil), http.StatusOK, ""
	}
	var result initializeResult
	result.ProtocolVersion = defaultProtocolVersion
	if protocolVersions[v] {
		result.ProtocolVersion = v
	}
	info, _ := s.info()
	result.ServerInfo.Name, result.ServerInfo.Version = info.Name, info.Version
	if mode != rpcPost {
		return rpcResult(id, result), http.StatusOK, ""
	}
	ss, perr := s.startMCPSession(ctx, result.ProtocolVersion)
	if perr != nil {
		// A refusal before anything was done (capacity, shutdown, a
		// failing host) is its HTTP status, 503, which a proxy retries on
		// another replica; reset data of the URL's query the reset
		// refused is 400 (urlRefused); any other failure is 200, as
		// JSON-RPC has it.
		status := http.StatusOK
		switch {
		case perr.httpStatus() == http.StatusServiceUnavailable:
			status = http.StatusServiceUnavailable
		case urlRefused(ctx, perr):
			status = http.StatusBadRequest
		}
		return rpcProto(id, perr), status, ""
	}
	return rpcResult(id, result), http.StatusOK, ss.id
}

// startMCPSession makes an MCP session (newMCPSession, of the negotiated
// version) and opens its instance: with the reset data of the request's
// URL query or params (mcpSetupKey) when it has them, with the default
// options otherwise. It ends the session again when that fails, or when
// the request ended meanwhile (its client gone, it would never learn the
// session's id).
func (s *Server) startMCPSession(ctx context.Context, version string) (*session, *protoError) {
	ss, perr := s.newMCPSession(ctx, version)
	if perr != nil {
		return nil, perr
	}
	if req, ok := ctx.Value(mcpSetupKey{}).(resetData); ok {
		perr = ss.reset(ctx, req)
	} else {
		_, perr = withInstance(ss, ctx, func(context.Context) (any, *protoError) { return nil, nil })
	}
	if perr == nil && ctx.Err() != nil {
		// The client left before the reply that names the session: no
		// request could ever use or end it.
		perr = newError(codeSession, "The request ended before its session started, so the session was closed: start another")
	}
	if perr != nil {
		ss.stop(closeAbort, "opening the instance failed")
		ss.end()
	}
	return ss, perr
}

// mcpSetupKey carries the reset data of a POST /mcp URL's query (see
// resetFromQuery) or of openenv/session/create's params to the request
// that starts the session.
type mcpSetupKey struct{}

// urlRefused reports whether perr, the failure of a request that started a
// session, refuses the reset data of the /mcp URL's query that set the
// session up (an unknown fixture, task, startup keyword or checkpoint): a
// fault of the URL, which every request sent to it repeats, rather than of
// the one JSON-RPC request, so it is answered with 400, as the query's
// unknown keys and bad values are (see serveMCP).
func urlRefused(ctx context.Context, perr *protoError) bool {
	req, ok := ctx.Value(mcpSetupKey{}).(resetData)
	return ok && perr.code == codeValidation && slices.Equal(req.loc, queryLoc)
}

// errRequestCancelled is the cause of a request's context its client
// cancelled with notifications/cancelled.
var errRequestCancelled = errors.New("openenv: the client cancelled the request (notifications/cancelled)")

// track registers a standard client's request of the JSON-RPC id on the
// session until done is called, and returns its context, which
// cancelRequest cancels. A client sends notifications/cancelled in a POST
// of its own while the request's POST waits for its reply (the MCP
// specification's cancellation; the TypeScript SDK keeps that POST open),
// so the request's own context does not end with it.
func (ss *session) track(ctx context.Context, id json.RawMessage) (tracked context.Context, done func()) {
	key, ok := requestKey(jsontext.Value(id))
	if !ok {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	r := &cancel
	ss.mu.Lock()
	if ss.requests == nil {
		ss.requests = map[string]*context.CancelCauseFunc{}
	}
	ss.requests[key] = r // a client reusing an id in flight cancels the newer request
	ss.mu.Unlock()
	return ctx, func() {
		ss.mu.Lock()
		if ss.requests[key] == r {
			delete(ss.requests, key)
		}
		ss.mu.Unlock()
		cancel(nil)
	}
}

// cancelRequest stops the session's request in progress whose id is
// requestID (notifications/cancelled's params.requestId), if there is one;
// a cancellation of a request that has finished, or was never made, is
// ignored, as the specification has it.
func (ss *session) cancelRequest(requestID, reason jsontext.Value) {
	key, ok := requestKey(requestID)
	if !ok {
		return
	}
	ss.mu.Lock()
	r := ss.requests[key]
	ss.mu.Unlock()
	if r == nil {
		return
	}
	cause := errRequestCancelled
	if why, ok := str(reason); ok && why != "" {
		cause = fmt.Errorf("%w: %s", errRequestCancelled, why)
	}
	(*r)(cause)
}

// requestKey is the key of a JSON-RPC id in session.requests: the id
// compacted, so one sent with other spacing names the same request. Only
// strings and numbers are ids.
func requestKey(id jsontext.Value) (string, bool) {
	if k := id.Kind(); k != '"' && k != '0' {
		return "", false
	}
	v := slices.Clone(id)
	if v.Compact() != nil {
		return "", false
	}
	return string(v), true
}
