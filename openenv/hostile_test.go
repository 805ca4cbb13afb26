package openenv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/openenv"
)

// The tests here send hostile input to a real server over the company world
// (fixture acme). Each checks that the input is accepted or refused cleanly,
// that the refusal names the problem, and that the session and its stores
// are intact afterwards.

// acmeMessages is the number of chat messages in the acme fixture.
const acmeMessages = "5"

// nest returns v wrapped in depth JSON arrays.
func nest(depth int, v string) string {
	return strings.Repeat("[", depth) + v + strings.Repeat("]", depth)
}

// checkError fails unless reply is an error frame with one of codes whose
// message contains every one of want.
func checkError(tb testing.TB, reply string, codes []string, want ...string) {
	tb.Helper()
	if typ := str(tb, reply, "type"); typ != "error" {
		tb.Fatalf("reply %.300s, want an error frame", reply)
	}
	code, msg := str(tb, reply, "data.code"), str(tb, reply, "data.message")
	ok := false
	for _, c := range codes {
		ok = ok || code == c
	}
	if !ok {
		tb.Errorf("code %s, want one of %v (message %.300q)", code, codes, msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			tb.Errorf("message %.300q does not name %q", msg, w)
		}
	}
}

// checkInvalidArgs fails unless reply is a call_tool observation refused as
// invalid_args with a message naming every one of want.
func checkInvalidArgs(tb testing.TB, reply string, want ...string) {
	tb.Helper()
	kind, msg := toolFailure(tb, reply)
	if kind != "invalid_args" {
		tb.Errorf("error_type %q (message %.300q), want invalid_args", kind, msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			tb.Errorf("message %.300q does not name %q", msg, w)
		}
	}
}

// TestHostile_DeepNesting sends JSON nested 10,000 levels and more: as a
// whole frame, as step data, as tool arguments (on /ws and over MCP), as a
// startup keyword and as an inspect parameter. Input too deep for a JSON
// parser is INVALID_JSON; anything else is refused by the part that reads
// it, naming the field, without echoing the input back in a reply nested
// too deep for a client to parse.
func TestHostile_DeepNesting(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	deep := nest(10000, "1")
	tests := []struct {
		name  string
		frame string
		// check checks the reply.
		check func(t *testing.T, reply string)
	}{
		{"WholeFrame", deep, func(t *testing.T, reply string) {
			// 10,000 levels is the most encoding/json parses; the refusal
			// does not echo an input that deep.
			checkError(t, reply, []string{"VALIDATION_ERROR"}, "Input should be an object")
		}},
		{"WholeFrameDeeper", nest(100000, "1"), func(t *testing.T, reply string) {
			checkError(t, reply, []string{"INVALID_JSON"}, "Invalid JSON", "depth")
		}},
		{"AsType", `{"type":` + nest(9990, "1") + `}`, func(t *testing.T, reply string) {
			checkError(t, reply, []string{"UNKNOWN_TYPE"}, "Unknown message type")
		}},
		{"InData", `{"type":"step","data":` + deep + `}`, func(t *testing.T, reply string) {
			checkError(t, reply, []string{"INVALID_JSON"}, "Invalid JSON", "depth")
		}},
		{"InArguments", `{"type":"step","data":{"type":"call_tool","tool_name":"chat_send_message","arguments":{"channel":"general","text":` + deep + `}}}`,
			func(t *testing.T, reply string) {
				checkError(t, reply, []string{"INVALID_JSON"}, "Invalid JSON", "depth")
			}},
		{"InArgumentsBelowTheJSONLimit", `{"type":"step","data":{"type":"call_tool","tool_name":"chat_send_message","arguments":{"channel":"general","text":` + nest(9990, `"x"`) + `}}}`,
			func(t *testing.T, reply string) {
				checkInvalidArgs(t, reply, `field "text"`)
			}},
		{"InMCPArguments", `{"type":"mcp","data":{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"hire","arguments":{"name":` + nest(9990, `"x"`) + `}}}}`,
			func(t *testing.T, reply string) {
				if kind := str(t, reply, "data.error.data.error_type"); kind != "invalid_args" {
					t.Errorf("error_type %s, want invalid_args", kind)
				}
				if msg := str(t, reply, "data.error.message"); !strings.Contains(msg, `field "name"`) {
					t.Errorf("message %q does not name the field", msg)
				}
			}},
		{"InStartup", `{"type":"reset","data":{"startup":{"plan":` + nest(9990, `"x"`) + `}}}`, func(t *testing.T, reply string) {
			checkError(t, reply, []string{"EXECUTION_ERROR", "VALIDATION_ERROR"}, "plan")
		}},
		{"InInspectParams", `{"type":"inspect","data":{"sql":"SELECT ?","params":[` + nest(9990, "1") + `]}}`, func(t *testing.T, reply string) {
			checkError(t, reply, []string{"VALIDATION_ERROR"}, "data.params.0")
		}},
		{"ObjectsInArguments", `{"type":"step","data":{"type":"call_tool","tool_name":"pay_create_charge","arguments":{"amount":` +
			strings.Repeat(`{"a":`, 9990) + "1" + strings.Repeat("}", 9990) + `}}}`,
			func(t *testing.T, reply string) {
				checkInvalidArgs(t, reply, `field "amount"`)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, roundTrip(t, c, tt.frame))
		})
	}
	if got := inspectValue(t, c, "SELECT count(*) FROM chat.messages"); got != acmeMessages {
		t.Errorf("%s chat messages, want the fixture's %s", got, acmeMessages)
	}
	checkIntegrity(t, c)
}

// TestHostile_Frame17MiB sends a 17 MiB frame to a server with the default
// 16 MiB limit. The server reads it to the end, answers SESSION_ERROR
// naming both sizes, closes with StatusMessageTooBig, and frees the
// session and its instance.
func TestHostile_Frame17MiB(t *testing.T) {
	// The default 16 MiB limit. No pings: the client answers one only when
	// its 17 MiB write lets go of the connection, which on a loaded machine
	// can be past its own deadline for the pong.
	s := mustServeCompany(t, openenv.Config{PingInterval: -1})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	if n := len(s.instanceDirs(t)); n != 1 {
		t.Fatalf("%d instance directories after the reset, want 1", n)
	}
	const size = 17 << 20
	prefix := `{"type":"step","data":{"type":"call_tool","tool_name":"chat_send_message","arguments":{"channel":"general","text":"`
	suffix := `"}}}`
	frame := []byte(prefix + strings.Repeat("x", size-len(prefix)-len(suffix)) + suffix)
	written := make(chan error, 1)
	go func() { written <- c.Write(context.Background(), websocket.MessageText, frame) }()
	reply := recv(t, c)
	checkError(t, reply, []string{"SESSION_ERROR"}, strconv.Itoa(size)+" bytes", strconv.Itoa(int(openenv.DefaultMaxMessageBytes)))
	expectClose(t, c, websocket.StatusMessageTooBig, "exceeds the limit")
	if err := <-written; err != nil {
		t.Errorf("the server stopped reading before the end of the frame: %v", err)
	}
	s.settle(t)
}

// TestHostile_MegabyteString passes 1 MiB strings as tool arguments: every
// free-text argument of the example worlds has a maxlen, so each is refused
// as invalid_args naming the field and its limit, and nothing is stored.
func TestHostile_MegabyteString(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	mb := strings.Repeat("x", 1<<20)
	tests := []struct {
		name string
		tool string // the tool called
		args string // its arguments
		// check checks the reply.
		check func(t *testing.T, reply string)
	}{
		{"OverMaxLength", "chat_send_message", `{"channel":"general","text":"` + mb + `"}`, func(t *testing.T, reply string) {
			checkInvalidArgs(t, reply, `field "text"`, "4000")
		}},
		{"OverMaxLengthNested", "hire", `{"name":"` + mb + `"}`, func(t *testing.T, reply string) {
			checkInvalidArgs(t, reply, `field "name"`, "200")
		}},
		{"OptionalOverMaxLength", "chat_send_message", `{"channel":"big","text":"hi","author":"` + mb + `"}`, func(t *testing.T, reply string) {
			checkInvalidArgs(t, reply, `field "author"`, "200")
		}},
		{"RoleOverMaxLength", "hire", `{"name":"Ada","role":"` + mb + `"}`, func(t *testing.T, reply string) {
			checkInvalidArgs(t, reply, `field "role"`, "100")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, callTool(t, c, tt.tool, tt.args))
		})
	}
	if got := inspectValue(t, c, "SELECT count(*) FROM chat.messages WHERE channel = 'big' OR length(body) > 4000"); got != "0" {
		t.Errorf("%s refused messages were stored", got)
	}
	checkIntegrity(t, c)
}

// TestHostile_NULAndInvalidUTF8 sends NUL characters, lone surrogates and
// bytes that are not UTF-8 in strings. NUL is data (stored and read back
// whole, and it does not cut a string short); a lone surrogate escape
// decodes to U+FFFD, as in encoding/json; a text frame holding raw bytes
// that are not UTF-8 is refused with INVALID_JSON and its connection closed
// with 1007, and nothing it asked for is stored. Every reply is valid UTF-8.
func TestHostile_NULAndInvalidUTF8(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	// read returns the bodies of channel's messages.
	read := func(t *testing.T, channelJSON string) []string {
		t.Helper()
		reply := callTool(t, c, "chat_read_channel", `{"channel":`+channelJSON+`}`)
		mustSucceed(t, reply)
		var out []string
		for _, m := range field(t, reply, "data.observation.result.data").([]any) {
			out = append(out, m.(map[string]any)["body"].(string))
		}
		return out
	}
	tests := []struct {
		name    string
		channel string // JSON text of the channel argument
		text    string // raw bytes of the text argument, inside its quotes
		want    string // the body stored and read back; "" when the call is refused
	}{
		{"NULEscaped", `"nul"`, `a\u0000b`, "a\x00b"},
		{"NULInTheChannel", `"n\u0000l"`, `x`, "x"},
		{"LoneSurrogate", `"surrogate"`, `\ud800z`, "\uFFFDz"},
		{"InvalidUTF8Bytes", `"bytes"`, "a\xff\xfeb", ""},
		{"TruncatedSequence", `"truncated"`, "\xe2\x82", ""},
		{"OverlongNUL", `"overlong"`, "\xc0\x80", ""},
		{"Surrogate", `"surrogate_bytes"`, "\xed\xa0\x80", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := `{"type":"step","data":{"type":"call_tool","tool_name":"chat_send_message","arguments":{"channel":` +
				tt.channel + `,"text":"` + tt.text + `"}}}`
			if tt.want == "" {
				// A text frame that is not UTF-8 ends its connection (1007).
				expectInvalidUTF8(t, s.dial(t), msg)
				if got := read(t, tt.channel); len(got) != 0 {
					t.Errorf("a refused call stored %q", got)
				}
				return
			}
			reply := roundTrip(t, c, msg)
			if !utf8.ValidString(reply) {
				t.Fatalf("reply is not UTF-8: %q", reply)
			}
			mustSucceed(t, reply)
			if got := read(t, tt.channel); len(got) != 1 || got[0] != tt.want {
				t.Errorf("read back %q, want [%q]", got, tt.want)
			}
		})
	}
	t.Run("NULDoesNotTruncate", func(t *testing.T) {
		if got := read(t, `"n"`); len(got) != 0 {
			t.Errorf("channel \"n\" holds %q; the NUL cut the channel name short", got)
		}
	})
	for name, msg := range map[string]string{
		"InvalidUTF8ToolName":  "{\"type\":\"step\",\"data\":{\"type\":\"call_tool\",\"tool_name\":\"hire\xff\",\"arguments\":{}}}",
		"InvalidUTF8EpisodeID": "{\"type\":\"reset\",\"data\":{\"episode_id\":\"ep\xff\\u0000\"}}",
		"InvalidUTF8Key":       "{\"type\":\"state\",\"k\xff\":\"v\xfe\"}",
	} {
		t.Run(name, func(t *testing.T) { expectInvalidUTF8(t, s.dial(t), msg) })
	}
	checkIntegrity(t, c)
}

// expectInvalidUTF8 sends msg, a text frame that is not UTF-8, on c and
// checks that the server answers INVALID_JSON and closes with 1007.
func expectInvalidUTF8(tb testing.TB, c *websocket.Conn, msg string) {
	tb.Helper()
	reply := recvRawAfter(tb, c, msg)
	if !utf8.ValidString(reply) {
		tb.Fatalf("reply is not UTF-8: %q", reply)
	}
	checkError(tb, reply, []string{"INVALID_JSON"}, "Invalid UTF-8 in a text frame")
	expectClose(tb, c, websocket.StatusInvalidFramePayloadData, "Invalid UTF-8")
}

// recvRawAfter sends msg and returns the reply without checking its schema.
func recvRawAfter(tb testing.TB, c *websocket.Conn, msg string) string {
	tb.Helper()
	send(tb, c, msg)
	return recvRaw(tb, c)
}

// TestHostile_AmountOverflow sends amounts that overflow int64, pass the
// tools' maximum of 10^12 cents or are not positive integers to every tool
// taking one. Each is refused as invalid_args naming the field, and nothing
// is written; the maximum is accepted and stored exactly.
func TestHostile_AmountOverflow(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	count := func() string {
		return inspectValue(t, c, "SELECT (SELECT count(*) FROM payments.charges) || '/' || (SELECT count(*) FROM payments_eu.charges) || '/' || (SELECT count(*) FROM invoices) || '/' || (SELECT count(*) FROM shop.orders)")
	}
	before := count()
	tools := []struct{ tool, field string }{
		{"pay_create_charge", "amount"}, {"eu_create_charge", "amount"}, {"invoice", "amount"}, {"shop_place_order", "total"},
	}
	refused := []string{
		"1000000000001", "9223372036854775807", "9223372036854775808", "-9223372036854775809", "18446744073709551616", "1e400", "-1e400", "1e19",
		"-1", "0", "-0", "1.5", "0.999999999999999999999", `"5"`, "true", "null", "[1]", "{}",
	}
	for _, tl := range tools {
		for _, v := range refused {
			t.Run(tl.tool+"/"+v, func(t *testing.T) {
				checkInvalidArgs(t, callTool(t, c, tl.tool, `{"`+tl.field+`":`+v+`}`), `field "`+tl.field+`"`)
			})
		}
	}
	if after := count(); after != before {
		t.Fatalf("rows (charges/eu charges/invoices/orders) went from %s to %s after refused calls", before, after)
	}
	t.Run("MaximumAccepted", func(t *testing.T) {
		reply := callTool(t, c, "pay_create_charge", `{"amount":1000000000000}`)
		mustSucceed(t, reply)
		if got := fmt.Sprint(field(t, reply, "data.observation.result.data.amount")); got != "1000000000000" {
			t.Errorf("amount %s, want 1000000000000 exactly", got)
		}
		if got := inspectValue(t, c, "SELECT max(amount) FROM payments.charges"); got != "1000000000000" {
			t.Errorf("stored amount %s", got)
		}
	})
	checkIntegrity(t, c)
}

// TestHostile_FixturePathTraversal asks resets for fixture ids that try to
// leave the fixtures directory. Each is refused as a validation error (on
// /ws and POST /reset)
// before any file is opened, which an inotify watch on the target checks,
// and the session keeps its instance.
func TestHostile_FixturePathTraversal(t *testing.T) {
	// <root>/a/fixtures holds acme; "../../etc/passwd" from there is
	// <root>/etc/passwd, which holds a complete, valid fixture: if an id could
	// leave the fixtures directory, the reset would succeed and read it.
	root := t.TempDir()
	fixtures := filepath.Join(root, "a", "fixtures")
	copyFixtureDir(t, filepath.Join(compositiontest.FixturesDir(t, company.World), company.AcmeID), filepath.Join(fixtures, company.AcmeID))
	canary := filepath.Join(root, "etc", "passwd")
	copyFixtureDir(t, filepath.Join(compositiontest.FixturesDir(t, company.World), company.AcmeID), canary)
	s := mustServeWorld(t, company.World, app.Config{FixturesDir: fixtures, DefaultFixture: company.AcmeID}, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"episode_id":"before"}}`)
	watch := newWatchOpens(t, canary, filepath.Join(root, "etc"))

	for _, id := range []string{
		"../../etc/passwd", "../../etc/passwd/", "/etc/passwd", filepath.Join(root, "etc", "passwd"), "..", ".",
		"../fixtures/acme", "acme/../acme", "./acme", "acme/", `acme\u0000`, "%2e%2e%2fetc", `..\\..\\etc\\passwd`,
	} {
		t.Run(id, func(t *testing.T) {
			reply := roundTrip(t, c, `{"type":"reset","data":{"fixture":"`+id+`"}}`)
			checkError(t, reply, []string{"VALIDATION_ERROR"}, "fixture")
			status, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{"fixture":"`+id+`"}`, map[string]string{openenv.SessionHeader: "traversal"})
			if status != http.StatusUnprocessableEntity || !strings.Contains(body, "fixture") {
				t.Errorf("POST /reset: %d %s, want 422 naming the fixture", status, body)
			}
		})
	}
	if opened := watch.events(t); len(opened) > 0 {
		t.Fatalf("the server opened files outside its fixtures directory: %v", opened)
	}
	// A failed reset keeps the session's instance.
	if ep := str(t, roundTrip(t, c, `{"type":"state"}`), "data.episode_id"); ep != "before" {
		t.Errorf("episode %q after refused resets, want the earlier one", ep)
	}
	// The watch itself works: opening the canary is seen.
	f, err := os.Open(filepath.Join(canary, "fixture.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if opened := watch.events(t); len(opened) == 0 {
		t.Fatal("the inotify watch missed an open it should see")
	}
}

// copyFixtureDir copies the regular files of src into a new directory dst.
func copyFixtureDir(tb testing.TB, src, dst string) {
	tb.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		tb.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestHostile_SQLInToolName calls a tool named with SQL in it on every
// transport (tool_not_found, naming it) and passes SQL in an argument
// (stored as text); the tables are intact.
func TestHostile_SQLInToolName(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	const name = "invoice'; DROP TABLE staff;--"
	t.Run("Step", func(t *testing.T) {
		kind, msg := toolFailure(t, callTool(t, c, name, `{"amount":1}`))
		if kind != "tool_not_found" || !strings.Contains(msg, name) {
			t.Errorf("error %s %q, want tool_not_found naming the tool", kind, msg)
		}
	})
	t.Run("MCP", func(t *testing.T) {
		reply := roundTrip(t, c, `{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`","arguments":{}}}}`)
		if kind := str(t, reply, "data.error.data.error_type"); kind != "tool_not_found" {
			t.Errorf("error_type %s, want tool_not_found", kind)
		}
	})
	t.Run("HTTP", func(t *testing.T) {
		id := s.Sessions()[0].ID
		status, body, _ := s.httpDo(t, http.MethodPost, "/step", `{"action":{"tool_name":"`+name+`","arguments":{}}}`, map[string]string{openenv.SessionHeader: id})
		if status != http.StatusOK || str(t, body, "observation.error.error_type") != "tool_not_found" {
			t.Errorf("POST /step: %d %s", status, body)
		}
	})
	t.Run("InArguments", func(t *testing.T) {
		const evil = "Robert'); DROP TABLE staff;--"
		mustSucceed(t, callTool(t, c, "hire", `{"name":"`+evil+`"}`))
		if got := inspectValue(t, c, "SELECT count(*) FROM staff WHERE name = '"+strings.ReplaceAll(evil, "'", "''")+"'"); got != "1" {
			t.Errorf("%s staff named %q, want 1", got, evil)
		}
	})
	if got := inspectValue(t, c, "SELECT group_concat(name) FROM (SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name)"); got != "invoices,staff" {
		t.Errorf("tables %s, want invoices,staff", got)
	}
	if got := inspectValue(t, c, "SELECT count(*) FROM staff"); got != "4" {
		t.Errorf("%s staff, want acme's 3 and the one hired", got)
	}
	checkIntegrity(t, c)
}

// TestHostile_Pipelined10k sends 10,000 steps without reading a reply, then
// reads every reply and checks that each answers its own step, in order.
// One step in fifty writes a charge; the others name tools that do not
// exist, which keeps the run short while every reply stays distinct.
func TestHostile_Pipelined10k(t *testing.T) {
	const n, writeEvery = 10000, 50
	s := mustServeCompany(t, openenv.Config{})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	before, err := strconv.Atoi(inspectValue(t, c, "SELECT count(*) FROM payments.charges"))
	if err != nil {
		t.Fatal(err)
	}
	toolOf := func(i int) string {
		if i%writeEvery == 0 {
			return "pay_create_charge"
		}
		return fmt.Sprintf("missing_%d", i)
	}
	var sent atomic.Int64
	sendErr := make(chan error, 1)
	go func() {
		ctx := context.Background()
		for i := range n {
			msg := fmt.Sprintf(`{"type":"step","data":{"type":"call_tool","tool_name":%q,"arguments":{"amount":%d}}}`, toolOf(i), i+1)
			if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
				sendErr <- err
				return
			}
			sent.Add(1)
		}
		sendErr <- nil
	}()
	// Let the client run well ahead of the server's read-ahead queue before
	// reading anything.
	waitFor(t, "the client to pipeline", func() bool { return sent.Load() >= 4*openenv.DefaultMaxPending })
	for i := range n {
		reply := recvRaw(t, c)
		var m struct {
			Data struct {
				Observation struct {
					ToolName string `json:"tool_name"`
					Result   *struct {
						Data struct {
							Amount int64 `json:"amount"`
						} `json:"data"`
					} `json:"result"`
					Error *struct {
						ErrorType string `json:"error_type"`
					} `json:"error"`
				} `json:"observation"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(reply), &m); err != nil {
			t.Fatalf("reply %d: %v: %.300s", i, err, reply)
		}
		obs := m.Data.Observation
		if obs.ToolName != toolOf(i) {
			t.Fatalf("reply %d is for %q, want %q: replies out of order", i, obs.ToolName, toolOf(i))
		}
		switch {
		case i%writeEvery == 0 && (obs.Result == nil || obs.Result.Data.Amount != int64(i+1)):
			t.Fatalf("reply %d: %.300s, want the charge of amount %d", i, reply, i+1)
		case i%writeEvery != 0 && (obs.Error == nil || obs.Error.ErrorType != "tool_not_found"):
			t.Fatalf("reply %d: %.300s, want tool_not_found", i, reply)
		}
	}
	if err := <-sendErr; err != nil {
		t.Fatalf("send: %v", err)
	}
	if steps := fmt.Sprint(field(t, roundTrip(t, c, `{"type":"state"}`), "data.step_count")); steps != strconv.Itoa(n) {
		t.Errorf("step_count %s, want %d", steps, n)
	}
	if got := inspectValue(t, c, "SELECT count(*) FROM payments.charges"); got != strconv.Itoa(before+n/writeEvery) {
		t.Errorf("%s charges, want %d", got, before+n/writeEvery)
	}
	checkIntegrity(t, c)
}

// heapInuse returns the heap in use after a collection.
func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestHostile_ClientNeverReads sends small requests whose replies are
// 256 KiB each (an inspect query building a long string) and never reads
// one. The server reads at most MaxPending messages ahead,
// blocks on its first reply, and closes the session when that write has
// taken WriteTimeout; its heap stays within a bound far below what the
// requests and replies add up to, and everything is freed.
func TestHostile_ClientNeverReads(t *testing.T) {
	const (
		requests  = 400
		replySize = 256 << 10
		// bound is far below the requests × replySize (100 MiB) the server
		// would hold if it answered every request and queued every reply.
		bound = 64 << 20
	)
	s := mustServeCompany(t, openenv.Config{WriteTimeout: 200 * time.Millisecond, MaxPending: 4})
	base := heapInuse()

	dialer := &net.Dialer{}
	transport := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dialer.DialContext(ctx, network, addr)
		if err == nil {
			err = conn.(*net.TCPConn).SetReadBuffer(4096)
		}
		return conn, err
	}}
	c := s.dialWith(t, &websocket.DialOptions{HTTPClient: &http.Client{Transport: transport}})
	msg := []byte(fmt.Sprintf(`{"type":"inspect","data":{"sql":"SELECT hex(zeroblob(%d))"}}`, replySize/2))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range requests {
			if err := c.Write(context.Background(), websocket.MessageText, msg); err != nil {
				return
			}
		}
	}()
	waitFor(t, "the session to start", func() bool { return len(s.Sessions()) == 1 })
	var peak uint64
	deadline := time.Now().Add(waitLimit)
	for len(s.Sessions()) > 0 || len(s.instanceDirs(t)) > 0 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
		if time.Now().After(deadline) {
			t.Fatal("the server did not close the session of a client that never reads")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.CloseNow()
	<-done
	if peak > base+bound {
		t.Errorf("heap in use peaked at %d MiB over the %d MiB baseline, bound %d MiB", (peak-base)>>20, base>>20, bound>>20)
	}
	if after := heapInuse(); after > base+16<<20 {
		t.Errorf("heap in use is %d MiB over the baseline after the session ended", (after-base)>>20)
	}
	t.Logf("heap in use: baseline %d MiB, peak +%d MiB", base>>20, (peak-base)>>20)
}
