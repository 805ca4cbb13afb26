package openenv_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/openenv"
)

// testToken is the bearer token of the servers in these tests.
const testToken = "s3cret-token-for-tests"

// route is one request the server answers.
type route struct {
	method, path, body string
	want               int // the status with the right token
}

// everyRoute lists a request to each route Handler serves (but /ws, which
// is dialled), and one to an unknown path.
var everyRoute = []route{
	{"GET", "/metadata", "", 200},
	{"GET", "/schema", "", 200},
	{"GET", "/openapi.json", "", 200},
	{"GET", "/fixtures", "", 200},
	{"GET", "/sessions", "", 200},
	{"GET", "/sessions/x/watch", "", 404},
	{"GET", "/metrics", "", 200},
	{"POST", "/reset", `{"seed":1}`, 200},
	{"POST", "/step", `{"action":{"type":"list_tools"}}`, 200},
	{"GET", "/state", "", 200},
	{"POST", "/inspect", `{"sql":"SELECT message FROM echoes"}`, 200},
	{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, 200},
	{"GET", "/ws", "", 426}, // a plain GET is not an upgrade
	{"GET", "/no-such-route", "", 404},
}

func TestServer_RequireToken(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{Token: testToken})
	for _, r := range everyRoute {
		t.Run(strings.TrimPrefix(r.path, "/"), func(t *testing.T) {
			for _, tt := range []struct {
				name      string
				auth      string // the Authorization header; "" sends none
				challenge string // the WWW-Authenticate header of the 401
			}{
				{"NoToken", "", `Bearer realm="seahaven"`},
				{"WrongToken", "Bearer " + testToken + "x", `Bearer realm="seahaven", error="invalid_token"`},
				{"PrefixOfToken", "Bearer " + testToken[:5], `Bearer realm="seahaven", error="invalid_token"`},
				{"WrongScheme", "Basic " + testToken, `Bearer realm="seahaven"`},
				{"EmptyBearer", "Bearer ", `Bearer realm="seahaven"`},
				{"WrongBasicPassword", "Basic " + base64.StdEncoding.EncodeToString([]byte("seahaven:"+testToken+"x")), `Bearer realm="seahaven", error="invalid_token"`},
				{"EmptyBasicPassword", "Basic " + base64.StdEncoding.EncodeToString([]byte(testToken+":")), `Bearer realm="seahaven"`},
			} {
				header := map[string]string{}
				if tt.auth != "" {
					header["Authorization"] = tt.auth
				}
				code, body, resp := s.httpDo(t, r.method, r.path, r.body, header)
				if code != http.StatusUnauthorized {
					t.Errorf("%s: status %d, want 401; body %s", tt.name, code, body)
					continue
				}
				if got := resp.Header.Get("WWW-Authenticate"); got != tt.challenge {
					t.Errorf("%s: WWW-Authenticate %q, want %q", tt.name, got, tt.challenge)
				}
				if d := str(t, body, "detail"); d == "" {
					t.Errorf("%s: empty detail in %s", tt.name, body)
				}
			}
			for _, auth := range []string{"Bearer " + testToken, "bearer " + testToken, "BEARER  " + testToken + " ",
				"Basic " + base64.StdEncoding.EncodeToString([]byte("seahaven:"+testToken)),
				"Basic " + base64.StdEncoding.EncodeToString([]byte(":"+testToken))} {
				code, body, _ := s.httpDo(t, r.method, r.path, r.body, map[string]string{"Authorization": auth})
				if code != r.want {
					t.Errorf("%q: status %d, want %d; body %s", auth, code, r.want, body)
				}
			}
		})
	}

	t.Run("ProbesOpen", func(t *testing.T) {
		for _, path := range []string{"/health", "/ready"} {
			code, body, _ := s.httpDo(t, "GET", path, "", nil)
			if code != http.StatusOK {
				t.Errorf("GET %s without a token: status %d, body %s", path, code, body)
			}
		}
	})

	t.Run("NoBodyReadWithoutToken", func(t *testing.T) {
		// A refused request runs nothing: the reset of a fixture that panics
		// would otherwise open an instance.
		before := s.fake.opened.Load()
		code, _, _ := s.httpDo(t, "POST", "/reset", `{"fixture":"panic"}`, nil)
		if code != http.StatusUnauthorized || s.fake.opened.Load() != before {
			t.Errorf("status %d, %d instances opened; want 401 and none", code, s.fake.opened.Load()-before)
		}
	})
}

func TestServer_RequireToken_WebSocket(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{Token: testToken})
	for _, tt := range []struct {
		name string
		auth string
	}{
		{"NoToken", ""},
		{"WrongToken", "Bearer nope"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := &websocket.DialOptions{HTTPHeader: http.Header{}}
			if tt.auth != "" {
				opts.HTTPHeader.Set("Authorization", tt.auth)
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			c, resp, err := websocket.Dial(ctx, s.wsURL(), opts)
			if err == nil {
				c.CloseNow()
				t.Fatal("the upgrade succeeded without the token")
			}
			if resp == nil || resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("dial error %v, response %v; want a 401", err, resp)
			}
			if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
				t.Errorf("WWW-Authenticate %q", got)
			}
			if n := len(s.Sessions()); n != 0 {
				t.Errorf("%d sessions after a refused upgrade", n)
			}
		})
	}
	t.Run("TokenInURL", func(t *testing.T) {
		// The handshake of a client that cannot add a header (OpenEnv's
		// Python clients): the token as the URL's user-info, which the
		// client sends as HTTP Basic auth.
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		u := strings.Replace(s.wsURL(), "://", "://seahaven:"+testToken+"@", 1)
		c, _, err := websocket.Dial(ctx, u, nil)
		if err != nil {
			t.Fatalf("dial %s: %v", u, err)
		}
		defer c.CloseNow()
		if typ := str(t, roundTrip(t, c, `{"type":"state"}`), "type"); typ != "state" {
			t.Errorf("state reply type %s", typ)
		}
	})
	t.Run("OK", func(t *testing.T) {
		c := s.dialWith(t, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}}})
		reply := roundTrip(t, c, `{"type":"reset","data":{"seed":3}}`)
		if typ := str(t, reply, "type"); typ != "observation" {
			t.Errorf("reset reply %s", reply)
		}
	})
}

func TestServer_RequireToken_Mounted(t *testing.T) {
	srv := openenv.NewServer(newFake(t), openenv.Config{Token: testToken})
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	ui := srv.RequireToken(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ui")) }))
	for _, tt := range []struct {
		auth string
		want int
	}{
		{"", http.StatusUnauthorized},
		{"Bearer " + testToken, http.StatusOK},
	} {
		req := httptest.NewRequest("GET", "/web/", nil)
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		rec := httptest.NewRecorder()
		ui.ServeHTTP(rec, req)
		if rec.Code != tt.want {
			t.Errorf("auth %q: status %d, want %d", tt.auth, rec.Code, tt.want)
		}
	}

	t.Run("NoTokenConfigured", func(t *testing.T) {
		open := openenv.NewServer(newFake(t), openenv.Config{})
		t.Cleanup(func() { open.Shutdown(context.Background()) })
		rec := httptest.NewRecorder()
		open.RequireToken(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest("GET", "/web/", nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("status %d, want the wrapped handler's 404", rec.Code)
		}
	})
}

func TestServer_NoToken(t *testing.T) {
	// Without a token, nothing asks for one.
	s := mustServe(t, newFake(t), openenv.Config{})
	for _, r := range everyRoute {
		code, body, resp := s.httpDo(t, r.method, r.path, r.body, nil)
		if code != r.want {
			t.Errorf("%s %s: status %d, want %d; body %s", r.method, r.path, code, r.want, body)
		}
		if resp.Header.Get("WWW-Authenticate") != "" {
			t.Errorf("%s %s: a WWW-Authenticate header without a token", r.method, r.path)
		}
	}
}

func TestServer_BodyLimit(t *testing.T) {
	const limit = 1024
	s := mustServe(t, newFake(t), openenv.Config{MaxMessageBytes: limit})
	big := `{"sql":"` + strings.Repeat("x", limit) + `"}`
	for _, path := range []string{"/reset", "/step", "/inspect"} {
		code, body, _ := s.httpDo(t, "POST", path, big, nil)
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "exceeds the limit of 1024 bytes") {
			t.Errorf("POST %s with %d bytes: status %d, body %s", path, len(big), code, body)
		}
	}
	body := s.rpc(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"`+strings.Repeat("x", limit)+`"}}`)
	if code := field(t, body, "error.code"); code != json.Number("-32600") || !strings.Contains(str(t, body, "error.message"), "exceeds the limit") {
		t.Errorf("POST /mcp over the limit: %s", body)
	}
	if n := s.fake.opened.Load(); n != 0 {
		t.Errorf("%d instances opened by refused bodies", n)
	}
}

// login signs in through Server.Login and returns the session cookie it set.
func login(t *testing.T, srv *openenv.Server, token string) (*http.Cookie, bool) {
	t.Helper()
	rec := httptest.NewRecorder()
	ok := srv.Login(rec, httptest.NewRequest("POST", "/web/login", nil), token)
	for _, c := range rec.Result().Cookies() {
		if c.Name == openenv.SessionCookie {
			return c, ok
		}
	}
	return nil, ok
}

func TestServer_SessionCookie(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{Token: testToken})

	t.Run("WrongTokenSetsNothing", func(t *testing.T) {
		for _, token := range []string{"", testToken + "x", testToken[:5]} {
			if c, ok := login(t, s.Server, token); ok || c != nil {
				t.Errorf("Login(%q) = %v with cookie %v", token, ok, c)
			}
		}
	})

	cookie, ok := login(t, s.Server, testToken)
	if !ok || cookie == nil {
		t.Fatalf("Login with the token = %v, cookie %v", ok, cookie)
	}
	t.Run("Attributes", func(t *testing.T) {
		if !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" || cookie.Secure {
			t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, not Secure over plain HTTP", cookie)
		}
		if strings.Contains(cookie.Value, testToken) {
			t.Error("the cookie carries the token itself")
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/web/login", nil)
		req.Header.Set("X-Forwarded-Proto", "https")
		s.Login(rec, req, testToken)
		if c := rec.Result().Cookies(); len(c) != 1 || !c[0].Secure {
			t.Errorf("behind a TLS proxy: cookies %v, want one Secure cookie", c)
		}
	})

	t.Run("OpensEveryRoute", func(t *testing.T) {
		for _, r := range everyRoute {
			code, body, _ := s.httpDo(t, r.method, r.path, r.body, map[string]string{"Cookie": cookie.String()})
			if code != r.want {
				t.Errorf("%s %s with the cookie: status %d, want %d; body %s", r.method, r.path, code, r.want, body)
			}
		}
	})

	t.Run("WebSocket", func(t *testing.T) {
		c := s.dialWith(t, &websocket.DialOptions{HTTPHeader: http.Header{"Cookie": {cookie.String()}}})
		reply := roundTrip(t, c, `{"type":"reset","data":{"seed":3}}`)
		if typ := str(t, reply, "type"); typ != "observation" {
			t.Errorf("reset reply %s", reply)
		}
	})

	t.Run("ForgedCookieRefused", func(t *testing.T) {
		for _, v := range []string{"", "x", testToken, cookie.Value[:len(cookie.Value)-1] + "0"} {
			if v == cookie.Value {
				continue
			}
			forged := &http.Cookie{Name: openenv.SessionCookie, Value: v}
			code, _, _ := s.httpDo(t, "GET", "/state", "", map[string]string{"Cookie": forged.String()})
			if code != http.StatusUnauthorized {
				t.Errorf("cookie %q: status %d, want 401", v, code)
			}
			req := httptest.NewRequest("GET", "/web/", nil)
			req.AddCookie(forged)
			if s.Authorized(req) {
				t.Errorf("Authorized with cookie %q", v)
			}
		}
	})

	t.Run("AnotherTokensCookieRefused", func(t *testing.T) {
		other := openenv.NewServer(newFake(t), openenv.Config{Token: "another-token"})
		t.Cleanup(func() { other.Shutdown(context.Background()) })
		req := httptest.NewRequest("GET", "/web/", nil)
		req.AddCookie(cookie)
		if other.Authorized(req) {
			t.Error("a server with another token accepted the cookie")
		}
	})

	t.Run("Logout", func(t *testing.T) {
		rec := httptest.NewRecorder()
		s.Logout(rec, httptest.NewRequest("POST", "/web/logout", nil))
		c := rec.Result().Cookies()
		if len(c) != 1 || c[0].Name != openenv.SessionCookie || c[0].MaxAge >= 0 || c[0].Value != "" {
			t.Errorf("Logout set %v, want the session cookie expired", c)
		}
	})

	t.Run("NoTokenConfigured", func(t *testing.T) {
		open := openenv.NewServer(newFake(t), openenv.Config{})
		t.Cleanup(func() { open.Shutdown(context.Background()) })
		if c, ok := login(t, open, "anything"); !ok || c != nil {
			t.Errorf("Login without a token configured = %v, cookie %v; want true and no cookie", ok, c)
		}
		if !open.Authorized(httptest.NewRequest("GET", "/web/", nil)) {
			t.Error("not Authorized without a token configured")
		}
	})
}

// A request sending Authorization more than once is refused naming the
// header, whichever of its values is the token: the server read the first
// alone, so the token then a wrong value passed, and a wrong value then the
// token was refused as a wrong token.
func TestServer_RepeatedAuthorization(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{Token: testToken})
	for _, values := range [][]string{
		{"Bearer " + testToken, "Bearer wrong"},
		{"Bearer wrong", "Bearer " + testToken},
		{"Bearer " + testToken, "Bearer " + testToken},
		{"Basic " + base64.StdEncoding.EncodeToString([]byte("seahaven:"+testToken)), "Bearer " + testToken},
	} {
		for _, r := range []struct{ method, path, body string }{
			{http.MethodGet, "/metadata", ""},
			{http.MethodPost, "/reset", "{}"},
			{http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
			{http.MethodGet, "/ws", ""},
		} {
			_, b, resp := s.httpDoHeader(t, r.method, r.path, r.body, http.Header{"Authorization": values})
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), "Header Authorization is sent 2 times: send it once") ||
				resp.Header.Get("WWW-Authenticate") != `Bearer realm="seahaven", error="invalid_request"` {
				t.Errorf("%s %s with Authorization %q: %d %s (WWW-Authenticate %q), want 401 naming the repeated header",
					r.method, r.path, values, resp.StatusCode, b, resp.Header.Get("WWW-Authenticate"))
			}
		}
	}
	req, _ := http.NewRequest(http.MethodGet, s.ts.URL+"/health", nil)
	req.Header["Authorization"] = []string{"a", "b"}
	if resp, err := s.ts.Client().Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /health with Authorization twice: %v %v, want 200: the probes take no credential", resp, err)
	}
}
