package openenv

import (
	"context"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestLargeLimiter(t *testing.T) {
	t.Run("Default", func(t *testing.T) {
		if got := (Config{}).withDefaults().LargeMessageRate; got != DefaultLargeMessageRate {
			t.Errorf("LargeMessageRate default = %d", got)
		}
		if largeLimiter(-1) != nil {
			t.Error("a negative rate still paces")
		}
	})
}

func TestPacedBody(t *testing.T) {
	const size = 1 << 20
	body := strings.Repeat("x", size)

	t.Run("Whole", func(t *testing.T) {
		s := &Server{large: largeLimiter(1 << 40)}
		b := &pacedBody{ReadCloser: io.NopCloser(strings.NewReader(body)), s: s, ctx: context.Background()}
		got, err := io.ReadAll(b)
		if err != nil || len(got) != size {
			t.Fatalf("read %d, %v; want %d", len(got), err, size)
		}
	})

	t.Run("Paced", func(t *testing.T) {
		// The first LargeMessageBytes are read at once; the rest at the rate,
		// which the one-second deadline cuts short: a burst of one chunk, a
		// second's worth, and the read that found the deadline too close.
		s := &Server{large: largeLimiter(largeChunk)}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		b := &pacedBody{ReadCloser: io.NopCloser(strings.NewReader(body)), s: s, ctx: ctx}
		got, err := io.ReadAll(b)
		if err == nil {
			t.Fatalf("read %d bytes of %d without waiting for the rate", len(got), size)
		}
		if len(got) < LargeMessageBytes || len(got) > LargeMessageBytes+3*largeChunk {
			t.Errorf("read %d bytes; want the first %d and at most three chunks more", len(got), LargeMessageBytes)
		}
	})

	t.Run("ShortReads", func(t *testing.T) {
		// A body that yields a few bytes per Read is charged for the bytes
		// it gives, not for the buffer: at 64 KiB/s, with a burst of one
		// chunk, 64 KiB past the first LargeMessageBytes take no wait.
		s := &Server{large: largeLimiter(largeChunk)}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		want := LargeMessageBytes + largeChunk
		b := &pacedBody{ReadCloser: io.NopCloser(iotest.HalfReader(strings.NewReader(body[:want]))), s: s, ctx: ctx}
		got, err := io.ReadAll(b)
		if err != nil || len(got) != want {
			t.Fatalf("read %d bytes, %v; want %d", len(got), err, want)
		}
	})
}
