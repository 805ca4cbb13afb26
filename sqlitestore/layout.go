package sqlitestore

import (
	"fmt"

	"github.com/ncruces/go-sqlite3"
)

// The layout log: what may have changed the columns of the main schema's
// tables while the metadata was stale, and how the events recorded raw in
// that time are keyed once it is reloaded.

// layoutLog records, for one connection bound to one store, what may have
// changed the columns of the main schema's tables, in order, so that an
// event recorded raw is keyed by later metadata only if its table's
// columns stayed as they were. Statements are noted when they are
// prepared, as the authorizer sees them.
type layoutLog struct {
	seq    uint64            // moves with every change noted
	tables map[string]uint64 // by lower-cased table name: seq after a CREATE, DROP or ALTER of it
	all    uint64            // seq after a change that may concern any table (a rollback)
	// rename is seq after the last ALTER TABLE that renames a table or
	// column (RENAME TO, RENAME COLUMN), the one statement that does, or
	// drops a column (see renamingFuncs); rawRename says one was prepared
	// on the raw connection, whose user may step it at any later time,
	// until forgetRaw.
	rename    uint64
	rawRename bool
	// rollback is all after the last ROLLBACK or ROLLBACK TO (a failed
	// statement's undo, which undoes only the statement, is not one).
	rollback uint64
	// columnRenames and columnDrops note each table's RENAME COLUMN and
	// DROP COLUMN statements.
	columnRenames, columnDrops columnChanges
}

// columnChanges notes the ALTER TABLE statements of one kind (RENAME
// COLUMN, DROP COLUMN) by table: at holds, by lower-cased name, the
// layout log's seq after the last one of each table, and raw the tables
// one was prepared for on the raw connection, until forgetRaw.
type columnChanges struct {
	at  map[string]uint64
	raw map[string]bool
}

// note records a statement of table noted at seq; raw says it was
// prepared on the raw connection.
func (c *columnChanges) note(table string, seq uint64, raw bool) {
	if c.at == nil {
		c.at, c.raw = make(map[string]uint64), make(map[string]bool)
	}
	table = foldASCII(table)
	c.at[table] = seq
	c.raw[table] = c.raw[table] || raw
}

// since reports whether a statement of table was noted after seq, or
// prepared on the raw connection.
func (c *columnChanges) since(table string, seq uint64) bool {
	table = foldASCII(table)
	return c.at[table] > seq || c.raw[table]
}

// forgetRaw forgets the tables statements were prepared for on the raw
// connection, counting them as noted at seq when changed (see
// layoutLog.forgetRaw).
func (c *columnChanges) forgetRaw(changed bool, seq uint64) {
	for table, raw := range c.raw {
		if raw && changed {
			c.at[table] = seq
		}
	}
	clear(c.raw)
}

// forgetRaw forgets which renames and drops were prepared on the raw
// connection, once none can run in a transaction begun later: each ran,
// and committed, before it, or never will unless it is prepared again,
// and noted then (see conn.alterPending). A rollback undoes only what ran
// in the transaction it ends. When the schema changed since the metadata
// was last loaded (changed), they may have run since: they count as noted
// now for the next load.
func (l *layoutLog) forgetRaw(changed bool) {
	if changed {
		l.seq++
		l.rename = l.seq
	}
	l.columnDrops.forgetRaw(changed, l.seq)
	l.columnRenames.forgetRaw(changed, l.seq)
	l.rawRename = false
}

// noteTable records a statement that creates, drops or alters table.
func (l *layoutLog) noteTable(table string) {
	l.seq++
	if l.tables == nil {
		l.tables = make(map[string]uint64)
	}
	l.tables[foldASCII(table)] = l.seq
}

// noteRename records an ALTER TABLE that renames a table or column, or
// drops a column, after noteTable; raw says it was prepared on the raw
// connection.
func (l *layoutLog) noteRename(raw bool) {
	l.rename = l.seq
	l.rawRename = l.rawRename || raw
}

// noteAll records a change that may concern every table.
func (l *layoutLog) noteAll() {
	l.seq++
	l.all = l.seq
}

// tableChangedSince reports whether a statement changing table was noted
// after seq.
func (l *layoutLog) tableChangedSince(table string, seq uint64) bool {
	return l.tables[foldASCII(table)] > seq
}

// metaHolds reports whether the loaded metadata still describes table,
// even when it is due for a reload: nothing may have changed the table's
// columns since it was loaded.
func (cn *conn) metaHolds(table string) bool {
	return cn.meta != nil && cn.layout.all <= cn.loadSeq && !cn.layout.tableChangedSince(table, cn.loadSeq)
}

// rawEvent is a preupdate event copied whole, to be keyed once the table's
// metadata is known.
type rawEvent struct {
	table              string
	op                 sqlite3.AuthorizerActionCode
	oldRowID, newRowID int64
	cols               int   // the table's columns at the event, as the hook counts them
	old, new           []any // by column index; nil when absent

	// log and seq are the connection's layout log and where it stood at
	// the event: the event can be keyed by the metadata loaded later only
	// if nothing changed the table's columns since.
	log *layoutLog
	seq uint64
}

func newRawEvent(d sqlite3.PreUpdateData, log *layoutLog) rawEvent {
	n := d.Count()
	ev := rawEvent{table: d.Table, op: d.Op, oldRowID: d.OldRowID, newRowID: d.NewRowID, cols: n, log: log, seq: log.seq}
	row := func(col func(int) any) []any {
		r := make([]any, n)
		for i := range r {
			r[i] = col(i)
		}
		return r
	}
	if d.Op != sqlite3.AUTH_INSERT {
		ev.old = row(columnReader(d.Old))
	}
	if d.Op != sqlite3.AUTH_DELETE {
		ev.new = row(columnReader(d.New))
	}
	return ev
}

// replay keys the events recorded while metadata was stale, in order, by
// the metadata just loaded. An event whose table's columns may have changed
// since it was recorded cannot be keyed by it, and fails the capture.
func (c *Capture) replay(cn *conn) {
	for _, ev := range c.raw {
		if c.err != nil {
			break
		}
		// Changes noted on the event's connection after it and, when the
		// connection changed since, any noted on this one.
		tableMoved := ev.log.tableChangedSince(ev.table, ev.seq) || ev.log != cn.layout && cn.layout.tableChangedSince(ev.table, 0)
		anyMoved := ev.log.all > ev.seq || ev.log != cn.layout && cn.layout.all > 0
		m := cn.meta[ev.table]
		if m == nil && !tableMoved || m != nil && m.skip {
			// Gone with no statement on it since: a rollback removed the
			// table, undoing the event too. Or not captured.
			continue
		}
		if m == nil || tableMoved || anyMoved || ev.cols != m.cols {
			c.err = fmt.Errorf("sqlitestore: change capture cannot key a change to %s: the table's columns may have changed after it, before they were reloaded", ev.table)
			break
		}
		// With ev.cols == m.cols every column m reads is in its row, and m
		// reads no old row of an insert nor new row of a delete.
		col := func(row []any) func(int) any {
			return func(i int) any { return row[i] }
		}
		c.record(m, m.event(ev.op, col(ev.old), col(ev.new), ev.oldRowID, ev.newRowID))
	}
	c.raw = nil
}
