package composition_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/examples/worlds/company"
)

// BenchmarkCheckpoint checkpoints an acme episode after 50 calls, and
// BenchmarkCheckpointRestore restores that checkpoint from memory.
func BenchmarkCheckpoint(b *testing.B) {
	inst := ckInstance(b)
	for b.Loop() {
		if _, err := inst.Checkpoint(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckpointRestore(b *testing.B) {
	cp, err := ckInstance(b).Checkpoint(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	for b.Loop() {
		inst, err := composition.Open(context.Background(), company.World, composition.Options{Checkpoint: cp, Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		inst.Close()
	}
}

func ckInstance(b *testing.B) *composition.Instance {
	inst, err := composition.Open(context.Background(), company.World, composition.Options{Fixture: company.AcmeID, Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { inst.Close() })
	for range 50 {
		if _, err := inst.CallJSON(context.Background(), "invoice", json.RawMessage(`{"amount":1}`)); err != nil {
			b.Fatal(err)
		}
	}
	return inst
}
