package sqlitestore

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/ncruces/go-sqlite3"
)

// newRandom returns the seeded stream behind a store's SQL random() and
// randomblob(), whose state Store.RandomState reads. A Store keeps it, so
// it continues across reopens.
func newRandom(seed uint64) *rand.PCG { return rand.NewPCG(seed, seed^0x9e3779b97f4a7c15) }

// installRandom shadows random() and randomblob(N) on c with the stream
// next draws from. The
// functions are INNOCUOUS, so DEFAULT (randomblob(8)) works under
// trusted_schema=OFF, and not DETERMINISTIC, so SQLite calls them once per
// use rather than once per statement.
func installRandom(c *sqlite3.Conn, next func() uint64) error {
	if err := c.CreateFunction("random", 0, sqlite3.INNOCUOUS, func(ctx sqlite3.Context, _ ...sqlite3.Value) {
		ctx.ResultInt64(int64(next()))
	}); err != nil {
		return err
	}
	return c.CreateFunction("randomblob", 1, sqlite3.INNOCUOUS, func(ctx sqlite3.Context, args ...sqlite3.Value) {
		defer resultNoMem(ctx)       // a blob too big for the connection's memory
		n := max(args[0].Int64(), 1) // as SQLite's randomblob
		if n > MaxLength {
			ctx.ResultError(sqlite3.TOOBIG)
			return
		}
		b := make([]byte, (n+7)&^7)
		for i := 0; i < len(b); i += 8 {
			binary.LittleEndian.PutUint64(b[i:], next())
		}
		ctx.ResultBlob(b[:n])
	})
}
