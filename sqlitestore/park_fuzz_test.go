package sqlitestore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/seahaven/seahaven/sqlitestore"
)

// FuzzPark runs fuzz-chosen captured calls (FuzzCapture's statements) on
// three stores copied from one frozen file, releasing a store after some
// calls so that its connection is parked and rebound to another of the
// three, and the same calls on three copies that keep their own
// connections. Every call's statements, errors and captured changes, and in
// the end every row, must be the same on both sides.
func FuzzPark(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0, 2, 3, 4, 5, 6, 7, 1, 9, 3})
	f.Add([]byte{12, 0, 1, 1, 1, 13, 14, 0, 9, 9, 9, 2, 2, 2, 5})
	f.Add([]byte{15, 3, 4, 11, 2, 1, 8, 3, 6, 3, 10, 50, 7, 7, 1, 0})
	f.Add([]byte{2, 0, 1, 2, 3, 4, 5, 3, 1, 3, 9, 1, 7, 3, 4, 4, 4})
	ctx := context.Background()
	dir := f.TempDir()
	frozenPath := filepath.Join(dir, "frozen.sqlite")
	fs := MustCreate(f, captureFuzzSchema, sqlitestore.Options{Path: frozenPath})
	MustExec(f, fs, `INSERT INTO p (id, u, n) VALUES (1, 'one', 1), (2, 'two', 2)`)
	MustExec(f, fs, `INSERT INTO w VALUES ('k1', 1)`)
	fs.Close()
	data, err := os.ReadFile(frozenPath)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 300 {
			in = in[:300]
		}
		run := t.TempDir()
		pool := sqlitestore.NewPool(64)
		defer pool.CloseParked()
		var shared, own [3]*sqlitestore.Store
		for i := range 3 {
			for side, key := range []string{"k", ""} {
				s, err := sqlitestore.Open(ctx, sqlitestore.Options{
					Path: filepath.Join(run, fmt.Sprintf("%d-%d.sqlite", side, i)), Seed: uint64(i),
					Pool: pool, Lazy: true, Data: data, ShareKey: key, ExclusiveLock: true,
				})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if side == 0 {
					shared[i] = s
				} else {
					own[i] = s
					s.Pin() // keeps its connection for the whole run
					defer s.Unpin()
				}
			}
		}
		next := byteReader(&in)
		// call runs one captured call on s and returns what it observed.
		call := func(s *sqlitestore.Store, stmts []string, rollback bool) string {
			c := s.StartCapture()
			fr, err := s.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			out := ""
			for _, q := range stmts {
				_, err := s.Exec(ctx, q)
				out += fmt.Sprintf("%s -> %v\n", q, err)
			}
			if rollback {
				err = fr.Rollback()
			} else if err = fr.Commit(); err != nil {
				out += fmt.Sprintf("commit -> %v\n", err)
				err = fr.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			ch, err := c.Finish(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return out + fmt.Sprintf("%v", ch)
		}
		// Each round makes the same call on every store, with arguments
		// shifted per store: the stores then tend to have equal change
		// counters and different rows, the case where a page cached from
		// another file would be taken for current.
		for n := 0; len(in) > 0 && n < 8; n++ {
			type op struct {
				format string
				args   []any
			}
			var ops []op
			for k := next() % 6; k >= 0 && len(in) > 0; k-- {
				o := op{format: captureFuzzOps[next()%len(captureFuzzOps)]}
				for range countVerbs(o.format) {
					o.args = append(o.args, next())
				}
				ops = append(ops, o)
			}
			rollback := next()%4 == 0
			release := next()
			for i := range 3 {
				var stmts []string
				for _, o := range ops {
					args := make([]any, len(o.args))
					for j, a := range o.args {
						args[j] = a.(int) + 7*i
					}
					stmts = append(stmts, fmt.Sprintf(o.format, args...))
				}
				got, want := call(shared[i], stmts, rollback), call(own[i], stmts, rollback)
				if got != want {
					t.Fatalf("round %d on store %d differs with parked connections:\n got %s\nwant %s", n, i, got, want)
				}
				if release&(1<<i) != 0 {
					if err := shared[i].Release(); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		for i := range 3 {
			for _, table := range []string{"p", "c", "w", "audit"} {
				q := "SELECT * FROM " + table + " ORDER BY 1"
				got, want := MustQuery(t, shared[i], q), MustQuery(t, own[i], q)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("store %d table %s with parked connections:\n got %v\nwant %v", i, table, got.Values, want.Values)
				}
			}
			if got := MustOne(t, shared[i], `PRAGMA integrity_check`); got != "ok" {
				t.Fatalf("store %d: integrity_check: %v", i, got)
			}
		}
	})
}
