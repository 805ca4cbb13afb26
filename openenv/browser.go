package openenv

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/go-chi/cors"

	"github.com/seahaven/seahaven/internal/runecut"
)

// BrowserGuard returns next behind the checks every route of the server's
// own handlers has against web pages of other sites, for a handler served
// beside them too, such as the /web inspector's sign-in. It is safe for
// concurrent use. It refuses what a web page of another site can make a
// browser send, before any route sees it:
//
//   - a Host the server does not answer to: a DNS name of the attacker's
//     that resolves to the server (DNS rebinding) makes the page same-origin
//     with it. IP literals and localhost always pass; a request that
//     reaches the server on a loopback address (the connection's local
//     address, so a wildcard listener reached through 127.0.0.1 too)
//     answers to nothing else unless Config.AllowedHosts names it, and
//     when AllowedHosts is set every address answers to those names only.
//     /health, /ready and /accepting pass, for probes.
//   - a state-changing request (any method but GET, HEAD and OPTIONS) whose
//     Origin is neither the server's own nor in Config.AllowedOrigins. A
//     request without Origin (not from a page) passes. /mcp refuses such
//     an Origin on every method, as the Streamable HTTP transport has a
//     server do on every request to its MCP endpoint (its GET included),
//     answering in JSON-RPC's shape (refuseOrigin); /ws checks it through
//     the WebSocket handshake.
//
// Both refusals are 403 {"detail": …}, but for /mcp's of an Origin. The
// pages of AllowedOrigins get CORS headers from cors, inside this guard.
func (s *Server) BrowserGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if openPaths[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		if !s.hostAllowed(r) {
			writeJSON(w, http.StatusForbidden, detail{"Host " + runecut.Echo(r.Host) + " is not one this server answers to (a page of another site reaching it by DNS rebinding is refused): " +
				"use its address, localhost, or a name the server's allowed hosts list"})
			return
		}
		switch {
		case r.URL.Path == "/mcp":
			// POST and DELETE check Origin in their handlers; the methods
			// /mcp does not serve are refused here, before their 405.
			if r.Method != http.MethodPost && r.Method != http.MethodDelete && s.refuseOrigin(w, r) {
				return
			}
		case r.Method == http.MethodGet, r.Method == http.MethodHead, r.Method == http.MethodOptions:
		default:
			if o := r.Header.Get("Origin"); o != "" && !s.originAllowed(o, r) {
				writeJSON(w, http.StatusForbidden, detail{originRefused(o)})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// viaTLS reports whether r reached the client over TLS: to the server
// itself, or to a proxy that says so (X-Forwarded-Proto: https).
func viaTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// originRefused is the detail of a 403 refusing a page's Origin o.
func originRefused(o string) string {
	return "Origin " + runecut.Echo(o) + " is not allowed: this server answers pages of its own origin and of its allowed origins only"
}

// cors lets the pages of Config.AllowedOrigins use the server from a
// browser, which asks first (a CORS preflight) before it sends a JSON
// POST or a DELETE to another origin, and shows a page a reply only when
// the reply allows its origin. It answers the preflight of such a page,
// before the token check, since a preflight carries no credentials, and
// marks every reply to the page as readable by it, with the session
// headers a client reads (the MCP TypeScript SDK's client reads
// Mcp-Session-Id), and lets it send the headers MCP has a client send
// (a 2026-07-28 client's Mcp-Method and Mcp-Name among them). Without
// AllowedOrigins it adds nothing: a page of the server's own origin needs
// none of it.
func (s *Server) cors(next http.Handler) http.Handler {
	if len(s.cfg.AllowedOrigins) == 0 {
		return next
	}
	return cors.Handler(cors.Options{
		AllowOriginFunc: func(r *http.Request, origin string) bool { return s.originAllowed(origin, r) },
		AllowedMethods:  []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodDelete},
		AllowedHeaders: []string{"Authorization", "Content-Type", "Accept", "Last-Event-ID",
			MCPSessionHeader, "Mcp-Protocol-Version", mcpMethodHeader, mcpNameHeader, SessionHeader},
		ExposedHeaders: []string{MCPSessionHeader, SessionHeader, "WWW-Authenticate"},
		MaxAge:         600,
	})(next)
}

// hostAllowed applies BrowserGuard's Host rule.
func (s *Server) hostAllowed(r *http.Request) bool {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if net.ParseIP(host) != nil || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if len(s.cfg.AllowedHosts) > 0 {
		return slices.ContainsFunc(s.cfg.AllowedHosts, func(a string) bool { return strings.EqualFold(a, host) })
	}
	// Not a request that reached the server on a loopback address.
	a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	return !ok || !a.IP.IsLoopback()
}

// originAllowed reports whether a page of origin may change state through
// r: it is the server's own (its host is r's Host, over https when r
// reached the client over TLS: viaTLS) or one of Config.AllowedOrigins.
// A request that says nothing of TLS admits its host's page of either
// scheme: a proxy may end TLS without saying so.
func (s *Server) originAllowed(origin string, r *http.Request) bool {
	if u, err := url.Parse(origin); err == nil && (u.Scheme == "https" || u.Scheme == "http" && !viaTLS(r)) && strings.EqualFold(u.Host, r.Host) {
		return true
	}
	return slices.ContainsFunc(s.cfg.AllowedOrigins, func(a string) bool { return strings.EqualFold(strings.TrimSuffix(a, "/"), origin) })
}

// originPatterns are Config.AllowedOrigins as the WebSocket handshake's own
// Origin check matches them: scheme and host, so that an https origin does
// not admit the page of the same host over http, with path.Match's
// metacharacters (an IPv6 host's brackets) escaped.
func (s *Server) originPatterns() []string {
	var patterns []string
	for _, o := range s.cfg.AllowedOrigins {
		if u, err := url.Parse(o); err == nil && u.Host != "" {
			patterns = append(patterns, matchEscaper.Replace(u.Scheme+"://"+u.Host))
		}
	}
	return patterns
}

// matchEscaper escapes the metacharacters of path.Match.
var matchEscaper = strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
