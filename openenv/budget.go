package openenv

import (
	"context"
	"sync"
)

// byteBudget is a counting semaphore of bytes. A caller takes bytes with
// acquire, waiting while they would exceed the size, and gives them back
// with release. A request larger than the size is taken as the whole size,
// so it waits until nothing else holds any and then proceeds alone. A
// byteBudget is safe for concurrent use.
type byteBudget struct {
	size int64

	mu    sync.Mutex    // guards used and freed
	used  int64         // bytes held
	freed chan struct{} // closed, and replaced, when bytes are released
}

// newByteBudget returns a budget of size bytes (size > 0).
func newByteBudget(size int64) *byteBudget {
	return &byteBudget{size: size, freed: make(chan struct{})}
}

// cost is what taking n bytes holds of b.
func (b *byteBudget) cost(n int64) int64 { return min(n, b.size) }

// tryAcquire takes n bytes when they fit now, and reports whether it did.
func (b *byteBudget) tryAcquire(n int64) bool {
	n = b.cost(n)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.size {
		return false
	}
	b.used += n
	return true
}

// acquire takes n bytes, waiting until they fit or ctx ends (then it
// returns ctx's error and holds nothing).
func (b *byteBudget) acquire(ctx context.Context, n int64) error {
	n = b.cost(n)
	b.mu.Lock()
	for b.used+n > b.size {
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
		b.mu.Lock()
	}
	b.used += n
	b.mu.Unlock()
	return nil
}

// release gives back n bytes taken by acquire or tryAcquire.
func (b *byteBudget) release(n int64) {
	n = b.cost(n)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
}
