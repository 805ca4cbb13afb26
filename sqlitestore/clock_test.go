package sqlitestore_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seahaven/seahaven/sqlitestore"
)

// testClock is a settable instance clock.
type testClock struct {
	mu  sync.Mutex // guards now
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newTestClock() *testClock {
	return &testClock{now: time.Date(2001, 2, 3, 4, 5, 6, 789e6, time.UTC)}
}

// TestClock_Functions runs with the process time zone at UTC+5 (see
// TestMain), so a 'localtime' that leaked through to Go's time.Local would
// show.
func TestClock_Functions(t *testing.T) {
	clock := newTestClock()
	s := MustCreate(t, `CREATE TABLE t (x);`, sqlitestore.Options{Clock: clock.Now})
	for _, tt := range []struct {
		expr string // SQL expression
		want any    // its value at 2001-02-03 04:05:06.789 UTC
	}{
		{`datetime('now')`, "2001-02-03 04:05:06"},
		{`datetime()`, "2001-02-03 04:05:06"},
		{`date()`, "2001-02-03"},
		{`time('NOW')`, "04:05:06"},
		{`CURRENT_TIMESTAMP`, "2001-02-03 04:05:06"},
		{`CURRENT_DATE`, "2001-02-03"},
		{`CURRENT_TIME`, "04:05:06"},
		{`julianday('now')`, 2451943.6702174651},
		{`julianday()`, 2451943.6702174651},
		{`unixepoch()`, int64(981173106)},
		{`unixepoch('now', 'subsec')`, 981173106.789},
		{`strftime('%Y-%m-%dT%H:%M:%f', 'now')`, "2001-02-03T04:05:06.789"},
		{`strftime('%s')`, "981173106"},
		{`strftime('now', '2020-01-01')`, "now"},
		{`strftime(x'', '2020-01-01')`, ""}, // an empty format, as SQLite reads an empty blob
		{`strftime(CAST('%Y' AS BLOB), '2020-01-01')`, "2020"},
		{`datetime('now', '+1 day', 'start of month')`, "2001-02-01 00:00:00"},
		{`timediff('now', '2001-01-01')`, "+0000-01-02 04:05:06.789"},
		{`datetime('2020-05-06 07:08:09', '+1 hour')`, "2020-05-06 08:08:09"},
		{`date(0, 'unixepoch')`, "1970-01-01"},
		{`datetime('2020-01-01 12:00:00', 'localtime')`, "2020-01-01 12:00:00"},
		{`datetime('now', 'localtime')`, "2001-02-03 04:05:06"},
		{`datetime('2020-01-01 12:00:00', 'utc')`, "2020-01-01 12:00:00"},
		{`datetime('garbage')`, nil},
	} {
		t.Run(tt.expr, func(t *testing.T) {
			if got := MustOne(t, s, "SELECT "+tt.expr); got != tt.want {
				t.Errorf("%s = %#v, want %#v", tt.expr, got, tt.want)
			}
		})
	}

	t.Run("Errors", func(t *testing.T) {
		_, err := s.Query(context.Background(), `SELECT timediff('now')`)
		if err == nil || !strings.Contains(err.Error(), "wrong number of arguments to function timediff()") {
			t.Fatalf("err = %v", err)
		}
		// Arguments past what a call is evaluated in: the error says so,
		// once prefixed, where it said "sqlitestore: sqlitestore:
		// datetime(): sqlite3: out of memory".
		_, err = s.Query(context.Background(), `SELECT datetime('now', printf('%.*c', 5000000, ' '))`)
		want := "sqlitestore: datetime(): out of memory: the date and time functions evaluate a call in 4 MiB, and its arguments take 5000003 bytes"
		if err == nil || err.Error() != want {
			t.Fatalf("err = %v, want %q", err, want)
		}
		if got := MustOne(t, s, `SELECT datetime('now', '+1 day')`); got != "2001-02-04 04:05:06" {
			t.Errorf("after it: %v", got)
		}
	})

	t.Run("ClockMoves", func(t *testing.T) {
		c := newTestClock()
		s := MustCreate(t, `CREATE TABLE t (x);`, sqlitestore.Options{Clock: c.Now})
		const q = `SELECT datetime('now')`
		if got := MustOne(t, s, q); got != "2001-02-03 04:05:06" {
			t.Fatalf("before = %v", got)
		}
		c.Advance(time.Hour)
		if got := MustOne(t, s, q); got != "2001-02-03 05:05:06" {
			t.Errorf("after an hour = %v (cached statement must re-read the clock)", got)
		}
	})
}

func TestClock_Defaults(t *testing.T) {
	clock := newTestClock()
	s := MustCreate(t, `CREATE TABLE ev (
		id INTEGER PRIMARY KEY,
		at TEXT DEFAULT CURRENT_TIMESTAMP,
		d TEXT DEFAULT CURRENT_DATE,
		dt TEXT DEFAULT (datetime('now')),
		jd REAL DEFAULT (julianday('now')),
		ue INT DEFAULT (unixepoch())
	) STRICT;`, sqlitestore.Options{Clock: clock.Now})
	MustExec(t, s, `INSERT INTO ev DEFAULT VALUES`)
	clock.Advance(90 * time.Minute)
	MustExec(t, s, `INSERT INTO ev DEFAULT VALUES`)
	rows := MustQuery(t, s, `SELECT at, d, dt, jd, ue FROM ev ORDER BY id`)
	want := [][]any{
		{"2001-02-03 04:05:06", "2001-02-03", "2001-02-03 04:05:06", 2451943.6702174651, int64(981173106)},
		{"2001-02-03 05:35:06", "2001-02-03", "2001-02-03 05:35:06", 2451943.7327174651, int64(981178506)},
	}
	for i := range want {
		for j := range want[i] {
			got, w := rows.Values[i][j], want[i][j]
			if f, ok := w.(float64); ok {
				if g, ok := got.(float64); !ok || g-f > 1e-9 || f-g > 1e-9 {
					t.Errorf("row %d %s = %v, want %v", i, rows.Columns[j], got, w)
				}
				continue
			}
			if got != w {
				t.Errorf("row %d %s = %#v, want %#v", i, rows.Columns[j], got, w)
			}
		}
	}
}

func TestClock_IndexAndGenerated(t *testing.T) {
	// DETERMINISTIC overrides keep date(x) legal where SQLite requires it.
	s := MustCreate(t, `CREATE TABLE e (x TEXT, day TEXT GENERATED ALWAYS AS (date(x)) STORED);
		CREATE INDEX e_day ON e (date(x));`, sqlitestore.Options{Clock: newTestClock().Now})
	MustExec(t, s, `INSERT INTO e (x) VALUES ('2020-01-02 03:04:05')`)
	if got := MustOne(t, s, `SELECT day FROM e WHERE date(x) = '2020-01-02'`); got != "2020-01-02" {
		t.Errorf("day = %v", got)
	}
}

func TestClock_ConcurrentStores(t *testing.T) {
	// Stores in many goroutines share the process's helper connections.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		at := time.Date(2000+i, 1, 1, 0, 0, 0, 0, time.UTC)
		s := MustCreate(t, `CREATE TABLE t (x);`, sqlitestore.Options{Clock: func() time.Time { return at }})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				rows, err := s.Query(context.Background(), `SELECT date('now')`)
				if err != nil {
					errs <- err
					return
				}
				if got, want := rows.Values[0][0], at.Format("2006-01-02"); got != want {
					errs <- &mismatch{got, want}
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

type mismatch struct{ got, want any }

func (m *mismatch) Error() string { return "got " + toString(m.got) + ", want " + toString(m.want) }

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return "non-text"
}

// TestClock_CurrentMatchesSQLite checks the CURRENT_* keywords, which are
// formatted in Go, against SQLite's own datetime('now'), date('now') and
// time('now') over many instants: every millisecond of one second, the ends
// of the plain years, and random dates.
func TestClock_CurrentMatchesSQLite(t *testing.T) {
	clock := newTestClock()
	s := MustCreate(t, `CREATE TABLE t (x);`, sqlitestore.Options{Clock: clock.Now})
	instants := []time.Time{
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 2, 15, 4, 5, 999999999, time.UTC),
	}
	base := time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC)
	for ms := range 1000 {
		instants = append(instants, base.Add(time.Duration(ms)*time.Millisecond))
	}
	seed := uint64(1)
	for range 500 {
		seed = seed*6364136223846793005 + 1442695040888963407
		instants = append(instants, time.UnixMilli(int64(seed>>20)%253402300800000).UTC())
	}
	for _, at := range instants {
		clock.mu.Lock()
		clock.now = at
		clock.mu.Unlock()
		for _, pair := range [][2]string{
			{"CURRENT_TIMESTAMP", "datetime('now')"},
			{"CURRENT_DATE", "date('now')"},
			{"CURRENT_TIME", "time('now')"},
		} {
			got, want := MustOne(t, s, "SELECT "+pair[0]), MustOne(t, s, "SELECT "+pair[1])
			if got != want {
				t.Fatalf("at %s: %s = %v, SQLite's %s = %v", at.Format(time.RFC3339Nano), pair[0], got, pair[1], want)
			}
		}
	}
}
