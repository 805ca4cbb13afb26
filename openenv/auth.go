package openenv

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
)

// openPaths are the routes served without a token: the probes an
// orchestrator sends, which cannot carry a secret (a Kubernetes httpGet
// probe takes no header from a Secret). They disclose only whether the
// server is up and has room.
var openPaths = map[string]bool{"/health": true, "/ready": true, "/accepting": true}

// RequireToken returns next behind the server's bearer token
// ([Config.Token]): a request to any route but /health, /ready and /accepting without
// "Authorization: Bearer <token>" (or HTTP Basic auth whose password is the
// token, as a client sends the user-info of http://seahaven:TOKEN@host; or,
// from a browser, the session cookie [Server.Login] sets) gets 401 with a JSON body
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
	return s.requireSecret(&s.auth, true, next)
}

// requireAgentToken is RequireToken for the agent listener: with an
// AgentToken configured, that token alone (no cookie) opens it.
func (s *Server) requireAgentToken(next http.Handler) http.Handler {
	if s.cfg.AgentToken == "" {
		return s.RequireToken(next)
	}
	return s.requireSecret(&s.agentAuth, false, next)
}

// requireSecret refuses a request to any route but the open ones without
// the bearer token of a, or with cookies, the session cookie.
func (s *Server) requireSecret(a *secrets, cookies bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := credential(r)
		switch n := len(r.Header.Values("Authorization")); {
		case openPaths[r.URL.Path]:
			next.ServeHTTP(w, r)
		case n > 1:
			s.unauthorized(w, r, `Bearer realm="seahaven", error="invalid_request"`, repeatedHeader("Authorization", n))
		case ok && same(token, a.token), !ok && cookies && s.sessionCookieValid(r):
			next.ServeHTTP(w, r)
		case ok:
			s.unauthorized(w, r, `Bearer realm="seahaven", error="invalid_token"`, "Invalid bearer token")
		default:
			s.unauthorized(w, r, `Bearer realm="seahaven"`,
				"Not authenticated: send the header Authorization: Bearer <token>")
		}
	})
}

// credential returns the token a request carries: the Bearer token of its
// Authorization header, or the password of HTTP Basic auth (any user name),
// which clients that cannot add a header send from the URL's user-info
// (http://seahaven:TOKEN@host:8000). A request sending the header more
// than once carries none that is valid.
func credential(r *http.Request) (string, bool) {
	if len(r.Header.Values("Authorization")) > 1 {
		return "", true
	}
	if _, password, ok := r.BasicAuth(); ok {
		return password, password != ""
	}
	return bearerToken(r.Header.Get("Authorization"))
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
func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request, challenge, why string) {
	s.metrics.authFailures.Inc()
	s.log.Debug("openenv: request refused without a valid token", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
	w.Header().Set("WWW-Authenticate", challenge)
	writeJSON(w, http.StatusUnauthorized, detail{why})
}

// limitBodies caps every request body at MaxMessageBytes, so each route,
// including any added later, honours the limit even if it reads the body
// without the server's own readBody. A handler reading past the limit gets
// an *http.MaxBytesError, and the connection is closed after the reply.
//
// The routes get a copy of the request with the limited body: net/http
// ends a connection on a body left unread, such as one refused for its
// Content-Length, with a FIN and a wait before the close only when its own
// request still holds that body; else it closes the socket at once on the
// unread bytes, whose reset a client still writing its body gets as a
// failed write, losing the reply.
//
// A request that expects 100-continue and whose Content-Length is over the
// limit gets a body every read of which fails at once, as one past the
// limit, without reading the connection: net/http sends 100 Continue on a
// body's first read, and the client would write its body only to be
// refused. Never asked, it sends none and reads the route's 413.
func (s *Server) limitBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			r = r.WithContext(r.Context()) // a copy: see above
			if r.ContentLength > s.cfg.MaxMessageBytes && expectsContinue(r) {
				w.Header().Set("Connection", "close") // what follows is no request
				r.Body = tooLargeBody{limit: s.cfg.MaxMessageBytes}
			} else {
				r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxMessageBytes)
				if s.large != nil {
					r.Body = &pacedBody{ReadCloser: r.Body, s: s, ctx: r.Context()}
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// expectsContinue reports whether r waits for 100 Continue before it sends
// its body (net/http answers any other expectation 417 itself).
func expectsContinue(r *http.Request) bool {
	for _, v := range strings.Split(r.Header.Get("Expect"), ",") {
		if strings.EqualFold(strings.TrimSpace(v), "100-continue") {
			return true
		}
	}
	return false
}

// tooLargeBody is the body of a request refused unread for its
// Content-Length (limitBodies): every read fails as one past the limit.
type tooLargeBody struct{ limit int64 }

func (b tooLargeBody) Read([]byte) (int, error) { return 0, &http.MaxBytesError{Limit: b.limit} }
func (tooLargeBody) Close() error               { return nil }

// pacedBody is a request body or a WebSocket message whose bytes past
// LargeMessageBytes are read no faster than LargeMessageRate allows across
// the server.
type pacedBody struct {
	io.ReadCloser
	s    *Server
	ctx  context.Context
	read int64 // bytes read so far
}

func (b *pacedBody) Read(p []byte) (int, error) {
	if b.read >= LargeMessageBytes {
		// Pay for the bytes read, after reading them: a Read may return
		// fewer than asked, and the last one none.
		n, err := b.ReadCloser.Read(p[:min(len(p), largeChunk)])
		b.read += int64(n)
		if n > 0 {
			if werr := b.s.large.WaitN(b.ctx, n); werr != nil {
				return n, werr
			}
		}
		return n, err
	}
	n, err := b.ReadCloser.Read(p[:min(int64(len(p)), LargeMessageBytes-b.read)])
	b.read += int64(n)
	return n, err
}

// SessionCookie is the cookie a browser carries instead of the bearer
// header, which a page cannot add to its WebSocket: [Server.Login] sets it.
// Its value is derived from the token (it does not reveal the token) and is
// valid until the server's token changes.
const SessionCookie = "seahaven_session"

// secrets holds what a request's credentials are compared with, derived
// once from the configured token. It is immutable.
type secrets struct {
	token   [sha256.Size]byte // digest of the token
	cookie  string            // the session cookie's value
	session [sha256.Size]byte // digest of cookie
}

// newSecrets derives the secrets of token ("": none configured).
func newSecrets(token string) secrets {
	if token == "" {
		return secrets{}
	}
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("seahaven browser session v1"))
	cookie := hex.EncodeToString(m.Sum(nil))
	return secrets{token: sha256.Sum256([]byte(token)), cookie: cookie, session: sha256.Sum256([]byte(cookie))}
}

// same compares got with the secret whose digest is want. Comparing
// digests keeps the time independent of got's length too.
func same(got string, want [sha256.Size]byte) bool {
	d := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(d[:], want[:]) == 1
}

// sessionCookieValid reports whether r carries a valid session cookie.
func (s *Server) sessionCookieValid(r *http.Request) bool {
	c, err := r.Cookie(SessionCookie)
	return err == nil && same(c.Value, s.auth.session)
}

// Authorized reports whether r may use the token-protected routes: no token
// is configured, or r carries a valid bearer header or session cookie. It
// is safe for concurrent use.
func (s *Server) Authorized(r *http.Request) bool {
	if s.cfg.Token == "" {
		return true
	}
	if token, ok := credential(r); ok {
		return same(token, s.auth.token)
	}
	return s.sessionCookieValid(r)
}

// Login checks token, typed by a person into a login form, against the
// server's token. When it matches it sets the session cookie on w (HttpOnly,
// SameSite=Strict, Path=/, Secure on TLS or behind a proxy that says
// X-Forwarded-Proto: https) and returns true; otherwise it counts an
// authentication failure and returns false. With no token configured it
// returns true and sets nothing. It is safe for concurrent use.
func (s *Server) Login(w http.ResponseWriter, r *http.Request, token string) bool {
	if s.cfg.Token == "" {
		return true
	}
	if !same(token, s.auth.token) {
		s.metrics.authFailures.Inc()
		s.log.Debug("openenv: browser login refused", "remote", r.RemoteAddr)
		return false
	}
	setSessionCookie(w, r, s.auth.cookie, 0)
	return true
}

// Logout clears the session cookie.
func (s *Server) Logout(w http.ResponseWriter, r *http.Request) {
	setSessionCookie(w, r, "", -1)
}

// setSessionCookie sets the session cookie to value, Secure when r reached
// the client over TLS.
func setSessionCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: viaTLS(r)})
}
