package web

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// Prefix is the path the UI is served under.
const Prefix = "/web/"

//go:embed ui
var files embed.FS

// contentSecurityPolicy keeps the page to its own origin: its scripts,
// styles and connections (fetch and the /ws WebSocket) all stay on the
// server that served it.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// loginSecurityPolicy is contentSecurityPolicy for the sign-in page, whose
// form posts to its own origin and whose script (login.js, which keeps the
// tab's fragment through the sign-in) is its own.
const loginSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// contentTypes fixes the types of the assets' extensions, so they do not
// depend on the host's MIME tables; an asset of another extension is
// sniffed.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
}

// asset is one embedded file, read once.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// handler serves the embedded assets. It is immutable once built.
type handler struct {
	assets map[string]asset // by name relative to ui/, "index.html" for the page
}

// Handler returns the handler of the UI. It serves every asset under
// [Prefix] and redirects the bare /web to /web/, keeping the query. Only
// GET and HEAD are allowed: another method is 405 {"detail":"Method Not
// Allowed"} with Allow: GET, HEAD, and any other path is 404
// {"detail":"Not Found"}, both application/json as the server's other
// routes answer. Responses carry a strong ETag so revalidation costs a
// 304, and a Content-Security-Policy that keeps the page on its own origin.
// The handler is safe for concurrent use.
func Handler() http.Handler { return loadHandler() }

// loadHandler reads the embedded assets once.
var loadHandler = sync.OnceValue(func() *handler {
	h := &handler{assets: map[string]asset{}}
	err := fs.WalkDir(files, "ui", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "ui/")
		h.assets[name] = newAsset(name, b)
		return nil
	})
	if err != nil {
		// The files are compiled in; failing to read them is a broken build.
		panic(fmt.Sprintf("web: reading embedded assets: %v", err))
	}
	return h
})

// newAsset returns the asset named name with body b.
func newAsset(name string, b []byte) asset {
	sum := sha256.Sum256(b)
	ct := cmp.Or(contentTypes[path.Ext(name)], http.DetectContentType(b))
	return asset{body: b, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
}

// ServeHTTP serves one asset.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
		target := Prefix
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, target, http.StatusMovedPermanently)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		notFound(w)
		return
	}
	if name == "" {
		name = "index.html"
	}
	a, ok := h.assets[name]
	if !ok {
		notFound(w)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET, HEAD")
		return
	}
	policy := ""
	switch name {
	case "index.html":
		policy = contentSecurityPolicy
	case "login.html": // the sign-in page by name: framed by nobody either
		policy = loginSecurityPolicy
	}
	setHeaders(w.Header(), a.contentType, "no-cache", policy)
	w.Header().Set("ETag", a.etag)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
}

// Auth is the server's token check, as the UI needs it; *openenv.Server
// implements it.
type Auth interface {
	// Authorized reports whether r carries valid credentials (or none are
	// needed).
	Authorized(r *http.Request) bool
	// Login checks a token typed into the sign-in form and, when it is
	// right, sets the browser's session cookie on w.
	Login(w http.ResponseWriter, r *http.Request, token string) bool
	// Logout clears the session cookie.
	Logout(w http.ResponseWriter, r *http.Request)
}

// maxLoginForm bounds the sign-in form's body.
const maxLoginForm = 8 << 10

// formTooLarge is the sign-in page's message for a form over maxLoginForm.
const formTooLarge = "The form is too large: a sign-in form is at most 8 KiB."

// signOutHidden and signOutShown are the page's sign-out button as
// index.html has it and as HandlerWithAuth serves it.
const (
	signOutHidden = `id="sign-out" class="small" hidden>`
	signOutShown  = `id="sign-out" class="small">`
)

// withSignOut is the handler HandlerWithAuth serves the assets with: the
// page shows its sign-out button.
var withSignOut = sync.OnceValue(func() *handler {
	h := loadHandler()
	page := h.assets["index.html"]
	body := bytes.Replace(page.body, []byte(signOutHidden), []byte(signOutShown), 1)
	if bytes.Equal(body, page.body) {
		panic("web: index.html has no sign-out button")
	}
	assets := maps.Clone(h.assets)
	assets["index.html"] = newAsset("index.html", body)
	return &handler{assets: assets}
})

// HandlerWithAuth is Handler for a server that requires a token. A browser
// cannot add the bearer header to the page's WebSocket, so the UI signs in
// instead: the page itself is replaced by a sign-in form until the request
// is authorized; POST [Prefix]login with the form field "token" sets the
// session cookie (auth.Login) and redirects to the page (the sign-in
// page's script posts the form with the tab's fragment, which the browser
// keeps across that redirect, so a #view asked for is the one shown), and POST
// [Prefix]logout clears it, from the page's sign-out button, which only
// this handler shows. The other assets (styles, scripts, icon) are the
// same for everyone and are served without credentials; every route they
// call stays behind the token. GET and HEAD of [Prefix]login and
// [Prefix]logout, as a browser sends when its address bar shows the
// sign-in form's URL after a refused token, redirect to the page, signing
// nobody in or out. A sign-in form over 8 KiB is refused with
// 413 on the sign-in page, unread when its Content-Length says so. The
// handler is safe for concurrent use.
func HandlerWithAuth(auth Auth) http.Handler {
	h := withSignOut()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case Prefix + "login", Prefix + "logout":
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				// The address bar after a refused sign-in: the page, which
				// is the form again while signed out.
				http.Redirect(w, r, Prefix, http.StatusSeeOther)
				return
			}
			if r.Method != http.MethodPost {
				methodNotAllowed(w, "GET, HEAD, POST")
				return
			}
			if r.URL.Path == Prefix+"logout" {
				auth.Logout(w, r)
				http.Redirect(w, r, Prefix, http.StatusSeeOther)
				return
			}
			// A form declared over the limit is refused unread, so a
			// client that expects 100-continue is never asked for it.
			if r.ContentLength > maxLoginForm {
				h.login(w, r, http.StatusRequestEntityTooLarge, formTooLarge)
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxLoginForm)
			if err := r.ParseForm(); err != nil {
				var tooBig *http.MaxBytesError
				if errors.As(err, &tooBig) {
					h.login(w, r, http.StatusRequestEntityTooLarge, formTooLarge)
					return
				}
				h.login(w, r, http.StatusBadRequest, "The form could not be read: "+err.Error())
				return
			}
			if !auth.Login(w, r, r.PostForm.Get("token")) {
				h.login(w, r, http.StatusUnauthorized, "That token is not this server's.")
				return
			}
			http.Redirect(w, r, Prefix, http.StatusSeeOther)
			return
		case Prefix, Prefix + "index.html":
			if !auth.Authorized(r) && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
				h.login(w, r, http.StatusOK, "")
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// login serves the sign-in page with status code and, when not empty, an
// error message.
func (h *handler) login(w http.ResponseWriter, r *http.Request, code int, message string) {
	body := h.assets["login.html"].body
	if message != "" {
		body = bytes.Replace(body, []byte("<!--error-->"),
			[]byte(`<div class="banner error" role="alert">`+html.EscapeString(message)+`</div>`), 1)
	}
	setHeaders(w.Header(), contentTypes[".html"], "no-store", loginSecurityPolicy)
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// notFound answers 404 {"detail":"Not Found"} as application/json, as the
// server's own routes (package openenv) answer a path they do not serve.
func notFound(w http.ResponseWriter) {
	replyDetail(w, http.StatusNotFound, `{"detail":"Not Found"}`)
}

// methodNotAllowed answers 405 {"detail":"Method Not Allowed"} as
// application/json with allow, the methods the path takes, in the Allow
// header, as the server's own routes answer.
func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	replyDetail(w, http.StatusMethodNotAllowed, `{"detail":"Method Not Allowed"}`)
}

// replyDetail writes body, a JSON error document, with status code.
func replyDetail(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	io.WriteString(w, body)
}

// setHeaders sets the headers every UI response carries: its type and
// caching, no sniffing, no referrer to other origins, and its
// Content-Security-Policy when policy is not empty.
//
// The referrer policy is same-origin, not no-referrer: under no-referrer a
// browser sends "Origin: null" with the page's own POSTs (the sign-in
// form, the sign-out button), which the server's origin check
// (openenv.Server.BrowserGuard) must refuse as it refuses any page it
// cannot place.
func setHeaders(hd http.Header, contentType, cacheControl, policy string) {
	hd.Set("Content-Type", contentType)
	hd.Set("Cache-Control", cacheControl)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	if policy != "" {
		hd.Set("Content-Security-Policy", policy)
	}
}
