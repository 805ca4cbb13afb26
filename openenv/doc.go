// Package openenv serves a Seahaven world over the OpenEnv protocol
// (huggingface/OpenEnv, src/openenv/core/env_server), so OpenEnv's own Python
// clients (EnvClient, GenericEnvClient, MCPToolClient) and ordinary MCP
// clients work against it unchanged.
//
// The engine reaches this package only through [Backend] and [Instance].
// [NewServer] takes a Backend and a [Config]; [Server.Handler] serves every
// route; [Server.Shutdown] ends every session.
//
// # Sessions
//
// A session holds at most one live instance (an episode) and serialises
// every call on it. There are three kinds, sharing one pool of
// [Config.MaxSessions]:
//
//   - a WebSocket connection to /ws is one session, for as long as the socket;
//   - openenv/session/create on POST /mcp makes one, until openenv/session/close;
//   - the HTTP routes use the session named by the [SessionHeader] header, or
//     one server-wide default HTTP session. The header may name any live
//     session, so a grader can inspect a /ws or /mcp episode while it runs.
//
// Every way a session ends (a close message, a disconnect, a failed write, a
// missed pong, the idle reaper, openenv/session/close, Shutdown) goes through
// one path that cancels the call in progress, closes the instance exactly
// once and frees the slot. A session with no reset, step, mcp or inspect for
// [Config.IdleTimeout] is closed (a state request does not count, and a call
// in progress keeps a session alive); its WebSocket gets a close frame with
// StatusGoingAway and the reason.
//
// # WebSocket /ws
//
// The server accepts the upgrade (browser pages from another origin are
// refused, as a guard against cross-site requests), then either takes a
// session or sends
//
//	{"type":"error","data":{"message":"Server at capacity: 2/2 sessions active. Cannot accept new connections.","code":"CAPACITY_REACHED","active_sessions":2,"max_sessions":2}}
//
// and closes (StatusTryAgainLater). Each client message is a JSON text
// frame with only the keys type and data, and gets exactly one reply, in
// order; close gets none:
//
//	→ {"type":"reset","data":{"seed":7,"episode_id":"ep-1","fixture":"acme"}}
//	← {"type":"observation","data":{"observation":{},"reward":null,"done":false}}
//	→ {"type":"step","data":{"type":"list_tools"}}
//	← {"type":"observation","data":{"observation":{"tools":[{"name":"…","description":"…","input_schema":{…}}]},"reward":null,"done":false}}
//	→ {"type":"step","data":{"type":"call_tool","tool_name":"add","arguments":{"a":5,"b":3}}}
//	← {"type":"observation","data":{"observation":{"tool_name":"add","result":{"content":[{"type":"text","text":"8","annotations":null,"meta":null}],"structured_content":{"result":8},"meta":null,"data":8,"is_error":false},"error":null},"reward":null,"done":false}}
//	→ {"type":"state"}
//	← {"type":"state","data":{"episode_id":"ep-1","step_count":1,"state_format":"seahaven.state/1",…}}
//	→ {"type":"inspect","data":{"sql":"SELECT count(*) FROM charges WHERE amount > ?","params":[100]}}
//	← {"type":"inspect","data":{"columns":["count(*)"],"rows":[[2]],"truncated":false}}
//	→ {"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}
//	← {"type":"mcp","data":{"jsonrpc":"2.0","id":1,"result":{"tools":[…]}}}
//	→ {"type":"close"}
//
// Reset data keys are seed (integer ≥ 0, default 0), episode_id (string of
// at most 255 characters, default a new UUID), fixture (default the world's
// default fixture; "" asks for genesis), now, clock_mode ("frozen", "step"
// or "wall"), startup (object), control_tools (boolean) and task (a task id,
// see GET /tasks). A successful reset closes the previous instance; a failed
// one keeps it. A step (or an
// inspect, or an MCP tools/call) before any reset first performs the default
// reset, as OpenEnv environments exist from connect. step_count counts call_tool steps (and tools/call on the
// session), not list_tools, and a reset zeroes it.
//
// A reset with a task opens the task's episode: its fixture, now, startup
// keywords and seed unless the reset names its own (a non-zero seed; the
// reset's startup keys win), and its tool allow list. After every step of
// such an episode the task is graded ([Grader]): the reply's reward (a
// number in [0, 1]) and done are the grading's, and the state document
// carries task and checks (the latest per-check results). Without a task,
// reward is null and done false. An MCP tools/call is not a step and is not
// graded. See docs/tasks.md.
//
// With a Backend that is a [Restorer] (and instances that are
// [Checkpointer]s), {"type":"checkpoint"} keeps the episode as an
// immutable checkpoint, answered by {"type":"checkpoint","data":
// {"checkpoint_id","revision","file_sha256",…}}, and a reset whose data is
// {"checkpoint":"<id>"} (with "replaces":"<attempt>" to fence the attempt
// it supersedes) continues that episode exactly. See docs/checkpoints.md.
//
// A tool failure is part of the observation, not an error frame:
// {"tool_name":"pay","result":null,"error":{"error_type":"execution_error","message":"card declined"}},
// with error_type one of execution_error, invalid_args, tool_not_found and
// timeout (a call past [Config.StepTimeout] is cancelled). reset, step,
// state and close are never tools: calling them is tool_not_found.
//
// Error frames are {"type":"error","data":{"message":…,"code":…}} with these
// codes:
//
//   - INVALID_JSON: the frame is not JSON; or it is not UTF-8, and the
//     socket then closes with StatusInvalidFramePayloadData (1007).
//   - UNKNOWN_TYPE: type is missing or unknown.
//   - VALIDATION_ERROR: an extra envelope key (state and close take no data),
//     a key named twice in any object of the frame (error type duplicate_key
//     at the key's location; HTTP bodies get the same as 422, POST /mcp a
//     -32600), or bad reset data, action or inspect query; data.errors lists
//     {type, loc, msg, input} for each, and the message names them all.
//   - EXECUTION_ERROR: the reset failed (the Backend's message), a call
//     panicked, an inspect query failed (the SQL error's text), or a step
//     ran but its task's grading failed.
//   - FACTORY_ERROR: the implicit default reset of a first step failed; data
//     has factory_name. The session stays open.
//   - CAPACITY_REACHED: sent right after accept, then the socket closes.
//   - SESSION_ERROR: a binary frame (then close with StatusUnsupportedData),
//     or a message over [Config.MaxMessageBytes] (the message names its size
//     and the limit; then close with StatusMessageTooBig).
//
// Only these and a frame that is not UTF-8 end a session from a message;
// every other error keeps it.
//
// A message that finds no earlier one waiting is answered on the goroutine
// that read it, with no hand-off between goroutines. The server keeps
// reading while a message is processed: once a step has run for 10 ms, a
// new reader takes over, feeds a queue of [Config.MaxPending] messages and
// answers pings, so a client's keepalive succeeds during a long step and a
// disconnect cancels it; replies still come back in order. A client that pipelines
// without reading replies meets TCP backpressure once the queue is full, or
// once the queued messages reach [Config.MaxPendingBytes] (or all sessions'
// reach [Config.MaxPendingTotal]), and one that stops reading altogether is
// closed when a write takes longer than [Config.WriteTimeout]. The server
// also pings every [Config.PingInterval] and drops a peer that neither
// answers nor reads a reply within [Config.PongTimeout]; no ping is sent
// while a reply is being written, so a slow reader that keeps reading stays.
//
// # Connections
//
// Serve each listener through one [ConnLimit]: it bounds how long a client
// may take to send a request and how long a keep-alive connection may wait
// idle, and caps the connections that are not WebSocket sessions, so idle
// or unauthenticated clients cannot exhaust the file descriptors sessions
// need.
//
// # JSON-RPC /mcp
//
// POST /mcp takes one JSON-RPC 2.0 request and always answers HTTP 200 with
// a response carrying exactly one of result and error (code, message, data).
// The same handler serves mcp messages on /ws, bound to that socket's
// session. Methods:
//
//   - initialize: {"protocolVersion","capabilities":{"tools":{"listChanged":false}},"serverInfo":{"name","version"}};
//     the client's protocolVersion is echoed when known, else 2025-06-18.
//   - ping: {}.
//   - tools/list {session_id?}: {"tools":[{"name","description","inputSchema","outputSchema"?}]};
//     structuredContent matches outputSchema (see env.ToolInfo.ResultWrapped).
//   - tools/call {name, arguments?, session_id?}: {"content","structured_content","meta","data","is_error",
//     "structuredContent","isError"}; a tool failure is -32603 with its message and data {"error_type":…}.
//     Without session_id (on POST /mcp), the call runs on an instance opened
//     with the default options and closed at once.
//   - openenv/session/create: {"session_id"}; on /ws, the socket's own id.
//     At capacity -32000 with data {active_sessions, max_sessions}.
//   - openenv/session/close {session_id}: {"session_id","closed":true}.
//     A WebSocket's session cannot be closed this way (-32600).
//
// Errors: -32700 "Parse error" (id null), -32600 "Invalid request: …",
// -32601 "Method not found: <method>", -32602 for missing or unknown
// parameters ("Missing 'name' in params", "Invalid params - 'session_id' is
// required", "Unknown session_id: <id>"). A request without an id whose
// method starts with notifications/ is a notification: POST /mcp answers 202
// with no body (on /ws it still gets a reply, an empty result). /mcp never
// offers reset or inspect.
//
// # HTTP routes
//
//	GET  /health        {"status":"healthy"}
//	GET  /metadata      {"name","description","readme_content":null,"version","author":null,"documentation_url":null}
//	GET  /schema        {"action","observation","state"}: JSON Schemas from package schemas
//	GET  /openapi.json  OpenAPI 3.1 description of these routes
//	GET  /fixtures      the fixtures a reset may name
//	GET  /tasks         the tasks a reset may name: [{"id","instruction","fixture","difficulty"?}]
//	GET  /sessions      the live sessions, without their ids (see [SessionInfo])
//	GET  /ready         200 {"status":"ready"} while serving (at MaxSessions too), 503 during shutdown
//	GET  /accepting     200 {"status":"accepting"} while taking new sessions, 503 at MaxSessions or during shutdown
//	GET  /metrics       Prometheus text exposition (see Metrics and logs)
//	POST /reset         reset data → {"observation":{},"reward":null,"done":false}
//	POST /step          {"action":{…},"timeout_s"?,"request_id"?} → {"observation":…,"reward":null|number,"done":bool}
//	GET  /state         the state document
//	POST /inspect       {"sql","params"?} → {"columns","rows","truncated","truncated_reason"?}
//	POST /grade         the task's grading now: {"reward","done","checks"}
//	POST /checkpoint    a checkpoint of the session's episode: {"checkpoint_id","revision",…}
//	GET  /checkpoints/latest?episode_id=…  an episode's newest checkpoint
//	POST /mcp           JSON-RPC, above
//	GET  /ws            WebSocket, above
//
// Validation failures are 422 {"detail":[{type,loc,msg,input}]}; unknown
// routes 404 {"detail":"Not Found"}; a wrong method 405 {"detail":"Method Not
// Allowed"}; other failures {"detail":<message>,"code":<code>} with 400 (a
// failed inspect query), 404 (an unknown session), 413 (a body over
// MaxMessageBytes), 500 (a failed reset or a panic) or 503 (capacity,
// shutdown).
//
// # Security
//
// With [Config.Token] set, every route but /health, /ready and /accepting (the probes,
// which an orchestrator cannot send a secret with) requires
// "Authorization: Bearer <token>"; anything else is 401
// {"detail":"…"} with WWW-Authenticate: Bearer, and a WebSocket upgrade is
// refused before it is accepted. [Server.RequireToken] puts handlers
// mounted beside the server behind the same token. A browser, which cannot
// add the header to a WebSocket, signs in instead: [Server.Login] checks a
// token typed into a form and sets the [SessionCookie], which every
// protected route accepts in place of the header ([Server.Authorized]).
//
// [Config.Production] removes POST /reset, POST /step, GET /state and
// POST /inspect (404 {"detail":"Not Found"}, as upstream's production mode)
// and drops them from /openapi.json. /ws stays: it is infrastructure.
//
// [Server.AgentHandler] serves only what an agent needs (POST /mcp, GET
// /health, /metadata, /schema and /openapi.json) for a second listener that
// an agent sandbox is allowed to reach, while [Server.Handler] serves
// everything to the trainer and graders. Both share sessions and capacity.
//
// Every request body is capped at MaxMessageBytes, and every reply at
// MaxReplyBytes: an inspect reply holds the rows that fit and says
// truncated, with a truncated_reason naming the limit; a tool result too
// large to send is an execution_error; any other reply past it is replaced
// by an error naming its size and the limit. Fixture ids reach the engine,
// which refuses any that could leave the fixtures directory
// ("../../etc/passwd" is an EXECUTION_ERROR naming the invalid id); inspect
// SQL runs only on the read-only inspection connection, which refuses
// writes (to its temp schema too, so nothing can shadow a store's table),
// ATTACH, DETACH and transaction control, reads no more than InspectRowLimit rows and
// MaxReplyBytes, and runs in the Backend's inspect slots, apart from tool
// calls (app.Config.MaxInspect).
//
// # Metrics and logs
//
// GET /metrics serves the server's own Prometheus registry ([Server.Registry]):
// the Go runtime and process collectors and
//
//	seahaven_sessions{transport}                 live sessions (ws, mcp, http)
//	seahaven_sessions_max                        MaxSessions
//	seahaven_sessions_opened_total{transport}    sessions opened
//	seahaven_capacity_rejections_total{transport} sessions refused at MaxSessions
//	seahaven_idle_reaps_total{transport}         sessions closed by the idle reaper
//	seahaven_resets_total{outcome}               instances opened: ok, error, timeout, panic
//	seahaven_reset_duration_seconds              histogram of instance opening
//	seahaven_tool_calls_total{tool,outcome}      ok or the error_type, or panic; unknown tools are tool="_unknown"
//	seahaven_tool_call_duration_seconds{tool}    histogram of tool calls
//	seahaven_inspect_queries_total{outcome}      ok, error
//	seahaven_instances_open                      instances open now
//	seahaven_instance_dirs                       instance directories on disk ([InstanceDirCounter])
//	seahaven_ws_messages_total{type}             WebSocket messages by type, or invalid
//	seahaven_auth_failures_total                 401 answers
//
// Logs go to [Config.Logger], one record per event. A session's opening
// and closing, and each failure (a failed reset, a failed tool call, a
// failed inspect, a recovered panic with its stack) carry session (the
// session's ref, never its id), transport and, but for the opening,
// duration_ms. Failures an agent causes (invalid arguments, unknown tools,
// a world's refusal) are at debug level; failed resets and timeouts at warn.
//
// # Where Seahaven differs from upstream OpenEnv
//
//   - POST /reset, POST /step, GET /state and POST /inspect act on a real,
//     lasting session chosen by [SessionHeader]; upstream builds a throwaway
//     environment per request, so its HTTP episodes are meaningless. These
//     sessions count against MaxSessions and are reaped when idle.
//   - inspect (on /ws and POST /inspect) is ours: read-only SQL for graders
//     and the inspector UI. It is never a tool and never on /mcp.
//   - /mcp answers the MCP initialize handshake and ping, so ordinary MCP
//     clients connect; upstream answers -32601. tools/call results also
//     carry MCP's camelCase structuredContent and isError.
//   - Reset data is validated strictly: unknown keys and wrong types are a
//     VALIDATION_ERROR, where upstream silently drops what the environment's
//     reset signature does not take.
//   - The idle reaper is on by default and closes the reaped session's
//     socket with a reason; upstream's is off by default and leaves the
//     socket open. The server also pings and closes dead peers.
//   - The implicit first reset's failure is FACTORY_ERROR but keeps the
//     socket open, since an explicit reset may still succeed; upstream
//     creates the environment at connect and closes on failure.
//   - A binary frame closes with StatusUnsupportedData and an oversized
//     message with StatusMessageTooBig, each after a SESSION_ERROR frame.
//   - There is no WebSocket /mcp endpoint; use mcp messages on /ws.
//
// # Concurrency
//
// A [Server] is safe for concurrent use, and so must a [Backend] be. An
// [Instance] is not: the server never calls one instance from two
// goroutines at once, never after Close, and closes it exactly once.
package openenv
