package cli

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestServe_WebSignIn checks how serve mounts the UI on a server with a
// token: the page asks for the token, the assets are open, the sign-in sets
// a cookie the API accepts, and the API still refuses requests without one.
func TestServe_WebSignIn(t *testing.T) {
	live := mustServeLive(t)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string, cookie *http.Cookie) (int, string) {
		req, _ := http.NewRequest("GET", live.base+path, nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get("/web/", nil); code != 200 || !strings.Contains(body, `name="token"`) {
		t.Errorf("GET /web/ without credentials = %d, want the sign-in form:\n%.300s", code, body)
	}
	if code, _ := get("/web/app.js", nil); code != 200 {
		t.Errorf("GET /web/app.js = %d, want 200", code)
	}
	if code, _ := get("/composition", nil); code != http.StatusUnauthorized {
		t.Errorf("GET /composition without credentials = %d, want 401", code)
	}
	if code, _ := get("/debug/runtime", nil); code != http.StatusUnauthorized {
		t.Errorf("GET /debug/runtime without credentials = %d, want 401", code)
	}

	res, err := noRedirect.PostForm(live.base+"/web/login", url.Values{"token": {"wrong"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || len(res.Cookies()) != 0 {
		t.Errorf("sign-in with a wrong token = %d with cookies %v", res.StatusCode, res.Cookies())
	}
	res, err = noRedirect.PostForm(live.base+"/web/login", url.Values{"token": {live.token}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/web/" || len(res.Cookies()) != 1 {
		t.Fatalf("sign-in = %d to %q with cookies %v", res.StatusCode, res.Header.Get("Location"), res.Cookies())
	}
	cookie := res.Cookies()[0]
	if code, body := get("/web/", cookie); code != 200 || !strings.Contains(body, `src="app.js"`) {
		t.Errorf("GET /web/ signed in = %d, want the inspector:\n%.300s", code, body)
	}
	for _, path := range []string{"/composition", "/metadata", "/debug/runtime"} {
		if code, body := get(path, cookie); code != 200 {
			t.Errorf("GET %s with the cookie = %d: %.200s", path, code, body)
		}
	}
	// Pages of other sites cannot sign a browser in or out, nor reach the
	// sign-in through a name of theirs (DNS rebinding): the server's own
	// checks hold at /web as on every route.
	for _, tc := range []struct{ path, origin, host string }{
		{"/web/logout", "http://evil.example", ""},
		{"/web/login", "http://127.0.0.1:1", ""},
		{"/web/login", "", "evil.example"},
	} {
		req, _ := http.NewRequest("POST", live.base+tc.path, strings.NewReader(url.Values{"token": {live.token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(cookie)
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		if tc.host != "" {
			req.Host = tc.host
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden || len(res.Cookies()) != 0 {
			t.Errorf("POST %s (Origin %q, Host %q) = %d with cookies %v, want 403 and none", tc.path, tc.origin, tc.host, res.StatusCode, res.Cookies())
		}
	}
	// The agent listener has no UI and no sign-in.
	if code, _ := live.get(t, "GET", live.agent+"/web/", "", true); code != http.StatusNotFound {
		t.Errorf("GET /web/ on the agent listener = %d, want 404", code)
	}
}
