package openenv_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/internal/testfs"
	"github.com/seahaven/seahaven/openenv"
)

// TestServer_LateCallNoCheckpoint: CheckpointEvery does not try a
// checkpoint after a step whose call runs on past its deadline: the
// instance is the call's until it returns, and a checkpoint would wait for
// it until its own deadline, and fail.
func TestServer_LateCallNoCheckpoint(t *testing.T) {
	var log testfs.Buffer
	s := mustServeWorld(t, faultyWorld, app.Config{Checkpoints: t.TempDir()},
		openenv.Config{StepTimeout: 300 * time.Millisecond, CheckpointEvery: 1, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	started, release := holdUntilReleased("late-checkpoint")
	t.Cleanup(release)
	c := s.dial(t)
	roundTrip(t, c, `{"type":"reset","data":{"episode_id":"ep-late"}}`)
	mustSucceed(t, callTool(t, c, "note", `{"body":"first"}`))
	first := latestOf(t, s, "ep-late")
	if kind, _ := toolFailure(t, callTool(t, c, "stuck", `{"body":"late-checkpoint"}`)); kind != "timeout" {
		t.Fatalf("the late call: %s, want a timeout", kind)
	}
	awaitSlow(t, started)
	if got := latestOf(t, s, "ep-late"); got != first {
		t.Errorf("after the late call's step, the newest checkpoint is\n%s\nwant the one before it\n%s", got, first)
	}
	if strings.Contains(log.String(), "checkpoint failed") {
		t.Errorf("log:\n%s\nwant no checkpoint tried after the late call's step", log.String())
	}
	release()
}

// TestServer_LateCallShutdown: a draining Shutdown takes no checkpoint of
// a session whose late call still blocks, is not held past its context by
// it, and logs that session and the call; once the call returns, the
// session ends and its instance closes.
func TestServer_LateCallShutdown(t *testing.T) {
	var log testfs.Buffer
	s := mustServeWorld(t, faultyWorld, app.Config{},
		openenv.Config{StepTimeout: 300 * time.Millisecond, DrainCheckpoints: true, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	_, release := lateOnWS(t, s, "late-shutdown")
	ref := s.Sessions()[0].Ref
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Shutdown's time is up, and the call runs on
	err := s.Shutdown(ctx)
	if !errors.Is(err, context.Canceled) || !strings.Contains(fmt.Sprint(err), "1 not checkpointed as a tool call or grading past its deadline held them") {
		t.Errorf("Shutdown: %v, want its context's error, saying the late call kept the session from its checkpoint", err)
	}
	for _, want := range []string{
		`level=WARN msg="openenv: drain: a tool call past its deadline holds the session; it closes without a checkpoint" session=` + ref,
		`level=WARN msg="openenv: drained" sessions=1 checkpointed=0 cut_short=0 failed=0 late=1`,
		`level=WARN msg="openenv: shutdown: a tool call past its deadline still runs; its session has not ended" session=` + ref,
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log:\n%s\nlacks %s", log.String(), want)
		}
	}
	release()
	s.settle(t)
}

// TestServer_LateCallDrainRefused: a drain refused a session's slot for a
// call past its deadline (CALL_RUNNING) counts the session as held by it,
// at warn level, though the call returned just after the refusal. Then it
// counted the session as one that had ended, with no episode lost.
func TestServer_LateCallDrainRefused(t *testing.T) {
	var log testfs.Buffer
	s := mustServeWorld(t, faultyWorld, app.Config{},
		openenv.Config{StepTimeout: 300 * time.Millisecond, DrainCheckpoints: true, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	_, release := lateOnWS(t, s, "late-refused")
	t.Cleanup(openenv.OnDrainRefused(func(lateGone func() bool) {
		release() // the call returns just after the drain's refusal
		for deadline := time.Now().Add(waitLimit); !lateGone(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Error("the late call did not return once released")
				return
			}
		}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	s.Shutdown(ctx) // the drain waits its StepTimeout for the slot, and is refused
	want := `level=WARN msg="openenv: drained" sessions=1 checkpointed=0 cut_short=0 failed=0 late=1`
	if !strings.Contains(log.String(), want) {
		t.Errorf("log:\n%s\nlacks %s", log.String(), want)
	}
	s.settle(t)
}
