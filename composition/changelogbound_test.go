package composition_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/compositiontest"
	"github.com/seahaven/seahaven/env"
)

// textArgs are the arguments of put.
type textArgs struct {
	Size int `json:"size" min:"0"`
}

// textWorld keeps one row per call with a text of the asked size.
func textWorld() *env.World {
	w := env.NewWorld(env.WorldSpec{Name: "texts", Version: "1.0.0",
		Schema: `CREATE TABLE texts (id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT;`})
	env.Tool(w, "put", "Insert a text of size bytes.", func(c *env.Ctx, in textArgs) (int64, error) {
		res, err := c.DB.Exec("INSERT INTO texts (body) VALUES (?)", strings.Repeat("t", in.Size))
		return res.LastInsertID, err
	})
	return w
}

// checkLog checks that the change log holds the newest of calls one-record
// calls, numbered on from the dropped ones, and that the state document
// says how many were dropped.
func checkLog(tb testing.TB, inst *composition.Instance, calls int, max int64) (kept int) {
	tb.Helper()
	log, dropped := inst.ChangeLog(), inst.ChangeLogDropped()
	if len(log)+dropped != calls {
		tb.Fatalf("%d records kept and %d dropped, want %d in all", len(log), dropped, calls)
	}
	for k, r := range log {
		if r.Seq != dropped+k+1 || r.Call != dropped+k+1 {
			tb.Fatalf("record %d has seq %d, call %d; want both %d", k, r.Seq, r.Call, dropped+k+1)
		}
	}
	doc := inst.State()
	switch {
	case dropped == 0 && doc.ChangeLogTruncated != nil:
		tb.Errorf("a whole log is marked truncated: %+v", doc.ChangeLogTruncated)
	case dropped > 0 && (doc.ChangeLogTruncated == nil || *doc.ChangeLogTruncated != env.ChangeLogTruncation{Dropped: dropped, MaxBytes: max}):
		tb.Errorf("truncation %+v, want %d dropped within %d bytes", doc.ChangeLogTruncated, dropped, max)
	}
	if len(doc.ChangeLog) != len(log) {
		tb.Errorf("the state document holds %d records, ChangeLog %d", len(doc.ChangeLog), len(log))
	}
	return len(log)
}

// TestInstance_ChangeLogBound runs calls whose records outgrow the change
// log's bound: the oldest records are dropped, the newest kept with their
// own seq, and the state document says how many were dropped.
func TestInstance_ChangeLogBound(t *testing.T) {
	t.Run("DropsTheOldest", func(t *testing.T) {
		const max = 10_000
		inst := compositiontest.Open(t, textWorld(), composition.Options{MaxChangeLogBytes: max})
		for n := 1; n <= 50; n++ {
			compositiontest.Call(t, inst, "put", `{"size":1000}`)
			kept := checkLog(t, inst, n, max)
			if n >= 10 && (kept < 8 || kept > 9) {
				t.Fatalf("after %d calls of 1000-byte rows, %d records kept within %d bytes", n, kept, max)
			}
		}
	})
	t.Run("OneRecordOverTheBound", func(t *testing.T) {
		inst := compositiontest.Open(t, textWorld(), composition.Options{MaxChangeLogBytes: 10_000})
		compositiontest.Call(t, inst, "put", `{"size":10}`)
		compositiontest.Call(t, inst, "put", `{"size":20000}`)
		if kept := checkLog(t, inst, 2, 10_000); kept != 0 {
			t.Errorf("%d records kept, want none: the last alone is over the bound", kept)
		}
		compositiontest.Call(t, inst, "put", `{"size":10}`)
		if kept := checkLog(t, inst, 3, 10_000); kept != 1 {
			t.Errorf("%d records kept, want the last", kept)
		}
	})
	t.Run("Unbounded", func(t *testing.T) {
		inst := compositiontest.Open(t, textWorld(), composition.Options{MaxChangeLogBytes: -1})
		for range 50 {
			compositiontest.Call(t, inst, "put", `{"size":1000}`)
		}
		if kept := checkLog(t, inst, 50, -1); kept != 50 {
			t.Errorf("%d records kept without a bound, want 50", kept)
		}
	})
	t.Run("Default", func(t *testing.T) {
		inst := compositiontest.Open(t, textWorld(), composition.Options{})
		for range 4 {
			compositiontest.Call(t, inst, "put", fmt.Sprintf(`{"size":%d}`, composition.DefaultMaxChangeLogBytes/3))
		}
		if dropped := inst.ChangeLogDropped(); dropped != 2 {
			t.Errorf("%d records of a third of the default bound dropped after 4, want 2", dropped)
		}
	})
}

// TestInstance_ChangeLogMemory writes 40 rows of 4 MiB, as a hostile
// session may, into an instance whose change log is bounded at 8 MiB: the
// Go heap the instance holds stays near the bound instead of growing by the
// 160 MiB written.
func TestInstance_ChangeLogMemory(t *testing.T) {
	const max = 8 << 20
	inst := compositiontest.Open(t, textWorld(), composition.Options{MaxChangeLogBytes: max})
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	for range 40 {
		compositiontest.Call(t, inst, "put", fmt.Sprintf(`{"size":%d}`, 4<<20))
	}
	after := heap()
	if after > before && after-before > 4*max {
		t.Errorf("the heap grew by %d MiB over 40 calls, want at most %d MiB with the log bounded at %d MiB",
			(after-before)>>20, 4*max>>20, max>>20)
	}
	if d := inst.ChangeLogDropped(); d != 39 {
		t.Errorf("%d records dropped, want 39", d)
	}
	runtime.KeepAlive(inst)
}
