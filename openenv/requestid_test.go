package openenv_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/openenv"
)

// A step that carries a request_id is idempotent within its episode: a
// retry (its arguments encoded any way) gets the recorded reply and runs
// nothing, another action under a used id is refused, the id is free
// again after a reset, and a retry after the task graded the episode done
// still gets its reply when its step ended the episode, and is refused
// when its step came before.
func TestStep_RequestID(t *testing.T) {
	s := mustServeCompany(t, openenv.Config{})

	t.Run("WebSocket", func(t *testing.T) {
		c := s.dial(t)
		defer c.Close(websocket.StatusNormalClosure, "")
		roundTrip(t, c, `{"type":"reset"}`)
		charges := func() string { return inspectValue(t, c, "SELECT count(*) FROM payments.charges") }
		before := charges()
		first := roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"pay_create_charge","arguments":{"amount":500},"request_id":"r-1"}}`)
		retry := roundTrip(t, c, `{"type":"step","data":{"request_id":"r-1","tool_name":"pay_create_charge","type":"call_tool","arguments":{ "amount" : 500 }}}`)
		if retry != first {
			t.Errorf("the retry's reply\n%s\ndiffers from the step's\n%s", retry, first)
		}
		if got := charges(); got == before || atoi(t, got) != atoi(t, before)+1 {
			t.Errorf("%s charges after a step and its retry, want %s + 1", got, before)
		}
		other := roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"pay_create_charge","arguments":{"amount":600},"request_id":"r-1"}}`)
		if want := `request_id \"r-1\" answered another action at step 1 of this episode`; !strings.Contains(other, want) || !strings.Contains(other, `"loc":["data","request_id"]`) {
			t.Errorf("another action under r-1: %s", other)
		}
		roundTrip(t, c, `{"type":"reset"}`)
		after := roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"pay_create_charge","arguments":{"amount":600},"request_id":"r-1"}}`)
		if !strings.Contains(after, `"type":"observation"`) || !strings.Contains(after, `"amount":600`) {
			t.Errorf("r-1 in a new episode: %s", after)
		}
	})

	t.Run("HTTP", func(t *testing.T) {
		hdr := map[string]string{openenv.SessionHeader: "idempotent"}
		if code, body, _ := s.httpDo(t, "POST", "/reset", `{}`, hdr); code != http.StatusOK {
			t.Fatalf("reset: %d %s", code, body)
		}
		step := `{"action":{"type":"call_tool","tool_name":"hire","arguments":{"name":"Eve","role":"x"}},"request_id":"h-1"}`
		_, first, _ := s.httpDo(t, "POST", "/step", step, hdr)
		_, retry, _ := s.httpDo(t, "POST", "/step", step, hdr)
		if retry != first {
			t.Errorf("the retry's reply %s differs from the step's %s", retry, first)
		}
		code, other, _ := s.httpDo(t, "POST", "/step", `{"action":{"type":"list_tools"},"request_id":"h-1"}`, hdr)
		if code != http.StatusUnprocessableEntity || !strings.Contains(other, `"loc":["body","request_id"]`) {
			t.Errorf("another action under h-1: %d %s", code, other)
		}
		// The id may be given in the action too, but not as another id.
		if code, body, _ := s.httpDo(t, "POST", "/step", `{"action":{"type":"list_tools","request_id":"h-2"},"request_id":"h-2"}`, hdr); code != http.StatusOK {
			t.Errorf("the same request_id in the body and its action: %d %s", code, body)
		}
		code, twice, _ := s.httpDo(t, "POST", "/step", `{"action":{"type":"list_tools","request_id":"h-3"},"request_id":"h-4"}`, hdr)
		if code != http.StatusUnprocessableEntity || !strings.Contains(twice, `"loc":["body","request_id"]`) ||
			!strings.Contains(twice, `the body's request_id and its action's (\"h-3\") differ: give it once`) {
			t.Errorf("two request_ids: %d %s", code, twice)
		}
		_, state, _ := s.httpDo(t, "GET", "/state", "", hdr)
		if n := strings.Count(state, `"name":"Eve"`); n != 1 {
			t.Errorf("Eve hired %d times, want once", n)
		}
	})

	t.Run("RetryAfterDone", func(t *testing.T) {
		c := s.dial(t)
		defer c.Close(websocket.StatusNormalClosure, "")
		roundTrip(t, c, `{"type":"reset","data":{"task":"invoice_750"}}`)
		early := `{"type":"step","data":{"type":"call_tool","tool_name":"list_staff","arguments":{},"request_id":"early"}}`
		if reply := roundTrip(t, c, early); !strings.Contains(reply, `"done":false`) {
			t.Fatalf("the step before the solving one: %s", reply)
		}
		last := `{"type":"step","data":{"type":"call_tool","tool_name":"invoice","arguments":{"amount":750},"request_id":"fin"}}`
		first := roundTrip(t, c, last)
		if !strings.Contains(first, `"done":true`) {
			t.Fatalf("the solving step: %s", first)
		}
		if retry := roundTrip(t, c, last); retry != first {
			t.Errorf("a retry after done: %s, want the recorded %s", retry, first)
		}
		if next := roundTrip(t, c, `{"type":"step","data":{"type":"list_tools","request_id":"new"}}`); !strings.Contains(next, "The episode is over") {
			t.Errorf("a new step after done: %s", next)
		}
		// The step before: its reply said done was false, which never
		// comes back once the episode is done.
		if retry := roundTrip(t, c, early); !strings.Contains(retry, "The episode is over: its task graded it done after 2 tool calls") {
			t.Errorf("a retry of the step before done: %s, want it refused as the episode is over", retry)
		}
	})

	if _, body, _ := s.httpDo(t, "GET", "/metrics", "", nil); !strings.Contains(body, "seahaven_steps_replayed_total 3") {
		t.Errorf("/metrics does not count the 3 replayed steps")
	}
}

func atoi(tb testing.TB, s string) int {
	tb.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		tb.Fatalf("%q is not an integer", s)
	}
	return n
}

// gradingBackend opens the fake's instances with a task whose grading
// fails while fails is positive, counting down, and gives 0.5 after.
type gradingBackend struct {
	*fakeBackend
	fails atomic.Int32
	slow  atomic.Bool // gradings run until their deadline and fail as an interrupted open does
	// queued: gradings wait for an engine slot until their deadline and
	// say nothing ran (env.ErrNoStep), as app's do.
	queued atomic.Bool
	// held, when set, receives a channel from each grading, which then
	// waits for it to close and says done with reward 1, or fails as an
	// interrupted query does if its context ended meanwhile.
	held chan chan struct{}
}

func (b *gradingBackend) Open(ctx context.Context, opts openenv.OpenOptions) (openenv.Instance, error) {
	in, err := b.fakeBackend.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &gradingInstance{Instance: in, b: b}, nil
}

type gradingInstance struct {
	openenv.Instance
	b *gradingBackend
}

func (in *gradingInstance) Grade(ctx context.Context) (openenv.Grading, error) {
	if in.b.held != nil {
		release := make(chan struct{})
		in.b.held <- release
		<-release
		if err := ctx.Err(); err != nil {
			return openenv.Grading{}, errors.New("the check's query was interrupted: " + err.Error())
		}
		return openenv.Grading{Reward: 1, Done: true}, nil
	}
	if in.b.queued.Load() {
		<-ctx.Done()
		return openenv.Grading{}, &env.ToolError{Kind: env.KindTimeout, Message: "it waited past its deadline for one of the server's 1 engine slots (max-active); nothing was graded", Err: fmt.Errorf("%w: %w", env.ErrNoStep, context.Cause(ctx))}
	}
	if in.b.slow.Load() {
		<-ctx.Done()
		return openenv.Grading{}, errors.New("sqlitestore: open /tmp/seahaven-instances/i-1/state.sqlite: interrupted: " + context.Cause(ctx).Error())
	}
	if in.b.fails.Add(-1) >= 0 {
		return openenv.Grading{}, errors.New("the check's query failed")
	}
	return openenv.Grading{Reward: 0.5}, nil
}

// A step that ran but whose grading failed is not run again by its retry:
// the retry grades it again and, once grading succeeds, gets the step's
// observation with the grading; after a later step it is refused.
func TestStep_RequestIDGradingFailed(t *testing.T) {
	fake := newFake(t)
	b := &gradingBackend{fakeBackend: fake}
	s := mustServeOver(t, b, fake, openenv.Config{})
	c := s.dial(t)
	defer c.Close(websocket.StatusNormalClosure, "")
	echoes := func() int {
		rows, _ := field(t, roundTrip(t, c, `{"type":"inspect","data":{"sql":"SELECT message FROM echoes"}}`), "data.rows").([]any)
		return len(rows)
	}
	step := `{"type":"step","data":{"type":"call_tool","tool_name":"echo","arguments":{"message":"once"},"request_id":"g-1"}}`

	b.fails.Store(2)
	for range 2 {
		if r := roundTrip(t, c, step); !strings.Contains(r, "the step ran, but grading its task failed: the check's query failed") {
			t.Fatalf("a step whose grading failed: %s", r)
		}
	}
	r := roundTrip(t, c, step)
	if !strings.Contains(r, `"type":"observation"`) || !strings.Contains(r, `"reward":0.5`) || !strings.Contains(r, `once`) {
		t.Errorf("the retry once grading works: %s", r)
	}
	if again := roundTrip(t, c, step); again != r {
		t.Errorf("a retry after the grading: %s, want %s", again, r)
	}
	if n := echoes(); n != 1 {
		t.Errorf("the step ran %d times, want once", n)
	}

	b.fails.Store(1)
	late := `{"type":"step","data":{"type":"call_tool","tool_name":"echo","arguments":{"message":"late"},"request_id":"g-2"}}`
	roundTrip(t, c, late)
	roundTrip(t, c, `{"type":"step","data":{"type":"call_tool","tool_name":"echo","arguments":{"message":"next"}}}`)
	if r := roundTrip(t, c, late); !strings.Contains(r, `request_id \"g-2\": its step ran as step 2 but grading it failed, and 1 later steps have run`) {
		t.Errorf("a retry after a later step: %s", r)
	}
	if n := echoes(); n != 3 {
		t.Errorf("%d echoes, want 3", n)
	}
}

// TestStep_GradingPastTheDeadline: a step whose grading runs past the
// step's deadline (a short timeout_s) says so, where it repeated what the
// interrupted query said, which named the instance's file.
func TestStep_GradingPastTheDeadline(t *testing.T) {
	fake := newFake(t)
	b := &gradingBackend{fakeBackend: fake}
	s := mustServeOver(t, b, fake, openenv.Config{})
	h := map[string]string{"X-Seahaven-Session": "slow-grade"}
	if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{}`, h); status != http.StatusOK {
		t.Fatalf("reset: %d %s", status, body)
	}
	b.slow.Store(true)
	status, body, _ := s.httpDo(t, http.MethodPost, "/step", `{"action":{"type":"call_tool","tool_name":"echo","arguments":{"message":"m"}},"timeout_s":0.05}`, h)
	if status == http.StatusOK || !strings.Contains(body, "the step ran, but grading its task failed: it ran past its deadline of 50ms") || strings.Contains(body, "/tmp/") {
		t.Errorf("a step whose grading ran past its deadline: %d %s", status, body)
	}
}

// TestStep_GradingWaitedForASlot: a step whose grading waited past the
// step's deadline for an engine slot, and ran nothing, says what the
// backend said, where it said the grading ran past its deadline.
func TestStep_GradingWaitedForASlot(t *testing.T) {
	fake := newFake(t)
	b := &gradingBackend{fakeBackend: fake}
	s := mustServeOver(t, b, fake, openenv.Config{})
	h := map[string]string{"X-Seahaven-Session": "queued-grade"}
	if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{}`, h); status != http.StatusOK {
		t.Fatalf("reset: %d %s", status, body)
	}
	b.queued.Store(true)
	status, body, _ := s.httpDo(t, http.MethodPost, "/step", `{"action":{"type":"call_tool","tool_name":"echo","arguments":{"message":"m"}},"timeout_s":0.05}`, h)
	if status == http.StatusOK || !strings.Contains(body, "the step ran, but grading its task failed: it waited past its deadline for one of the server's 1 engine slots (max-active); nothing was graded") {
		t.Errorf("a step whose grading waited for an engine slot: %d %s", status, body)
	}
}

// TestStep_GradingFailuresMetric: seahaven_grading_failures_total counts a
// grading its grader's error failed, not one that waited for an engine
// slot until its deadline and ran nothing, which says nothing of the task,
// where it counted both.
func TestStep_GradingFailuresMetric(t *testing.T) {
	fake := newFake(t)
	b := &gradingBackend{fakeBackend: fake}
	s := mustServeOver(t, b, fake, openenv.Config{})
	h := map[string]string{"X-Seahaven-Session": "metered"}
	if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{}`, h); status != http.StatusOK {
		t.Fatalf("reset: %d %s", status, body)
	}
	step := func(want string) {
		t.Helper()
		status, body, _ := s.httpDo(t, http.MethodPost, "/step", `{"action":{"type":"call_tool","tool_name":"echo","arguments":{"message":"m"}},"timeout_s":0.05}`, h)
		if status == http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("step: %d %s, want a grading failure with %q", status, body, want)
		}
	}
	b.fails.Store(1)
	step("the check's query failed")
	if n := s.scrape(t).value(t, "seahaven_grading_failures_total", "task", "none"); n != 1 {
		t.Errorf("after a grader's error, seahaven_grading_failures_total = %v, want 1", n)
	}
	b.queued.Store(true)
	step("nothing was graded")
	if n := s.scrape(t).value(t, "seahaven_grading_failures_total", "task", "none"); n != 1 {
		t.Errorf("after a grading that waited for an engine slot in vain, seahaven_grading_failures_total = %v, want 1 still", n)
	}
}

// TestStep_GradedThoughItsRequestEnds: a POST /step whose request ends
// (its client gave up) after its call ran is graded all the same, as a
// /ws step is, whose grading only its session's end cuts short: the
// episode latches done and the grading counts no failure, where the
// grading was cut short, counted as the grader's failure, and the
// episode went on past done.
func TestStep_GradedThoughItsRequestEnds(t *testing.T) {
	fake := newFake(t)
	b := &gradingBackend{fakeBackend: fake, held: make(chan chan struct{})}
	// Each POST /step's context is one the test can end, as its client
	// going away would, at the point of its choosing.
	ends := make(chan context.CancelFunc, 4)
	s := mustServeHTTP(t, b, fake, openenv.Config{}, func(hs *http.Server) {
		h := hs.Handler
		hs.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/step" {
				ctx, cancel := context.WithCancel(r.Context())
				defer cancel()
				ends <- cancel
				r = r.WithContext(ctx)
			}
			h.ServeHTTP(w, r)
		})
	})
	h := map[string]string{"X-Seahaven-Session": "left"}
	if status, body, _ := s.httpDo(t, http.MethodPost, "/reset", `{}`, h); status != http.StatusOK {
		t.Fatalf("reset: %d %s", status, body)
	}
	replies := s.httpDoLater(t, http.MethodPost, "/step", `{"action":{"type":"call_tool","tool_name":"echo","arguments":{"message":"m"}}}`, h)
	end := <-ends
	release := <-b.held // the call ran; its grading waits
	end()
	close(release)
	if r := <-replies; r.status != http.StatusOK || field(t, r.body, "done") != true {
		t.Fatalf("the step whose request ended while it was graded: %d %s, want it graded done", r.status, r.body)
	}
	status, body, _ := s.httpDo(t, http.MethodPost, "/step", `{"action":{"type":"list_tools"}}`, h)
	if status != http.StatusConflict || !strings.Contains(body, "The episode is over") {
		t.Errorf("the next step: %d %s, want it refused, the episode being done", status, body)
	}
	if n := s.scrape(t).value(t, "seahaven_grading_failures_total", "task", "none"); n != 0 {
		t.Errorf("seahaven_grading_failures_total = %v, want 0", n)
	}
}

// The replies a session keeps for request_id retries are bounded in bytes
// as well as in number: past openenv.MaxReplayBytes the oldest are
// forgotten (a retry of one runs again), the newest is always kept, even
// alone over the bound. A session kept its newest 1,024, each action's
// arguments and observation whole, whatever their size: a client stepping
// with large arguments or results held gigabytes in one session.
func TestStep_RequestIDBytes(t *testing.T) {
	s := mustServe(t, newFake(t), openenv.Config{MaxMessageBytes: 2 * openenv.MaxReplayBytes})
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset"}`)
	steps := func() string { return fmt.Sprint(field(t, roundTrip(t, c, `{"type":"state"}`), "data.step_count")) }
	// Each observation holds the blob a few times: five of them pass the
	// bound.
	blob := func(id string) string {
		return fmt.Sprintf(`{"type":"step","data":{"type":"call_tool","tool_name":"blob","arguments":{"n":%d},"request_id":%q}}`, openenv.MaxReplayBytes/10, id)
	}
	first := roundTrip(t, c, blob("r-0"))
	if !strings.Contains(first, `"type":"observation"`) || strings.Contains(first, `"error":{`) {
		t.Fatalf("step r-0: %.300s", first)
	}
	for i := 1; i < 5; i++ {
		roundTrip(t, c, blob(fmt.Sprintf("r-%d", i)))
	}
	if got := steps(); got != "5" {
		t.Fatalf("step_count %s after 5 steps", got)
	}
	if retry := roundTrip(t, c, blob("r-4")); retry != first || steps() != "5" {
		t.Errorf("the newest step's retry ran again (step_count %s), or its reply differs", steps())
	}
	if roundTrip(t, c, blob("r-0")); steps() != "6" {
		t.Errorf("step_count %s after a retry of the oldest step, want 6: its reply was still kept past %d bytes", steps(), openenv.MaxReplayBytes)
	}

	// A step alone over the bound is kept, as the newest.
	big := fmt.Sprintf(`{"type":"step","data":{"type":"call_tool","tool_name":"blob","arguments":{"n":1,"pad":%q},"request_id":"big"}}`, strings.Repeat("p", openenv.MaxReplayBytes))
	reply := roundTrip(t, c, big)
	if !strings.Contains(reply, `"type":"observation"`) {
		t.Fatalf("the big step: %.300s", reply)
	}
	if retry := roundTrip(t, c, big); retry != reply || steps() != "7" {
		t.Errorf("the retry of a step alone over the bound ran again (step_count %s, want 7), or its reply differs", steps())
	}
}
