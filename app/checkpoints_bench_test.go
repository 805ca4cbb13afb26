package app

import (
	"context"
	"testing"

	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/openenv"
)

// BenchmarkRestore restores a fresh checkpoint of an acme episode per
// iteration (none is cached), beside BenchmarkReset, a reset from acme.
func BenchmarkRestore(b *testing.B) {
	be := newTestBackend(b, Config{Checkpoints: b.TempDir()})
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = checkpointed(b, be).ID
	}
	b.ResetTimer()
	for _, id := range ids {
		inst, _, _, err := be.Restore(context.Background(), id)
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
