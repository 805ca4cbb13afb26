package sqlitestore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/seahaven/seahaven/sqlitestore"
)

func TestFrame(t *testing.T) {
	ctx := context.Background()
	newStore := func(t *testing.T) *sqlitestore.Store {
		return MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY);`, sqlitestore.Options{})
	}
	count := func(t *testing.T, s *sqlitestore.Store) int64 {
		t.Helper()
		return MustOne(t, s, `SELECT count(*) FROM t`).(int64)
	}
	begin := func(t *testing.T, s *sqlitestore.Store) *sqlitestore.Frame {
		t.Helper()
		f, err := s.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	t.Run("CommitNested", func(t *testing.T) {
		s := newStore(t)
		outer := begin(t, s)
		if !s.InTransaction() {
			t.Fatal("not in a transaction after Begin")
		}
		MustExec(t, s, `INSERT INTO t VALUES (1)`)
		inner := begin(t, s)
		MustExec(t, s, `INSERT INTO t VALUES (2)`)
		if err := inner.Commit(); err != nil {
			t.Fatal(err)
		}
		if !s.InTransaction() {
			t.Fatal("inner Commit ended the transaction")
		}
		if err := outer.Commit(); err != nil {
			t.Fatal(err)
		}
		if s.InTransaction() {
			t.Fatal("in a transaction after the outer Commit")
		}
		if n := count(t, s); n != 2 {
			t.Errorf("count = %d, want 2", n)
		}
		if err := outer.Rollback(); err != nil {
			t.Errorf("Rollback after Commit = %v, want nil", err)
		}
		if err := outer.Commit(); !errors.Is(err, sqlitestore.ErrFrameDone) {
			t.Errorf("second Commit = %v, want ErrFrameDone", err)
		}
	})

	t.Run("RollbackInner", func(t *testing.T) {
		s := newStore(t)
		outer := begin(t, s)
		MustExec(t, s, `INSERT INTO t VALUES (1)`)
		inner := begin(t, s)
		MustExec(t, s, `INSERT INTO t VALUES (2)`)
		if err := inner.Rollback(); err != nil {
			t.Fatal(err)
		}
		MustExec(t, s, `INSERT INTO t VALUES (3)`)
		if err := outer.Commit(); err != nil {
			t.Fatal(err)
		}
		if got := MustOne(t, s, `SELECT group_concat(id) FROM t`); got != "1,3" {
			t.Errorf("rows = %v, want 1,3", got)
		}
	})

	t.Run("RollbackOuterEndsInner", func(t *testing.T) {
		s := newStore(t)
		outer := begin(t, s)
		inner := begin(t, s)
		MustExec(t, s, `INSERT INTO t VALUES (1)`)
		if err := outer.Rollback(); err != nil {
			t.Fatal(err)
		}
		if err := inner.Commit(); !errors.Is(err, sqlitestore.ErrFrameDone) {
			t.Errorf("inner Commit = %v, want ErrFrameDone", err)
		}
		if n := count(t, s); n != 0 || s.InTransaction() {
			t.Errorf("count = %d, in transaction %v", n, s.InTransaction())
		}
	})

	t.Run("CommitOutOfOrder", func(t *testing.T) {
		s := newStore(t)
		outer := begin(t, s)
		defer outer.Rollback()
		inner := begin(t, s)
		defer inner.Rollback()
		if err := outer.Commit(); !errors.Is(err, sqlitestore.ErrFrameOrder) {
			t.Errorf("err = %v, want ErrFrameOrder", err)
		}
	})

	t.Run("RolledBackBySQLite", func(t *testing.T) {
		s := newStore(t)
		f := begin(t, s)
		MustExec(t, s, `INSERT INTO t VALUES (1)`)
		if _, err := s.Exec(ctx, `INSERT OR ROLLBACK INTO t VALUES (1)`); !sqlitestore.IsConstraint(err) {
			t.Fatalf("INSERT OR ROLLBACK of a taken key = %v, want a constraint error", err)
		}
		if err := f.Commit(); !errors.Is(err, sqlitestore.ErrRolledBack) {
			t.Errorf("err = %v, want ErrRolledBack", err)
		}
		if err := f.Rollback(); err != nil {
			t.Errorf("Rollback = %v", err)
		}
		g := begin(t, s) // a fresh BEGIN, not a savepoint of the lost transaction
		MustExec(t, s, `INSERT INTO t VALUES (2)`)
		if err := g.Commit(); err != nil {
			t.Fatal(err)
		}
		if n := count(t, s); n != 1 {
			t.Errorf("count = %d, want 1", n)
		}
	})

	t.Run("InterruptedWrite", func(t *testing.T) {
		// SQLite rolls the whole transaction back when a write is interrupted.
		s := newStore(t)
		f := begin(t, s)
		MustExec(t, s, `INSERT INTO t VALUES (1)`)
		wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		_, err := s.Exec(wctx, `WITH RECURSIVE c(x) AS (SELECT 2 UNION ALL SELECT x + 1 FROM c) INSERT INTO t SELECT x FROM c`)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
		if err := f.Commit(); !errors.Is(err, sqlitestore.ErrRolledBack) {
			t.Errorf("Commit = %v, want ErrRolledBack", err)
		}
		if n := count(t, s); n != 0 || s.InTransaction() {
			t.Errorf("count = %d, in transaction %v; want the transaction gone", n, s.InTransaction())
		}
	})

	t.Run("DeferredForeignKey", func(t *testing.T) {
		s := MustCreate(t, `CREATE TABLE p (id INTEGER PRIMARY KEY);
			CREATE TABLE c (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED);`, sqlitestore.Options{})
		f := begin(t, s)
		MustExec(t, s, `INSERT INTO c VALUES (1, 99)`)
		err := f.Commit()
		if err == nil || err.Error() != "sqlitestore: FOREIGN KEY constraint failed" {
			t.Fatalf("Commit = %v, want the deferred foreign key failure", err)
		}
		if !s.InTransaction() {
			t.Fatal("failed COMMIT left no transaction to roll back")
		}
		if err := f.Rollback(); err != nil {
			t.Fatal(err)
		}
		if s.InTransaction() || MustOne(t, s, `SELECT count(*) FROM c`) != int64(0) {
			t.Error("Rollback after a failed Commit did not undo the insert")
		}
	})

	t.Run("Close", func(t *testing.T) {
		s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY);`, sqlitestore.Options{})
		f := begin(t, s)
		MustExec(t, s, `INSERT INTO t VALUES (1)`)
		s.Close()
		if err := f.Rollback(); err != nil {
			t.Errorf("Rollback after Close = %v, want nil", err)
		}
		s2, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: s.Path()})
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		if n := count(t, s2); n != 0 {
			t.Errorf("count = %d after closing mid-transaction, want 0", n)
		}
	})
}

// TestStore_TransactionControl runs statements that would take the
// transaction out of the frames' hands: they are refused and change
// nothing, and once SQLite has rolled a frame's transaction back on its
// own, no statement runs in autocommit until the frames end.
func TestStore_TransactionControl(t *testing.T) {
	ctx := context.Background()
	schema := `CREATE TABLE t (id INTEGER PRIMARY KEY);
		CREATE TRIGGER no_big BEFORE INSERT ON t WHEN NEW.id > 100 BEGIN SELECT RAISE(ROLLBACK, 'too big'); END;`
	count := func(t *testing.T, s *sqlitestore.Store) int64 {
		t.Helper()
		return MustOne(t, s, `SELECT count(*) FROM t`).(int64)
	}
	t.Run("Refused", func(t *testing.T) {
		run := map[string]func(s *sqlitestore.Store, sql string) error{
			"Exec":  func(s *sqlitestore.Store, sql string) error { _, err := s.Exec(ctx, sql); return err },
			"Query": func(s *sqlitestore.Store, sql string) error { _, err := s.Query(ctx, sql); return err },
			"ExecScript": func(s *sqlitestore.Store, sql string) error {
				return s.ExecScript(ctx, `INSERT INTO t VALUES (2); `+sql)
			},
		}
		for name, run := range run {
			for _, tt := range []struct {
				sql     string
				inFrame bool // run inside a frame
			}{
				{"COMMIT", true}, {"end transaction", true}, {"ROLLBACK", true}, {"BEGIN", true},
				{"BEGIN IMMEDIATE", false}, {"SAVEPOINT x", false}, {"COMMIT", false},
				{"RELEASE sqlitestore_1", true}, {"ROLLBACK TO sqlitestore_1", true}, {"SAVEPOINT sqlitestore_2", true},
			} {
				t.Run(name+"/"+tt.sql, func(t *testing.T) {
					s := MustCreate(t, schema, sqlitestore.Options{})
					var f *sqlitestore.Frame
					if tt.inFrame {
						var err error
						if f, err = s.Begin(ctx); err != nil {
							t.Fatal(err)
						}
						if _, err = s.Begin(ctx); err != nil { // a savepoint frame, sqlitestore_1
							t.Fatal(err)
						}
					}
					MustExec(t, s, `INSERT INTO t VALUES (1)`)
					err := run(s, tt.sql)
					if !errors.Is(err, sqlitestore.ErrTransactionControl) || !strings.Contains(err.Error(), tt.sql) {
						t.Fatalf("err = %v, want ErrTransactionControl naming %q", err, tt.sql)
					}
					if s.InTransaction() != tt.inFrame {
						t.Fatalf("in a transaction: %v, want %v", s.InTransaction(), tt.inFrame)
					}
					if f != nil {
						if err := f.Rollback(); err != nil {
							t.Fatal(err)
						}
						if n := count(t, s); n != 0 {
							t.Fatalf("%d rows after the frames rolled back, want 0", n)
						}
					}
				})
			}
		}
	})
	t.Run("SavepointsInsideAFrame", func(t *testing.T) {
		s := MustCreate(t, schema, sqlitestore.Options{})
		f, err := s.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{`SAVEPOINT a`, `INSERT INTO t VALUES (1)`, `ROLLBACK TO a`, `RELEASE a`, `INSERT INTO t VALUES (2)`} {
			MustExec(t, s, q)
		}
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		if n := count(t, s); n != 1 {
			t.Fatalf("%d rows, want 1", n)
		}
	})
	t.Run("LostTransaction", func(t *testing.T) {
		for _, lose := range []string{`INSERT INTO t VALUES (101)`, `INSERT OR ROLLBACK INTO t VALUES (1)`} {
			t.Run(lose, func(t *testing.T) {
				s := MustCreate(t, schema, sqlitestore.Options{})
				f, err := s.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				MustExec(t, s, `INSERT INTO t VALUES (1)`)
				if _, err := s.Exec(ctx, lose); err == nil || s.InTransaction() {
					t.Fatalf("err = %v, in a transaction %v; want the transaction lost", err, s.InTransaction())
				}
				if _, err := s.Exec(ctx, `INSERT INTO t VALUES (2)`); !errors.Is(err, sqlitestore.ErrRolledBack) {
					t.Errorf("Exec after the loss = %v, want ErrRolledBack", err)
				}
				if _, err := s.Query(ctx, `SELECT count(*) FROM t`); !errors.Is(err, sqlitestore.ErrRolledBack) {
					t.Errorf("Query after the loss = %v, want ErrRolledBack", err)
				}
				if err := s.ExecScript(ctx, `INSERT INTO t VALUES (3)`); !errors.Is(err, sqlitestore.ErrRolledBack) {
					t.Errorf("ExecScript after the loss = %v, want ErrRolledBack", err)
				}
				if g, err := s.Begin(ctx); !errors.Is(err, sqlitestore.ErrRolledBack) {
					t.Errorf("Begin after the loss = %v, want ErrRolledBack", err)
					if err == nil {
						MustExec(t, s, `INSERT INTO t VALUES (4)`)
						g.Commit()
					}
				}
				if err := f.Commit(); !errors.Is(err, sqlitestore.ErrRolledBack) {
					t.Errorf("Commit = %v, want ErrRolledBack", err)
				}
				if n := count(t, s); n != 0 {
					t.Fatalf("%d rows after the lost transaction, want 0", n)
				}
			})
		}
	})
	t.Run("SavepointAcrossAFrame", func(t *testing.T) {
		// A savepoint opened before a frame began cannot be released or
		// rolled back to, inside that frame or after it: either would undo
		// or merge the frame's work from outside it.
		run := map[string]func(s *sqlitestore.Store, sql string) error{
			"Exec":       func(s *sqlitestore.Store, sql string) error { _, err := s.Exec(ctx, sql); return err },
			"Query":      func(s *sqlitestore.Store, sql string) error { _, err := s.Query(ctx, sql); return err },
			"ExecScript": func(s *sqlitestore.Store, sql string) error { return s.ExecScript(ctx, sql) },
		}
		for name, run := range run {
			t.Run(name, func(t *testing.T) {
				s := MustCreate(t, schema, sqlitestore.Options{})
				outer, err := s.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer outer.Rollback()
				refused := func(t *testing.T, sql string) {
					t.Helper()
					if err := run(s, sql); !errors.Is(err, sqlitestore.ErrSavepointScope) || !strings.Contains(err.Error(), sql) {
						t.Errorf("%s: err = %v, want ErrSavepointScope naming it", sql, err)
					}
				}
				allowed := func(t *testing.T, sql string) {
					t.Helper()
					if err := run(s, sql); err != nil {
						t.Errorf("%s: %v", sql, err)
					}
				}
				allowed(t, `SAVEPOINT u`)
				MustExec(t, s, `INSERT INTO t VALUES (1)`)
				inner, err := s.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				MustExec(t, s, `INSERT INTO t VALUES (2)`)
				refused(t, `ROLLBACK TO u`)
				refused(t, `RELEASE u`)
				allowed(t, `SAVEPOINT v`) // the inner frame's own savepoints
				MustExec(t, s, `INSERT INTO t VALUES (3)`)
				allowed(t, `ROLLBACK TO V`)
				allowed(t, `RELEASE v`)
				refused(t, `RELEASE v`) // released: gone
				if err := inner.Commit(); err != nil {
					t.Fatalf("inner Commit: %v", err)
				}
				refused(t, `ROLLBACK TO u`) // opened before the inner frame began
				allowed(t, `SAVEPOINT w`)
				allowed(t, `SAVEPOINT x`)
				allowed(t, `ROLLBACK TO w`)
				refused(t, `RELEASE x`) // rolled back with w's work
				allowed(t, `RELEASE w`)
				if err := outer.Commit(); err != nil {
					t.Fatalf("outer Commit: %v", err)
				}
				if n := count(t, s); n != 2 {
					t.Fatalf("%d rows, want 2", n)
				}
			})
		}
	})
	t.Run("LostInsideAnInnerFrame", func(t *testing.T) {
		// The inner frame ends (committed or rolled back) after SQLite lost
		// the transaction: the outer frame is still open, so statements
		// stay refused until it ends, rather than run in autocommit.
		for _, end := range []string{"Commit", "Rollback"} {
			t.Run(end, func(t *testing.T) {
				s := MustCreate(t, schema, sqlitestore.Options{})
				outer, err := s.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				MustExec(t, s, `INSERT INTO t VALUES (1)`)
				inner, err := s.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Exec(ctx, `INSERT INTO t VALUES (101)`); err == nil || s.InTransaction() {
					t.Fatalf("err = %v, in a transaction %v; want the transaction lost", err, s.InTransaction())
				}
				if end == "Commit" {
					if err := inner.Commit(); !errors.Is(err, sqlitestore.ErrRolledBack) {
						t.Errorf("inner Commit = %v, want ErrRolledBack", err)
					}
				} else if err := inner.Rollback(); err != nil {
					t.Errorf("inner Rollback = %v", err)
				}
				if _, err := s.Exec(ctx, `INSERT INTO t VALUES (2)`); !errors.Is(err, sqlitestore.ErrRolledBack) {
					t.Errorf("Exec after the inner frame ended = %v, want ErrRolledBack", err)
				}
				if g, err := s.Begin(ctx); !errors.Is(err, sqlitestore.ErrRolledBack) {
					t.Errorf("Begin after the inner frame ended = %v, want ErrRolledBack", err)
					if err == nil {
						g.Rollback()
					}
				}
				if err := outer.Commit(); !errors.Is(err, sqlitestore.ErrRolledBack) {
					t.Errorf("outer Commit = %v, want ErrRolledBack", err)
				}
				if err := outer.Rollback(); err != nil {
					t.Errorf("outer Rollback = %v", err)
				}
				if n := count(t, s); n != 0 {
					t.Fatalf("%d rows after the lost transaction, want 0", n)
				}
				// The store works again once every frame has ended.
				MustExec(t, s, `INSERT INTO t VALUES (3)`)
				if n := count(t, s); n != 1 {
					t.Fatalf("%d rows, want 1", n)
				}
			})
		}
	})
}

// TestFrame_LostThenReleased loses a frame's transaction (SQLite rolls it
// back on its own), then lets Release, the pool's idle release or eviction,
// or the out-of-memory handling try to close the connection: the
// connection stays open while the frame is, Commit reports ErrRolledBack,
// Rollback succeeds, and the store works on.
func TestFrame_LostThenReleased(t *testing.T) {
	ctx := context.Background()
	orRollback := func(t *testing.T, s *sqlitestore.Store) {
		t.Helper()
		if _, err := s.Exec(ctx, `INSERT OR ROLLBACK INTO t VALUES (1)`); !sqlitestore.IsConstraint(err) {
			t.Fatalf("INSERT OR ROLLBACK of a taken key = %v, want a constraint error", err)
		}
	}
	for _, tt := range []struct {
		name string
		// lose loses s's transaction and then tries to release s; other
		// shares s's pool, which keeps one connection open.
		lose func(t *testing.T, s, other *sqlitestore.Store, pool *sqlitestore.Pool)
	}{
		{"Release", func(t *testing.T, s, _ *sqlitestore.Store, _ *sqlitestore.Pool) {
			orRollback(t, s)
			if err := s.Release(); err != nil {
				t.Fatal(err)
			}
		}},
		{"IdleRelease", func(t *testing.T, s, _ *sqlitestore.Store, pool *sqlitestore.Pool) {
			orRollback(t, s)
			pool.ReleaseDue(time.Now().Add(2 * time.Hour))
		}},
		{"Eviction", func(t *testing.T, s, other *sqlitestore.Store, _ *sqlitestore.Pool) {
			orRollback(t, s)
			MustExec(t, other, `INSERT INTO t VALUES (1)`) // over the pool's cap: s is the least recently used
		}},
		{"OutOfMemory", func(t *testing.T, s, _ *sqlitestore.Store, _ *sqlitestore.Pool) {
			// About 12 MiB of text: above the memory cap. Running out of
			// memory rolls the transaction back.
			_, err := s.Query(ctx, `SELECT length(group_concat(hex(randomblob(500)))) FROM generate_series(1, 12000)`)
			if !errors.Is(err, sqlitestore.ErrOutOfMemory) {
				t.Fatalf("err = %v, want ErrOutOfMemory", err)
			}
		}},
	} {
		for _, end := range []string{"Commit", "Rollback"} {
			t.Run(tt.name+"/"+end, func(t *testing.T) {
				dir := t.TempDir()
				pool := &sqlitestore.Pool{MaxOpen: 1, IdleAfter: time.Hour}
				opts := func(name string) sqlitestore.Options {
					return sqlitestore.Options{Path: filepath.Join(dir, name), Pool: pool, MaxMemory: 4 << 20}
				}
				other := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY);`, opts("other.sqlite"))
				s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY);`, opts("s.sqlite"))
				f, err := s.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				MustExec(t, s, `INSERT INTO t VALUES (1)`)
				tt.lose(t, s, other, pool)
				if s.InTransaction() {
					t.Fatal("the transaction is still open")
				}
				if !s.IsOpen() {
					t.Error("the connection of a store with an open frame was closed")
				}
				if end == "Commit" {
					if err := f.Commit(); !errors.Is(err, sqlitestore.ErrRolledBack) {
						t.Errorf("Commit = %v, want ErrRolledBack", err)
					}
				} else if err := f.Rollback(); err != nil {
					t.Errorf("Rollback = %v", err)
				}
				if err := f.Rollback(); err != nil {
					t.Errorf("Rollback after the frame ended = %v", err)
				}
				MustExec(t, s, `INSERT INTO t VALUES (2)`)
				if got := MustOne(t, s, `SELECT group_concat(id) FROM t`); got != "2" {
					t.Errorf("rows = %v, want 2", got)
				}
			})
		}
	}
}

// TestStore_RawCommitInAFrame runs COMMIT and END on the raw connection
// while frames are open: SQLite rolls the transaction back instead, so the
// frames' writes are not kept behind their owners' backs (in the file
// whatever the call did next, in no change log), and the frames end lost.
// A COMMIT with no frame open commits as usual.
func TestStore_RawCommitInAFrame(t *testing.T) {
	ctx := context.Background()
	for _, stmt := range []string{"COMMIT", "END"} {
		for _, inner := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/inner=%v", stmt, inner), func(t *testing.T) {
				s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY);`, sqlitestore.Options{})
				c, err := s.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				outer, err := s.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				f := outer
				if inner {
					if f, err = s.Begin(ctx); err != nil {
						t.Fatal(err)
					}
				}
				MustExec(t, s, `INSERT INTO t VALUES (1)`)
				if err := c.Exec(stmt); err == nil {
					t.Errorf("%s on the raw connection in a frame succeeded", stmt)
				}
				if s.InTransaction() {
					t.Fatal("the transaction is still open")
				}
				const why = "sqlitestore: transaction was rolled back: a COMMIT or END run on the raw connection (Store.Conn) while frames were open rolled it back, for the store's transactions are its frames"
				if err := f.Commit(); !errors.Is(err, sqlitestore.ErrRolledBack) || err.Error() != why {
					t.Errorf("Commit = %v, want ErrRolledBack saying why", err)
				}
				outer.Rollback()
				if got := MustOne(t, s, `SELECT count(*) FROM t`); got != int64(0) {
					t.Errorf("rows after the frames = %v, want 0", got)
				}
				if err := c.Exec(`BEGIN; INSERT INTO t VALUES (2); ` + stmt); err != nil {
					t.Errorf("%s on the raw connection with no frame open = %v", stmt, err)
				}
				if got := MustOne(t, s, `SELECT count(*) FROM t`); got != int64(1) {
					t.Errorf("rows after the raw transaction = %v, want 1", got)
				}
				// A later transaction lost otherwise does not say COMMIT.
				f, err = s.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Exec(`ROLLBACK`); err != nil {
					t.Fatal(err)
				}
				if err := f.Commit(); err != sqlitestore.ErrRolledBack {
					t.Errorf("Commit after a raw ROLLBACK = %v, want ErrRolledBack", err)
				}
			})
		}
	}
}

// TestFrame_RawTransactionAfterTheLoss ends frames' transaction from the
// raw connection, and then gives the connection another transaction: the
// frames stay lost (their writes went, and so did their records), so they
// neither commit the new transaction as theirs nor let the store's
// statements run in it, and the new transaction is rolled back with them.
// A RELEASE on the raw connection of a savepoint opened before an inner
// frame (prepared before it began: run as it is prepared, it is refused,
// TestStore_RawSavepointScope) merges that frame into the transaction
// around it: the frame can neither commit nor undo its work alone, so the
// transaction is rolled back.
// Before, the outer frame committed what the lost or merged frame wrote.
func TestFrame_RawTransactionAfterTheLoss(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		run  func(t *testing.T, s *sqlitestore.Store, raw *sqlite3.Conn) []*sqlitestore.Frame
	}{
		{"RollbackThenBegin", func(t *testing.T, s *sqlitestore.Store, raw *sqlite3.Conn) []*sqlitestore.Frame {
			f, err := s.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			MustExec(t, s, `INSERT INTO t VALUES (1)`)
			if err := raw.Exec(`ROLLBACK; BEGIN; INSERT INTO t VALUES (2)`); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Exec(ctx, `INSERT INTO t VALUES (3)`); !errors.Is(err, sqlitestore.ErrRolledBack) {
				t.Errorf("a statement after the loss = %v, want ErrRolledBack", err)
			}
			return []*sqlitestore.Frame{f}
		}},
		{"RaiseRollbackThenSavepoint", func(t *testing.T, s *sqlitestore.Store, raw *sqlite3.Conn) []*sqlitestore.Frame {
			f, err := s.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			MustExec(t, s, `INSERT INTO t VALUES (1)`)
			if _, err := s.Exec(ctx, `INSERT OR ROLLBACK INTO t VALUES (1)`); err == nil {
				t.Fatal("INSERT OR ROLLBACK of a taken key succeeded")
			}
			if err := raw.Exec(`SAVEPOINT r; INSERT INTO t VALUES (2)`); err != nil {
				t.Fatal(err)
			}
			return []*sqlitestore.Frame{f}
		}},
		{"ReleaseAroundAnInnerFrame", releaseAroundInner(ctx, (*sqlitestore.Frame).Rollback)},
		{"ReleaseAroundAnInnerFrameCommitted", releaseAroundInner(ctx, (*sqlitestore.Frame).Commit)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY);`, sqlitestore.Options{})
			raw, err := s.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range tt.run(t, s, raw) {
				if err := f.Commit(); !errors.Is(err, sqlitestore.ErrRolledBack) {
					t.Errorf("Commit = %v, want ErrRolledBack", err)
				}
			}
			if s.InTransaction() {
				t.Error("a transaction is still open after the frames ended")
			}
			if got := MustOne(t, s, `SELECT count(*) FROM t`); got != int64(0) {
				t.Errorf("rows after the frames = %v, want 0", got)
			}
		})
	}
}

// releaseAroundInner returns a case of TestFrame_RawTransactionAfterTheLoss:
// a raw RELEASE of a savepoint opened around an inner frame, which then
// ends with end (Commit or Rollback) and is refused.
func releaseAroundInner(ctx context.Context, end func(*sqlitestore.Frame) error) func(*testing.T, *sqlitestore.Store, *sqlite3.Conn) []*sqlitestore.Frame {
	return func(t *testing.T, s *sqlitestore.Store, raw *sqlite3.Conn) []*sqlitestore.Frame {
		outer, err := s.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := raw.Exec(`SAVEPOINT r`); err != nil {
			t.Fatal(err)
		}
		// Prepared before the inner frame began, when it may run.
		release, _, err := raw.Prepare(`RELEASE r`)
		if err != nil {
			t.Fatal(err)
		}
		defer release.Close()
		inner, err := s.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		MustExec(t, s, `INSERT INTO t VALUES (1)`)
		if err := release.Exec(); err != nil {
			t.Fatal(err)
		}
		if err := end(inner); !errors.Is(err, sqlitestore.ErrRolledBack) {
			t.Errorf("ending the merged frame = %v, want ErrRolledBack", err)
		}
		return []*sqlitestore.Frame{outer}
	}
}

// TestStore_RawSavepointScope runs savepoint statements on the raw
// connection inside an inner frame: as through Exec, RELEASE and ROLLBACK
// TO reach only the savepoints opened since the frame began, and none names
// the frames' own. Before, a ROLLBACK TO of a savepoint opened before the
// inner frame undid work the frame had committed, whose records a change
// log kept.
func TestStore_RawSavepointScope(t *testing.T) {
	ctx := context.Background()
	s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY);`, sqlitestore.Options{})
	raw, err := s.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	outer, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Exec(`SAVEPOINT r`); err != nil {
		t.Fatal(err)
	}
	inner, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	MustExec(t, s, `INSERT INTO t VALUES (1)`)
	if err := inner.Commit(); err != nil {
		t.Fatal(err)
	}
	inner, err = s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{`ROLLBACK TO r`, `RELEASE r`, `RELEASE sqlitestore_2`, `ROLLBACK TO sqlitestore_2`, `SAVEPOINT sqlitestore_9`} {
		if err := raw.Exec(stmt); err == nil {
			t.Errorf("%s on the raw connection in the inner frame succeeded", stmt)
		}
	}
	if err := raw.Exec(`SAVEPOINT q; INSERT INTO t VALUES (2); ROLLBACK TO q; RELEASE q`); err != nil {
		t.Errorf("a savepoint of the inner frame's own on the raw connection = %v", err)
	}
	if err := inner.Commit(); err != nil {
		t.Fatal(err)
	}
	// As through Exec, a frame's savepoints opened before a frame began in
	// it can no longer be named: COMMIT releases r.
	if err := raw.Exec(`RELEASE r`); err == nil {
		t.Error("RELEASE r after a frame began in the frame that opened it succeeded")
	}
	if err := outer.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := MustOne(t, s, `SELECT group_concat(id) FROM t`); got != "1" {
		t.Errorf("rows = %v, want 1", got)
	}
}

// TestStore_PanicLeavesStoreUnlocked runs a statement whose SQL function
// panics: the panic reaches the caller and the store is not left locked.
func TestStore_PanicLeavesStoreUnlocked(t *testing.T) {
	ctx := context.Background()
	s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY);`, sqlitestore.Options{})
	c, err := s.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreateFunction("boom", 0, 0, func(sqlite3.Context, ...sqlite3.Value) { panic("boom") }); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic did not reach the caller")
			}
		}()
		s.Exec(ctx, `SELECT boom()`)
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.IsOpen()
		s.Close()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the store stayed locked after the panic")
	}
}

// TestStore_RefusesAttach runs ATTACH and DETACH through the store's API:
// they are refused with ErrAttach and attach nothing, so no statement of a
// store writes another file, where its change log would miss the write. A
// VACUUM, which attaches a database of its own while it runs, still works.
func TestStore_RefusesAttach(t *testing.T) {
	ctx := context.Background()
	other := MustCreate(t, `CREATE TABLE secrets (v TEXT); INSERT INTO secrets VALUES ('kept');`, sqlitestore.Options{})
	target := other.Path()
	other.Close()
	run := map[string]func(s *sqlitestore.Store, sql string, args ...any) error{
		"Exec": func(s *sqlitestore.Store, sql string, args ...any) error {
			_, err := s.Exec(ctx, sql, args...)
			return err
		},
		"Query": func(s *sqlitestore.Store, sql string, args ...any) error {
			_, err := s.Query(ctx, sql, args...)
			return err
		},
		"ExecScript": func(s *sqlitestore.Store, sql string, args ...any) error {
			if len(args) > 0 {
				return sqlitestore.ErrAttach // ExecScript binds nothing
			}
			return s.ExecScript(ctx, `INSERT INTO t VALUES (2); `+sql+`; INSERT INTO t VALUES (3)`)
		},
	}
	for name, run := range run {
		for _, tt := range []struct {
			sql     string
			args    []any
			inFrame bool
		}{
			{`ATTACH DATABASE '` + target + `' AS other`, nil, true},
			{`ATTACH '` + target + `' AS other`, nil, false},
			{`attach database ? as other`, []any{target}, true},
			{`ATTACH ':memory:' AS scratch`, nil, false},
			{`ATTACH 'file:` + target + `?mode=rw' AS other`, nil, true},
			{`DETACH DATABASE other`, nil, false},
			{`DETACH temp`, nil, true},
		} {
			t.Run(name+"/"+tt.sql, func(t *testing.T) {
				s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY)`, sqlitestore.Options{})
				var f *sqlitestore.Frame
				if tt.inFrame {
					var err error
					if f, err = s.Begin(ctx); err != nil {
						t.Fatal(err)
					}
				}
				err := run(s, tt.sql, tt.args...)
				if !errors.Is(err, sqlitestore.ErrAttach) {
					t.Fatalf("err = %v, want ErrAttach", err)
				}
				if tt.args == nil && !strings.Contains(err.Error(), ": "+tt.sql) {
					t.Errorf("err = %v, want it to name %q", err, tt.sql)
				}
				if n := MustOne(t, s, `SELECT count(*) FROM pragma_database_list WHERE name NOT IN ('main', 'temp')`); n != int64(0) {
					t.Fatalf("%v databases attached after the refused statement", n)
				}
				if _, err := s.Query(ctx, `SELECT * FROM other.secrets`); err == nil || !strings.Contains(err.Error(), "no such table") {
					t.Fatalf("reading the other file after the refusal: %v, want no such table", err)
				}
				if f != nil {
					if err := f.Commit(); err != nil {
						t.Fatal(err)
					}
				}
				MustExec(t, s, `INSERT INTO t VALUES (10)`) // the store works on
			})
		}
	}
	t.Run("Vacuum", func(t *testing.T) {
		s := MustCreate(t, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a'), (5, 'b');`, sqlitestore.Options{})
		MustExec(t, s, `DELETE FROM t WHERE id = 1`)
		MustExec(t, s, `VACUUM`)
		if err := s.ExecScript(ctx, `VACUUM main; INSERT INTO t VALUES (6, 'c')`); err != nil {
			t.Fatal(err)
		}
		if got := MustOne(t, s, `SELECT group_concat(id || v) FROM t`); got != "5b,6c" {
			t.Fatalf("rows after VACUUM: %v", got)
		}
		if err := s.VacuumInto(ctx, filepath.Join(t.TempDir(), "copy.sqlite")); err != nil {
			t.Fatal(err)
		}
	})
}

// TestStore_RefusesVacuumWhileCapturing: a VACUUM may give the rows of a
// table without a primary key other rowids, which key their changes, so a
// store refuses it while a capture runs (in autocommit too, where SQLite
// would run it) and runs it otherwise. A VACUUM INTO another file leaves
// the store's rows as they are.
func TestStore_RefusesVacuumWhileCapturing(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		run  func(s *sqlitestore.Store) error // runs a VACUUM of the store's file
	}{
		{"Exec", func(s *sqlitestore.Store) error { _, err := s.Exec(ctx, `VACUUM`); return err }},
		{"ExecSchema", func(s *sqlitestore.Store) error { _, err := s.Exec(ctx, ` /* c */ vacuum main;`); return err }},
		{"Query", func(s *sqlitestore.Store) error { _, err := s.Query(ctx, `Vacuum`); return err }},
		{"IntoInAComment", func(s *sqlitestore.Store) error { _, err := s.Exec(ctx, `VACUUM /* into */`); return err }},
		{"IntoAfterALineComment", func(s *sqlitestore.Store) error { _, err := s.Exec(ctx, "VACUUM \"main\" -- into\n"); return err }},
		{"ExecScript", func(s *sqlitestore.Store) error {
			return s.ExecScript(ctx, `VACUUM; INSERT INTO t VALUES ('y')`)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := MustCreate(t, `CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('a'), ('b'), ('c'); DELETE FROM t WHERE v = 'a';`, sqlitestore.Options{})
			c := s.StartCapture()
			if err := tt.run(s); !errors.Is(err, sqlitestore.ErrVacuum) {
				t.Fatalf("VACUUM while capturing: err = %v, want ErrVacuum", err)
			}
			if _, err := s.Exec(ctx, `VACUUM INTO ?`, filepath.Join(t.TempDir(), "copy.sqlite")); err != nil {
				t.Fatalf("VACUUM INTO while capturing: %v", err)
			}
			MustExec(t, s, `UPDATE t SET v = upper(v) WHERE v = 'b'`)
			changes, err := c.Finish(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := formatChanges(changes), lines("update t map[rowid:2] before=map[v:b] after=map[v:B]"); got != want {
				t.Fatalf("changes:\n%s\nwant:\n%s", got, want)
			}
			if err := tt.run(s); err != nil {
				t.Fatalf("VACUUM with no capture: %v", err)
			}
		})
	}
}

// TestStore_RefusesStorePragmas: the journal, which rolls back a failed
// frame and each ROLLBACK TO, and the schema SQLite keeps, which change
// capture reads, are the store's own: a PRAGMA setting journal_mode,
// writable_schema or schema_version is refused (in any case, on any
// schema name, through Exec, Query and ExecScript, and on the raw
// connection with SQLite's "not authorized") and changes nothing, so a
// frame that rolls back still undoes its rows; reading them runs.
func TestStore_RefusesStorePragmas(t *testing.T) {
	ctx := context.Background()
	const notAuthorized = "sqlite3: authorization denied: not authorized"
	raw := func(sql string) func(s *sqlitestore.Store) error {
		return func(s *sqlitestore.Store) error {
			conn, err := s.Conn(ctx)
			if err != nil {
				return err
			}
			return conn.Exec(sql)
		}
	}
	for _, tt := range []struct {
		name string
		raw  bool // refused as SQLite refuses what the authorizer denies
		run  func(s *sqlitestore.Store) error
	}{
		{"RawJournalOff", true, raw(`PRAGMA journal_mode=OFF`)},
		{"RawJournalWAL", true, raw(`PRAGMA main.journal_mode = wal`)},
		{"RawWritableSchema", true, raw(`PRAGMA writable_schema=ON`)},
		{"RawSchemaVersion", true, raw(`PRAGMA Schema_Version = 99`)},
		{"JournalOff", false, func(s *sqlitestore.Store) error { _, err := s.Exec(ctx, `PRAGMA journal_mode=OFF`); return err }},
		{"JournalOfMain", false, func(s *sqlitestore.Store) error {
			_, err := s.Exec(ctx, `pragma main.Journal_Mode = 'off'`)
			return err
		}},
		{"WritableSchema", false, func(s *sqlitestore.Store) error { _, err := s.Query(ctx, `PRAGMA writable_schema=ON`); return err }},
		{"SchemaVersion", false, func(s *sqlitestore.Store) error { _, err := s.Exec(ctx, `PRAGMA schema_version = 99`); return err }},
		{"ExecScript", false, func(s *sqlitestore.Store) error {
			return s.ExecScript(ctx, `INSERT INTO t VALUES ('x'); PRAGMA journal_mode=OFF`)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := MustCreate(t, `CREATE TABLE t (v TEXT);`, sqlitestore.Options{})
			c := s.StartCapture()
			f, err := s.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			err = tt.run(s)
			switch {
			case tt.raw:
				if err == nil || err.Error() != notAuthorized {
					t.Fatalf("err = %v, want %s", err, notAuthorized)
				}
			case !errors.Is(err, sqlitestore.ErrPragma) || !strings.Contains(err.Error(), "sqlitestore: PRAGMA refused: the store keeps this setting its own ("):
				t.Fatalf("err = %v, want ErrPragma naming the PRAGMA", err)
			}
			MustExec(t, s, `INSERT INTO t VALUES ('a')`)
			if err := f.Rollback(); err != nil {
				t.Fatal(err)
			}
			if changes, err := c.Finish(ctx); err != nil || len(changes) != 0 {
				t.Fatalf("changes %v, %v; want none: the frame rolled back", changes, err)
			}
			if n := MustQuery(t, s, `SELECT count(*) FROM t`).Values[0][0]; n != int64(0) {
				t.Fatalf("%v rows after the rollback, want 0", n)
			}
			rows := MustQuery(t, s, `PRAGMA journal_mode`)
			if mode := rows.Values[0][0]; mode != "memory" {
				t.Errorf("journal_mode %v, want memory", mode)
			}
			MustQuery(t, s, `PRAGMA schema_version`)
		})
	}
}

// TestStore_Written: Written moves when work that changed the file commits,
// whatever table or schema it wrote, and stays where it was for reads, a
// transaction that wrote nothing, one rolled back, a commit that failed,
// and a transaction SQLite rolled back on its own.
func TestStore_Written(t *testing.T) {
	const schema = `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);
CREATE TABLE u (id INTEGER PRIMARY KEY, v TEXT);
CREATE TABLE p (id INTEGER PRIMARY KEY);
CREATE TABLE c (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED);
CREATE TRIGGER boom BEFORE INSERT ON t WHEN NEW.v = 'boom' BEGIN SELECT RAISE(ROLLBACK, 'boom'); END;`
	ctx := context.Background()
	inTx := func(s *sqlitestore.Store, commit bool, sqls ...string) error {
		f, err := s.Begin(ctx)
		if err != nil {
			return err
		}
		for _, sql := range sqls {
			if _, err := s.Exec(ctx, sql); err != nil {
				f.Rollback()
				return err
			}
		}
		if !commit {
			return f.Rollback()
		}
		return f.Commit()
	}
	for _, tc := range []struct {
		name  string
		run   func(s *sqlitestore.Store) error
		moves bool
	}{
		{"autocommit insert", func(s *sqlitestore.Store) error { _, err := s.Exec(ctx, "INSERT INTO t VALUES (1, 'a')"); return err }, true},
		{"insert, then the connection released", func(s *sqlitestore.Store) error {
			if _, err := s.Exec(ctx, "INSERT INTO t VALUES (1, 'a')"); err != nil {
				return err
			}
			return s.Release()
		}, true},
		{"untracked insert", func(s *sqlitestore.Store) error { _, err := s.Exec(ctx, "INSERT INTO u VALUES (1, 'a')"); return err }, true},
		{"create table", func(s *sqlitestore.Store) error { _, err := s.Exec(ctx, "CREATE TABLE n (x)"); return err }, true},
		{"committed transaction", func(s *sqlitestore.Store) error { return inTx(s, true, "INSERT INTO t VALUES (1, 'a')") }, true},
		{"insert by a query", func(s *sqlitestore.Store) error {
			_, err := s.Query(ctx, "INSERT INTO t VALUES (1, 'a') RETURNING id")
			return err
		}, true},
		{"insert by a script", func(s *sqlitestore.Store) error {
			return s.ExecScript(ctx, "SELECT 1; INSERT INTO t VALUES (1, 'a'); SELECT 2")
		}, true},
		{"insert on the raw connection", func(s *sqlitestore.Store) error {
			c, err := s.Conn(ctx)
			if err != nil {
				return err
			}
			return c.Exec("INSERT INTO t VALUES (1, 'a')")
		}, true},
		{"autocommit insert, then a transaction rolled back", func(s *sqlitestore.Store) error {
			if _, err := s.Exec(ctx, "INSERT INTO t VALUES (1, 'a')"); err != nil {
				return err
			}
			return inTx(s, false, "INSERT INTO t VALUES (2, 'b')")
		}, true},
		{"insert after Written was read", func(s *sqlitestore.Store) error {
			if _, err := s.Exec(ctx, "INSERT INTO t VALUES (1, 'a')"); err != nil {
				return err
			}
			was := s.Written()
			if _, err := s.Exec(ctx, "INSERT INTO t VALUES (2, 'b')"); err != nil {
				return err
			}
			if now := s.Written(); now == was {
				return fmt.Errorf("Written stayed at %d over the second insert", now)
			}
			return nil
		}, true},
		{"read", func(s *sqlitestore.Store) error { _, err := s.Query(ctx, "SELECT * FROM t"); return err }, false},
		{"transaction that wrote nothing", func(s *sqlitestore.Store) error { return inTx(s, true, "SELECT 1") }, false},
		{"transaction rolled back", func(s *sqlitestore.Store) error {
			return inTx(s, false, "INSERT INTO t VALUES (1, 'a')", "CREATE TABLE n (x)")
		}, false},
		{"commit that failed", func(s *sqlitestore.Store) error {
			if err := inTx(s, true, "INSERT INTO c VALUES (1, 7)"); err == nil {
				return errors.New("the commit of a dangling deferred key succeeded")
			}
			return nil
		}, false},
		{"rolled back by SQLite", func(s *sqlitestore.Store) error {
			if err := inTx(s, true, "INSERT INTO u VALUES (1, 'a')", "INSERT INTO t VALUES (1, 'boom')"); err == nil {
				return errors.New("RAISE(ROLLBACK) did not fail the transaction")
			}
			return nil
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := MustCreate(t, schema, sqlitestore.Options{Untracked: []string{"u"}})
			was := s.Written()
			if err := tc.run(s); err != nil {
				t.Fatal(err)
			}
			if now := s.Written(); (now != was) != tc.moves {
				t.Errorf("Written went from %d to %d; want it to move: %t", was, now, tc.moves)
			}
		})
	}
}
