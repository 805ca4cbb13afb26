// Package web is Seahaven's inspector and playground: a small single-page
// UI, embedded in the binary, that `seahaven serve` mounts at /web.
//
// The page talks to the server only through its public protocol: one
// WebSocket to /ws for its playground session (reset, step, state and
// inspect messages) and the JSON GET endpoints /metadata, /composition,
// /fixtures, /tasks, /sessions and /sessions/{ref}/watch. It has no private
// back door, so what it shows is exactly what a remote client or grader can
// see.
//
// # Panels
//
//   - Playground: reset options (task with its instruction, fixture, seed,
//     now, clock mode, startup keywords, control tools) or a checkpoint to
//     restore instead, the tool surface
//     with descriptions and input schemas, a form generated from the
//     selected tool's input schema, the call's result, the task's grading
//     (reward, done, every check) and the timeline of the episode's calls
//     with the rows each changed, and the session's change log grouped per
//     call with a before/after diff of every row (tables named node.table).
//     A session its server drained (closed with 1012 and "checkpoint <id>")
//     is restored from that checkpoint into a new one at a click; a restore
//     the new session refuses leaves the id in the form's Checkpoint field,
//     to try again or replace, and nothing of the drained session's
//     episode shown: the new session has none yet.
//   - Composition: the sealed tree of the served world drawn as a tree
//     (canonical paths, worlds and versions, scopes, aliases, schema hashes,
//     store files) with its AddWorld edges (name, tool prefix, allow and
//     block lists, store scope).
//   - SQL console: read-only SQL over the session's inspection connection,
//     results as a table and errors as the server reports them.
//   - Fixtures: every fixture with its parent chain and per-node file hashes.
//   - Sessions: the server's live sessions (transport, age, idle time, step
//     count), refreshed periodically, each with a Watch button.
//   - Watch: one live session, read-only, polled every second: its facts,
//     its task's grading and the timeline of its calls, as its own client
//     (a trainer, an MCP agent) steps it.
//
// # Mounting
//
// [Handler] serves the assets under /web/ and redirects /web to /web/; mount
// it beside the protocol handler:
//
//	mux := http.NewServeMux()
//	mux.Handle("/web/", web.Handler())
//	mux.Handle("/web", web.Handler())
//	mux.Handle("/", srv.Handler())
//
// A server with a token mounts [HandlerWithAuth] instead, which asks a
// browser for the token once and keeps a session cookie (see
// openenv.Server.Login), as `seahaven serve` does.
//
// The assets are plain HTML, CSS and JavaScript modules with no build step
// and no third-party code; they load nothing from other origins.
package web
