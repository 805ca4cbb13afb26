package composition

import (
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/sqlitestore"
)

// changeLogChunk is how many records one chunk of a changeLog holds.
const changeLogChunk = 256

// DefaultMaxChangeLogBytes is Options.MaxChangeLogBytes's default.
const DefaultMaxChangeLogBytes = 16 << 20

// changeLog is an instance's append-only change log, kept in fixed-size
// chunks so that appending never copies the records already kept (a long
// episode's log is the largest thing an instance holds in Go memory). The
// records stay in compact form (see logRecord) until the log is read.
//
// The log is bounded: once its records' sizes (see logRecord.size) add up
// to more than max, the oldest records are dropped until they fit again,
// and dropped counts them. A record keeps its Seq (its position in the
// whole log) whether or not older ones were dropped. It is guarded by the
// instance's lock.
type changeLog struct {
	chunks  [][]logRecord
	head    int   // records at the front of chunks[0] already dropped
	n       int   // records kept
	bytes   int64 // the kept records' sizes
	max     int64 // the bound on bytes; 0 or less is none
	dropped int   // records dropped from the front
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
	bytes    int64 // its size, as size computed it when it was added
}

// Sizes of a record, as the change log's bound counts them: a fixed part,
// and for each key, before and after value its interface and, for text
// and blobs, its bytes. Names, tools and worlds are shared by many records
// and not counted.
const (
	recordBytes = 64
	valueBytes  = 16
)

// size returns the record's size as the change log's bound counts it.
func (r *logRecord) size() int64 {
	n := int64(recordBytes)
	for _, vs := range [...][]any{r.row.KeyValues, r.row.Before, r.row.After} {
		for _, v := range vs {
			n += valueBytes
			switch v := v.(type) {
			case string:
				n += int64(len(v))
			case []byte:
				n += int64(len(v))
			}
		}
	}
	return n
}

// add appends r, then drops the oldest records while the log is over its
// bound (r itself, when it alone is).
func (l *changeLog) add(r logRecord) {
	r.bytes = r.size()
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
	l.bytes += r.bytes
	for l.max > 0 && l.bytes > l.max && l.n > 0 {
		l.dropFirst()
	}
}

// dropFirst drops the oldest kept record.
func (l *changeLog) dropFirst() {
	first := l.chunks[0]
	l.bytes -= first[l.head].bytes
	first[l.head] = logRecord{} // its values can go now
	l.head++
	l.n--
	l.dropped++
	if l.head == len(first) && (len(l.chunks) > 1 || l.n == 0) {
		l.chunks = l.chunks[1:]
		l.head = 0
		if len(l.chunks) == 0 {
			l.chunks = nil
		}
	}
}

// all returns every kept record in order, with maps of their own that
// callers may modify; nil when there is none.
func (l *changeLog) all() []env.ChangeRecord {
	if l.n == 0 {
		return nil
	}
	out := make([]env.ChangeRecord, 0, l.n)
	l.each(func(r *logRecord) {
		ch := r.row.Change()
		out = append(out, env.ChangeRecord{
			Seq: l.dropped + len(out) + 1, Call: r.call, Tool: r.tool, Internal: r.internal, World: r.world,
			Table: ch.Table, Op: ch.Op, Key: ch.Key, Before: ch.Before, After: ch.After,
		})
	})
	return out
}

// each calls fn with every kept record, oldest first.
func (l *changeLog) each(fn func(r *logRecord)) {
	for k, c := range l.chunks {
		if k == 0 {
			c = c[l.head:]
		}
		for j := range c {
			fn(&c[j])
		}
	}
}
