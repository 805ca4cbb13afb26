package openenv_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/openenv"
)

func TestWorldBackend_MaxActive(t *testing.T) {
	backend, err := app.New(faultyWorld, app.Config{InstanceRoot: t.TempDir(), Checkpoints: t.TempDir(), MaxActive: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	ctx := context.Background()
	inst, err := backend.Open(ctx, openenv.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	graded, err := backend.Open(ctx, openenv.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer graded.Close()

	// One slow call takes the only slot until it is cancelled.
	callCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := inst.CallJSON(callCtx, "slow", []byte(`{"body":"holds the slot","ms":60000}`))
		done <- err
	}()
	expired, stop := context.WithCancel(ctx)
	stop()
	waitFor(t, "the slow call to hold the slot", func() bool {
		// With the slot free, Open gets in and fails on its done context
		// inside the engine; with the slot taken, it gives up waiting.
		other, err := backend.Open(expired, openenv.OpenOptions{})
		if err == nil {
			other.Close()
		}
		return errors.Is(err, context.Canceled) && strings.Contains(err.Error(), "waited for one of 1 engine slots")
	})
	// Inspect queries have slots of their own: the call does not hold them up.
	qctx, qcancel := context.WithTimeout(ctx, waitLimit)
	defer qcancel()
	if _, err := graded.Inspect(qctx, "SELECT 1", nil, openenv.InspectLimit{}); err != nil {
		t.Errorf("Inspect while the engine slot is taken: %v", err)
	}

	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the cancelled slow call succeeded")
		}
	case <-time.After(waitLimit):
		t.Fatal("the slow call did not end when cancelled")
	}
	other, err := backend.Open(ctx, openenv.OpenOptions{})
	if err != nil {
		t.Fatalf("Open after the slot is free: %v", err)
	}
	other.Close()
}

func TestWorldBackend_MaxInspect(t *testing.T) {
	backend, err := app.New(faultyWorld, app.Config{InstanceRoot: t.TempDir(), Checkpoints: t.TempDir(), MaxActive: 1, MaxInspect: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	ctx := context.Background()
	open := func() openenv.Instance {
		t.Helper()
		inst, err := backend.Open(ctx, openenv.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { inst.Close() })
		return inst
	}
	looping, other, caller := open(), open(), open()

	// A query that runs until cancelled takes the only inspect slot.
	qctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := looping.Inspect(qctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c`, nil, openenv.InspectLimit{})
		done <- err
	}()
	expired, stop := context.WithCancel(ctx)
	stop()
	waitFor(t, "the looping query to hold the inspect slot", func() bool {
		_, err := other.Inspect(expired, "SELECT 1", nil, openenv.InspectLimit{})
		return errors.Is(err, context.Canceled) && strings.Contains(err.Error(), "waited for one of 1 engine slots")
	})
	// A tool call does not wait for it.
	cctx, ccancel := context.WithTimeout(ctx, waitLimit)
	defer ccancel()
	if _, err := caller.CallJSON(cctx, "slow", []byte(`{"body":"quick","ms":1}`)); err != nil {
		t.Errorf("a call while the inspect slot is taken: %v", err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatal("the looping query did not end when cancelled")
	}
}

func TestDefaultMaxInspect(t *testing.T) {
	for _, tt := range []struct {
		active, want int // MaxActive, and its DefaultMaxInspect
	}{
		{0, app.DefaultMaxActive / 4},
		{64, 16},
		{7, 1},
		{1, 1},
		{-1, -1},
	} {
		if got := app.DefaultMaxInspect(tt.active); got != tt.want {
			t.Errorf("DefaultMaxInspect(%d) = %d, want %d", tt.active, got, tt.want)
		}
	}
}
