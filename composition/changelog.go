package composition

import (
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/sqlitestore"
)

// changeLogChunk is how many records one chunk of a changeLog holds.
const changeLogChunk = 256

// changeLog is an instance's append-only change log, kept in fixed-size
// chunks so that appending never copies the records already kept (a long
// episode's log is the largest thing an instance holds in Go memory). The
// records stay in compact form (see logRecord) until the log is read. It is
// guarded by the instance's lock.
type changeLog struct {
	chunks [][]logRecord
	n      int
}

// logRecord is a change record in compact form: the row change as the
// capture returned it, with no map, which a long log would otherwise hold
// (and the GC scan) three of per record. Its Seq is its position in the log.
type logRecord struct {
	call     int
	tool     string
	internal bool
	world    string
	row      sqlitestore.RowChange
}

// add appends r.
func (l *changeLog) add(r logRecord) {
	switch k := len(l.chunks); {
	case k == 0:
		// The first chunk grows as appends do: most episodes are short,
		// and ten thousand live instances each holding a full chunk for
		// their first few records would cost hundreds of megabytes.
		l.chunks = append(l.chunks, make([]logRecord, 0, 4))
	case len(l.chunks[k-1]) == changeLogChunk:
		l.chunks = append(l.chunks, make([]logRecord, 0, changeLogChunk))
	}
	last := &l.chunks[len(l.chunks)-1]
	*last = append(*last, r)
	l.n++
}

// len returns the number of records.
func (l *changeLog) len() int { return l.n }

// all returns every record in order, with maps of their own that callers
// may modify; nil when there is none.
func (l *changeLog) all() []env.ChangeRecord {
	if l.n == 0 {
		return nil
	}
	out := make([]env.ChangeRecord, 0, l.n)
	for _, c := range l.chunks {
		for _, r := range c {
			ch := r.row.Change()
			out = append(out, env.ChangeRecord{
				Seq: len(out) + 1, Call: r.call, Tool: r.tool, Internal: r.internal, World: r.world,
				Table: ch.Table, Op: ch.Op, Key: ch.Key, Before: ch.Before, After: ch.After,
			})
		}
	}
	return out
}
