package openenv_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/openenv"
)

// copyDir copies the regular files of src into a new directory dst.
func copyDir(tb testing.TB, src, dst string) {
	tb.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		tb.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

func TestWorldBackend_FixtureTraversal(t *testing.T) {
	// The fixtures directory holds acme, and so does its parent: a reset
	// that joined the id to the directory would find ../acme and succeed.
	root := t.TempDir()
	fixtures := filepath.Join(root, "fixtures")
	copyDir(t, filepath.Join(compositiontest.FixturesDir(t, company.World), company.AcmeID), filepath.Join(fixtures, company.AcmeID))
	copyDir(t, filepath.Join(compositiontest.FixturesDir(t, company.World), company.AcmeID), filepath.Join(root, company.AcmeID))
	s := mustServeWorld(t, company.World, app.Config{FixturesDir: fixtures, DefaultFixture: company.AcmeID}, openenv.Config{})

	c := s.dial(t)
	if reply := roundTrip(t, c, `{"type":"reset","data":{"fixture":"acme"}}`); str(t, reply, "type") != "observation" {
		t.Fatalf("reset acme: %s", reply)
	}
	for _, tt := range []struct {
		id   string // the fixture id sent
		want string // in the error message
	}{
		{"../acme", `invalid id "../acme"`},
		{"../../etc/passwd", `invalid id "../../etc/passwd"`},
		{"/etc/passwd", `invalid id "/etc/passwd"`},
		{"acme/../acme", `invalid id "acme/../acme"`},
		{"acme/..", `invalid id "acme/.."`},
		{"..", `invalid id ".."`},
		{".", `invalid id "."`},
		{`..\\acme`, `invalid id`},
		{"acme\u0000", `invalid id`},
		{"ACME", `invalid id "ACME"`},
	} {
		t.Run(tt.id, func(t *testing.T) {
			data, _ := json.Marshal(map[string]string{"fixture": tt.id})
			reply := roundTrip(t, c, `{"type":"reset","data":`+string(data)+`}`)
			code := str(t, reply, "data.code")
			if code != "EXECUTION_ERROR" && code != "VALIDATION_ERROR" {
				t.Errorf("code %s, want EXECUTION_ERROR or VALIDATION_ERROR: %s", code, reply)
			}
			if msg := str(t, reply, "data.message"); !strings.Contains(msg, tt.want) {
				t.Errorf("message %q does not contain %q", msg, tt.want)
			}

			status, body, _ := s.httpDo(t, "POST", "/reset", string(data), nil)
			if status != http.StatusInternalServerError && status != http.StatusUnprocessableEntity {
				t.Errorf("POST /reset: status %d, body %s", status, body)
			}
			if !strings.Contains(body, "invalid id") {
				t.Errorf("POST /reset: body %s does not name the invalid id", body)
			}
		})
	}
	// The failed resets kept the acme episode.
	state := roundTrip(t, c, `{"type":"state"}`)
	if id := str(t, state, "data.fixture.id"); id != "acme" {
		t.Errorf("fixture after the refused resets: %s", id)
	}
}

func TestWorldBackend_InspectReadOnly(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	if status, body, _ := s.httpDo(t, "POST", "/reset", `{"seed":1}`, nil); status != http.StatusOK {
		t.Fatalf("reset: %d %s", status, body)
	}
	inspect := func(sql string) (int, string) {
		t.Helper()
		b, _ := json.Marshal(map[string]string{"sql": sql})
		status, body, _ := s.httpDo(t, "POST", "/inspect", string(b), nil)
		return status, body
	}
	const snapshot = `SELECT (SELECT count(*) FROM staff), (SELECT count(*) FROM invoices), (SELECT group_concat(name) FROM staff),
		(SELECT count(*) FROM payments.charges), (SELECT count(*) FROM chat.messages)`
	status, before := inspect(snapshot)
	if status != http.StatusOK {
		t.Fatalf("snapshot: %d %s", status, before)
	}
	outside := filepath.Join(t.TempDir(), "copy.sqlite")
	for _, sql := range []string{
		`INSERT INTO staff (id, name) VALUES ('x', 'Mallory')`,
		`UPDATE staff SET name = 'Mallory'`,
		`DELETE FROM staff`,
		`DELETE FROM payments.charges`,
		`INSERT INTO chat.messages SELECT * FROM chat.messages`,
		`REPLACE INTO staff (id, name) VALUES ('x', 'Mallory')`,
		`DROP TABLE invoices`,
		`CREATE TABLE evil (x)`,
		`ALTER TABLE staff ADD COLUMN evil TEXT`,
		`CREATE INDEX evil ON staff (name)`,
		`ATTACH DATABASE '` + outside + `' AS evil`,
		`DETACH DATABASE payments`,
		`VACUUM INTO '` + outside + `'`,
		`PRAGMA user_version = 7`,
		`PRAGMA journal_mode = DELETE`,
		`SELECT 1; DELETE FROM staff`,
		`BEGIN; DELETE FROM staff; COMMIT`,
	} {
		t.Run(sql, func(t *testing.T) {
			status, body := inspect(sql)
			if status != http.StatusBadRequest {
				t.Errorf("status %d, want 400; body %s", status, body)
			}
			if code := str(t, body, "code"); code != "EXECUTION_ERROR" {
				t.Errorf("code %s in %s", code, body)
			}
		})
	}
	// The temp schema is denied too: a temp table could shadow a store's.
	if status, body := inspect(`CREATE TEMP TABLE staff AS SELECT * FROM staff`); status != http.StatusBadRequest {
		t.Errorf("CREATE TEMP TABLE: %d %s, want 400", status, body)
	}
	if _, body := inspect(`SELECT count(*) AS n FROM staff`); !strings.Contains(body, `[[3]]`) {
		t.Errorf("staff after a denied temp table: %s, want the store's 3 rows", body)
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Errorf("a statement through inspect wrote %s (stat: %v)", outside, err)
	}
	if _, after := inspect(snapshot); after != before {
		t.Errorf("the stores changed through inspect:\nbefore %s\nafter  %s", before, after)
	}
	if _, v := inspect(`PRAGMA user_version`); !strings.Contains(v, `"rows":[[0]]`) {
		t.Errorf("user_version after the refused write: %s", v)
	}
	status, state, _ := s.httpDo(t, "GET", "/state", "", nil)
	if status != http.StatusOK {
		t.Fatalf("state: %d %s", status, state)
	}
	if log, ok := field(t, state, "change_log").([]any); !ok || len(log) != 0 {
		t.Errorf("change_log after refused writes: %v", field(t, state, "change_log"))
	}
	if n := field(t, state, "step_count"); n != json.Number("0") {
		t.Errorf("step_count %v: inspect counted as a step", n)
	}

	t.Run("WebSocket", func(t *testing.T) {
		// The web console sends its SQL as inspect messages on /ws.
		c := s.dial(t)
		roundTrip(t, c, `{"type":"reset","data":{"seed":1}}`)
		count := `{"type":"inspect","data":{"sql":"SELECT count(*) FROM staff"}}`
		before := roundTrip(t, c, count)
		for _, sql := range []string{`DELETE FROM staff`, `UPDATE staff SET role = 'owner'`, `DROP TABLE staff`} {
			b, _ := json.Marshal(map[string]any{"type": "inspect", "data": map[string]string{"sql": sql}})
			reply := roundTrip(t, c, string(b))
			if code := str(t, reply, "data.code"); code != "EXECUTION_ERROR" || !strings.Contains(str(t, reply, "data.message"), "read-only") {
				t.Errorf("%s: %s", sql, reply)
			}
		}
		if after := roundTrip(t, c, count); after != before {
			t.Errorf("staff changed through inspect: %s, then %s", before, after)
		}
	})
}

// A request body that is not JSON by its Content-Type is refused with 415
// on every JSON route: a page of another site can send text/plain without
// asking first. A body-less request needs no Content-Type.
func TestServer_JSONContentType(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	for _, tt := range []struct {
		path, body, ctype string
		want              int
	}{
		{"/reset", `{"seed":1}`, "text/plain", http.StatusUnsupportedMediaType},
		{"/reset", `{"seed":1}`, "", http.StatusUnsupportedMediaType},
		{"/reset", `{"seed":1}`, "application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"/reset", `{"seed":1}`, "application/json; charset=utf-8", http.StatusOK},
		{"/reset", ``, "", http.StatusOK},
		{"/step", `{"action":{"type":"list_tools"}}`, "text/plain;charset=UTF-8", http.StatusUnsupportedMediaType},
		{"/inspect", `{"sql":"SELECT 1"}`, "multipart/form-data", http.StatusUnsupportedMediaType},
		{"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "text/plain", http.StatusUnsupportedMediaType},
		{"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "application/json", http.StatusOK},
		// JSON is UTF-8 (RFC 8259, and MCP's messages MUST be): a body
		// declared in another charset would be misread.
		{"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "application/json; charset=latin1", http.StatusUnsupportedMediaType},
		{"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "application/json;charset=UTF-16", http.StatusUnsupportedMediaType},
		{"/reset", `{"seed":1}`, "application/json; charset=iso-8859-1", http.StatusUnsupportedMediaType},
		{"/step", `{"action":{"type":"list_tools"}}`, "application/vnd.api+json; charset=windows-1252", http.StatusUnsupportedMediaType},
		{"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "application/json; charset=UTF-8", http.StatusOK},
		{"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, `application/json; charset="utf-8"`, http.StatusOK},
		{"/reset", `{"seed":1}`, "application/json;CHARSET=Utf-8", http.StatusOK},
		{"/reset", `{"seed":1}`, "application/json; charset=utf8", http.StatusOK},
	} {
		req, err := http.NewRequest(http.MethodPost, s.ts.URL+tt.path, strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		if tt.ctype != "" {
			req.Header.Set("Content-Type", tt.ctype)
		}
		resp, err := s.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("POST %s (Content-Type %q): %d %s, want %d", tt.path, tt.ctype, resp.StatusCode, b, tt.want)
		}
		if tt.want == http.StatusUnsupportedMediaType && !strings.Contains(string(b), "send the body as application/json") {
			t.Errorf("POST %s: %s", tt.path, b)
		}
		if _, params, _ := mime.ParseMediaType(tt.ctype); tt.want == http.StatusUnsupportedMediaType && strings.Contains(tt.ctype, "json") &&
			params["charset"] != "" && !strings.Contains(string(b), "in UTF-8") {
			t.Errorf("POST %s (Content-Type %q): %s, want it to ask for UTF-8", tt.path, tt.ctype, b)
		}
	}
}

// A body sent compressed (Content-Encoding) is refused with 415 naming
// the coding, on every JSON route, instead of being read as JSON and
// refused as a JSON decode error; "identity" is no coding at all.
func TestServer_ContentEncoding(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"seed":1}`))
	zw.Close()
	for _, tt := range []struct {
		path, body, coding string
		want               int
	}{
		{"/reset", gz.String(), "gzip", http.StatusUnsupportedMediaType},
		{"/reset", `{"seed":1}`, "br", http.StatusUnsupportedMediaType},
		{"/reset", `{"seed":1}`, "identity", http.StatusOK},
		{"/step", `{"action":{"type":"list_tools"}}`, "deflate", http.StatusUnsupportedMediaType},
		{"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "gzip", http.StatusUnsupportedMediaType},
	} {
		code, body, _ := s.httpDo(t, http.MethodPost, tt.path, tt.body, map[string]string{"Content-Encoding": tt.coding})
		if code != tt.want {
			t.Errorf("POST %s (Content-Encoding %q): %d %s, want %d", tt.path, tt.coding, code, body, tt.want)
		}
		if tt.want == http.StatusUnsupportedMediaType && !strings.Contains(body, `Content-Encoding \"`+tt.coding+`\" is not supported`) {
			t.Errorf("POST %s (Content-Encoding %q): %s, want it to name the coding", tt.path, tt.coding, body)
		}
	}
}

// Error replies name no server file or source location: a startup hook
// refusing its keywords is named by its world and node, with the field, and
// an unknown fixture or task, or a fixture id that climbs out of the
// fixtures directory, is named as the client sent it.
func TestServer_ErrorsNameNoSource(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(wd) // the module, where the example worlds' fixtures live
	for _, tt := range []struct{ body, want string }{
		{`{"startup":{"plan":5}}`, `field \"plan\": expected string, got number`},
		{`{"fixture":"nope"}`, `nope`},
		{`{"task":"nope"}`, `nope`},
		{`{"fixture":"../../etc/passwd"}`, `../../etc/passwd`},
	} {
		status, body, _ := s.httpDo(t, http.MethodPost, "/reset", tt.body, nil)
		if status == http.StatusOK || !strings.Contains(body, tt.want) {
			t.Errorf("reset %s: %d %s, want a refusal naming %s", tt.body, status, body, tt.want)
		}
		if strings.Contains(body, ".go:") || strings.Contains(body, root) {
			t.Errorf("reset %s: the reply names a source location or a server path: %s", tt.body, body)
		}
	}
}

// TestWorldBackend_InspectInfinity: a REAL value SQLite computes as an
// infinity comes back as the change log writes one, the number 1e999 (or
// -1e999), instead of failing the whole reply; NaN is NULL in SQLite.
func TestWorldBackend_InspectInfinity(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	if status, body, _ := s.httpDo(t, "POST", "/reset", `{"seed":1}`, nil); status != http.StatusOK {
		t.Fatalf("reset: %d %s", status, body)
	}
	status, body, _ := s.httpDo(t, "POST", "/inspect", `{"sql":"SELECT 1e999 AS up, -1e999 AS down, 0.5 AS half, 'Infinity' AS text"}`, nil)
	want := `{"columns":["up","down","half","text"],"rows":[[1e999,-1e999,0.5,"Infinity"]],"truncated":false}`
	if status != http.StatusOK || compact(t, body) != want {
		t.Errorf("inspect: %d %s, want 200 %s", status, body, want)
	}

	t.Run("Params", func(t *testing.T) {
		// A grader sends back what a reply gave it: 1e999 was refused as
		// not a number.
		status, body, _ := s.httpDo(t, "POST", "/inspect",
			`{"sql":"SELECT ? AS up, ? AS down, typeof(?) AS type, ? = 1e308 * 10 AS same, ? AS tiny","params":[1e999,-1e999,1e400,1e999,1e-400]}`, nil)
		want := `{"columns":["up","down","type","same","tiny"],"rows":[[1e999,-1e999,"real",1,0]],"truncated":false}`
		if status != http.StatusOK || compact(t, body) != want {
			t.Errorf("inspect: %d %s, want 200 %s", status, body, want)
		}
	})
}

// TestWorldBackend_InspectLongName sends statements past the inspection
// connection's million bytes whose text SQLite hands the driver as a name
// (a result column's, a pragma argument the authorizer reads): each was an
// "internal error: … panicked" that left the session's inspection
// connection corrupt. Each is now an EXECUTION_ERROR naming the limit, and
// the session answers after it.
func TestWorldBackend_InspectLongName(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"seed":1}}`)
	long := strings.Repeat("x", 1_000_001) // one byte past what the driver reads of a name
	for _, sql := range []string{`SELECT 1 AS "` + long + `"`, `PRAGMA table_info('` + long + `')`} {
		b, _ := json.Marshal(map[string]any{"type": "inspect", "data": map[string]string{"sql": sql}})
		for range 2 {
			checkError(t, roundTrip(t, c, string(b)), []string{"EXECUTION_ERROR"},
				"sqlitestore: statement too long: the inspection connection runs statements of at most 1000000 bytes")
			if n := inspectValue(t, c, "SELECT count(*) FROM staff"); n != "3" {
				t.Fatalf("staff after %.30s…: %s", sql, n)
			}
		}
	}
}

// A request sending a header that names its session (X-Seahaven-Session,
// Mcp-Session-Id) or its MCP version more than once is refused naming the
// header (on /mcp, in a JSON-RPC error naming the request's id), and
// nothing runs. The server acted on the first value, where a
// proxy routing on the header (HAProxy's req.hdr takes the last) may have
// sent the request to another replica, and a client that sent two ids had
// no way to tell which of its sessions a step ran on.
func TestServer_RepeatedSessionHeaders(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	for _, name := range []string{"a", "b"} {
		if code, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{}`, map[string]string{openenv.SessionHeader: name}); code != http.StatusOK {
			t.Fatalf("reset %s: %d %s", name, code, body)
		}
	}
	_, _, resp := s.httpDo(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}`, nil)
	sid := resp.Header.Get(openenv.MCPSessionHeader)
	if sid == "" {
		t.Fatal("initialize started no session")
	}
	step := `{"action":{"type":"call_tool","tool_name":"echo","arguments":{"message":"hi"}}}`
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`
	for _, tt := range []struct {
		name, method, path, body string
		header                   http.Header
		want                     int
		wantMsg                  string
	}{
		{"Step", http.MethodPost, "/step", step, http.Header{openenv.SessionHeader: {"a", "b"}}, http.StatusUnprocessableEntity,
			`"loc":["header","X-Seahaven-Session"],"msg":"Header X-Seahaven-Session is sent 2 times: send it once","input":["a","b"]`},
		{"SameTwice", http.MethodGet, "/state", ``, http.Header{openenv.SessionHeader: {"a", "a"}}, http.StatusUnprocessableEntity,
			`Header X-Seahaven-Session is sent 2 times`},
		{"Reset", http.MethodPost, "/reset", `{}`, http.Header{openenv.SessionHeader: {"a", "c"}}, http.StatusUnprocessableEntity,
			`Header X-Seahaven-Session is sent 2 times`},
		{"MCP", http.MethodPost, "/mcp", call, http.Header{openenv.MCPSessionHeader: {sid, "other"}}, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid request: Header Mcp-Session-Id is sent 2 times: send it once"}}`},
		{"MCPVersion", http.MethodPost, "/mcp", call, http.Header{openenv.MCPSessionHeader: {sid}, "Mcp-Protocol-Version": {"2025-03-26", "2025-11-25"}}, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid request: Header MCP-Protocol-Version is sent 2 times: send it once"}}`},
		{"MCPDelete", http.MethodDelete, "/mcp", ``, http.Header{openenv.MCPSessionHeader: {sid, "other"}}, http.StatusBadRequest,
			`Header Mcp-Session-Id is sent 2 times: send it once`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body, _ := s.httpDoHeader(t, tt.method, tt.path, tt.body, tt.header)
			if code != tt.want || !strings.Contains(body, tt.wantMsg) {
				t.Errorf("%d %s, want %d with %s", code, body, tt.want, tt.wantMsg)
			}
		})
	}
	// Nothing ran: the sessions took no step, and none was made or ended.
	for _, name := range []string{"a", "b"} {
		if code, body, _ := s.httpDo(t, http.MethodGet, "/state", ``, map[string]string{openenv.SessionHeader: name}); code != http.StatusOK || !strings.Contains(body, `"step_count":0`) {
			t.Errorf("state of %s: %d %.200s, want step_count 0", name, code, body)
		}
	}
	if code, body, _ := s.httpDo(t, http.MethodGet, "/state", ``, map[string]string{openenv.SessionHeader: "c"}); code != http.StatusNotFound {
		t.Errorf("state of c: %d %.200s, want 404: the refused reset made no session", code, body)
	}
	if code, body, _ := s.httpDoHeader(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, http.Header{openenv.MCPSessionHeader: {sid}}); code != http.StatusOK {
		t.Errorf("the MCP session after the refused DELETE: %d %s", code, body)
	}
}

// The refusals of a Content-Encoding or an MCP-Protocol-Version the server
// does not take repeat at most 1 KiB of the header, as every other refusal
// does, where they repeated the whole of it (up to the megabyte net/http
// reads).
func TestServer_HeaderRefusalsBounded(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{})
	long := strings.Repeat("z", 4096)
	for _, tt := range []struct {
		path, body string
		header     map[string]string
		status     int
		want       string
	}{
		{"/reset", `{}`, map[string]string{"Content-Encoding": long}, http.StatusUnsupportedMediaType,
			`"Content-Encoding \"` + strings.Repeat("z", 1024) + `… (4096 bytes, not echoed)\" is not supported: send the body uncompressed"`},
		{"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Content-Encoding": long}, http.StatusUnsupportedMediaType,
			`"Invalid request: Content-Encoding \"` + strings.Repeat("z", 1024) + `… (4096 bytes, not echoed)\" is not supported: send the body uncompressed"`},
		{"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"MCP-Protocol-Version": long}, http.StatusBadRequest,
			`"Unsupported MCP-Protocol-Version ` + strings.Repeat("z", 1024) + `… (4096 bytes, not echoed) (supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)"`},
	} {
		code, body, _ := s.httpDo(t, http.MethodPost, tt.path, tt.body, tt.header)
		if code != tt.status || !strings.Contains(body, tt.want) || len(body) > 2048 {
			t.Errorf("POST %s: %d %.300s… (%d bytes), want %d with %.200s…", tt.path, code, body, len(body), tt.status, tt.want)
		}
	}
}
