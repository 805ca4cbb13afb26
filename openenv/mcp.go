package openenv

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/runecut"
)

// statusCancelled is handleRPC's status for a standard client's request
// its client cancelled with notifications/cancelled while it ran: resp is
// its outcome, which the MCP specification has the server not send
// (serveMCP).
const statusCancelled = -1

// handleRPC answers one JSON-RPC 2.0 request; one naming a key twice in an
// object is an invalid request naming it. ws is the session of the /ws
// connection the request came on (an mcp message), nil for POST /mcp.
// status is the reply's HTTP status on POST /mcp: 202 for a notification
// (resp is then an empty result that only /ws sends, to keep its
// one-reply-per-message rule), 400 for a message a standard client's
// session cannot take, 503 for a standard client's initialize refused
// before anything was done (capacity, shutdown), statusCancelled for a
// standard client's request its client cancelled, 200 otherwise.
//
// A standard client's messages (on its session, or its initialize) follow
// the MCP specification: a request has an id that is not null, and a
// message without one is a notification, which only notifications/…
// methods are. OpenEnv's dialect answers a request without an id as
// upstream does.
func (s *Server) handleRPC(ctx context.Context, body []byte, ws *session, mode rpcMode) (resp rpcResponse, status int, created string) {
	std := mode == rpcStandard
	if mode != rpcWS { // a /ws message was checked whole
		if perr := checkJSON(body, nil); perr != nil {
			return parseFailure(body, perr, std), http.StatusOK, ""
		}
	}
	req := rpcRequest{ID: rpcID(nullID)} // an id left out is null
	m, ok := members(body)
	if !ok {
		return rpcFailure(nullID, rpcInvalidRequest, "Invalid request: Input should be an object", nil), http.StatusOK, ""
	}
	_, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	if std && !hasMethod && (hasResult || hasError) {
		return rpcFailure(nullID, rpcInvalidRequest, "Invalid request: a JSON-RPC response, but this server sends no requests for a client to answer", nil), http.StatusBadRequest, ""
	}
	errs := decodeRequired(m, body, nil, &req, "jsonrpc", "method")
	id := json.RawMessage(req.ID)
	if len(errs) > 0 {
		return rpcFailure(id, rpcInvalidRequest, "Invalid request: "+summary(errs), nil), http.StatusOK, ""
	}
	_, hasID := m["id"]
	method := req.Method
	params, _ := members(jsontext.Value(req.Params)) // none when it has none
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
		tracked := ctx
		defer func() { // before done, which ends tracked with its own cause
			if errors.Is(context.Cause(tracked), errRequestCancelled) {
				status = statusCancelled
			}
		}()
	}

	switch method {
	case "initialize":
		if std {
			// Its version was negotiated once: the session keeps it.
			return rpcFailure(id, rpcInvalidRequest, "Invalid request: this session is initialized already, speaking "+ws.mcpVersion+": an initialize sent without Mcp-Session-Id starts a new session", nil), http.StatusBadRequest, ""
		}
		resp, status, created := s.rpcInitializeSession(ctx, id, params, mode)
		if mode == rpcPost { // a standard client's
			resp = standardReply(resp)
		}
		return resp, status, created
	case "ping":
		return rpcResult(id, empty{}), http.StatusOK, ""
	case "tools/list":
		return s.rpcToolsList(ctx, id, params, ws, mode), http.StatusOK, ""
	case "tools/call":
		return s.rpcToolsCall(ctx, id, params, ws, mode), http.StatusOK, ""
	case "openenv/session/create":
		resp, status := s.rpcSessionCreate(ctx, id, params, req.Params, ws)
		return resp, status, ""
	case "openenv/session/close":
		return s.rpcSessionClose(ctx, id, params, ws), http.StatusOK, ""
	case "seahaven/grade":
		if !FromAgentListener(ctx) {
			return rpcOnSession(s, ctx, id, params, ws, (*session).grade), http.StatusOK, ""
		}
	case "seahaven/checkpoint":
		if !FromAgentListener(ctx) {
			return rpcOnSession(s, ctx, id, params, ws, (*session).checkpoint), http.StatusOK, ""
		}
	}
	return rpcFailure(id, rpcMethodNotFound, "Method not found: "+runecut.Echo(method), nil), http.StatusOK, ""
}

// parseFailure is the reply to a JSON-RPC body checkJSON refused with
// perr: for one that is not JSON, upstream's bare "Parse error" in
// OpenEnv's dialect, and the fault, where it is, for a standard client;
// for one naming a key twice, an invalid request naming it.
func parseFailure(body []byte, perr *protoError, std bool) rpcResponse {
	if perr.code != codeInvalidJSON {
		return rpcFailure(refusedID(body), rpcInvalidRequest, "Invalid request: "+summary(perr.errors), nil)
	}
	msg := "Parse error"
	if std {
		msg += ": " + strings.TrimPrefix(perr.message, "Invalid JSON: ")
	}
	return rpcFailure(nullID, rpcParseError, msg, nil)
}

// unknownRPCSession is unknownSession as a JSON-RPC method's invalid
// params: a session its server drained keeps the checkpoint beside the
// message (data.checkpoint_id).
func (s *Server) unknownRPCSession(ctx context.Context, id string) *protoError {
	perr := s.unknownSession(ctx, id)
	return &protoError{code: codeValidation, message: perr.message, extra: perr.extra}
}

// rpcSession resolves params.session_id. Without one it returns ws (nil on
// POST /mcp), or the error when required.
func (s *Server) rpcSession(ctx context.Context, params map[string]jsontext.Value, ws *session, required bool) (*session, *protoError) {
	raw, present := params["session_id"]
	if !present || raw.Kind() == 'n' {
		if required {
			return nil, newError(codeValidation, "Invalid params - 'session_id' is required")
		}
		if _, fromURL := ctx.Value(mcpSetupKey{}).(resetData); fromURL && ws == nil {
			// The URL's reset data would be dropped: a sessionless
			// request runs on a throwaway instance with the default reset.
			return nil, newError(codeValidation, "The /mcp URL's reset data sets up the session a request starts (initialize, or openenv/session/create); "+
				"this request names no session, and would run on a throwaway instance without it: start a session at this URL, or name one in params.session_id")
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
	return s.reachableSession(ctx, id)
}

// reachableSession returns the live session of id, a session_id the
// request may reach (on the agent listener, one started there), or the
// error saying it is unknown.
func (s *Server) reachableSession(ctx context.Context, id string) (*session, *protoError) {
	ss := s.lookup(id)
	if !reachable(ctx, ss) {
		if ss == nil {
			return nil, s.unknownRPCSession(ctx, id)
		}
		return nil, newError(codeValidation, "Unknown session_id: %s", runecut.Echo(id))
	}
	return ss, nil
}

// rpcToolsList answers tools/list, of a request that came as mode says:
// a standard client's names no cursor, since every tool comes in the
// first page, which names no next one.
func (s *Server) rpcToolsList(ctx context.Context, id json.RawMessage, params map[string]jsontext.Value, ws *session, mode rpcMode) rpcResponse {
	if c, ok := params["cursor"]; (mode == rpcStandard || mode == rpcModern) && ok && c.Kind() != 'n' {
		return rpcFailure(id, rpcInvalidParams, "Invalid params - unknown cursor "+string(c)+": tools/list returns every tool at once and issues no cursor", nil)
	}
	ss, perr := s.rpcSession(ctx, params, ws, false)
	var tools []env.ToolInfo
	if perr == nil {
		tools, perr = s.mcpTools(ctx, ss)
	}
	return rpcAnswer(id, listTools(tools, func(t env.ToolInfo, input json.RawMessage) mcpTool {
		return mcpTool{Name: t.Name, Description: t.Description, InputSchema: input, OutputSchema: t.OutputSchema}
	}), perr)
}

// rpcToolsCall answers tools/call, of a request that came as mode says.
// In OpenEnv's dialect a tool failure is a -32603 error whose data names
// its error_type; a standard client gets it as a result.
func (s *Server) rpcToolsCall(ctx context.Context, id json.RawMessage, params map[string]jsontext.Value, ws *session, mode rpcMode) rpcResponse {
	std := mode == rpcStandard || mode == rpcModern
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
		anew := resetAnew // an mcp message on /ws, whose client resets
		if mode != rpcWS {
			anew = s.newEpisode(mode)
		}
		out, perr = ss.mcpCall(ctx, name, args, anew)
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
	if out, refused := refusedCall(ctx, name); refused {
		return out, nil
	}
	agent := FromAgentListener(ctx)
	s.mu.Lock()
	down := s.shutdown
	perr := s.agentCapacityLocked(agent)
	if perr == nil && !down {
		// Shutdown waits for the call and its instance.
		s.throwaways.Add(1)
		if agent {
			s.agentSessions++
		}
	}
	s.mu.Unlock()
	if down {
		return toolOutcome{}, shuttingDown()
	}
	if perr != nil {
		return toolOutcome{}, perr
	}
	// done ends what the call holds: once its instance is closed, here or,
	// for a call past its deadline, when the call returns.
	done := func() {
		if agent {
			s.mu.Lock()
			s.agentSessions--
			s.mu.Unlock()
		}
		s.throwaways.Done()
	}
	late := false
	defer func() {
		if !late {
			done()
		}
	}()
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
	out, perr := s.call(ctx, inst, name, args, s.cfg.StepTimeout)
	if late = out.late != nil; late {
		// The instance is the call's until it returns, and counts as the
		// agent's, and for Shutdown, while it lives.
		go func() {
			s.awaitLate(out.late)
			s.closeInstance(inst)
			done()
		}()
	} else {
		defer s.closeInstance(inst)
	}
	if (perr != nil || out.err != nil) && s.ended.Err() != nil {
		// What the cancelled call failed with says nothing true about it.
		return toolOutcome{}, newError(codeShuttingDown, "Server is shutting down: the call of %q was cancelled before it finished.", runecut.Echo(name))
	}
	if perr == nil && out.err == nil {
		out.wrapped = s.wrappedResults(inst)[name]
	}
	return out, perr
}

// rpcSessionCreate answers openenv/session/create. On /ws, and on a
// standard client's session, it returns that session, and refuses reset
// data in the params, which could not set its episode up; on POST /mcp it
// makes a session (counted against MaxSessions) and opens its instance
// with the params' reset data, else the URL query's, at once. The status
// is 200, as JSON-RPC has it, but for reset data of the URL's query the
// reset refused: 400, as the query's other refusals (urlRefused).
func (s *Server) rpcSessionCreate(ctx context.Context, id json.RawMessage, params map[string]jsontext.Value, rawParams jsonObject, ws *session) (rpcResponse, int) {
	empty := len(params) == 0 // params without a key ({}, as OpenEnv's client sends) or none
	if ws != nil {
		if !empty {
			how := "initialize a new session with it in the /mcp URL's query"
			if ws.transport == TransportWS {
				how = "send it in a reset message"
			}
			return rpcProto(id, newError(codeValidation, "openenv/session/create on a session returns that session, whose episode its params' reset data cannot set up: %s", how)), http.StatusOK
		}
		return rpcResult(id, sessionResult{SessionID: ws.id}), http.StatusOK
	}
	// The params are reset data (fixture, seed, task, …), unknown keys
	// refused: the episode starts as a reset with them would. Params
	// without a key leave the reset data of the URL's query, if any, to
	// set the episode up; both is refused, rather than one silently
	// dropped.
	if rawParams != nil {
		req, errs := parseReset(rawParams, []any{"params"})
		if len(errs) > 0 {
			return rpcProto(id, invalid(errs)), http.StatusOK
		}
		_, fromURL := ctx.Value(mcpSetupKey{}).(resetData)
		switch {
		case fromURL && !empty:
			return rpcProto(id, newError(codeValidation, "openenv/session/create has reset data in both the /mcp URL's query and its params: give it in one of them")), http.StatusOK
		case !fromURL:
			ctx = context.WithValue(ctx, mcpSetupKey{}, req)
		}
	}
	ss, perr := s.startMCPSession(ctx, "")
	if perr != nil {
		status := http.StatusOK
		if urlRefused(ctx, perr) {
			status = http.StatusBadRequest
		}
		return rpcProto(id, perr), status
	}
	return rpcResult(id, sessionResult{SessionID: ss.id}), http.StatusOK
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
	first := ss.stop(closeAbort, "closed by openenv/session/close")
	ss.end()
	if !first { // another request closed it, or its server drained it, meanwhile
		return rpcProto(id, s.unknownRPCSession(ctx, ss.id))
	}
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
