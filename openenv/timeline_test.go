package openenv_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/openenv"
)

// GET /sessions/{ref}/watch shows a live session as the inspector watches
// it: each tool call with its arguments, its result or error, the reward
// and done after it, and the change records it made; a reset starts the
// timeline over, and an unknown ref is a 404.
func TestWatch(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	c := s.dial(t)
	defer c.Close(websocket.StatusNormalClosure, "")
	roundTrip(t, c, `{"type":"reset","data":{"task":"invoice_750","episode_id":"watched"}}`)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"invoice","arguments":{"amount":0}}}`)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"invoice","arguments":{"amount":750}}}`)

	list := s.Sessions()
	if len(list) != 1 {
		t.Fatalf("%d sessions", len(list))
	}
	var w struct {
		Session struct {
			Ref       string
			EpisodeID string `json:"episode_id"`
		}
		Steps []struct {
			Step      int
			Tool      string
			Arguments map[string]any
			Result    map[string]any
			Error     *struct{ ErrorType, Message string } `json:"error"`
			Reward    *float64
			Done      bool
			Changes   *[2]int
		}
		State struct {
			ChangeLog []struct {
				Seq   int
				World string
				Table string
			} `json:"change_log"`
		}
	}
	code, body, _ := s.httpDo(t, "GET", "/sessions/"+list[0].Ref+"/watch", "", nil)
	if code != http.StatusOK {
		t.Fatalf("watch: %d %s", code, body)
	}
	if err := json.Unmarshal([]byte(body), &w); err != nil {
		t.Fatal(err)
	}
	if w.Session.Ref != list[0].Ref || w.Session.EpisodeID != "watched" || len(w.Steps) != 2 {
		t.Fatalf("watch: %s", body)
	}
	refused, filed := w.Steps[0], w.Steps[1]
	if refused.Step != 1 || refused.Error == nil || refused.Result != nil || refused.Changes == nil || refused.Changes[1] != refused.Changes[0]-1 {
		t.Errorf("the refused call: %+v", refused)
	}
	if filed.Step != 2 || filed.Tool != "invoice" || filed.Arguments["amount"] != float64(750) || filed.Result["amount"] != float64(750) ||
		filed.Reward == nil || *filed.Reward != 1 || !filed.Done {
		t.Errorf("the invoice: %+v", filed)
	}
	if filed.Changes == nil || filed.Changes[1]-filed.Changes[0]+1 != 2 || len(w.State.ChangeLog) != 2 || w.State.ChangeLog[0].Seq != filed.Changes[0] {
		t.Errorf("the invoice's changes %v, the state's change log %+v", filed.Changes, w.State.ChangeLog)
	}

	roundTrip(t, c, `{"type":"reset"}`)
	_, body, _ = s.httpDo(t, "GET", "/sessions/"+list[0].Ref+"/watch", "", nil)
	if err := json.Unmarshal([]byte(body), &w); err != nil || len(w.Steps) != 0 {
		t.Errorf("after a reset: %s", body)
	}
	if code, body, _ := s.httpDo(t, "GET", "/sessions/nope/watch", "", nil); code != http.StatusNotFound {
		t.Errorf("an unknown ref: %d %s", code, body)
	}
}

// TestWatch_SessionEndsWhileWatched: a watch waits for the session's call
// in progress; when the session ends meanwhile, the 404 names it by its
// ref, as the watcher knows it, and never by its id, which is a
// capability that GET /sessions does not show. The watch may also get in
// between the call's end and the session's (a 200), so the scenario runs
// until it has seen the 404.
func TestWatch_SessionEndsWhileWatched(t *testing.T) {
	fake := newFake(t)
	s := mustServe(t, fake, openenv.Config{})
	for try := 0; ; try++ {
		if try == 50 {
			t.Fatal("in 50 tries, no watch outlived its session")
		}
		c := s.dial(t)
		roundTrip(t, c, `{"type":"reset"}`)
		send(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"slow"}}`)
		<-fake.slowStarted
		list := s.Sessions()
		if len(list) != 1 {
			t.Fatalf("%d sessions, want 1", len(list))
		}
		type answer struct {
			code int
			body string
		}
		got := make(chan answer, 1)
		go func() {
			code, body, _ := s.httpDo(t, "GET", "/sessions/"+list[0].Ref+"/watch", "", nil)
			got <- answer{code, body}
		}()
		time.Sleep(50 * time.Millisecond) // the watch waits for the slow call
		c.CloseNow()
		a := <-got
		if strings.Contains(a.body, list[0].ID) {
			t.Fatalf("a watch's reply names the session's id: %d %s", a.code, a.body)
		}
		if a.code == http.StatusOK {
			waitFor(t, "the session to end", func() bool { return len(s.Sessions()) == 0 })
			continue
		}
		if a.code != http.StatusNotFound || !strings.Contains(a.body, list[0].Ref) {
			t.Errorf("watch of a session that ended meanwhile: %d %s\nwant a 404 naming ref %s", a.code, a.body, list[0].Ref)
		}
		return
	}
}

// TestWatch_LongToolNameIsClipped: the timeline keeps a session's newest
// 200 steps, so what it keeps of each is bounded, the tool name and the
// error message included: both come from the client (an unknown tool's
// error repeats its name), and a name of megabytes kept whole, twice, for
// each of 200 steps would hold gigabytes per session. The step's own reply
// is not the timeline's business.
func TestWatch_LongToolNameIsClipped(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})
	c := s.dial(t)
	defer c.Close(websocket.StatusNormalClosure, "")
	roundTrip(t, c, `{"type":"reset"}`)
	name := strings.Repeat("é", 1<<19) // 1 MiB
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"`+name+`","arguments":{}}}`)

	list := s.Sessions()
	if len(list) != 1 {
		t.Fatalf("%d sessions", len(list))
	}
	code, body, _ := s.httpDo(t, "GET", "/sessions/"+list[0].Ref+"/watch", "", nil)
	if code != http.StatusOK {
		t.Fatalf("watch: %d %.300s", code, body)
	}
	if len(body) > 16<<10 {
		t.Errorf("the watch of one step is %d bytes: the tool name is kept whole", len(body))
	}
	var w struct {
		Steps []struct {
			Tool  string
			Error *struct{ Message string } `json:"error"`
		}
	}
	if err := json.Unmarshal([]byte(body), &w); err != nil || len(w.Steps) != 1 || w.Steps[0].Error == nil {
		t.Fatalf("watch: %v %.300s", err, body)
	}
	for what, text := range map[string]string{"tool": w.Steps[0].Tool, "error message": w.Steps[0].Error.Message} {
		if len(text) > 2<<10 || !strings.Contains(text, "ééé") || !strings.HasSuffix(text, " bytes, not kept)") || !utf8.ValidString(text) {
			t.Errorf("the %s kept, %d bytes: %.100q", what, len(text), text)
		}
	}
}

// TestWatch_Restored: a restored session's timeline goes on from its
// checkpoint's, as a watcher of the episode saw it before: the calls before
// the checkpoint keep their steps, results, grading and change records,
// and the calls after it follow them.
func TestWatch_Restored(t *testing.T) {
	s := mustServeWorld(t, company.World, app.Config{DefaultFixture: company.AcmeID, Checkpoints: t.TempDir()}, openenv.Config{})
	c := s.dial(t)
	defer c.Close(websocket.StatusNormalClosure, "")
	roundTrip(t, c, `{"type":"reset","data":{"task":"invoice_750","episode_id":"watched"}}`)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"invoice","arguments":{"amount":0}}}`)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"list_staff","arguments":{}}}`)
	id := str(t, roundTrip(t, c, `{"type":"checkpoint"}`), "data.checkpoint_id")

	type step struct {
		Step      int
		Tool      string
		Arguments map[string]any
		Error     *struct{ ErrorType, Message string } `json:"error"`
		Reward    *float64
		Changes   *[2]int
	}
	watch := func(transport string) []step {
		t.Helper()
		for _, info := range s.Sessions() {
			if info.Transport != transport {
				continue
			}
			var w struct{ Steps []step }
			code, body, _ := s.httpDo(t, "GET", "/sessions/"+info.Ref+"/watch", "", nil)
			if err := json.Unmarshal([]byte(body), &w); code != http.StatusOK || err != nil {
				t.Fatalf("watch %s: %d %s", transport, code, body)
			}
			return w.Steps
		}
		t.Fatalf("no %s session in %+v", transport, s.Sessions())
		return nil
	}
	before := watch(openenv.TransportWS)

	h := map[string]string{"X-Seahaven-Session": "restored"}
	if code, body, _ := s.httpDo(t, http.MethodPost, "/reset", fmt.Sprintf(`{"checkpoint":%q}`, id), h); code != http.StatusOK {
		t.Fatalf("restore: %d %s", code, body)
	}
	if code, body, _ := s.httpDo(t, http.MethodPost, "/step", `{"action":{"type":"call_tool","tool_name":"invoice","arguments":{"amount":750}}}`, h); code != http.StatusOK {
		t.Fatalf("step: %d %s", code, body)
	}
	after := watch(openenv.TransportHTTP)
	if len(before) != 2 || len(after) != 3 {
		t.Fatalf("%d steps watched before the checkpoint, %d after its restore and a step; want 2 and 3:\n%+v\n%+v", len(before), len(after), before, after)
	}
	for k := range before {
		if !reflect.DeepEqual(after[k], before[k]) {
			t.Errorf("restored step %d: %+v, want %+v", k+1, after[k], before[k])
		}
	}
	if before[0].Error == nil || before[1].Tool != "list_staff" || before[1].Error != nil || before[1].Changes == nil {
		t.Errorf("the steps before the checkpoint: %+v", before)
	}
	last := after[2]
	if last.Step != 3 || last.Tool != "invoice" || last.Reward == nil || *last.Reward != 1 || last.Changes == nil || last.Changes[0] != before[1].Changes[1]+1 {
		t.Errorf("the step after the restore: %+v, after %+v", last, before[1])
	}
}
