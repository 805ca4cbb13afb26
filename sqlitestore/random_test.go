package sqlitestore_test

import (
	"reflect"
	"testing"

	"github.com/seahaven/seahaven/sqlitestore"
)

const randomSchema = `CREATE TABLE t (
	id BLOB PRIMARY KEY DEFAULT (randomblob(8)),
	r INT DEFAULT (random()),
	uuid TEXT DEFAULT (lower(hex(randomblob(16)))),
	v TEXT
) STRICT, WITHOUT ROWID;`

// randomRun applies the same statements to a new store with seed and returns
// every value they produced.
func randomRun(t *testing.T, seed uint64, release bool) [][]any {
	t.Helper()
	s := MustCreate(t, randomSchema, sqlitestore.Options{Seed: seed})
	var out [][]any
	out = append(out, MustQuery(t, s, `SELECT random(), randomblob(8), hex(randomblob(3)), randomblob(0)`).Values...)
	out = append(out, MustQuery(t, s, `SELECT random() FROM generate_series(1, 4)`).Values...)
	if release {
		if err := s.Release(); err != nil {
			t.Fatal(err)
		}
	}
	MustExec(t, s, `INSERT INTO t (v) VALUES ('a'), ('b')`)
	out = append(out, MustQuery(t, s, `SELECT id, r, uuid, v FROM t ORDER BY v`).Values...)
	return out
}

func TestSeededRandom(t *testing.T) {
	a := randomRun(t, 7, false)

	t.Run("SameSeedReplays", func(t *testing.T) {
		if b := randomRun(t, 7, false); !reflect.DeepEqual(a, b) {
			t.Fatalf("same seed differs:\n%v\n%v", a, b)
		}
	})

	t.Run("StreamSurvivesRelease", func(t *testing.T) {
		if b := randomRun(t, 7, true); !reflect.DeepEqual(a, b) {
			t.Fatalf("stream restarted after Release:\n%v\n%v", a, b)
		}
	})

	t.Run("OtherSeedDiffers", func(t *testing.T) {
		b := randomRun(t, 8, false)
		for i := range a {
			if reflect.DeepEqual(a[i], b[i]) {
				t.Errorf("row %d equal under seeds 7 and 8: %v", i, a[i])
			}
		}
	})

	t.Run("PerRow", func(t *testing.T) {
		seen := map[any]bool{}
		for _, row := range a[1:5] {
			seen[row[0]] = true
		}
		if len(seen) != 4 {
			t.Errorf("random() per row gave %v, want 4 distinct values", a[1:5])
		}
	})

	t.Run("BlobLengths", func(t *testing.T) {
		row := a[0]
		if b := row[1].([]byte); len(b) != 8 {
			t.Errorf("randomblob(8) has %d bytes", len(b))
		}
		if h := row[2].(string); len(h) != 6 {
			t.Errorf("hex(randomblob(3)) = %q", h)
		}
		if b := row[3].([]byte); len(b) != 1 {
			t.Errorf("randomblob(0) has %d bytes, want 1 as SQLite", len(b))
		}
		if id := a[5][0].([]byte); len(id) != 8 {
			t.Errorf("DEFAULT (randomblob(8)) has %d bytes", len(id))
		}
	})
}
