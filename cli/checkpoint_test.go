package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/sqlitestore"
)

// wsClient is one /ws connection of a test, failing the test on any
// transport error.
type wsClient struct {
	tb testing.TB
	c  *websocket.Conn
}

func dialWS(tb testing.TB, addr string) *wsClient {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), crashWait)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", nil)
	if err != nil {
		tb.Fatal(err)
	}
	c.SetReadLimit(16 << 20)
	tb.Cleanup(func() { c.CloseNow() })
	return &wsClient{tb, c}
}

// send sends one message and returns the reply's bytes.
func (w *wsClient) send(msg string) string {
	w.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), crashWait)
	defer cancel()
	if err := w.c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		w.tb.Fatal(err)
	}
	_, b, err := w.c.Read(ctx)
	if err != nil {
		w.tb.Fatal(err)
	}
	return string(b)
}

// checkpoint takes a checkpoint and returns its reply's data.
func (w *wsClient) checkpoint() (id, attempt string, revision int) {
	w.tb.Helper()
	reply := w.send(`{"type":"checkpoint"}`)
	var f struct {
		Type string
		Data struct {
			CheckpointID string `json:"checkpoint_id"`
			Attempt      string
			Revision     int
		}
	}
	if err := json.Unmarshal([]byte(reply), &f); err != nil || f.Type != "checkpoint" {
		w.tb.Fatalf("checkpoint: %s", reply)
	}
	return f.Data.CheckpointID, f.Data.Attempt, f.Data.Revision
}

// digests returns the content digest of every store file of a checkpoint
// (see sqlitestore.ContentDigest), by file name.
func digests(tb testing.TB, dir, id string) map[string]string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(dir, id, "state*.sqlite"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("checkpoint %s has no store files (%v)", id, err)
	}
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out[filepath.Base(f)] = sqlitestore.ContentDigest(b)
	}
	return out
}

// episodeSteps is a task episode of the company: composite calls, clock
// moves, refused and failed calls, partial rewards, request ids; its last
// step graded done and one refused after it.
func episodeSteps() []string {
	step := func(tool, args, rid string) string {
		if rid != "" {
			return fmt.Sprintf(`{"type":"step","data":{"type":"call_tool","tool_name":%q,"arguments":%s,"request_id":%q}}`, tool, args, rid)
		}
		return fmt.Sprintf(`{"type":"step","data":{"type":"call_tool","tool_name":%q,"arguments":%s}}`, tool, args)
	}
	s := []string{
		step("hire", `{"name":"Barbara Liskov","role":"engineer"}`, "r-1"),
		step("list_staff", `{}`, ""),
		step("chat_send_message", `{"channel":"general","text":"hello","author":"ops"}`, ""),
		step("seahaven_control", `{"action":"advance_clock","seconds":60}`, ""),
		step("hire", `{"name":"Ada"}`, ""),
		step("chat_read_channel", `{"channel":"general"}`, ""),
		step("hire", `{"nme":"typo"}`, ""),
		step("pay_refund_charge", `{"charge_id":"x"}`, ""),
		step("chat_send_message", `{"channel":"general","text":"again","author":"ops"}`, "r-9"),
		step("list_staff", `{}`, ""),
	}
	for k := range 19 {
		switch k % 4 {
		case 0:
			s = append(s, step("hire", fmt.Sprintf(`{"name":"Hire %d","role":"r%d"}`, k, k), fmt.Sprintf("r-%d", 11+k)))
		case 1:
			s = append(s, step("chat_send_message", fmt.Sprintf(`{"channel":"general","text":"note %d","author":"ops"}`, k), ""))
		case 2:
			s = append(s, step("seahaven_control", fmt.Sprintf(`{"action":"advance_clock","seconds":%d}`, 7*k), ""))
		default:
			s = append(s, step("chat_read_channel", `{"channel":"general"}`, ""))
		}
	}
	return append(s,
		step("chat_send_message", `{"channel":"engineering","text":"Welcome, Barbara Liskov!","author":"ops"}`, ""),
		step("list_staff", `{}`, ""))
}

// TestCheckpoint_NewProcess checkpoints a task episode after many
// mutations, stops the server, restores the checkpoint in a new server
// process sharing the checkpoint directory, and checks that the next 21
// steps' replies, the state document and the store files' contents are
// those of the uninterrupted episode; that a retried request_id repeats
// nothing; that 16 forks continue alike and diverge only through their
// own steps; and that a restore naming the first attempt fences it.
func TestCheckpoint_NewProcess(t *testing.T) {
	bin := buildSeahaven(t)
	ckdir := t.TempDir()
	args := []string{"--world", "company", "--checkpoints", ckdir, "--instances", t.TempDir()}
	steps := episodeSteps()
	const at = 10
	reset := `{"type":"reset","data":{"task":"hire_liskov","seed":5,"control_tools":true,"clock_mode":"step"}}`

	first := startServe(t, bin, args...)
	u := dialWS(t, first.addr)
	u.send(reset)
	for _, m := range steps[:at] {
		u.send(m)
	}
	id, attempt, revision := u.checkpoint()
	if revision != at {
		t.Fatalf("revision %d after %d steps", revision, at)
	}
	var want []string
	for _, m := range steps[at:] {
		want = append(want, u.send(m))
	}
	wantState := u.send(`{"type":"state"}`)
	endID, _, _ := u.checkpoint()
	if !strings.Contains(want[len(want)-2], `"done":true`) || !strings.Contains(want[len(want)-1], "The episode is over") {
		t.Fatalf("the episode did not end as planned:\n%s\n%s", want[len(want)-2], want[len(want)-1])
	}

	// A restore that names the first attempt fences it.
	v := dialWS(t, first.addr)
	if r := v.send(fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q,"replaces":%q}}`, id, attempt)); !strings.Contains(r, `"observation"`) {
		t.Fatalf("restore: %s", r)
	}
	if r := u.send(steps[1]); !strings.Contains(r, "was superseded by checkpoint "+id) {
		t.Fatalf("a step of the fenced attempt: %s", r)
	}
	first.cmd.Process.Signal(syscall.SIGTERM)
	first.wait(t)

	second := startServe(t, bin, args...)
	r := dialWS(t, second.addr)
	if reply := r.send(fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q}}`, id)); !strings.Contains(reply, `"observation"`) {
		t.Fatalf("restore in the new process: %s", reply)
	}
	// The step of r-9 is answered from the checkpoint: nothing runs again.
	if got, again := r.send(steps[8]), r.send(`{"type":"state"}`); !strings.Contains(got, `"error":null`) || !strings.Contains(again, fmt.Sprintf(`"step_count":%d`, at)) {
		t.Fatalf("retried request_id: %s\nstate: %.300s", got, again)
	}
	for k, m := range steps[at:] {
		if got := r.send(m); got != want[k] {
			t.Fatalf("step %d after the restore:\nuninterrupted %s\nrestored      %s", at+k+1, want[k], got)
		}
	}
	if got := r.send(`{"type":"state"}`); got != wantState {
		t.Fatalf("state documents differ:\nuninterrupted %s\nrestored      %s", wantState, got)
	}
	gotID, _, _ := r.checkpoint()
	wantFiles, gotFiles := digests(t, ckdir, endID), digests(t, ckdir, gotID)
	for f, d := range wantFiles {
		if gotFiles[f] != d {
			t.Errorf("%s: content digest %s, the uninterrupted episode's %s", f, gotFiles[f], d)
		}
	}

	// Sixteen forks of the checkpoint continue alike.
	forks := make([]*wsClient, 16)
	for k := range forks {
		forks[k] = dialWS(t, second.addr)
		forks[k].send(fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q}}`, id))
	}
	for n, m := range steps[at : at+3] {
		for k, f := range forks {
			if got := f.send(m); got != want[n] {
				t.Fatalf("fork %d, step %d:\nwant %s\ngot  %s", k, at+n+1, want[n], got)
			}
		}
	}
	forks[0].send(steps[at+4])
	if a, b := forks[0].send(`{"type":"state"}`), forks[1].send(`{"type":"state"}`); a == b {
		t.Error("a fork's own step did not set it apart from its siblings")
	}
	if b, c := forks[1].send(`{"type":"state"}`), forks[2].send(`{"type":"state"}`); b != c {
		t.Error("two forks that made the same steps differ")
	}
}
