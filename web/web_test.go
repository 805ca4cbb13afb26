package web_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/web"
)

func TestHandler(t *testing.T) {
	h := web.Handler()
	for _, tc := range []struct {
		name     string
		method   string
		path     string
		status   int
		header   string // a response header to check
		want     string // its expected value (a prefix)
		contains string // a string the body must contain
	}{
		{"RedirectBare", "GET", "/web", http.StatusMovedPermanently, "Location", "/web/", ""},
		{"RedirectKeepsQuery", "GET", "/web?debug=1", http.StatusMovedPermanently, "Location", "/web/?debug=1", ""},
		{"Index", "GET", "/web/", http.StatusOK, "Content-Type", "text/html; charset=utf-8", `<script type="module" src="app.js">`},
		{"IndexPolicy", "GET", "/web/", http.StatusOK, "Content-Security-Policy", "default-src 'none'; script-src 'self'", ""},
		{"IndexByName", "GET", "/web/index.html", http.StatusOK, "Content-Type", "text/html", "Seahaven inspector"},
		{"Script", "GET", "/web/app.js", http.StatusOK, "Content-Type", "text/javascript; charset=utf-8", "new Session("},
		{"Module", "GET", "/web/session.js", http.StatusOK, "Content-Type", "text/javascript", "export class Session"},
		{"Style", "GET", "/web/app.css", http.StatusOK, "Content-Type", "text/css; charset=utf-8", ".tabs"},
		{"Icon", "GET", "/web/favicon.svg", http.StatusOK, "Content-Type", "image/svg+xml", "<svg"},
		{"NoSniff", "GET", "/web/app.js", http.StatusOK, "X-Content-Type-Options", "nosniff", ""},
		{"Head", "HEAD", "/web/app.css", http.StatusOK, "Content-Type", "text/css", ""},
		{"ErrUnknownAsset", "GET", "/web/missing.js", http.StatusNotFound, "", "", ""},
		{"ErrDotDot", "GET", "/web/../web.go", http.StatusNotFound, "", "", ""},
		{"ErrEmbedDir", "GET", "/web/ui/app.js", http.StatusNotFound, "", "", ""},
		{"ErrOutsidePrefix", "GET", "/health", http.StatusNotFound, "", "", ""},
		{"ErrMethod", "POST", "/web/", http.StatusMethodNotAllowed, "Allow", "GET, HEAD", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "http://example.test"+tc.path, nil)
			req.URL.Path = tc.path // keep ".." as sent, as a raw client may
			if i := strings.IndexByte(tc.path, '?'); i >= 0 {
				req.URL.Path, req.URL.RawQuery = tc.path[:i], tc.path[i+1:]
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status = %d, want %d", rec.Code, tc.status)
			}
			if tc.header != "" && !strings.HasPrefix(rec.Header().Get(tc.header), tc.want) {
				t.Errorf("%s = %q, want prefix %q", tc.header, rec.Header().Get(tc.header), tc.want)
			}
			if tc.contains != "" && !strings.Contains(rec.Body.String(), tc.contains) {
				t.Errorf("body does not contain %q", tc.contains)
			}
			if tc.method == "HEAD" && rec.Body.Len() != 0 {
				t.Errorf("HEAD sent a body of %d bytes", rec.Body.Len())
			}
		})
	}
}

// TestHandler_ErrorsAreJSON asks both handlers for a path they do not
// serve and with a method a path does not take: they answer
// {"detail":"Not Found"} and {"detail":"Method Not Allowed"} (with Allow)
// as application/json, as the server's other routes do, not text/plain.
func TestHandler_ErrorsAreJSON(t *testing.T) {
	for _, tc := range []struct {
		name, method, path string
		auth               bool
		status             int
		body, allow        string
	}{
		{"UnknownAsset", "GET", "/web/missing.js", false, 404, `{"detail":"Not Found"}`, ""},
		{"OutsidePrefix", "GET", "/health", false, 404, `{"detail":"Not Found"}`, ""},
		{"PageMethod", "POST", "/web/", false, 405, `{"detail":"Method Not Allowed"}`, "GET, HEAD"},
		{"UnknownAssetWithAuth", "GET", "/web/missing.js", true, 404, `{"detail":"Not Found"}`, ""},
		{"PageMethodWithAuth", "DELETE", "/web/", true, 405, `{"detail":"Method Not Allowed"}`, "GET, HEAD"},
		{"LoginMethodWithAuth", "PUT", "/web/login", true, 405, `{"detail":"Method Not Allowed"}`, "GET, HEAD, POST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := web.Handler()
			if tc.auth {
				h = web.HandlerWithAuth(fakeAuth{})
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.status || rec.Body.String() != tc.body {
				t.Errorf("%d %q, want %d %q", rec.Code, rec.Body, tc.status, tc.body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			if got := rec.Header().Get("Allow"); got != tc.allow {
				t.Errorf("Allow = %q, want %q", got, tc.allow)
			}
		})
	}
}

func TestHandler_ETag(t *testing.T) {
	h := web.Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/web/app.js", nil))
	etag := rec.Header().Get("ETag")
	if rec.Code != http.StatusOK || !regexp.MustCompile(`^"[0-9a-f]{16}"$`).MatchString(etag) {
		t.Fatalf("first GET: status %d, ETag %q", rec.Code, etag)
	}
	for _, tc := range []struct {
		name   string
		match  string // the If-None-Match header
		status int
	}{
		{"Unchanged", etag, http.StatusNotModified},
		{"Stale", `"0000000000000000"`, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/web/app.js", nil)
			req.Header.Set("If-None-Match", tc.match)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Errorf("status = %d, want %d", rec.Code, tc.status)
			}
		})
	}
	other := httptest.NewRecorder()
	h.ServeHTTP(other, httptest.NewRequest("GET", "/web/app.css", nil))
	if other.Header().Get("ETag") == etag {
		t.Errorf("app.css and app.js share the ETag %s", etag)
	}
}

// references finds what a page or module loads: src and href attributes and
// ES module imports.
var references = regexp.MustCompile(`(?:src|href)="([^"#]+)"|\bfrom\s+"([^"]+)"|\bimport\s+"([^"]+)"`)

// TestHandler_References follows the page's references: every file it loads
// is served, nothing comes from another origin, and every embedded file is used.
func TestHandler_References(t *testing.T) {
	srv := httptest.NewServer(web.Handler())
	defer srv.Close()
	seen := map[string]bool{}
	queue := []string{"/web/", "/web/login.html"} // the sign-in page of HandlerWithAuth
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		res, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", p, res.StatusCode)
			continue
		}
		for _, m := range references.FindAllStringSubmatch(string(body), -1) {
			ref := m[1] + m[2] + m[3]
			if strings.Contains(ref, "//") || strings.HasPrefix(ref, "/") {
				t.Errorf("%s loads %q: assets must be relative to /web/, never from another origin", p, ref)
				continue
			}
			queue = append(queue, "/web/"+strings.TrimPrefix(ref, "./"))
		}
	}
	// Every embedded file is reached, so no dead file ships in the binary.
	ents, err := os.ReadDir("ui")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if p := "/web/" + e.Name(); e.Name() != "index.html" && !seen[p] {
			t.Errorf("ui/%s is embedded but the page never loads it", e.Name())
		}
	}
	if len(seen) < 3 {
		t.Errorf("the page loads only %v", seen)
	}
}

// fakeAuth accepts the token "right" and the cookie it sets.
type fakeAuth struct{}

func (fakeAuth) Authorized(r *http.Request) bool {
	c, err := r.Cookie("s")
	return err == nil && c.Value == "ok"
}

func (fakeAuth) Login(w http.ResponseWriter, _ *http.Request, token string) bool {
	if token != "right" {
		return false
	}
	http.SetCookie(w, &http.Cookie{Name: "s", Value: "ok"})
	return true
}

func (fakeAuth) Logout(w http.ResponseWriter, _ *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: "s", MaxAge: -1})
}

func TestHandlerWithAuth(t *testing.T) {
	h := web.HandlerWithAuth(fakeAuth{})
	do := func(method, path, body string, signedIn bool) *http.Response {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if signedIn {
			req.AddCookie(&http.Cookie{Name: "s", Value: "ok"})
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Result()
	}
	read := func(res *http.Response) string {
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	for _, tc := range []struct {
		name, method, path, body string
		signedIn                 bool
		status                   int
		contains, header, value  string
	}{
		{"PageAsksToSignIn", "GET", "/web/", "", false, 200, `<form method="post" action="login">`, "Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'"},
		{"PageByNameAsksToSignIn", "GET", "/web/index.html", "", false, 200, `name="token"`, "Cache-Control", "no-store"},
		{"PageWhenSignedIn", "GET", "/web/", "", true, 200, `<script type="module" src="app.js">`, "", ""},
		{"AssetsNeedNoSignIn", "GET", "/web/app.js", "", false, 200, "new Session(", "", ""},
		{"WrongToken", "POST", "/web/login", "token=wrong", false, 401, "That token is not this server", "", ""},
		{"MessageEscaped", "POST", "/web/login", "token=%3Cb%3E", false, 401, `role="alert"`, "", ""},
		{"RightToken", "POST", "/web/login", "token=right", false, 303, "", "Location", "/web/"},
		// The URL a refused sign-in leaves in the address bar, entered
		// again: the page (the form while signed out), not a dead end.
		{"LoginByGetGoesToPage", "GET", "/web/login", "", false, 303, "", "Location", "/web/"},
		{"LogoutByGetGoesToPage", "GET", "/web/logout", "", true, 303, "", "Location", "/web/"},
		{"LoginNeedsPost", "PUT", "/web/login", "", false, 405, "", "Allow", "GET, HEAD, POST"},
		{"FormTooLarge", "POST", "/web/login", "token=" + strings.Repeat("x", 9<<10), false, 413, "The form is too large", "", ""},
		{"Logout", "POST", "/web/logout", "", true, 303, "", "Location", "/web/"},
		{"BareRedirects", "GET", "/web", "", false, 301, "", "Location", "/web/"},
		// The sign-in page by name is framed by nobody, as the page is.
		{"SignInPageByName", "GET", "/web/login.html", "", false, 200, `name="token"`, "Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'"},
		// The page takes GET and HEAD only, signed in or not.
		{"PageNeedsGet", "DELETE", "/web/", "", false, 405, "", "Allow", "GET, HEAD"},
		{"PageNeedsGetSignedIn", "OPTIONS", "/web/", "", true, 405, "", "Allow", "GET, HEAD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := do(tc.method, tc.path, tc.body, tc.signedIn)
			body := read(res)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d; body %.200s", res.StatusCode, tc.status, body)
			}
			if !strings.Contains(body, tc.contains) {
				t.Errorf("body does not contain %q: %.300s", tc.contains, body)
			}
			if tc.header != "" && !strings.HasPrefix(res.Header.Get(tc.header), tc.value) {
				t.Errorf("%s = %q, want %q", tc.header, res.Header.Get(tc.header), tc.value)
			}
		})
	}
	t.Run("CookieSetOnlyForTheRightToken", func(t *testing.T) {
		if c := do("POST", "/web/login", "token=wrong", false).Cookies(); len(c) != 0 {
			t.Errorf("wrong token set %v", c)
		}
		if c := do("POST", "/web/login", "token=right", false).Cookies(); len(c) != 1 || c[0].Value != "ok" {
			t.Errorf("right token set %v", c)
		}
		if c := do("POST", "/web/logout", "", true).Cookies(); len(c) != 1 || c[0].MaxAge >= 0 {
			t.Errorf("logout set %v", c)
		}
	})
	t.Run("ChunkedFormTooLarge", func(t *testing.T) {
		// No Content-Length: the form is refused when its reading passes
		// the limit.
		req := httptest.NewRequest("POST", "/web/login", io.MultiReader(strings.NewReader("token="), strings.NewReader(strings.Repeat("x", 9<<10))))
		req.ContentLength = -1
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "The form is too large") {
			t.Errorf("status %d, want 413 on the sign-in page; body %.300s", rec.Code, rec.Body)
		}
	})
	t.Run("NoScriptInjection", func(t *testing.T) {
		body := read(do("POST", "/web/login", "token=%3Cscript%3E", false))
		if strings.Contains(body, "<script>") {
			t.Error("the sign-in page echoes markup")
		}
	})
}

// TestHandlerWithAuth_ExpectContinue sends a sign-in form over the limit
// that waits for 100 Continue: it is refused with 413 on the sign-in page
// before the server asks for its body, which is never sent.
func TestHandlerWithAuth_ExpectContinue(t *testing.T) {
	srv := httptest.NewServer(web.HandlerWithAuth(fakeAuth{}))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /web/login HTTP/1.1\r\nHost: x\r\n"+
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 9000\r\nExpect: 100-continue\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "The form is too large") {
		t.Errorf("status %d, want 413 on the sign-in page; body %.300s", res.StatusCode, body)
	}
}
