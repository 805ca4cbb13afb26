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

// pinLocal sets the process time zone to UTC+5 for the test, so a 'localtime'
// that leaked through to Go's time.Local would show.
func pinLocal(t *testing.T) {
	old := time.Local
	time.Local = time.FixedZone("UTC+5", 5*3600)
	t.Cleanup(func() { time.Local = old })
}

func TestClock_Functions(t *testing.T) {
	pinLocal(t)
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
