package openenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/seahaven/seahaven/env"
)

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
	if v := r.Header.Get("MCP-Protocol-Version"); v != "" && !protocolVersions[v] {
		supported := strings.Join(slices.Sorted(maps.Keys(protocolVersions)), ", ")
		writeJSON(w, http.StatusBadRequest, standardReply(rpcFailure(nullID, rpcInvalidRequest, "Unsupported MCP-Protocol-Version "+v+" (supported: "+supported+")", nil)))
		return
	}
	if s.refuseOrigin(w, r) {
		return
	}
	body, perr := s.readBody(w, r)
	if perr != nil {
		// A standard client's session gets the HTTP status of every other
		// route (413, 408, 400), as Streamable HTTP has it, and 415 goes
		// to every client; OpenEnv's dialect answers 200, as upstream does.
		resp, status := rpcFailure(nullID, rpcInvalidRequest, "Invalid request: "+perr.message, nil), http.StatusOK
		if r.Header.Get(MCPSessionHeader) != "" || perr.code == codeMediaType {
			resp, status = standardReply(resp), perr.httpStatus()
			if perr.code != codeMediaType {
				// The Go SDK's client keeps its session after a refused
				// POST only when the reply names the request's id.
				resp.ID = refusedID(body)
			}
		}
		writeJSON(w, status, resp)
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
			writeJSON(w, http.StatusBadRequest, rpcFailure(reqID, rpcInvalidParams, "The /mcp URL's query does not parse ("+err.Error()+"): write it as key=value pairs joined by &, each percent-encoded", nil))
			return
		}
		req, perr := resetFromQuery(q)
		if perr != nil {
			writeJSON(w, http.StatusBadRequest, rpcProto(reqID, perr))
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
		mode = rpcStandard
	} else if r.Header.Get("MCP-Protocol-Version") != "" && !isInitialize(body) {
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
		s.unknownMCPSession(ctx, w, r.Header.Get(MCPSessionHeader), nil)
		return
	}
	if created != "" {
		w.Header().Set(MCPSessionHeader, created)
	}
	if mode == rpcStandard || status != http.StatusOK {
		resp = standardReply(resp)
	}
	switch status {
	case http.StatusAccepted:
		w.WriteHeader(status)
	case http.StatusOK:
		s.writeRPC(w, resp, resp.ID, mode == rpcStandard)
	default:
		writeJSON(w, status, resp)
	}
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
// has it.
func (s *Server) serveBatch(ctx context.Context, w http.ResponseWriter, body []byte, ss *session) {
	if perr := checkJSON(body, nil); perr != nil && perr.code == codeInvalidJSON {
		s.writeRPC(w, standardReply(rpcFailure(nullID, rpcParseError, "Parse error", nil)), nullID, true)
		return
	}
	var msgs []jsontext.Value
	if err := jsonv2.Unmarshal(body, &msgs, looseOpts); err != nil || len(msgs) == 0 {
		s.writeRPC(w, standardReply(rpcFailure(nullID, rpcInvalidRequest, "Invalid request: a batch is a non-empty array of JSON-RPC messages", nil)), nullID, true)
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
		resp, status, _ := s.handleRPC(ctx, m, ss, rpcStandard)
		if status == http.StatusAccepted {
			continue
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

// refuseOrigin answers 403 to a request to /mcp from a page of another
// origin, and reports whether it did. The Streamable HTTP transport:
// servers must validate Origin, so a web page cannot drive or end an
// episode (DNS rebinding included).
func (s *Server) refuseOrigin(w http.ResponseWriter, r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || s.originAllowed(o, r.Host) {
		return false
	}
	writeJSON(w, http.StatusForbidden, standardReply(rpcFailure(nullID, rpcInvalidRequest, "Origin "+o+" is not allowed: /mcp answers pages of its own origin only", nil)))
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
)

// serveMCPDelete serves DELETE /mcp: a standard MCP client ends the
// session its Mcp-Session-Id names.
func (s *Server) serveMCPDelete(w http.ResponseWriter, r *http.Request) {
	if s.refuseOrigin(w, r) {
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
	ss.stop(closeAbort, "ended by DELETE /mcp")
	ss.end()
	w.WriteHeader(http.StatusNoContent)
}

// unknownMCPSession answers a POST or DELETE /mcp whose Mcp-Session-Id
// names no session the request may use (live is the session of that id
// here, if any). The spec: an unknown or ended session is 404, and the
// client starts a new one with initialize; one its server drained is told
// where its episode went.
func (s *Server) unknownMCPSession(ctx context.Context, w http.ResponseWriter, sid string, live *session) {
	resp := rpcFailure(nullID, rpcInvalidParams, "Unknown "+MCPSessionHeader+": "+echoText(sid)+" (it ended, or never existed): initialize a new session", nil)
	if info, ok := s.drainedTo(ctx, sid); ok && live == nil {
		resp = rpcFailure(nullID, rpcInvalidParams, fmt.Sprintf("%s %s was checkpointed and closed when its server drained: initialize a new session at /mcp?checkpoint=%s to continue its episode at step %d", MCPSessionHeader, sid, info.ID, info.Revision),
			errorExtra{CheckpointID: info.ID})
	}
	writeJSON(w, http.StatusNotFound, standardReply(resp))
}

// isInitialize reports whether body is one JSON-RPC message whose method
// is initialize.
func isInitialize(body []byte) bool {
	m, ok := members(body)
	method, _ := str(m["method"])
	return ok && method == "initialize"
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

// serveMCPOther answers /mcp with a method but POST and DELETE; to GET, the
// server offers no event stream of its own (every reply comes with its
// request). It is 405 with the methods /mcp takes.
func serveMCPOther(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Allow", "POST, DELETE")
	writeJSON(w, http.StatusMethodNotAllowed, detail{"Method Not Allowed: /mcp takes POST (JSON-RPC) and DELETE (end a session); it has no event stream"})
}

// handleRPC answers one JSON-RPC 2.0 request; one naming a key twice in an
// object is an invalid request naming it. ws is the session of the /ws
// connection the request came on (an mcp message), nil for POST /mcp.
// status is the reply's HTTP status on POST /mcp: 202 for a notification
// (resp is then an empty result that only /ws sends, to keep its
// one-reply-per-message rule), 400 for a message a standard client's
// session cannot take, 503 for a standard client's initialize refused
// before anything was done (capacity, shutdown), 200 otherwise.
//
// A standard client's messages (on its session, or its initialize) follow
// the MCP specification: a request has an id that is not null, and a
// message without one is a notification, which only notifications/…
// methods are. OpenEnv's dialect answers a request without an id as
// upstream does.
func (s *Server) handleRPC(ctx context.Context, body []byte, ws *session, mode rpcMode) (resp rpcResponse, status int, created string) {
	if mode != rpcWS { // a /ws message was checked whole
		switch perr := checkJSON(body, nil); {
		case perr == nil:
		case perr.code == codeInvalidJSON:
			return rpcFailure(nullID, rpcParseError, "Parse error", nil), http.StatusOK, ""
		default:
			return rpcFailure(nullID, rpcInvalidRequest, "Invalid request: "+summary(perr.errors), nil), http.StatusOK, ""
		}
	}
	var req rpcRequest
	m, ok := members(body)
	if !ok {
		return rpcFailure(nullID, rpcInvalidRequest, "Invalid request: Input should be an object", nil), http.StatusOK, ""
	}
	std := mode == rpcStandard
	_, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	if std && !hasMethod && (hasResult || hasError) {
		return rpcFailure(nullID, rpcInvalidRequest, "Invalid request: a JSON-RPC response, but this server sends no requests for a client to answer", nil), http.StatusBadRequest, ""
	}
	errs := decodeRequired(m, body, nil, &req, "jsonrpc", "method")
	id := nullID
	if req.ID != nil {
		id = json.RawMessage(req.ID)
	}
	if len(errs) > 0 {
		return rpcFailure(id, rpcInvalidRequest, "Invalid request: "+summary(errs), nil), http.StatusOK, ""
	}
	_, hasID := m["id"]
	method := req.Method
	params := map[string]jsontext.Value{}
	if req.Params != nil {
		params, _ = members(jsontext.Value(req.Params))
	}
	if strings.HasPrefix(method, "notifications/") {
		if method == "notifications/cancelled" && std {
			ws.cancelRequest(params["requestId"], params["reason"])
		}
		if hasID {
			return rpcResult(id, empty{}), http.StatusOK, ""
		}
		return rpcResult(id, empty{}), http.StatusAccepted, ""
	}
	if std || mode == rpcPost && method == "initialize" {
		switch {
		case !hasID:
			return rpcFailure(nullID, rpcInvalidRequest, "Invalid request: "+method+" needs an id: a message without one is a notification, and only notifications/… methods are sent as notifications", nil), http.StatusBadRequest, ""
		case string(id) == "null":
			return rpcFailure(nullID, rpcInvalidRequest, "Invalid request: the id must be a string or an integer; MCP does not allow null", nil), http.StatusOK, ""
		}
	}
	if std && (method == "tools/call" || method == "tools/list") {
		// A call, or a listing that waits for the session's call in
		// progress: its client may give up on it.
		var done func()
		ctx, done = ws.track(ctx, id)
		defer done()
	}

	switch method {
	case "initialize":
		resp, status, created := s.rpcInitializeSession(ctx, id, params, mode)
		if mode == rpcPost { // a standard client's
			resp = standardReply(resp)
		}
		return resp, status, created
	case "ping":
		return rpcResult(id, empty{}), http.StatusOK, ""
	case "tools/list":
		if c, ok := params["cursor"]; std && ok && c.Kind() != 'n' {
			// Every tool comes in the first page, which names no next one.
			return rpcFailure(id, rpcInvalidParams, "Invalid params - unknown cursor "+string(c)+": tools/list returns every tool at once and issues no cursor", nil), http.StatusOK, ""
		}
		return s.rpcToolsList(ctx, id, params, ws), http.StatusOK, ""
	case "tools/call":
		return s.rpcToolsCall(ctx, id, params, ws, std), http.StatusOK, ""
	case "openenv/session/create":
		return s.rpcSessionCreate(ctx, id, req.Params, ws), http.StatusOK, ""
	case "openenv/session/close":
		return s.rpcSessionClose(ctx, id, params, ws), http.StatusOK, ""
	case "seahaven/grade":
		if !onAgentListener(ctx) {
			return rpcOnSession(s, ctx, id, params, ws, (*session).grade), http.StatusOK, ""
		}
	case "seahaven/checkpoint":
		if !onAgentListener(ctx) {
			return rpcOnSession(s, ctx, id, params, ws, (*session).checkpoint), http.StatusOK, ""
		}
	}
	return rpcFailure(id, rpcMethodNotFound, "Method not found: "+echoText(method), nil), http.StatusOK, ""
}

// rpcSession resolves params.session_id. Without one it returns ws (nil on
// POST /mcp), or the error when required.
func (s *Server) rpcSession(ctx context.Context, params map[string]jsontext.Value, ws *session, required bool) (*session, *protoError) {
	raw, present := params["session_id"]
	if !present || raw.Kind() == 'n' {
		if required {
			return nil, newError(codeValidation, "Invalid params - 'session_id' is required")
		}
		return ws, nil
	}
	id, ok := str(raw)
	if !ok {
		return nil, newError(codeValidation, "Invalid params - 'session_id' must be a string")
	}
	if ws != nil && id == ws.id {
		return ws, nil
	}
	ss := s.lookup(id)
	if !reachable(ctx, ss) {
		if ss == nil {
			return nil, newError(codeValidation, "%s", s.unknownSession(ctx, id).message)
		}
		return nil, newError(codeValidation, "Unknown session_id: %s", echoText(id))
	}
	return ss, nil
}

// rpcToolsList answers tools/list.
func (s *Server) rpcToolsList(ctx context.Context, id json.RawMessage, params map[string]jsontext.Value, ws *session) rpcResponse {
	ss, perr := s.rpcSession(ctx, params, ws, false)
	var tools []env.ToolInfo
	if perr == nil {
		tools, perr = s.mcpTools(ctx, ss)
	}
	return rpcAnswer(id, listTools(tools, func(t env.ToolInfo, input json.RawMessage) mcpTool {
		return mcpTool{Name: t.Name, Description: t.Description, InputSchema: input, OutputSchema: t.OutputSchema}
	}), perr)
}

// rpcToolsCall answers tools/call. A tool failure is a -32603 error whose
// data names its error_type.
func (s *Server) rpcToolsCall(ctx context.Context, id json.RawMessage, params map[string]jsontext.Value, ws *session, std bool) rpcResponse {
	rawName, present := params["name"]
	if !present || rawName.Kind() == 'n' {
		return rpcFailure(id, rpcInvalidParams, "Missing 'name' in params", nil)
	}
	name, ok := str(rawName)
	if !ok {
		return rpcFailure(id, rpcInvalidParams, "Invalid params - 'name' must be a string", nil)
	}
	args := json.RawMessage(`{}`)
	if v, ok := params["arguments"]; ok && v.Kind() != 'n' {
		if v.Kind() != '{' {
			return rpcFailure(id, rpcInvalidParams, "Invalid params - 'arguments' must be an object", nil)
		}
		args = json.RawMessage(v)
	}
	ss, perr := s.rpcSession(ctx, params, ws, false)
	var out toolOutcome
	switch {
	case perr != nil:
	case ss == nil:
		out, perr = s.callThrowaway(ctx, name, args)
	default:
		out, perr = ss.mcpCall(ctx, name, args)
	}
	if perr != nil {
		return rpcProto(id, perr)
	}
	if std {
		// The MCP specification: the tool's own failures, invalid arguments
		// included, are results the model reads and corrects from; an
		// unknown tool is a protocol error.
		if out.err != nil && out.err.Kind == env.KindNotFound {
			return rpcFailure(id, rpcInvalidParams, out.err.Message, nil)
		}
		return rpcResult(id, out.standardResult())
	}
	if out.err != nil {
		return rpcFailure(id, rpcInternalError, out.err.Message, struct {
			ErrorType string `json:"error_type"`
		}{out.err.Kind})
	}
	return rpcResult(id, out.mcpResult())
}

// callThrowaway makes one call on an instance opened with the default
// options and closed at once, for tools/call without a session. Like
// upstream, it does not count against MaxSessions; on the agent listener
// its instance counts against AgentMaxSessions while it lives, so an
// agent's sessionless calls cannot take the active slots trainers need.
// Shutdown cancels it and waits for its instance to close.
func (s *Server) callThrowaway(ctx context.Context, name string, args json.RawMessage) (toolOutcome, *protoError) {
	if reservedNames[name] {
		return reservedCall(name), nil
	}
	agent := onAgentListener(ctx)
	s.mu.Lock()
	down := s.shutdown
	perr := s.agentCapacityLocked(agent)
	if perr == nil && !down {
		// Shutdown waits for the call and its instance.
		s.throwaways.Add(1)
		defer s.throwaways.Done()
		if agent {
			s.agentSessions++
			defer func() {
				s.mu.Lock()
				s.agentSessions--
				s.mu.Unlock()
			}()
		}
	}
	s.mu.Unlock()
	if down {
		return toolOutcome{}, shuttingDown()
	}
	if perr != nil {
		return toolOutcome{}, perr
	}
	// Shutdown cancels the call, as it does a session's.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.ended, cancel)()
	opts, perr := s.options(resetData{})
	if perr != nil {
		return toolOutcome{}, perr
	}
	ctx = context.WithValue(ctx, sessionKey{}, sessionTag{transport: TransportMCP}) // its logs name no session
	inst, perr := s.open(ctx, opts, true, nil)
	if perr != nil {
		return toolOutcome{}, perr
	}
	defer s.closeInstance(inst)
	out, perr := s.call(ctx, inst, name, args, s.cfg.StepTimeout)
	if (perr != nil || out.err != nil) && s.ended.Err() != nil {
		// What the cancelled call failed with says nothing true about it.
		return toolOutcome{}, newError(codeShuttingDown, "Server is shutting down: the call of %q was cancelled before it finished.", name)
	}
	if perr == nil && out.err == nil {
		out.wrapped = s.wrappedResults(inst)[name]
	}
	return out, perr
}

// rpcSessionCreate answers openenv/session/create. On /ws it returns the
// connection's own session; on POST /mcp it makes a session (counted against
// MaxSessions) and opens its instance with the default options at once.
func (s *Server) rpcSessionCreate(ctx context.Context, id json.RawMessage, rawParams jsonObject, ws *session) rpcResponse {
	if ws != nil {
		return rpcResult(id, sessionResult{SessionID: ws.id})
	}
	// The params are reset data (fixture, seed, task, …), unknown keys
	// refused: the episode starts as a reset with them would.
	if rawParams != nil {
		req, errs := parseReset(rawParams, []any{"params"})
		if len(errs) > 0 {
			return rpcProto(id, invalid(errs))
		}
		ctx = context.WithValue(ctx, mcpSetupKey{}, req)
	}
	ss, perr := s.startMCPSession(ctx, "")
	if perr != nil {
		return rpcProto(id, perr)
	}
	return rpcResult(id, sessionResult{SessionID: ss.id})
}

// rpcSessionClose answers openenv/session/close. A WebSocket's session
// lives as long as its socket and cannot be closed this way.
func (s *Server) rpcSessionClose(ctx context.Context, id json.RawMessage, params map[string]jsontext.Value, ws *session) rpcResponse {
	ss, perr := s.rpcSession(ctx, params, ws, true)
	if perr != nil {
		return rpcProto(id, perr)
	}
	if ss.transport == TransportWS {
		return rpcFailure(id, rpcInvalidRequest, "Cannot close active WebSocket-managed session via MCP method", nil)
	}
	ss.stop(closeAbort, "closed by openenv/session/close")
	ss.end()
	return rpcResult(id, sessionResult{SessionID: ss.id, Closed: true})
}

// rpcOnSession answers a trainer's request on one session (seahaven/grade,
// seahaven/checkpoint): the session named by session_id (the /ws
// connection's own on /ws), and act's result. The agent listener does not
// serve these.
func rpcOnSession[T any](s *Server, ctx context.Context, id json.RawMessage, params map[string]jsontext.Value, ws *session, act func(*session, context.Context) (T, *protoError)) rpcResponse {
	ss, perr := s.rpcSession(ctx, params, ws, ws == nil)
	var res T
	if perr == nil {
		res, perr = act(ss, ctx)
	}
	return rpcAnswer(id, res, perr)
}

// rpcInitializeSession answers initialize. A standard MCP client's
// initialize on POST /mcp without a session header starts its episode: a
// session of its own (counted against MaxSessions, idling out like any
// other) with its instance opened at once, whose id the reply carries in
// the Mcp-Session-Id header. Elsewhere (an mcp message on /ws, or a
// session that exists) it only negotiates.
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
		// another replica; any other failure is 200, as JSON-RPC has it.
		status := http.StatusOK
		if perr.httpStatus() == http.StatusServiceUnavailable {
			status = http.StatusServiceUnavailable
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

// runningRequest is a standard MCP client's request in progress on its
// session (tools/call, or tools/list, which waits for a call in
// progress): cancel stops it.
type runningRequest struct {
	cancel context.CancelCauseFunc
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
	r := &runningRequest{cancel: cancel}
	ss.mu.Lock()
	if ss.requests == nil {
		ss.requests = map[string]*runningRequest{}
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
	r.cancel(cause)
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

// refusedID is the id a refusal of the JSON-RPC request whose body begins
// with prefix (the whole body, or the part of one too large or too slow to
// read whole) names: a top-level "id" member that comes before the first
// member prefix cuts short, and that is a string or a number; null when
// there is none. The official Go SDK's client writes the id second, after
// "jsonrpc".
func refusedID(prefix []byte) json.RawMessage {
	dec := jsontext.NewDecoder(bytes.NewReader(prefix))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nullID
	}
	for {
		tok, err := dec.ReadToken()
		if err != nil || tok.Kind() != '"' {
			return nullID
		}
		name := tok.String() // before the decoder reads on, which voids tok
		v, err := dec.ReadValue()
		if err != nil {
			return nullID
		}
		if name == "id" {
			// A number the prefix ends in may be cut short: 12 of 123.
			if k := v.Kind(); k != '"' && (k != '0' || dec.InputOffset() == int64(len(prefix))) {
				return nullID
			}
			return json.RawMessage(v.Clone())
		}
	}
}
