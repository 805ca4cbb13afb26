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
// once and frees the slot. A session with no reset, step, inspect, grade,
// checkpoint, or MCP tools/call or tools/list for [Config.IdleTimeout] is
// closed (a state request or a ping does not count, and a call in progress
// keeps a session alive); its WebSocket gets a close frame with
// StatusGoingAway and the reason.
//
// # Protocol
//
// docs/protocol.md is the wire protocol: every message of /ws, POST /mcp and
// the HTTP routes with its exact bytes (its WebSocket transcripts are this
// package's golden file, which its tests check), the error frames and their
// codes, and where Seahaven differs from upstream OpenEnv. docs/deploy.md
// covers the bearer token, the agent listener, the metrics at /metrics and
// the logs; docs/checkpoints.md and docs/tasks.md the checkpoint and task
// messages.
//
// A /ws connection is served by two goroutines: one reads ahead into a
// queue of at most [Config.MaxPending] messages (and [Config.MaxPendingBytes],
// [Config.MaxPendingTotal] over all sessions), answers pings and notices a
// disconnect, which cancels the step in progress; the other answers the
// messages in order, each within [Config.StepTimeout]. A client that stops
// reading is closed when a write takes longer than [Config.WriteTimeout]; a
// peer that neither answers a ping nor reads a reply within
// [Config.PongTimeout] is dropped.
//
// # Connections
//
// Serve each listener through one [ConnLimit]: it bounds how long a client
// may take to send a request and how long a keep-alive connection may wait
// idle, and caps the connections that are not WebSocket sessions, so idle
// or unauthenticated clients cannot exhaust the file descriptors sessions
// need.
//
// # Concurrency
//
// A [Server] is safe for concurrent use, and so must a [Backend] be. An
// [Instance] is not: the server never calls one instance from two
// goroutines at once, never after Close, and closes it exactly once.
package openenv
