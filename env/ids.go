package env

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/google/uuid"
)

// IDs is a node's seeded id stream. The root's stream is the instance seed
// untouched; every other node's is salted with its canonical path, so adding
// or removing a node never perturbs another node's ids. An IDs is not safe
// for concurrent use; an instance runs one call at a time.
//
// An IDs is an encoding.BinaryMarshaler and BinaryUnmarshaler: its state
// is where the stream stands, so that a checkpointed instance goes on
// drawing the ids it would have drawn.
type IDs struct {
	rng *rand.Rand
	src *rand.PCG
}

// NewIDs returns the id stream for a seed and a node path ("" or "main" for
// the root, which uses the seed untouched).
func NewIDs(seed int64, path string) *IDs {
	s1, s2 := StreamSeed(seed, path, "ids")
	src := rand.NewPCG(s1, s2)
	return &IDs{rng: rand.New(src), src: src}
}

// MarshalBinary returns where the stream stands.
func (i *IDs) MarshalBinary() ([]byte, error) { return i.src.MarshalBinary() }

// AppendBinary appends where the stream stands, as MarshalBinary returns
// it, to b.
func (i *IDs) AppendBinary(b []byte) ([]byte, error) { return i.src.AppendBinary(b) }

// UnmarshalBinary moves the stream to where MarshalBinary said it stood.
func (i *IDs) UnmarshalBinary(b []byte) error {
	if err := i.src.UnmarshalBinary(b); err != nil {
		return fmt.Errorf("env: id stream state: %w", err)
	}
	return nil
}

// StreamSeed derives the two PCG seed words of a named stream of a node.
// The root's "ids" stream is the instance seed untouched; every other stream
// mixes seed, path and purpose through SHA-256.
func StreamSeed(seed int64, path, purpose string) (uint64, uint64) {
	if (path == "" || path == "main") && purpose == "ids" {
		return uint64(seed), uint64(seed) ^ 0x9e3779b97f4a7c15
	}
	msg := binary.LittleEndian.AppendUint64(nil, uint64(seed))
	sum := sha256.Sum256(append(msg, purpose+"\x00"+path...))
	return binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:16])
}

// Uint64 returns the next 64 bits of the stream.
func (i *IDs) Uint64() uint64 { return i.rng.Uint64() }

// Int63 returns a non-negative int64.
func (i *IDs) Int63() int64 { return i.rng.Int64() }

// IntN returns an int in [0, n).
func (i *IDs) IntN(n int) int { return i.rng.IntN(n) }

// UUID returns a version-4 UUID drawn from the stream.
func (i *IDs) UUID() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], i.rng.Uint64())
	binary.LittleEndian.PutUint64(b[8:], i.rng.Uint64())
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return uuid.UUID(b).String()
}

// Token returns n characters from [0-9A-Za-z].
func (i *IDs) Token(n int) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	out := make([]byte, n)
	for k := range out {
		out[k] = alphabet[i.rng.IntN(len(alphabet))]
	}
	return string(out)
}
