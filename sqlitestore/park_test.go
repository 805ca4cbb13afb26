package sqlitestore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/seahaven/seahaven/internal/testfs"
	"github.com/seahaven/seahaven/sqlitestore"
)

// frozen returns the bytes of a store file made from schema and seed rows,
// as a fixture's frozen file.
func frozen(t *testing.T, schema string, rows int) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "frozen.sqlite")
	s := MustCreate(t, schema, sqlitestore.Options{Path: path})
	for i := range rows {
		MustExec(t, s, `INSERT INTO t (v) VALUES (?)`, fmt.Sprintf("seed-%d", i))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const parkSchema = `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL);`

// openShared opens a store on a private copy of data with the share key.
func openShared(t *testing.T, pool *sqlitestore.Pool, dir string, i int, data []byte, seed uint64) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), sqlitestore.Options{
		Path: filepath.Join(dir, fmt.Sprintf("s%03d.sqlite", i)), Seed: seed, Pool: pool,
		Lazy: true, Data: data, ShareKey: "k", ExclusiveLock: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func skipWithoutParking(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("parked connections need Linux")
	}
}

// parkRig skips the test where connections cannot park, and returns a
// frozen file with rows seed rows, a pool and a directory for its copies.
func parkRig(t *testing.T, rows int) (data []byte, pool *sqlitestore.Pool, dir string) {
	t.Helper()
	skipWithoutParking(t)
	return frozen(t, parkSchema, rows), sqlitestore.NewPool(64), t.TempDir()
}

// Rebound connections read each store's own file: the stores make the same
// number of commits (equal change counters) with different rows, and each
// is released after every use, so a page cached from another file would
// show up as a wrong count or sum.
func TestPark_Isolation(t *testing.T) {
	data, pool, dir := parkRig(t, 3)
	before := sqlitestore.OpenConnections()
	const n = 40
	stores := make([]*sqlitestore.Store, n)
	for i := range stores {
		stores[i] = openShared(t, pool, dir, i, data, uint64(i))
	}
	for round := range 5 {
		for i, s := range stores {
			MustExec(t, s, `INSERT INTO t (v) VALUES (?)`, fmt.Sprintf("s%d-r%d", i, round))
			MustExec(t, s, `UPDATE t SET v = v || '+' WHERE id = 1`)
			if err := s.Release(); err != nil {
				t.Fatal(err)
			}
			if got := sqlitestore.OpenConnections() - before; got > 1 {
				t.Fatalf("round %d store %d: %d connections open, want the one parked connection", round, i, got)
			}
		}
	}
	if pool.Parked() != 1 {
		t.Fatalf("Parked() = %d, want 1", pool.Parked())
	}
	for i, s := range stores {
		rows := MustQuery(t, s, `SELECT v FROM t WHERE id > 3 ORDER BY id`)
		if len(rows.Values) != 5 {
			t.Fatalf("store %d has %d new rows, want 5: %v", i, len(rows.Values), rows.Values)
		}
		for r, row := range rows.Values {
			if want := fmt.Sprintf("s%d-r%d", i, r); row[0] != want {
				t.Fatalf("store %d row %d = %v, want %s", i, r, row[0], want)
			}
		}
		if v := MustOne(t, s, `SELECT v FROM t WHERE id = 1`); v != "seed-0+++++" {
			t.Fatalf("store %d row 1 = %v", i, v)
		}
		if ok := MustOne(t, s, `PRAGMA integrity_check`); ok != "ok" {
			t.Fatalf("store %d: integrity_check: %v", i, ok)
		}
		s.Release()
	}
	pool.CloseParked()
	if got := sqlitestore.OpenConnections(); got != before {
		t.Fatalf("%d connections open after CloseParked, want %d", got, before)
	}
}

// A rebound connection draws each store's own random stream, reads its
// clock and starts with last_insert_rowid() at zero, as a fresh one would.
func TestPark_PerStoreState(t *testing.T) {
	ctx := context.Background()
	data, pool, dir := parkRig(t, 0)
	at := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	fresh := func(i int, seed uint64) *sqlitestore.Store { // a store that never shares
		s, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: filepath.Join(dir, fmt.Sprintf("f%d.sqlite", i)), Seed: seed, Lazy: true, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a := openShared(t, pool, dir, 1, data, 7)
	MustExec(t, a, `INSERT INTO t (v) VALUES ('a')`)
	a.Release()
	b, err := sqlitestore.Open(ctx, sqlitestore.Options{
		Path: filepath.Join(dir, "b.sqlite"), Seed: 9, Pool: pool, Lazy: true, Data: data, ShareKey: "k",
		Clock: func() time.Time { return at },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := MustOne(t, b, `SELECT last_insert_rowid()`); got != int64(0) {
		t.Errorf("last_insert_rowid() after rebind = %v, want 0", got)
	}
	if pool.Parked() != 0 {
		t.Fatalf("b did not take the parked connection (Parked() = %d)", pool.Parked())
	}
	ref := fresh(2, 9)
	for range 3 {
		got, want := MustOne(t, b, `SELECT random()`), MustOne(t, ref, `SELECT random()`)
		if got != want {
			t.Fatalf("random() on a rebound connection = %v, want the store's own stream %v", got, want)
		}
	}
	if got := MustOne(t, b, `SELECT datetime('now')`); got != "2031-05-06 07:08:09" {
		t.Errorf("datetime('now') = %v, want the store's clock", got)
	}
}

// Connections given state of their own are closed, not parked; a store
// whose schema changed stops sharing, and the others keep theirs.
func TestPark_RefusesChangedConnections(t *testing.T) {
	skipWithoutParking(t)
	ctx := context.Background()
	data := frozen(t, parkSchema, 1)
	for _, tc := range []struct {
		name, sql string
		private   bool
		parks     bool // the statement leaves nothing in the connection
	}{
		{"read-only pragma", `SELECT * FROM pragma_table_info('t'); PRAGMA table_info(t); PRAGMA foreign_keys`, false, true},
		{"temp table", `CREATE TEMP TABLE scratch (x)`, false, false},
		{"temp trigger", `CREATE TEMP TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END`, false, false},
		{"pragma", `PRAGMA foreign_keys=OFF`, false, false},
		{"pragma setting", `PRAGMA recursive_triggers=1`, false, false},
		{"vacuum", `VACUUM`, true, false},
		{"alter table", `ALTER TABLE t ADD COLUMN extra TEXT`, true, false},
		{"create index", `CREATE INDEX t_v ON t (v)`, true, false},
		{"drop and create", `DROP TABLE t; CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := sqlitestore.NewPool(64)
			dir := t.TempDir()
			before := sqlitestore.OpenConnections()
			s := openShared(t, pool, dir, 0, data, 1)
			if err := s.ExecScript(ctx, tc.sql); err != nil {
				t.Fatal(err)
			}
			s.Release()
			if tc.parks {
				if pool.Parked() != 1 {
					t.Fatalf("Parked() = %d after %s, want the connection parked", pool.Parked(), tc.sql)
				}
				pool.CloseParked()
			}
			if pool.Parked() != 0 {
				t.Fatalf("Parked() = %d after %s, want the connection closed", pool.Parked(), tc.sql)
			}
			if got := sqlitestore.OpenConnections(); got != before {
				t.Fatalf("%d connections open, want %d", got, before)
			}
			if s.Shares() == tc.private {
				t.Fatalf("Shares() = %v after %s", s.Shares(), tc.sql)
			}
			// The store works on, and another store of the key is unaffected.
			MustExec(t, s, `INSERT INTO t (v) VALUES ('after')`)
			s.Release()
			o := openShared(t, pool, dir, 1, data, 2)
			MustExec(t, o, `INSERT INTO t (v) VALUES ('other')`)
			if cols := MustQuery(t, o, `SELECT * FROM t`).Columns; len(cols) != 2 {
				t.Fatalf("other store sees columns %v", cols)
			}
			o.Release()
			if pool.Parked() != 1 {
				t.Fatalf("Parked() = %d after the other store, want 1", pool.Parked())
			}
			pool.CloseParked()
		})
	}
}

// An Inspector (the driver's own VFS) reads a shared store's file while the
// store writes: the two VFSes take the same locks.
func TestPark_InspectorSeesCommittedRows(t *testing.T) {
	ctx := context.Background()
	data, pool, dir := parkRig(t, 2)
	a := openShared(t, pool, dir, 0, data, 1)
	MustExec(t, a, `INSERT INTO t (v) VALUES ('x')`)
	a.Release()
	s, err := sqlitestore.Open(ctx, sqlitestore.Options{
		Path: filepath.Join(dir, "s.sqlite"), Pool: pool, Lazy: true, Data: data, ShareKey: "k",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	MustExec(t, s, `INSERT INTO t (v) VALUES ('committed')`) // rebinds the parked connection
	insp, err := sqlitestore.OpenInspector(ctx, s.Path(), nil, sqlitestore.InspectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer insp.Close()
	f, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	MustExec(t, s, `INSERT INTO t (v) VALUES ('pending')`)
	rows, err := insp.Query(ctx, `SELECT count(*) FROM t`)
	if err != nil {
		t.Fatalf("inspector read during the store's write transaction: %v", err)
	}
	if got := rows.Values[0][0]; got != int64(3) {
		t.Fatalf("inspector counts %v rows during the write, want the 3 committed", got)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	rows, err = insp.Query(ctx, `SELECT count(*) FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	if got := rows.Values[0][0]; got != int64(4) {
		t.Fatalf("inspector counts %v rows after the commit, want 4", got)
	}
}

// The sweeper closes connections parked for IdleAfter, and the pool keeps
// at most MaxOpen/4 parked.
func TestPark_SweptAndBounded(t *testing.T) {
	skipWithoutParking(t)
	data := frozen(t, parkSchema, 0)
	pool := sqlitestore.NewPool(8) // at most 2 parked
	pool.IdleAfter = 50 * time.Millisecond
	dir := t.TempDir()
	before := sqlitestore.OpenConnections()
	var stores []*sqlitestore.Store
	for i := range 5 {
		s := openShared(t, pool, dir, i, data, uint64(i))
		s.Pin()
		MustExec(t, s, `INSERT INTO t (v) VALUES ('x')`)
		stores = append(stores, s)
	}
	for _, s := range stores {
		s.Unpin()
		s.Release()
	}
	if pool.Parked() != 2 {
		t.Fatalf("Parked() = %d, want MaxOpen/4 = 2", pool.Parked())
	}
	// Other tests' pools may close connections meanwhile, so the count may
	// end below before, never above it.
	deadline := time.Now().Add(5 * time.Second)
	for pool.Parked() != 0 || sqlitestore.OpenConnections() > before || pool.Sweeping() {
		if time.Now().After(deadline) {
			t.Fatalf("after IdleAfter: %d connections open (want at most %d), %d parked, sweeping %v", sqlitestore.OpenConnections(), before, pool.Parked(), pool.Sweeping())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// benchReopen makes n stores of one frozen file and returns an operation
// that, round robin, inserts a row into the next store in a transaction and
// releases it: the call on a released instance.
func benchReopen(b *testing.B, share bool) func() {
	data := frozenB(b)
	pool := sqlitestore.NewPool(1024)
	dir := b.TempDir()
	const n = 64
	stores := make([]*sqlitestore.Store, n)
	for i := range stores {
		opts := sqlitestore.Options{Path: filepath.Join(dir, fmt.Sprintf("s%02d.sqlite", i)), Pool: pool, Lazy: true, Data: data, ExclusiveLock: true}
		if share {
			opts.ShareKey = "k"
		}
		s, err := sqlitestore.Open(context.Background(), opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	b.Cleanup(pool.CloseParked)
	i := 0
	return func() {
		s := stores[i%n]
		i++
		MustExec(b, s, `INSERT INTO t (v) VALUES ('x')`)
		if err := s.Release(); err != nil {
			b.Fatal(err)
		}
	}
}

func frozenB(b *testing.B) []byte {
	path := filepath.Join(b.TempDir(), "frozen.sqlite")
	s := MustCreate(b, parkSchema, sqlitestore.Options{Path: path})
	s.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkReopen_Fresh opens a new connection for every use of a released
// store (no share key).
func BenchmarkReopen_Fresh(b *testing.B) {
	op := benchReopen(b, false)
	for b.Loop() {
		op()
	}
}

// BenchmarkReopen_Rebind rebinds the parked connection of another store of
// the same frozen file.
func BenchmarkReopen_Rebind(b *testing.B) {
	op := benchReopen(b, true)
	for b.Loop() {
		op()
	}
}

// A store busy enough for a second write transaction in one binding turns
// to exclusive locking; it still parks with no lock left on its file, and
// an Inspector reads the file between its transactions (after Yield).
func TestPark_BusyStoreTurnsExclusive(t *testing.T) {
	ctx := context.Background()
	data, pool, dir := parkRig(t, 0)
	txn := func(s *sqlitestore.Store, v string) {
		t.Helper()
		f, err := s.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		MustExec(t, s, `INSERT INTO t (v) VALUES (?)`, v)
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	stores := []*sqlitestore.Store{openShared(t, pool, dir, 0, data, 1), openShared(t, pool, dir, 1, data, 2)}
	for round := range 3 {
		for i, s := range stores {
			txn(s, fmt.Sprintf("s%d-r%d-0", i, round))
			if s.LockedExclusive() {
				t.Fatal("exclusive locking after one transaction of a binding")
			}
			for k := 1; k < 4; k++ {
				txn(s, fmt.Sprintf("s%d-r%d-%d", i, round, k))
			}
			if !s.LockedExclusive() {
				t.Fatal("not exclusive after four transactions of a binding")
			}
			if err := s.Yield(); err != nil {
				t.Fatal(err)
			}
			insp, err := sqlitestore.OpenInspector(ctx, s.Path(), nil, sqlitestore.InspectorOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rows, err := insp.Query(ctx, `SELECT count(*) FROM t`)
			insp.Close()
			if err != nil {
				t.Fatalf("inspector after Yield of a busy store: %v", err)
			}
			if got := rows.Values[0][0]; got != int64(4*(round+1)) {
				t.Fatalf("inspector counts %v rows, want %d", got, 4*(round+1))
			}
			if err := s.Release(); err != nil {
				t.Fatal(err)
			}
			if pool.Parked() != 1 {
				t.Fatalf("round %d store %d: Parked() = %d after release, want 1", round, i, pool.Parked())
			}
		}
	}
	for i, s := range stores {
		if got := MustOne(t, s, `SELECT count(*) FROM t WHERE v LIKE ?`, fmt.Sprintf("s%d-%%", i)); got != int64(12) {
			t.Fatalf("store %d has %v of its rows, want 12", i, got)
		}
		if got := MustOne(t, s, `SELECT count(*) FROM t`); got != int64(12) {
			t.Fatalf("store %d has %v rows, want 12", i, got)
		}
	}
}

// A shared store that runs out of disk reports it as an unshared one does,
// keeps nothing of the failed transaction, and its connection goes on to
// serve another store of the key intact.
func TestPark_DiskFull(t *testing.T) {
	skipWithoutParking(t)
	data := frozen(t, `CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB NOT NULL);`, 0)
	pool := sqlitestore.NewPool(64)
	full := openShared(t, pool, testfs.MountTmpfs(t, "512k"), 0, data, 1)
	MustExec(t, full, `INSERT INTO t (v) VALUES (x'00')`)
	fillDisk(t, full, "t", "v")
	if got := MustOne(t, full, `SELECT count(*) FROM t`); got != int64(1) {
		t.Fatalf("%v rows after the rollback, want 1", got)
	}
	full.Release()
	other := openShared(t, pool, t.TempDir(), 1, data, 2)
	MustExec(t, other, `INSERT INTO t (v) VALUES (x'01')`)
	if got := MustOne(t, other, `SELECT count(*) FROM t`); got != int64(1) {
		t.Fatalf("the other store has %v rows, want 1", got)
	}
	for _, s := range []*sqlitestore.Store{full, other} {
		if ok := MustOne(t, s, `PRAGMA integrity_check`); ok != "ok" {
			t.Fatalf("integrity_check: %v", ok)
		}
		s.Release()
	}
}

// A store whose file vanished while it was released fails with the file's
// path, and the parked connection it could not bind goes back on the shelf.
func TestPark_FileGone(t *testing.T) {
	data, pool, dir := parkRig(t, 0)
	before := sqlitestore.OpenConnections()
	a := openShared(t, pool, dir, 0, data, 1)
	b := openShared(t, pool, dir, 1, data, 2)
	MustExec(t, a, `INSERT INTO t (v) VALUES ('a')`)
	MustExec(t, b, `INSERT INTO t (v) VALUES ('b')`)
	a.Release()
	b.Release()
	if pool.Parked() != 2 {
		t.Fatalf("Parked() = %d, want 2", pool.Parked())
	}
	if err := os.Remove(b.Path()); err != nil {
		t.Fatal(err)
	}
	_, err := b.Exec(context.Background(), `INSERT INTO t (v) VALUES ('again')`)
	if err == nil || !strings.Contains(err.Error(), b.Path()) {
		t.Fatalf("insert into a store whose file is gone: %v, want an error naming %s", err, b.Path())
	}
	if pool.Parked() != 2 {
		t.Fatalf("Parked() = %d after the failed bind, want both connections still parked", pool.Parked())
	}
	MustExec(t, a, `INSERT INTO t (v) VALUES ('a2')`)
	a.Release()
	pool.CloseParked()
	if got := sqlitestore.OpenConnections(); got != before {
		t.Fatalf("%d connections open, want %d", got, before)
	}
}

// A store that keeps working maps its file: what it writes through the
// mapping is what another connection (an inspector) and a later rebinding
// read through system calls, across growth of the file and a rollback that
// shrinks it; parking drops the mapping.
func TestPark_MappedFile(t *testing.T) {
	ctx := context.Background()
	data, pool, dir := parkRig(t, 3)
	a := openShared(t, pool, dir, 0, data, 1)
	big := strings.Repeat("x", 3000) // about a page a row: the file grows as rows go in
	for i := range 200 {
		MustExec(t, a, `INSERT INTO t (v) VALUES (?)`, fmt.Sprintf("%d-%s", i, big))
	}
	if !a.FileMapped() {
		t.Fatal("a store after 200 inserts does not map its file")
	}
	// A rolled-back transaction that grew the file truncates it again.
	f, err := a.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		MustExec(t, a, `INSERT INTO t (v) VALUES (?)`, big)
	}
	if err := f.Rollback(); err != nil {
		t.Fatal(err)
	}
	MustExec(t, a, `UPDATE t SET v = 'seen' WHERE id = 2`)
	insp, err := sqlitestore.OpenInspector(ctx, a.Path(), nil, sqlitestore.InspectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer insp.Close()
	rows, err := insp.Query(ctx, `SELECT count(*), sum(length(v)), (SELECT v FROM t WHERE id = 2) FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(rows.Values[0]); got != fmt.Sprintf("[203 %d seen]", MustOne(t, a, `SELECT sum(length(v)) FROM t`)) {
		t.Fatalf("the inspector reads %s", got)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if a.FileMapped() {
		t.Fatal("a parked store still maps its file")
	}
	// Another store rebinds the parked connection, then a takes it back.
	b := openShared(t, pool, dir, 1, data, 2)
	MustExec(t, b, `INSERT INTO t (v) VALUES ('b')`)
	b.Release()
	if n := MustOne(t, a, `SELECT count(*) FROM t`); n != int64(203) {
		t.Fatalf("a has %v rows after a rebind, want 203", n)
	}
	if ok := MustOne(t, a, `PRAGMA integrity_check`); ok != "ok" {
		t.Fatalf("integrity_check: %v", ok)
	}
}

// A file shrunk behind a mapping store's back makes its next access fail
// with an I/O error, not crash the process.
func TestPark_MappedFileTruncated(t *testing.T) {
	data, pool, dir := parkRig(t, 3)
	a := openShared(t, pool, dir, 0, data, 1)
	for i := range 200 {
		MustExec(t, a, `INSERT INTO t (v) VALUES (?)`, fmt.Sprintf("%d-%s", i, strings.Repeat("y", 1000)))
	}
	if !a.FileMapped() {
		t.Fatal("a store after 200 inserts does not map its file")
	}
	if err := os.Truncate(a.Path(), 4096); err != nil {
		t.Fatal(err)
	}
	_, err := a.Query(context.Background(), `SELECT sum(length(v)) FROM t`)
	if err == nil {
		t.Fatal("reading a store whose file was truncated under it succeeded")
	}
	t.Logf("error: %v", err)
}
