package sqlitestore

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ncruces/go-sqlite3"
)

// Sample sizes of RawFloor.
const (
	floorOpens   = 100
	floorInserts = 1000
)

// RawFloor measures the floor under a store's work on raw driver
// connections, with nothing of this package in between, in a scratch file
// under dir (removed before it returns):
//
//   - open: the median time to open a connection to a small file, read its
//     schema (which makes SQLite read the file) and close it;
//   - insertTxn: the median time of one prepared BEGIN IMMEDIATE, one-row
//     INSERT, COMMIT on an open connection with the settings of a store
//     opened with ExclusiveLock (rollback journal in memory,
//     synchronous=OFF, exclusive locking, foreign keys on, the same page
//     cache).
//
// Load generators print their results as ratios to these. RawFloor takes
// about 100 opens and 1000 transactions; it is safe for concurrent use.
func RawFloor(dir string) (open, insertTxn time.Duration, err error) {
	scratch, err := os.MkdirTemp(dir, "sqlitestore-floor-")
	if err != nil {
		return 0, 0, fmt.Errorf("sqlitestore: raw floor: %w", err)
	}
	defer os.RemoveAll(scratch)
	path := filepath.Join(scratch, "floor.sqlite")
	err = guard(func() error {
		var err error
		if insertTxn, err = floorInsert(path); err != nil {
			return err
		}
		open, err = floorOpen(path)
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("sqlitestore: raw floor: %w", formatError(nil, err))
	}
	return open, insertTxn, nil
}

// floorInsert makes the scratch store and times insert transactions on it.
func floorInsert(path string) (time.Duration, error) {
	c, err := sqlite3.Open(path)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	err = c.Exec(fmt.Sprintf(`PRAGMA synchronous=OFF; PRAGMA journal_mode=MEMORY; PRAGMA locking_mode=EXCLUSIVE;
		PRAGMA foreign_keys=ON; PRAGMA cache_size=-%d;
		CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL);`, CacheSizeKiB))
	if err != nil {
		return 0, err
	}
	var stmts [3]*sqlite3.Stmt
	for i, sql := range []string{`BEGIN IMMEDIATE`, `INSERT INTO t (v) VALUES (?)`, `COMMIT`} {
		if stmts[i], _, err = c.Prepare(sql); err != nil {
			return 0, err
		}
		defer stmts[i].Close()
	}
	begin, insert, commit := stmts[0], stmts[1], stmts[2]
	times := make([]time.Duration, floorInserts)
	for i := range times {
		start := time.Now()
		if err := begin.Exec(); err != nil {
			return 0, err
		}
		if err := insert.BindText(1, "value"); err != nil {
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
