package sqlitestore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seahaven/seahaven/sqlitestore"
)

// countMany is a query that keeps SQLite's virtual machine busy for a
// while (about a million steps) and returns one row.
const countMany = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 50000) SELECT count(*) FROM c`

func TestPacer(t *testing.T) {
	ctx := context.Background()
	_, _, in := inspectorFixture(t)

	t.Run("Unpaced", func(t *testing.T) {
		rows, err := in.QueryLimit(ctx, sqlitestore.ReadLimit{}, countMany)
		if err != nil {
			t.Fatal(err)
		}
		if got := rows.Values[0][0]; got != int64(50000) {
			t.Errorf("count = %v", got)
		}
	})

	t.Run("PausedPastTheBurst", func(t *testing.T) {
		// Queries that together run longer than the burst pause, and still
		// return their rows.
		p := sqlitestore.NewPacer(0.5)
		for p.Paused() == 0 {
			rows, err := in.QueryLimit(ctx, sqlitestore.ReadLimit{Pacer: p}, countMany)
			if err != nil {
				t.Fatal(err)
			}
			if got := rows.Values[0][0]; got != int64(50000) {
				t.Fatalf("count = %v", got)
			}
		}
	})

	t.Run("PauseEndsWithTheContext", func(t *testing.T) {
		// A share so small that the query would pause for hours: its
		// deadline ends the pause and interrupts it.
		p := sqlitestore.NewPacer(1e-6)
		dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		var err error
		for err == nil {
			_, err = in.QueryLimit(dctx, sqlitestore.ReadLimit{Pacer: p}, countMany)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want one wrapping context.DeadlineExceeded", err)
		}
		if p.Paused() == 0 {
			t.Error("the query never paused")
		}
		// The connection is usable afterwards.
		if _, err := in.QueryLimit(ctx, sqlitestore.ReadLimit{}, `SELECT 1`); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Nil", func(t *testing.T) {
		var p *sqlitestore.Pacer
		if p.Paused() != 0 {
			t.Error("nil Pacer paused")
		}
	})
}
