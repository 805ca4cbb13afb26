package openenv

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/seahaven/seahaven/env"
)

// AgentPaths are the routes of [Server.AgentHandler]: what an agent needs
// to discover and call tools, and nothing that resets, steps, inspects or
// reads the state of an episode.
var AgentPaths = []string{"/health", "/metadata", "/schema", "/openapi.json", "/mcp"}

// episodePaths are the HTTP episode routes, absent in production mode.
var episodePaths = map[string]bool{"/reset": true, "/step": true, "/state": true, "/inspect": true, "/grade": true, "/checkpoint": true}

// AgentHandler returns the handler of the agent-facing listener: POST /mcp,
// GET /health, /metadata, /schema and /openapi.json (which lists only
// these). Every other path is 404 {"detail":"Not Found"}, so an agent
// sandbox that can reach only this listener cannot open /ws, reset, read
// the state or inspect, whatever the mode. It reaches only the sessions it
// started (an id of any other session is unknown there), at most
// Config.AgentMaxSessions of them at once, and shares the server's token.
// The same handler is returned on each call; it is safe for concurrent use.
func (s *Server) AgentHandler() http.Handler { return s.agent }

// agentRoutes builds the handler of AgentHandler.
func (s *Server) agentRoutes() http.Handler {
	r := s.router(agentOpenAPI)
	agent := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			h(w, r.WithContext(context.WithValue(r.Context(), agentListenerKey{}, true)))
		}
	}
	r.Post("/mcp", agent(s.serveMCP))
	r.Delete("/mcp", agent(s.serveMCPDelete))
	return s.BrowserGuard(s.cors(s.requireAgentToken(s.limitBodies(r))))
}

// serveHealth serves GET /health.
func serveHealth(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, health{Status: "healthy"})
}

// notFound answers an unknown route of mux as FastAPI does: a path that
// is one of mux's routes but for a trailing slash (a client given an MCP
// URL ending in "/") is redirected there with 307, which keeps the method
// and the body; any other is 404 {"detail":"Not Found"}.
func notFound(mux chi.Routes) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, trimmed := strings.CutSuffix(r.URL.Path, "/")
		// Not "//…", which a client would take for another host.
		if trimmed && strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "//") && len(allowed(mux, p)) > 0 {
			u := *r.URL
			u.Path, u.RawPath = p, ""
			w.Header().Set("Location", u.RequestURI())
			w.WriteHeader(http.StatusTemporaryRedirect)
			return
		}
		writeJSON(w, http.StatusNotFound, detail{"Not Found"})
	}
}

// allowed returns the methods mux routes path for (HEAD with GET, see
// middleware.GetHead).
func allowed(mux chi.Routes, path string) []string {
	var methods []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if mux.Match(chi.NewRouteContext(), m, path) {
			methods = append(methods, m)
			if m == http.MethodGet {
				methods = append(methods, http.MethodHead)
			}
		}
	}
	return methods
}

// methodNotAllowed answers a known route of mux with the wrong method as
// FastAPI does, with the Allow header RFC 9110 asks of a 405: the methods
// mux routes the path for. To GET /mcp, the server offers no event stream
// of its own (every reply comes with its request), and the reply says so.
// A path no route serves is notFound's, whatever the method: mux calls
// this for any method it has no routes of (FOO, PROPFIND), wherever the
// path.
func methodNotAllowed(mux chi.Routes) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		methods := allowed(mux, r.URL.Path)
		if len(methods) == 0 {
			notFound(mux)(w, r)
			return
		}
		w.Header().Set("Allow", strings.Join(methods, ", "))
		msg := "Method Not Allowed"
		if r.URL.Path == "/mcp" {
			msg += ": /mcp takes POST (JSON-RPC) and DELETE (end a session); it has no event stream"
		}
		writeJSON(w, http.StatusMethodNotAllowed, detail{msg})
	}
}

// serveProbe serves GET /ready, or GET /accepting when accepting.
//
// /ready is the readiness probe of a replica that serves its sessions: 200
// {"status":"ready"}, at MaxSessions too (its sessions live there: a probe
// that took it out of rotation would strand them) and while Shutdown
// drains them (see Config.DrainCheckpoints); 503 once Shutdown closes
// them, or while its Backend cannot open instances (see
// [ReadinessChecker]).
//
// /accepting is 200 {"status":"accepting"} while the server takes new
// sessions, 503 at MaxSessions ("at_capacity") and whenever /ready is 503,
// for a load balancer that sends new sessions apart from the requests of
// live ones.
func (s *Server) serveProbe(accepting bool) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		active, down := len(s.sessions), s.closing || accepting && s.shutdown
		s.mu.Unlock()
		switch {
		case down:
			writeJSON(w, http.StatusServiceUnavailable, health{Status: "shutting_down"})
			return
		case accepting && active >= s.cfg.MaxSessions:
			writeJSON(w, http.StatusServiceUnavailable, health{Status: "at_capacity"})
			return
		}
		if rc, ok := s.backend.(ReadinessChecker); ok {
			var err error
			if perr := s.guard("Backend.Ready", func() { err = rc.Ready() }); perr != nil {
				err = perr
			}
			if err != nil {
				fault := env.FaultStorage
				if ie := (*env.InfraError)(nil); errors.As(err, &ie) {
					fault = ie.Kind
				}
				s.log.Error("openenv: not ready", "fault", fault, "err", err.Error())
				writeJSON(w, http.StatusServiceUnavailable, health{"not_ready", fault})
				return
			}
		}
		status := "ready"
		if accepting {
			status = "accepting"
		}
		writeJSON(w, http.StatusOK, health{Status: status})
	}
}

// agentListenerKey marks the context of a request the agent listener
// serves.
type agentListenerKey struct{}

// FromAgentListener reports whether ctx is of work a request to the agent
// listener (AgentHandler) started: its resets, its tool calls and the
// periodic checkpoints they take (Config.CheckpointEvery). A Backend may
// hold such work to a share of its capacity, so that agents cannot take
// what the main listener's requests need. It follows the request, not the
// session: the main listener's work on a session the agent listener
// started is not the agent listener's.
func FromAgentListener(ctx context.Context) bool { return ctx.Value(agentListenerKey{}) != nil }
