package composition

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

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
// records are kept packed (see packedRecord) until the log is read.
//
// The log is bounded: once its records' sizes (see logRecord.size) add up
// to more than max, the oldest records are dropped until they fit again,
// and dropped counts them. A record keeps its Seq (its position in the
// whole log) whether or not older ones were dropped. It is guarded by the
// instance's lock.
type changeLog struct {
	chunks  [][]packedRecord
	head    int   // records at the front of chunks[0] already dropped
	n       int   // records kept
	bytes   int64 // the kept records' sizes
	max     int64 // the bound on bytes; 0 or less is none
	dropped int   // records dropped from the front
}

// made returns how many records the log has made, those dropped included:
// the Seq of the newest.
func (l *changeLog) made() int { return l.dropped + l.n }

// logRecord is a change record as a call collects it: the row change as
// the capture returned it, with no map. Its Seq is its position in the log.
type logRecord struct {
	call     int
	tool     string
	internal bool
	world    string
	row      sqlitestore.RowChange
}

// packedRecord is a logRecord as the log keeps it: the key values and the
// row images packed into one byte slice (see packValues), which the garbage
// collector need not scan, instead of an interface, and for text most often
// a string, per value. Ten thousand live instances keep millions of values.
type packedRecord struct {
	call            int
	tool            string
	internal        bool
	world           string
	table, op       string
	keyNames, names []string // shared with the store's table metadata
	vals            []byte
	bytes           int64 // its size, as logRecord.size computed it when it was added
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

// pack returns r packed. Its values are packed in a buffer on the stack
// (most records' fit) and copied out at their size.
func (r *logRecord) pack() packedRecord {
	var buf [256]byte
	vals := packValues(buf[:0], r.row.KeyValues)
	vals = packValues(vals, r.row.Before)
	vals = packValues(vals, r.row.After)
	return packedRecord{
		call: r.call, tool: r.tool, internal: r.internal, world: r.world,
		table: r.row.Table, op: r.row.Op, keyNames: r.row.KeyNames, names: r.row.Names,
		vals: bytes.Clone(vals), bytes: r.size(),
	}
}

// unpack returns the record r packs, with value slices of its own.
func (p *packedRecord) unpack() logRecord {
	key, rest := unpackValues(p.vals)
	before, rest := unpackValues(rest)
	after, _ := unpackValues(rest)
	return logRecord{call: p.call, tool: p.tool, internal: p.internal, world: p.world, row: sqlitestore.RowChange{
		Table: p.table, Op: p.op, KeyNames: p.keyNames, KeyValues: key, Names: p.names, Before: before, After: after,
	}}
}

// Tags of packed values.
const (
	tagNull byte = iota
	tagInt
	tagFloat
	tagText
	tagBlob
)

// packValues appends vs to b: its length plus one as a uvarint (0 for a nil
// slice), then each value as a tag and its bytes: a varint for an integer,
// the IEEE 754 bits for a float, a uvarint length and the bytes for text
// and blobs. The values are those a capture returns: nil, int64, float64,
// string and []byte.
func packValues(b []byte, vs []any) []byte {
	if vs == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(vs))+1)
	for _, v := range vs {
		switch v := v.(type) {
		case nil:
			b = append(b, tagNull)
		case int64:
			b = binary.AppendVarint(append(b, tagInt), v)
		case float64:
			b = binary.LittleEndian.AppendUint64(append(b, tagFloat), math.Float64bits(v))
		case string:
			b = append(binary.AppendUvarint(append(b, tagText), uint64(len(v))), v...)
		case []byte:
			b = append(binary.AppendUvarint(append(b, tagBlob), uint64(len(v))), v...)
		default:
			panic(fmt.Sprintf("composition: a change value of type %T", v))
		}
	}
	return b
}

// unpackValues reads the values packValues appended at the start of b and
// returns them with the rest of b. Blobs are copies.
func unpackValues(b []byte) ([]any, []byte) {
	n, k := binary.Uvarint(b)
	b = b[k:]
	if n == 0 {
		return nil, b
	}
	vs := make([]any, n-1)
	for i := range vs {
		tag := b[0]
		b = b[1:]
		switch tag {
		case tagInt:
			v, k := binary.Varint(b)
			vs[i], b = v, b[k:]
		case tagFloat:
			vs[i], b = math.Float64frombits(binary.LittleEndian.Uint64(b)), b[8:]
		case tagText, tagBlob:
			l, k := binary.Uvarint(b)
			data := b[k : k+int(l)]
			if tag == tagText {
				vs[i] = string(data)
			} else {
				vs[i] = bytes.Clone(data)
			}
			b = b[k+int(l):]
		}
	}
	return vs, b
}

// add appends r, then drops the oldest records while the log is over its
// bound (r itself, when it alone is).
func (l *changeLog) add(r logRecord) {
	p := r.pack()
	switch k := len(l.chunks); {
	case k == 0:
		// The first chunk grows as appends do: most episodes are short,
		// and ten thousand live instances each holding a full chunk for
		// their first few records would cost hundreds of megabytes.
		l.chunks = append(l.chunks, make([]packedRecord, 0, 4))
	case len(l.chunks[k-1]) == changeLogChunk:
		l.chunks = append(l.chunks, make([]packedRecord, 0, changeLogChunk))
	}
	last := &l.chunks[len(l.chunks)-1]
	*last = append(*last, p)
	l.n++
	l.bytes += p.bytes
	for l.max > 0 && l.bytes > l.max && l.n > 0 {
		l.dropFirst()
	}
}

// dropFirst drops the oldest kept record.
func (l *changeLog) dropFirst() {
	first := l.chunks[0]
	l.bytes -= first[l.head].bytes
	first[l.head] = packedRecord{} // its values can go now
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
	l.each(func(r logRecord) {
		ch := r.row.Change()
		out = append(out, env.ChangeRecord{
			Seq: l.dropped + len(out) + 1, Call: r.call, Tool: r.tool, Internal: r.internal, World: r.world,
			Table: ch.Table, Op: ch.Op, Key: ch.Key, Before: ch.Before, After: ch.After,
		})
	})
	return out
}

// each calls fn with every kept record, unpacked, oldest first.
func (l *changeLog) each(fn func(r logRecord)) {
	for k, c := range l.chunks {
		if k == 0 {
			c = c[l.head:]
		}
		for j := range c {
			fn(c[j].unpack())
		}
	}
}
