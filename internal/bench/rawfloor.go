package bench

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/seahaven/seahaven/sqlitestore"
)

// Sample sizes of RawFloor.
const (
	floorOpens   = 100
	floorInserts = 1000
)

// Floor is what RawFloor measures: medians on raw driver connections.
type Floor struct {
	// Open is opening a connection to a small file, reading its schema
	// (which makes SQLite read the file) and closing it.
	Open time.Duration
	// InsertTxn is one prepared BEGIN IMMEDIATE, one-row INSERT, COMMIT into
	// a rowid table of one short text column.
	InsertTxn time.Duration
	// KeyedInsertTxn is the same transaction inserting a row shaped as the
	// example worlds' rows are: a STRICT table keyed by a random UUID text
	// (so the key's index is written too), a CHECKed integer and a
	// CURRENT_TIMESTAMP default.
	KeyedInsertTxn time.Duration
}

// RawFloor measures the floor under a store's work on raw driver
// connections, with nothing of this package in between, in scratch files
// under dir (removed before it returns). The insert transactions run with
// the settings of a store opened with ExclusiveLock: rollback journal in
// memory, synchronous=OFF, exclusive locking, foreign keys on, the same
// page cache.
//
// Load generators print their results as ratios to these. RawFloor takes
// about 100 opens and 2000 transactions; it is safe for concurrent use.
func RawFloor(dir string) (Floor, error) {
	var f Floor
	err := inScratch(dir, func(scratch string) error {
		var err error
		rowid := filepath.Join(scratch, "rowid.sqlite")
		if f.InsertTxn, err = floorInsert(rowid, rowidShape, floorInserts); err != nil {
			return err
		}
		if f.KeyedInsertTxn, err = floorInsert(filepath.Join(scratch, "keyed.sqlite"), keyedShape, floorInserts); err != nil {
			return err
		}
		f.Open, err = floorOpen(rowid)
		return err
	})
	if err != nil {
		return Floor{}, err
	}
	return f, nil
}

// inScratch runs fn, which times raw driver work, with a scratch directory
// under dir that is removed afterwards; its errors become "bench: raw
// floor" errors.
func inScratch(dir string, fn func(scratch string) error) error {
	scratch, err := os.MkdirTemp(dir, "bench-floor-")
	if err != nil {
		return fmt.Errorf("bench: raw floor: %w", err)
	}
	defer os.RemoveAll(scratch)
	if err := fn(scratch); err != nil {
		return fmt.Errorf("bench: raw floor: %w", err)
	}
	return nil
}

// rowShape is a table of the floor and how to bind one insert into it:
// bind gets a fresh random UUID key when keyed is set, "" otherwise.
type rowShape struct {
	schema, insert string
	keyed          bool
	bind           func(s *sqlite3.Stmt, key string) error
}

var (
	rowidShape = rowShape{
		schema: `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL);`,
		insert: `INSERT INTO t (v) VALUES (?)`,
		bind:   func(s *sqlite3.Stmt, _ string) error { return s.BindText(1, "value") },
	}
	keyedShape = rowShape{
		schema: `CREATE TABLE t (
			id TEXT PRIMARY KEY,
			amount INTEGER NOT NULL CHECK (amount > 0),
			created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
		) STRICT;`,
		insert: `INSERT INTO t (id, amount) VALUES (?, ?)`,
		keyed:  true,
		bind: func(s *sqlite3.Stmt, key string) error {
			if err := s.BindText(1, key); err != nil {
				return err
			}
			return s.BindInt64(2, 500)
		},
	}
)

// randomUUIDs returns n random version-4 UUIDs as text.
func randomUUIDs(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", rand.Uint32(), rand.Uint32()&0xffff,
			rand.Uint32()&0xfff, 0x8000|rand.Uint32()&0x3fff, rand.Uint64()&0xffffffffffff)
	}
	return keys
}

// RawKeyedGrowth's n is raised to MinGrownRows and capped at MaxGrownRows.
const (
	MinGrownRows = floorInserts
	MaxGrownRows = 200_000
)

// RawKeyedGrowth is RawFloor's keyed insert transaction made n times on one
// table that starts empty, as n calls each inserting one keyed row into a
// store do: the index grows past the page cache, and the later inserts
// read pages back from the file. It returns the median, and how many
// transactions it made: n raised to MinGrownRows and capped at
// MaxGrownRows. It works in a scratch file under dir (removed before it
// returns) and is safe for concurrent use.
func RawKeyedGrowth(dir string, n int) (median time.Duration, made int, err error) {
	made = min(max(n, MinGrownRows), MaxGrownRows)
	err = inScratch(dir, func(scratch string) error {
		median, err = floorInsert(filepath.Join(scratch, "grown.sqlite"), keyedShape, made)
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	return median, made, nil
}

// floorInsert makes a scratch store of shape at path and times n insert
// transactions on it.
func floorInsert(path string, shape rowShape, n int) (time.Duration, error) {
	c, err := sqlite3.Open(path)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	err = c.Exec(fmt.Sprintf(`PRAGMA synchronous=OFF; PRAGMA journal_mode=MEMORY; PRAGMA locking_mode=EXCLUSIVE;
		PRAGMA foreign_keys=ON; PRAGMA cache_size=-%d;`, sqlitestore.CacheSizeKiB) + shape.schema)
	if err != nil {
		return 0, err
	}
	var stmts [3]*sqlite3.Stmt
	for i, sql := range []string{`BEGIN IMMEDIATE`, shape.insert, `COMMIT`} {
		if stmts[i], _, err = c.Prepare(sql); err != nil {
			return 0, err
		}
		defer stmts[i].Close()
	}
	begin, insert, commit := stmts[0], stmts[1], stmts[2]
	keys := make([]string, n) // made before the timing
	if shape.keyed {
		keys = randomUUIDs(n)
	}
	times := make([]time.Duration, n)
	for i := range times {
		start := time.Now()
		if err := begin.Exec(); err != nil {
			return 0, err
		}
		if err := shape.bind(insert, keys[i]); err != nil {
			return 0, err
		}
		if err := insert.Exec(); err != nil {
			return 0, err
		}
		if err := commit.Exec(); err != nil {
			return 0, err
		}
		times[i] = time.Since(start)
	}
	return median(times), nil
}

// floorOpen times open, schema read and close of the scratch store.
func floorOpen(path string) (time.Duration, error) {
	times := make([]time.Duration, floorOpens)
	for i := range times {
		start := time.Now()
		c, err := sqlite3.Open(path)
		if err != nil {
			return 0, err
		}
		if err := c.Exec(`SELECT count(*) FROM sqlite_schema`); err != nil {
			c.Close()
			return 0, err
		}
		if err := c.Close(); err != nil {
			return 0, err
		}
		times[i] = time.Since(start)
	}
	return median(times), nil
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}
