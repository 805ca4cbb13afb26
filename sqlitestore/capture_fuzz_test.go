package sqlitestore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/seahaven/seahaven/sqlitestore"
)

// captureFuzzSchema has what change capture must follow: a rowid alias, a
// UNIQUE column (REPLACE deletes the other row), a CHECK (statements that
// fail half-way), a foreign key with ON DELETE CASCADE, triggers writing
// other rows and the row itself, and a WITHOUT ROWID table.
const captureFuzzSchema = `
CREATE TABLE p (id INTEGER PRIMARY KEY, u TEXT UNIQUE, n INTEGER CHECK (n < 50));
CREATE TABLE c (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p (id) ON DELETE CASCADE, v TEXT);
CREATE TABLE w (k TEXT PRIMARY KEY, n INTEGER) WITHOUT ROWID;
CREATE TABLE audit (id INTEGER PRIMARY KEY, what TEXT);
CREATE TRIGGER p_ins AFTER INSERT ON p BEGIN INSERT INTO audit (what) VALUES ('ins ' || NEW.id); END;
CREATE TRIGGER p_up AFTER UPDATE OF n ON p WHEN NEW.n = 7 BEGIN UPDATE p SET u = 'seven' || NEW.id WHERE id = NEW.id; END;
`

// captureFuzzOps are the statements a fuzz input picks from, by byte; %d
// takes the next byte.
var captureFuzzOps = []string{
	`INSERT INTO p (id, u, n) VALUES (%d, 'u' || %d, %d)`,
	`INSERT OR REPLACE INTO p (id, u, n) VALUES (%d, 'u' || %d, %d)`,
	`INSERT INTO p (id, u, n) VALUES (%d, 'u' || %d, %d) ON CONFLICT (id) DO UPDATE SET n = n + 1`,
	`UPDATE p SET n = n + 1 WHERE id %% 3 = %d %% 3`,
	`UPDATE p SET n = %d WHERE id = %d`,
	`UPDATE p SET id = id + 100 WHERE id = %d`,
	`DELETE FROM p WHERE id = %d`,
	`INSERT INTO c (pid, v) VALUES (%d, 'c' || %d)`,
	`UPDATE c SET v = v || 'x' WHERE pid = %d`,
	`INSERT OR REPLACE INTO w VALUES ('k' || (%d %% 5), %d)`,
	`DELETE FROM w WHERE n < %d`,
	`INSERT INTO p (u, n) SELECT 'bulk' || value, value * %d FROM generate_series(1, 4)`,
	`SAVEPOINT s`,
	`ROLLBACK TO s`,
	`RELEASE s`,
	`INSERT INTO p (id, u, n) VALUES (%d, 'dup', 1), (%d, 'dup', 2)`,
	`INSERT OR ROLLBACK INTO w VALUES ('k' || (%d %% 5), %d)`, // a conflict loses the transaction
	`DELETE FROM w`,
}

// FuzzCapture runs a fuzz-chosen sequence of statements, some failing,
// some rolled back to a savepoint, inside captured transactions, and checks
// the net changes captured from preupdate events against the rows read back
// (the package's tests set the cross-check), and the store's integrity.
func FuzzCapture(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{12, 0, 1, 1, 1, 13, 14, 0, 9, 9, 9})
	f.Add([]byte{15, 3, 4, 11, 2, 1, 8, 3, 6, 3, 10, 50})
	f.Add([]byte{4, 7, 1, 4, 7, 2, 5, 1, 6, 2, 7, 1, 1})
	// Calls that commit with no failed statement: capture trusts its events.
	f.Add([]byte{2, 0, 1, 2, 3, 4, 5, 3, 1, 3, 9, 1, 7, 3})
	f.Add([]byte{3, 0, 10, 11, 12, 3, 8, 4, 4, 1, 9, 9, 20, 5, 4, 7, 10, 1})
	f.Add([]byte{1, 1, 5, 5, 5, 5, 4, 5, 5, 1, 1, 9, 3, 3, 2, 6, 5, 1})
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 200 {
			in = in[:200]
		}
		s := MustCreate(t, captureFuzzSchema, sqlitestore.Options{ExclusiveLock: true})
		next := byteReader(&in)
		for call := 0; len(in) > 0 && call < 8; call++ {
			c := s.StartCapture()
			fr, err := s.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for n := next() % 8; n >= 0 && len(in) > 0; n-- {
				op := captureFuzzOps[next()%len(captureFuzzOps)]
				var args []any
				for range countVerbs(op) {
					args = append(args, next())
				}
				s.Exec(ctx, fmt.Sprintf(op, args...)) // failures are part of the test
			}
			if next()%4 == 0 {
				err = fr.Rollback()
			} else if err = fr.Commit(); err != nil {
				err = fr.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Finish(ctx); err != nil {
				t.Fatalf("call %d: %v", call, err)
			}
		}
		if got := MustOne(t, s, `PRAGMA integrity_check`); got != "ok" {
			t.Fatalf("integrity_check: %v", got)
		}
	})
}

// byteReader returns a function that takes the next byte of *in, modulo 64
// (zero once *in is used up).
func byteReader(in *[]byte) func() int {
	return func() int {
		if len(*in) == 0 {
			return 0
		}
		b := (*in)[0]
		*in = (*in)[1:]
		return int(b % 64)
	}
}

// countVerbs counts the %d verbs of a format.
func countVerbs(format string) int {
	n := 0
	for i := 0; i+1 < len(format); i++ {
		if format[i] == '%' {
			if format[i+1] == 'd' {
				n++
			}
			i++
		}
	}
	return n
}
