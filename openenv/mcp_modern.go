package openenv

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/seahaven/seahaven/internal/runecut"
)

// This file serves MCP 2026-07-28, the stateless revision, on POST /mcp,
// beside the versions of the initialize handshake (mcp_http.go) and
// OpenEnv's dialect. A 2026-07-28 request carries its protocol version and
// its client's capabilities in params._meta and repeats its version,
// method and tool name in headers; there is no initialize, no
// Mcp-Session-Id and no ping. It reaches an episode through the session
// the /mcp URL's session_id names (one a trainer created), and only there:
// at any other /mcp URL, where an episode starts by initialize, a
// client's server/discover lists the initialize versions alone (a client
// of both then falls back to initialize), and its tools/list and
// tools/call are refused as of a version the URL does not serve.

// modernVersion is the MCP protocol version served per request, without
// the initialize handshake.
const modernVersion = "2026-07-28"

// handshakeVersions are the MCP protocol versions of initialize
// (protocolVersions), newest first: those served at a /mcp URL naming no
// session_id.
var handshakeVersions = slices.SortedFunc(maps.Keys(protocolVersions), func(a, b string) int { return strings.Compare(b, a) })

// supportedVersions are the MCP protocol versions served at a /mcp URL
// naming a session_id, newest first: modernVersion per request, and the
// handshake's.
var supportedVersions = append([]string{modernVersion}, handshakeVersions...)

// versionsAt are the MCP protocol versions served at the /mcp URL of the
// query raw, newest first: server/discover lists them, and so does the
// refusal of a version not among them. 2026-07-28 is served only where a
// request runs on an episode, a URL naming session_id.
func versionsAt(raw string) []string {
	q, _ := url.ParseQuery(raw)
	if _, named := q[modernSessionKey]; named {
		return supportedVersions
	}
	return handshakeVersions
}

// discoverInstructions are the instructions of server/discover at a /mcp
// URL naming no session_id, which serves 2026-07-28 no episode.
const discoverInstructions = "This URL starts an episode by initialize (MCP " + defaultProtocolVersion + " and older); a " + modernVersion +
	" client reaches an episode at /mcp?" + modernSessionKey + "=<id> of a session a trainer created (openenv/session/create)."

// The keys of a 2026-07-28 request's and result's _meta.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// The headers in which a 2026-07-28 request repeats its method and, for
// tools/call, its tool's name.
const (
	mcpMethodHeader = "Mcp-Method"
	mcpNameHeader   = "Mcp-Name"
)

// modernSessionKey is the /mcp URL's query key naming the session a
// 2026-07-28 request runs on.
const modernSessionKey = "session_id"

// discoverResult is the result of server/discover.
type discoverResult struct {
	modernFields
	cacheHints
	SupportedVersions []string           `json:"supportedVersions"`
	Capabilities      serverCapabilities `json:"capabilities"`
	Instructions      string             `json:"instructions,omitempty"`
}

// modernFields are what every 2026-07-28 result carries: its type
// (complete: the server never asks its client for input) and the server's
// identity in _meta.
type modernFields struct {
	ResultType string     `json:"resultType"`
	Meta       modernMeta `json:"_meta"`
}

// modernMeta is the _meta of a 2026-07-28 result.
type modernMeta struct {
	ServerInfo implementation `json:"io.modelcontextprotocol/serverInfo"`
}

// implementation names a server: its world's name and version.
type implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// cacheHints are the caching hints of a cacheable 2026-07-28 result. Every
// result here is stale at once (ttlMs 0): a session's tools change with
// its reset, and the server's versions with a new release.
type cacheHints struct {
	TTLMs      int    `json:"ttlMs"`
	CacheScope string `json:"cacheScope"`
}

// modernCallResult is a 2026-07-28 tools/call result.
type modernCallResult struct {
	mcpStandardResult
	modernFields
}

// modernToolList is a 2026-07-28 tools/list result. Its scope is private:
// the tools a session lists depend on its task, which its URL names and
// its params do not, so a shared cache keyed by method and params must not
// serve one session's listing to another.
type modernToolList struct {
	toolList[mcpTool]
	modernFields
	cacheHints
}

// unsupportedVersionData is the data of the error refusing a protocol
// version the server does not speak.
type unsupportedVersionData struct {
	Supported []string `json:"supported"`
	Requested string   `json:"requested"`
}

// unsupportedVersion refuses the MCP-Protocol-Version v, which the /mcp
// URL does not serve, in the error of 2026-07-28 (whose client retries with
// a version of data.supported, the URL's versions); a client of an older
// version reads the 400. hint, if not empty, follows the list.
func unsupportedVersion(id json.RawMessage, v string, supported []string, hint string) rpcResponse {
	return rpcFailure(id, rpcUnsupportedVersion, "Unsupported MCP-Protocol-Version "+runecut.Echo(v)+" (supported: "+strings.Join(supported, ", ")+")"+hint,
		unsupportedVersionData{Supported: supported, Requested: runecut.Clip(v, 64, "not echoed")})
}

// modernRequest reports whether a POST /mcp speaks MCP 2026-07-28: its
// params._meta names a protocol version, or its MCP-Protocol-Version
// header names 2026-07-28 and it is not an initialize, which selects the
// handshake's versions (as a client falling back to them may send it).
// A request with another version's header, or with Mcp-Session-Id and no
// such header, is of an initialize session or OpenEnv's dialect.
func modernRequest(r *http.Request, body []byte) bool {
	switch v := r.Header.Get("MCP-Protocol-Version"); {
	case v == modernVersion:
		return namesVersion(body) || !isInitialize(body)
	case v != "" || r.Header.Get(MCPSessionHeader) != "":
		return false // read from the headers alone, the body unparsed
	}
	return namesVersion(body)
}

// namesVersion reports whether body's params._meta names a protocol
// version, as every 2026-07-28 request does.
func namesVersion(body []byte) bool {
	m, _ := members(body)
	params, _ := members(m["params"])
	meta, _ := members(params["_meta"])
	_, named := meta[metaProtocolVersion]
	return named
}

// serveModern serves a POST /mcp of MCP 2026-07-28 (modernRequest).
func (s *Server) serveModern(w http.ResponseWriter, r *http.Request, body []byte) {
	resp, status := s.handleModern(r, body)
	switch status {
	case http.StatusAccepted:
		w.WriteHeader(status)
	case http.StatusOK:
		s.writeRPC(w, standardReply(resp), resp.ID, true)
	default:
		writeJSON(w, status, standardReply(resp))
	}
}

// handleModern answers a 2026-07-28 request, with its reply's HTTP status:
// 400 for a request refused before it ran (its body, its _meta, its
// headers, the URL's query, a tools/list or tools/call at a URL naming no
// session), 404 for a method this version does not have, 202 for a
// notification, 200 otherwise.
func (s *Server) handleModern(r *http.Request, body []byte) (rpcResponse, int) {
	ctx := r.Context()
	if r.Header.Get(MCPSessionHeader) != "" {
		return rpcFailure(refusedID(body), rpcInvalidRequest, "Invalid request: "+MCPSessionHeader+" on a "+modernVersion+" request, a version without protocol sessions: "+
			"name the episode in the /mcp URL's "+modernSessionKey+", or send the session's requests in the version its initialize negotiated", nil), http.StatusBadRequest
	}
	if perr := checkJSON(body, nil); perr != nil {
		return parseFailure(body, perr, true), http.StatusBadRequest
	}
	if jsontext.Value(body).Kind() == '[' {
		return rpcFailure(nullID, rpcInvalidRequest, "Invalid request: a JSON-RPC batch, which MCP "+firstVersionWithoutBatches+" and later do not have (this request speaks "+modernVersion+"): send each message in a POST of its own", nil), http.StatusBadRequest
	}
	m, ok := members(body)
	if !ok {
		return rpcFailure(nullID, rpcInvalidRequest, "Invalid request: Input should be an object", nil), http.StatusBadRequest
	}
	_, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	if !hasMethod && (hasResult || hasError) {
		return rpcFailure(nullID, rpcInvalidRequest, "Invalid request: a JSON-RPC response, but this server sends no requests for a client to answer", nil), http.StatusBadRequest
	}
	req := rpcRequest{ID: rpcID(nullID)} // an id left out is null
	errs := decodeRequired(m, body, nil, &req, "jsonrpc", "method")
	id := json.RawMessage(req.ID)
	if len(errs) > 0 {
		return rpcFailure(id, rpcInvalidRequest, "Invalid request: "+summary(errs), nil), http.StatusBadRequest
	}
	method := req.Method
	_, hasID := m["id"]
	switch {
	case !hasID && strings.HasPrefix(method, "notifications/"):
		// 2026-07-28 has clients send none over HTTP (closing a request's
		// stream cancels it): one is taken and ignored.
		return rpcResult(nullID, empty{}), http.StatusAccepted
	case !hasID:
		return rpcFailure(nullID, rpcInvalidRequest, "Invalid request: "+method+" needs an id: a message without one is a notification, and only notifications/… methods are sent as notifications", nil), http.StatusBadRequest
	case string(id) == "null":
		return rpcFailure(nullID, rpcInvalidRequest, "Invalid request: the id must be a string or an integer; MCP does not allow null", nil), http.StatusBadRequest
	}
	params, _ := members(jsontext.Value(req.Params)) // none when it has none
	if resp, refused := checkModern(r.Header, id, method, params); refused {
		return resp, http.StatusBadRequest
	}
	sid, perr := modernQuery(r.URL.RawQuery)
	if perr != nil {
		// The URL's fault, which every request sent to it repeats.
		return rpcProto(id, perr), http.StatusBadRequest
	}

	switch method {
	case "server/discover":
		res := discoverResult{
			modernFields:      s.modernFields(),
			cacheHints:        cacheHints{CacheScope: "public"},
			SupportedVersions: supportedVersions,
			Capabilities:      serverCapabilities{},
		}
		if sid == "" {
			res.SupportedVersions, res.Instructions = handshakeVersions, discoverInstructions
		}
		return rpcResult(id, res), http.StatusOK
	case "tools/list", "tools/call":
		if sid == "" {
			// No episode to run on: a call here would run on a throwaway
			// instance, and its client, expecting the next to see its
			// write, would lose its episode's state unawares.
			return unsupportedVersion(id, modernVersion, handshakeVersions, ": this /mcp URL starts an episode by initialize, which a client of those versions sends here; "+
				"a "+modernVersion+" client reaches an episode at /mcp?"+modernSessionKey+"=<id> of a session a trainer created (openenv/session/create)"), http.StatusBadRequest
		}
		ss, perr := s.reachableSession(ctx, sid)
		if perr != nil {
			return rpcProto(id, perr), http.StatusOK
		}
		if method == "tools/call" {
			return s.modernReply(s.rpcToolsCall(ctx, id, params, ss, rpcModern)), http.StatusOK
		}
		return s.modernReply(s.rpcToolsList(ctx, id, params, ss, rpcModern)), http.StatusOK
	case "initialize":
		return rpcFailure(id, rpcMethodNotFound, "Method not found: initialize, the handshake of MCP 2025-11-25 and older, in a "+modernVersion+" request (its _meta and MCP-Protocol-Version name "+modernVersion+
			", which has none): send initialize without them to start a session of an older version", nil), http.StatusNotFound
	}
	return rpcFailure(id, rpcMethodNotFound, "Method not found: "+runecut.Echo(method)+" (a "+modernVersion+" request is server/discover, tools/list or tools/call)", nil), http.StatusNotFound
}

// checkModern checks what a 2026-07-28 request of the method must carry
// beside its params: the protocol version and client capabilities in
// params._meta (a request without them is malformed: -32602), and the
// headers repeating its version, method and tool name, which must match
// its body (HeaderMismatch). refused says it was refused, with resp.
func checkModern(h http.Header, id json.RawMessage, method string, params map[string]jsontext.Value) (resp rpcResponse, refused bool) {
	invalid := func(msg string) (rpcResponse, bool) {
		return rpcFailure(id, rpcInvalidParams, "Invalid params - "+msg, nil), true
	}
	mismatch := func(msg string) (rpcResponse, bool) {
		return rpcFailure(id, rpcHeaderMismatch, "Header mismatch: "+msg, nil), true
	}
	raw, present := params["_meta"]
	if !present {
		return invalid("a " + modernVersion + " request carries params._meta with " + metaProtocolVersion + " and " + metaClientCapabilities + "; this one has no params._meta")
	}
	meta, ok := members(raw)
	if !ok {
		return invalid("params._meta must be an object")
	}
	v, present := meta[metaProtocolVersion]
	if !present {
		return invalid("params._meta lacks " + metaProtocolVersion + ", which every " + modernVersion + " request carries")
	}
	version, ok := str(v)
	if !ok {
		return invalid("params._meta's " + metaProtocolVersion + " must be a string, such as \"" + modernVersion + "\"")
	}
	if caps, present := meta[metaClientCapabilities]; !present {
		return invalid("params._meta lacks " + metaClientCapabilities + ", which every " + modernVersion + " request carries ({} for none)")
	} else if caps.Kind() != '{' {
		return invalid("params._meta's " + metaClientCapabilities + " must be an object ({} for none)")
	}
	switch hv := h.Get("MCP-Protocol-Version"); {
	case hv == "":
		return mismatch("no MCP-Protocol-Version header: a request repeats in it its params._meta's " + metaProtocolVersion + " (" + runecut.Echo(version) + ")")
	case hv != version:
		// serveMCP refused a header naming no version the server speaks,
		// and modernRequest took only this one: the body names another.
		return mismatch("MCP-Protocol-Version header value '" + hv + "' does not match body value '" + runecut.Echo(version) + "' (params._meta's " + metaProtocolVersion + ")")
	}
	switch mh := h.Get(mcpMethodHeader); {
	case mh == "":
		return mismatch("no " + mcpMethodHeader + " header: a " + modernVersion + " request repeats in it its method (" + runecut.Echo(method) + ")")
	case mh != method:
		return mismatch(mcpMethodHeader + " header value '" + runecut.Echo(mh) + "' does not match body value '" + runecut.Echo(method) + "'")
	}
	if method != "tools/call" {
		return rpcResponse{}, false
	}
	nh := h.Get(mcpNameHeader)
	if nh == "" {
		return mismatch("no " + mcpNameHeader + " header: a " + modernVersion + " tools/call repeats in it its tool's name (params.name)")
	}
	decoded, ok := headerValue(nh)
	if !ok {
		return mismatch(mcpNameHeader + " header value '" + runecut.Echo(nh) + "' is neither printable ASCII nor Base64 between =?base64? and ?=, as a name outside printable ASCII is sent")
	}
	if name, ok := str(params["name"]); ok && decoded != name {
		// Without a string name, tools/call refuses the params.
		return mismatch(mcpNameHeader + " header value '" + runecut.Echo(nh) + "' does not match body value '" + runecut.Echo(name) + "'")
	}
	return rpcResponse{}, false
}

// headerValue decodes the value of a header that may carry its value
// Base64-encoded between =?base64? and ?= (Mcp-Name); ok is false for a
// value that is neither that nor printable ASCII (spaces and tabs
// included).
func headerValue(v string) (decoded string, ok bool) {
	if enc, found := strings.CutPrefix(v, "=?base64?"); found {
		if enc, found = strings.CutSuffix(enc, "?="); found {
			b, err := base64.StdEncoding.DecodeString(enc)
			return string(b), err == nil
		}
	}
	// A byte outside ASCII reads as a rune past 0x7e, or as U+FFFD.
	if strings.ContainsFunc(v, func(c rune) bool { return (c < 0x20 || c > 0x7e) && c != '\t' }) {
		return "", false
	}
	return v, true
}

// modernQuery reads the /mcp URL's query of a 2026-07-28 request: the
// session_id naming the session it runs on, "" for none (the URL of an
// initialize, whose reset data, if any, sets its episode up). A 2026-07-28
// request starts no session, so reset data (task, seed, …) beside
// session_id is refused, as is any other key there.
func modernQuery(raw string) (sid string, perr *protoError) {
	if raw == "" {
		return "", nil
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return "", newError(codeValidation, "The /mcp URL's query does not parse (%s): write it as key=value pairs joined by &, each percent-encoded", err.Error())
	}
	ids, named := q[modernSessionKey]
	if !named {
		return "", nil
	}
	delete(q, modernSessionKey)
	if len(q) > 0 {
		keys := runecut.Echo(strings.Join(slices.Sorted(maps.Keys(q)), ", "))
		return "", newError(codeValidation, "The /mcp URL names %s beside %s: a %s request runs on the session %s names, set up when it was created, and starts none; give the URL %s alone",
			keys, modernSessionKey, modernVersion, modernSessionKey, modernSessionKey)
	}
	switch {
	case len(ids) > 1:
		return "", newError(codeValidation, "The /mcp URL names %s %d times; name it once", modernSessionKey, len(ids))
	case ids[0] == "":
		return "", newError(codeValidation, "The /mcp URL's %s is empty: name the session, as /mcp?%s=<id>", modernSessionKey, modernSessionKey)
	}
	return ids[0], nil
}

// modernFields are the fields every 2026-07-28 result of the server
// carries.
func (s *Server) modernFields() modernFields {
	info, _ := s.info()
	return modernFields{ResultType: "complete", Meta: modernMeta{ServerInfo: implementation{Name: info.Name, Version: info.Version}}}
}

// modernReply is resp, the response of a tools/list or tools/call for a
// standard client, as 2026-07-28 has it: its result with resultType, the
// server's identity and, for a listing, the caching hints.
func (s *Server) modernReply(resp rpcResponse) rpcResponse {
	switch r := resp.Result.(type) {
	case mcpStandardResult:
		resp.Result = modernCallResult{r, s.modernFields()}
	case toolList[mcpTool]:
		resp.Result = modernToolList{r, s.modernFields(), cacheHints{CacheScope: "private"}}
	}
	return resp
}
