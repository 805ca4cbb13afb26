package app

import (
	"context"
	"testing"

	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/openenv"
)

// BenchmarkRestore restores a new checkpoint of an acme episode per
// iteration: one the server wrote itself (warm), or one another server
// sharing the directory wrote (cold: read and verified from disk); beside
// BenchmarkReset, a reset from acme.
func BenchmarkRestore(b *testing.B) {
	b.Run("warm", func(b *testing.B) { benchRestore(b, false) })
	b.Run("cold", func(b *testing.B) { benchRestore(b, true) })
}

func benchRestore(b *testing.B, cold bool) {
	dir := b.TempDir()
	be := newTestBackend(b, Config{Checkpoints: dir})
	restorer := be
	if cold {
		restorer = newTestBackend(b, Config{Checkpoints: dir})
	}
	for b.Loop() {
		b.StopTimer()
		id := checkpointed(b, be).ID
		b.StartTimer()
		inst, _, err := restorer.Restore(context.Background(), id)
		if err != nil {
			b.Fatal(err)
		}
		inst.Close()
	}
}

func BenchmarkReset(b *testing.B) {
	be := newTestBackend(b, Config{})
	for b.Loop() {
		inst, err := be.Open(context.Background(), openenv.OpenOptions{Fixture: company.AcmeID})
		if err != nil {
			b.Fatal(err)
		}
		inst.Close()
	}
}
