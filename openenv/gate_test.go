package openenv_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seahaven/seahaven/openenv"
)

func TestWorldBackend_MaxActive(t *testing.T) {
	backend, err := openenv.NewWorldBackend(faultyWorld, openenv.WorldBackendConfig{InstanceRoot: t.TempDir(), MaxActive: 1})
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
	if _, _, err := inst.Inspect(expired, "SELECT 1", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Inspect while the slot is taken: err = %v, want it to wait and give up", err)
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
