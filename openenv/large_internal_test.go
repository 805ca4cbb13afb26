package openenv

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestReadLarge(t *testing.T) {
	const size = 1 << 20
	body := strings.Repeat("x", size)

	t.Run("Unbounded", func(t *testing.T) {
		s := &Server{}
		var buf bytes.Buffer
		n, err := s.readLarge(context.Background(), &buf, strings.NewReader(body), size)
		if err != nil || n != size || buf.Len() != size {
			t.Fatalf("read %d (buffer %d), %v; want %d", n, buf.Len(), err, size)
		}
	})

	t.Run("StopsAtN", func(t *testing.T) {
		s := &Server{large: largeLimiter(1 << 40)}
		var buf bytes.Buffer
		n, err := s.readLarge(context.Background(), &buf, strings.NewReader(body), 3*largeChunk+5)
		if err != nil || n != 3*largeChunk+5 {
			t.Fatalf("read %d, %v; want %d", n, err, 3*largeChunk+5)
		}
	})

	t.Run("Paced", func(t *testing.T) {
		// At 64 KiB/s a megabyte takes 16 s: a reader whose context ends in
		// one second gives up after the chunks the rate allows by then
		// (the limiter refuses a wait it knows would pass the deadline).
		s := &Server{large: largeLimiter(largeChunk)}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		var buf bytes.Buffer
		n, err := s.readLarge(ctx, &buf, strings.NewReader(body), size)
		if err == nil {
			t.Fatalf("read %d bytes of %d without waiting for the rate", n, size)
		}
		if n > 2*largeChunk {
			t.Errorf("read %d bytes, more than the rate allows in a second (%d)", n, 2*largeChunk)
		}
	})

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
