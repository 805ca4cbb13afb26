package openenv

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// openPaths are the routes served without a token: the probes an
// orchestrator sends, which cannot carry a secret (a Kubernetes httpGet
// probe takes no header from a Secret). They disclose only whether the
// server is up and has room.
var openPaths = map[string]bool{"/health": true, "/ready": true}

// RequireToken returns next behind the server's bearer token
// ([Config.Token]): a request to any route but /health and /ready without
// "Authorization: Bearer <token>" gets 401 with a JSON body
// {"detail":"…"} and a WWW-Authenticate: Bearer header, before next sees
// it, so a WebSocket upgrade is refused before it is accepted. The
// comparison takes the same time whatever the token sent. With no token
// configured, next is returned as is.
//
// [Server.Handler] and [Server.AgentHandler] are already wrapped; use
// RequireToken for handlers mounted beside them (a UI, say). The returned
// handler is safe for concurrent use.
func (s *Server) RequireToken(next http.Handler) http.Handler {
	if s.cfg.Token == "" {
		return next
	}
	want := sha256.Sum256([]byte(s.cfg.Token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if openPaths[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		token, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok {
			s.unauthorized(w, r, `Bearer realm="seahaven"`,
				"Not authenticated: send the header Authorization: Bearer <token>")
			return
		}
		// Comparing digests keeps the time independent of the token's length too.
		got := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			s.unauthorized(w, r, `Bearer realm="seahaven", error="invalid_token"`, "Invalid bearer token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearerToken returns the token of an Authorization header value of the
// Bearer scheme (the scheme name is case-insensitive, RFC 9110 §11.1).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// unauthorized answers 401 and counts the refusal. It is logged at debug
// level only: a client probing for the token must not flood the logs, and
// seahaven_auth_failures_total shows the rate.
func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request, challenge, detail string) {
	s.metrics.authFailures.Inc()
	s.log.Debug("openenv: request refused without a valid token", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
	w.Header().Set("WWW-Authenticate", challenge)
	writeJSON(w, http.StatusUnauthorized, object{{"detail", detail}})
}

// limitBodies caps every request body at MaxMessageBytes, so each route,
// including any added later, honours the limit even if it reads the body
// without the server's own readBody. A handler reading past the limit gets
// an *http.MaxBytesError, and the connection is closed after the reply.
func (s *Server) limitBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxMessageBytes)
		}
		next.ServeHTTP(w, r)
	})
}
