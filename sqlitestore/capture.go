package sqlitestore

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/ncruces/go-sqlite3"
)

// Change capture.
//
// The preupdate hook records, for every row a statement touches, the row's key
// and its first before-image (copied at once; no SQL runs inside the hook).
// Finish reads each touched key's current row and emits the net change, so
// rolled-back rows read back as they were (the package doc lists the rest
// this is exact under). It never touches the schema.
//
// Reading the rows back is only needed when rows may have changed without a
// preupdate event: a ROLLBACK or ROLLBACK TO, a statement that failed (SQLite
// undoes its partial work silently), a schema change, a reopened connection
// or one handed out raw (the store counts these in Store.undo). Otherwise
// each touched row's last event already holds its current image: the new
// values of its last insert or update, or nothing after a delete. So the hook
// also keeps that image, and Finish uses it when the count did not move
// since StartCapture: most tool calls then read nothing back.
//
// When Finish does read rows back after a COMMIT, it takes a read
// transaction of its own; a capture finished before its frame commits reads
// inside the transaction.

// Change is the net change of one row during a capture.
type Change struct {
	// Table is the table's name in the main schema. Rows are told apart
	// by table name and key: a table dropped while the capture ran
	// reports the rows it touched as deleted, and one created reports its
	// rows as inserted. A capture holding rows of a table that is renamed
	// while it runs fails instead (see Capture).
	Table string
	// Op is "insert", "update" or "delete".
	Op string
	// Key maps the primary-key columns to their values; it is {"rowid": n}
	// for a table with no declared primary key.
	Key map[string]any
	// KeyValues holds the same values in primary-key column order.
	KeyValues []any
	// Before is the row before the capture; nil for an insert.
	Before map[string]any
	// After is the row when the capture finished; nil for a delete.
	After map[string]any
}

// RowChange is the net change of one row during a capture in compact form:
// the row images are slices by column rather than maps, so a change costs no
// map until one is asked for (Change). FinishRows returns them.
//
// Its slices must not be modified: KeyNames and Names are shared with the
// store's table metadata and with other RowChanges of the same table, and
// KeyValues and the []byte values of the images are shared with the Changes
// built from it. Read only, a RowChange is safe for concurrent use.
type RowChange struct {
	// Table is the table's name in the main schema.
	Table string
	// Op is OpInsert, OpUpdate or OpDelete.
	Op string
	// KeyNames names the primary-key columns in key order; it is ["rowid"]
	// for a table with no declared primary key.
	KeyNames []string
	// KeyValues holds the key's values, by KeyNames.
	KeyValues []any
	// Names names the columns of Before and After: the table's columns when
	// the capture finished (when the table is gone, its columns when the row
	// was first touched).
	Names []string
	// Before is the row before the capture, by Names (columns added during
	// the capture NULL); nil for an insert.
	Before []any
	// After is the row when the capture finished, by Names; nil for a
	// delete.
	After []any
}

// Change returns r as a Change, with maps of its own: Key, Before and After
// are fresh on every call, KeyValues is r's.
func (r RowChange) Change() Change {
	ch := Change{Table: r.Table, Op: r.Op, KeyValues: r.KeyValues, Key: rowMap(r.KeyNames, r.KeyValues)}
	if r.Before != nil {
		ch.Before = rowMap(r.Names, r.Before)
	}
	if r.After != nil {
		ch.After = rowMap(r.Names, r.After)
	}
	return ch
}

// rowidKey is KeyNames for a table with no declared primary key.
var rowidKey = []string{"rowid"}

// Change operations.
const (
	OpInsert = "insert"
	OpUpdate = "update"
	OpDelete = "delete"
)

// Capture records the rows changed in a store between StartCapture and
// Finish. Captures nest: the innermost running capture receives the changes.
// A Capture belongs to its store's goroutine.
//
// A table renamed while a capture runs (ALTER TABLE ... RENAME TO, or a
// rollback undoing such a rename) after the capture touched rows of it
// under its old name makes Finish fail with an error naming the table and
// its new name: the rows would otherwise be reported as deleted from the
// old name, and their later changes lost. Rows first touched under the new
// name are reported under it as usual.
type Capture struct {
	s     *Store
	done  bool                // guarded by s.mu, as are the fields below
	keys  map[string]*touched // by enc
	order []*touched          // in first-touch order
	raw   []rawEvent          // events recorded while table metadata was stale
	buf   []byte              // key-encoding scratch
	err   error               // first failure inside the hook

	undoAt uint64 // Store.undo at StartCapture
}

// touched is a row a capture saw, with its first before-image.
type touched struct {
	meta   *tableMeta // the table's metadata at the first touch
	key    []any      // primary-key values, or the rowid
	enc    string     // table name, NUL and encoded key: the row's identity
	before []any      // by meta.names; nil when the row did not exist

	last []any // by meta.names: the row's image after its last event; nil once deleted
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

// layoutLog records, for one connection bound to one store, what may have
// changed the columns of the main schema's tables, in order, so that an
// event recorded raw is keyed by later metadata only if its table's
// columns stayed as they were. Statements are noted when they are
// prepared, as the authorizer sees them.
type layoutLog struct {
	seq    uint64            // moves with every change noted
	tables map[string]uint64 // by lower-cased table name: seq after a CREATE, DROP or ALTER of it
	all    uint64            // seq after a change that may concern any table (a rollback)
}

// noteTable records a statement that creates, drops or alters table.
func (l *layoutLog) noteTable(table string) {
	l.seq++
	if l.tables == nil {
		l.tables = make(map[string]uint64)
	}
	l.tables[strings.ToLower(table)] = l.seq
}

// noteAll records a change that may concern every table.
func (l *layoutLog) noteAll() {
	l.seq++
	l.all = l.seq
}

// tableChangedSince reports whether a statement changing table was noted
// after seq.
func (l *layoutLog) tableChangedSince(table string, seq uint64) bool {
	return l.tables[strings.ToLower(table)] > seq
}

// metaHolds reports whether the loaded metadata still describes table,
// even when it is due for a reload: nothing may have changed the table's
// columns since it was loaded.
func (cn *conn) metaHolds(table string) bool {
	return cn.meta != nil && cn.layout.all <= cn.loadSeq && !cn.layout.tableChangedSince(table, cn.loadSeq)
}

// StartCapture starts a change capture. Captures nest; the innermost receives
// the hook's events. End it with Finish.
func (s *Store) StartCapture() *Capture {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &Capture{s: s, undoAt: s.undo}
	if s.closed {
		c.done = true
		return c
	}
	s.captures = append(s.captures, c)
	if s.cn != nil && !s.cn.hookOn {
		s.installHookLocked(s.cn)
	}
	return c
}

// Finish ends the capture and returns the net changes since StartCapture for
// the rows touched while it was the innermost capture: one insert, update or
// delete per row, rows left unchanged dropped, sorted by table then key
// (CompareKeys). It returns ErrCaptureDone when called twice and
// ErrCaptureOrder (after ending the capture) when a capture started after it
// is still running. It is FinishRows with each change turned into maps.
func (c *Capture) Finish(ctx context.Context) ([]Change, error) {
	rows, err := c.FinishRows(ctx)
	return changes(rows), err
}

// changes converts rows to Changes; nil when rows is nil.
func changes(rows []RowChange) []Change {
	if rows == nil {
		return nil
	}
	out := make([]Change, len(rows))
	for i, r := range rows {
		out[i] = r.Change()
	}
	return out
}

// FinishRows is Finish returning the changes in compact form: the same
// changes, in the same order, with the same errors, without building a map.
// Like Finish, it must be called on the store's goroutine.
func (c *Capture) FinishRows(ctx context.Context) ([]RowChange, error) {
	s := c.s
	var out []RowChange
	err := func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if c.done {
			if s.closed {
				return ErrClosed
			}
			return ErrCaptureDone
		}
		c.done = true
		i := slices.Index(s.captures, c)
		inner := i != len(s.captures)-1
		s.captures = slices.Delete(s.captures, i, i+1)
		if len(s.captures) == 0 && s.cn != nil && s.cn.hookOn {
			s.cn.c.PreUpdateHook(nil)
			s.cn.hookOn = false
		}
		if inner {
			return ErrCaptureOrder
		}
		if c.err != nil {
			return c.err
		}
		if len(c.order) == 0 && len(c.raw) == 0 {
			return nil
		}
		if c.eventsComplete() {
			out, _ = c.collect(func(t *touched) ([]any, []string, error) { return t.last, t.meta.names, nil })
			if verifyEvents {
				return s.doLocked(context.Background(), true, func(cn *conn) error {
					read, err := cn.readCurrent(c)
					// Compared as maps: as Finish's callers see them.
					if events, read := changes(out), changes(read); !reflect.DeepEqual(events, read) {
						panic(fmt.Sprintf("sqlitestore: changes from events %v differ from the rows read back %v", events, read))
					}
					return err
				})
			}
			return nil
		}
		return s.doLocked(ctx, true, func(cn *conn) error {
			if cn.metaDirty {
				if err := s.loadMetaLocked(cn, c); err != nil {
					return err
				}
			}
			c.replay(cn)
			if c.err != nil {
				return c.err
			}
			var err error
			out, err = cn.readCurrent(c)
			return err
		})
	}()
	if s.pool != nil {
		s.pool.settle()
	}
	return out, err
}

// verifyEvents makes Finish also read the rows back when it trusts the
// events, and fail when the two differ, at the cost of a read per touched
// row. This package's tests set it; a build with the capturecheck tag sets
// it in every package (`make test` and `make fuzz` build so).
var verifyEvents bool

// eventsComplete reports whether the capture's events account for every
// change of its rows, so each touched row's last image is its current one.
// It is called under s.mu.
func (c *Capture) eventsComplete() bool {
	s := c.s
	return c.undoAt == s.undo && len(c.raw) == 0 && (s.cn == nil || !s.cn.metaDirty && !s.cn.exposed)
}

// installHookLocked routes the connection's preupdate events to the captures.
func (s *Store) installHookLocked(cn *conn) {
	cn.c.PreUpdateHook(func(d sqlite3.PreUpdateData) { s.onPreUpdate(cn, d) })
	cn.hookOn = true
}

// refreshMetaLocked reloads stale table metadata before a statement runs while
// a capture is active, and keys the events recorded while it was stale.
func (s *Store) refreshMetaLocked(cn *conn) error {
	if len(s.captures) == 0 || !cn.metaDirty {
		return nil
	}
	return s.loadMetaLocked(cn, nil)
}

// loadMetaLocked reloads the table metadata, and fails the captures holding
// rows of a table that was renamed since (see renamedTo): the running ones
// and finishing, the capture being finished (nil when none is).
func (s *Store) loadMetaLocked(cn *conn, finishing *Capture) error {
	old := cn.meta
	if err := s.loadMetaOnlyLocked(cn); err != nil {
		return err
	}
	cn.loadSeq = cn.layout.seq
	cn.loadInTxn = cn.layout.seq != cn.txnSeq && !cn.c.GetAutocommit()
	for _, c := range s.captures {
		c.checkRenames(old, cn.meta)
		c.replay(cn)
	}
	if finishing != nil {
		finishing.checkRenames(old, cn.meta)
		finishing.replay(cn)
	}
	return nil
}

// loadMetaOnlyLocked reloads the table metadata.
func (s *Store) loadMetaOnlyLocked(cn *conn) error {
	if slices.ContainsFunc(s.captures, func(c *Capture) bool { return len(c.order) > 0 }) {
		s.undo++ // images kept in the old shape
	}
	if s.shareKey == "" || s.private {
		return cn.loadMeta(s.untracked)
	}
	// Stores of one ShareKey start with the same schema, and the metadata
	// depends on nothing else but the untracked tables.
	key := s.shareKey + "\x00" + strings.Join(slices.Sorted(maps.Keys(s.untracked)), "\x00")
	v, err := schemaVersion(cn.c)
	if err != nil {
		return err
	}
	if m := s.pool.sharedMeta(key); m != nil && v == s.baseCookie {
		cn.meta, cn.metaVersion, cn.metaDirty = m, v, false
		return nil
	}
	if err := cn.loadMeta(s.untracked); err != nil {
		return err
	}
	if cn.metaVersion == s.baseCookie {
		s.pool.shareMeta(key, cn.meta)
	}
	return nil
}

// onPreUpdate records one row event. It runs inside SQLite, so it copies what
// it needs and runs no SQL.
func (s *Store) onPreUpdate(cn *conn, d sqlite3.PreUpdateData) {
	n := len(s.captures)
	if n == 0 || d.Schema != "main" || hasPrefixFold(d.Table, "sqlite_") {
		return
	}
	c := s.captures[n-1]
	defer func() {
		if r := recover(); r != nil {
			// The event is lost to every capture: the inner one fails,
			// and the outer ones read their rows back rather than trust
			// the images they kept.
			s.undo++
			if c.err == nil {
				c.err = fmt.Errorf("sqlitestore: change capture lost an event on %s: %v", d.Table, r)
			}
		}
	}()
	m := cn.meta[d.Table]
	// Metadata due for a reload still holds for a table whose columns
	// nothing changed since it was loaded.
	known := !cn.metaDirty || cn.metaHolds(d.Table)
	if known && m != nil && m.skip {
		return
	}
	if !known || m == nil || d.Count() != m.cols {
		if known {
			// A table created or altered out of sight: trust no table's
			// metadata until it is reloaded.
			cn.layout.noteAll()
		}
		// Key the event once the metadata is reloaded.
		cn.metaDirty = true
		c.raw = append(c.raw, newRawEvent(d, cn.layout))
		s.undo++ // outer captures' rows may change out of their sight
		return
	}
	ev := m.event(d.Op, columnReader(d.Old), columnReader(d.New), d.OldRowID, d.NewRowID)
	c.record(m, ev)
	for _, outer := range s.captures[:n-1] {
		outer.follow(m, ev)
	}
}

// checkRenames fails c when a table it holds rows of, as the metadata of
// their first touch names it, was renamed by the time meta was loaded
// (old is the metadata meta replaces, nil when there was none). Changes
// are reported by table name, and a row of a renamed table would be
// reported as deleted from its old name, with its later changes under the
// new name lost or reported against another row.
func (c *Capture) checkRenames(old, meta map[string]*tableMeta) {
	if c.err != nil || len(c.order) == 0 {
		return
	}
	checked := make(map[*tableMeta]bool)
	for _, t := range c.order {
		if checked[t.meta] {
			continue
		}
		checked[t.meta] = true
		if to := t.meta.renamedTo(old, meta); to != "" {
			c.err = fmt.Errorf("sqlitestore: change capture cannot report the rows of table %s: it was renamed to %s while the capture ran", t.meta.name, to)
			return
		}
	}
}

// renamedTo returns the name under which meta holds the table m describes
// when the table has another name there, and "" otherwise: the table of
// m's name in meta has m's root page, or no table has it (the table was
// dropped). A root page that another name holds was the table's own,
// renamed, unless old, the metadata meta replaces, had no table there: a
// dropped table's page reused by a table created since.
func (m *tableMeta) renamedTo(old, meta map[string]*tableMeta) string {
	if m.root == 0 {
		return ""
	}
	if n := meta[m.name]; n != nil && n.root == m.root {
		return ""
	}
	var to string
	for _, n := range meta {
		if n.root == m.root && n.name != m.name {
			to = n.name
			break
		}
	}
	if to == "" || old == nil {
		return to
	}
	for _, o := range old {
		if o.root == m.root {
			return to
		}
	}
	return ""
}

// event is one row event, keyed once for every capture it concerns.
type event struct {
	oldKey []any         // the row's key before the event; nil for an insert
	oldCol func(int) any // reads the row before the event, for a first touch
	newKey []any         // the row's key after the event; nil for a delete
	newImg []any         // the row after the event, by names; nil for a delete
}

// event keys a row event of op on m.
func (m *tableMeta) event(op sqlite3.AuthorizerActionCode, oldCol, newCol func(int) any, oldRowID, newRowID int64) event {
	ev := event{oldCol: oldCol}
	if op != sqlite3.AUTH_INSERT {
		ev.oldKey = m.keyOf(oldCol, oldRowID)
	}
	if op != sqlite3.AUTH_DELETE {
		ev.newImg = m.image(newCol)
		ev.newKey = m.keyIn(ev.newImg, newRowID)
	}
	return ev
}

// follow keeps the images of the rows c touched current while an inner
// capture receives the events.
func (c *Capture) follow(m *tableMeta, ev event) {
	if len(c.order) == 0 {
		return
	}
	if ev.oldKey != nil {
		if t := c.find(m, ev.oldKey); t != nil {
			t.last = nil
		}
	}
	if ev.newKey != nil {
		if t := c.find(m, ev.newKey); t != nil {
			t.last = ev.newImg
		}
	}
}

// record notes one event: it keeps the first before-image per key and the
// image after the event. An update that changes the key is the old row
// gone and a new row appearing.
func (c *Capture) record(m *tableMeta, ev event) {
	if m.keyProblem != nil {
		if c.err == nil {
			c.err = fmt.Errorf("sqlitestore: change capture cannot key the rows of %w", m.keyProblem)
		}
		return
	}
	if ev.oldKey != nil {
		c.touch(m, ev.oldKey, ev.oldCol).last = nil
	}
	if ev.newKey != nil {
		c.touch(m, ev.newKey, nil).last = ev.newImg
	}
}

// find returns the touched row of m at key, or nil; it leaves the row's
// encoded identity in c.buf.
func (c *Capture) find(m *tableMeta, key []any) *touched {
	c.buf = append(append(c.buf[:0], m.name...), 0)
	c.buf = appendKey(c.buf, key)
	return c.keys[string(c.buf)]
}

// touch notes key and returns its row; on its first touch, row (nil: the row
// did not exist) gives its before-image.
func (c *Capture) touch(m *tableMeta, key []any, row func(int) any) *touched {
	if t := c.find(m, key); t != nil {
		return t
	}
	t := &touched{meta: m, key: key, enc: string(c.buf)}
	if row != nil {
		t.before = m.image(row)
		t.last = t.before
	}
	c.order = append(c.order, t)
	if c.keys == nil {
		c.keys = make(map[string]*touched)
	}
	c.keys[t.enc] = t
	return t
}

// image returns a row's captured columns, by m.names, from col.
func (m *tableMeta) image(col func(int) any) []any {
	row := make([]any, len(m.names))
	for i, cid := range m.cids {
		row[i] = col(cid)
	}
	return row
}

// columnReader reads a column of a preupdate row by d.Old or d.New: a copy
// of its value, or nil when it cannot be read.
func columnReader(read func(int) (sqlite3.Value, error)) func(int) any {
	return func(i int) any {
		v, err := read(i)
		if err != nil {
			return nil
		}
		return copyValue(v)
	}
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
		col := func(row []any) func(int) any {
			return func(i int) any {
				if i < len(row) {
					return row[i]
				}
				return nil
			}
		}
		c.record(m, m.event(ev.op, col(ev.old), col(ev.new), ev.oldRowID, ev.newRowID))
	}
	c.raw = nil
}

// readCurrent builds c's net changes from the touched rows' current images.
// Several rows are read in one read transaction.
func (cn *conn) readCurrent(c *Capture) (out []RowChange, err error) {
	if len(c.order) > 1 && cn.c.GetAutocommit() {
		if _, err := cn.exec("BEGIN", nil); err != nil {
			return nil, err
		}
		defer func() {
			// End the read transaction even when ctx interrupted the reads.
			old := cn.c.SetInterrupt(context.Background())
			defer cn.c.SetInterrupt(old)
			if _, cerr := cn.exec("COMMIT", nil); err == nil {
				err = cerr
			}
		}()
	}
	return c.collect(cn.readRow)
}

// collect builds the net changes from the first before-images and the
// current images read returns. It stops at the first read error.
func (c *Capture) collect(read func(*touched) ([]any, []string, error)) ([]RowChange, error) {
	var out []RowChange
	for _, t := range c.order {
		after, afterNames, err := read(t)
		if err != nil {
			return nil, err
		}
		if t.before == nil && after == nil {
			continue
		}
		ch := RowChange{Table: t.meta.name, KeyNames: t.meta.keyNames(), KeyValues: t.key, Names: t.meta.names, Before: t.before, After: after}
		if afterNames != nil {
			// Columns added, dropped or rolled back during the capture:
			// compare the rows in the table's current shape.
			ch.Names = afterNames
			if t.before != nil {
				ch.Before = reshape(t.meta.names, t.before, afterNames)
			}
		}
		switch {
		case ch.Before == nil:
			ch.Op = OpInsert
		case ch.After == nil:
			ch.Op = OpDelete
		case slices.EqualFunc(ch.Before, ch.After, valueEqual):
			continue
		default:
			ch.Op = OpUpdate
		}
		out = append(out, ch)
	}
	slices.SortStableFunc(out, func(a, b RowChange) int {
		return cmp.Or(strings.Compare(a.Table, b.Table), CompareKeys(a.KeyValues, b.KeyValues))
	})
	return out, nil
}

// readRow reads the current row at t's key and the table's current column
// names. The row is nil when there is none; the names are nil when the
// table is gone.
func (cn *conn) readRow(t *touched) ([]any, []string, error) {
	m := cn.meta[t.meta.name]
	if m == nil || m.skip || m.selectSQL == "" || len(m.pk) != len(t.meta.pk) {
		return nil, nil, nil
	}
	st, err := cn.prepare(m.selectSQL)
	if err != nil {
		return nil, nil, err
	}
	defer st.Reset()
	if err := bindArgs(st, t.key); err != nil {
		return nil, nil, err
	}
	if !st.Step() {
		return nil, m.names, st.Err()
	}
	return readRow(st, len(m.names)), m.names, nil
}

// tableMeta is what change capture knows about one table of the main schema.
type tableMeta struct {
	name      string
	root      int64    // the root page of the table's b-tree, which a rename keeps; 0 when it has none
	skip      bool     // not captured: untracked, shadow, virtual, view
	cols      int      // all columns, as the preupdate hook counts them
	cids      []int    // indexes of captured columns (all but VIRTUAL generated)
	names     []string // names of captured columns
	pk        []int    // column indexes of the primary key, in key order; nil: keyed by rowid
	pkNames   []string
	pkPos     []int  // positions of the primary-key columns in names
	selectSQL string // reads one row by key

	keyProblem *KeyProblem // non-nil: rows cannot be keyed exactly, and a capture touching one fails
}

func (m *tableMeta) keyOf(col func(int) any, rowid int64) []any {
	if len(m.pk) == 0 {
		return []any{rowid}
	}
	key := make([]any, len(m.pk))
	for i, cid := range m.pk {
		key[i] = col(cid)
	}
	return key
}

// keyIn returns the key of a row image (by names), sharing its values.
func (m *tableMeta) keyIn(img []any, rowid int64) []any {
	if len(m.pk) == 0 {
		return []any{rowid}
	}
	key := make([]any, len(m.pkPos))
	for i, p := range m.pkPos {
		key[i] = img[p]
	}
	return key
}

// keyNames names the key's columns; ["rowid"] with no declared primary key.
func (m *tableMeta) keyNames() []string {
	if len(m.pk) == 0 {
		return rowidKey
	}
	return m.pkNames
}

// tablesSQL lists the main schema's tables, views and virtual tables, with
// the root page of each table's b-tree (0 when it has none).
const tablesSQL = `SELECT l.name, l.type, coalesce(s.rootpage, 0)
FROM pragma_table_list AS l LEFT JOIN main.sqlite_schema AS s ON s.type = 'table' AND s.name = l.name
WHERE l.schema = 'main'`

// columnsSQL lists the columns of the main schema's ordinary tables, with
// what tells whether their rows can be keyed exactly (see tableKey): the
// table's STRICT and WITHOUT ROWID flags, each column's declared type and
// NOT NULL constraint, and the collation its primary-key index compares it
// with (NULL for a rowid alias, which has no index).
const columnsSQL = `SELECT l.name, x.cid, x.name, x.pk, x.hidden, l.strict, l.wr, x.type, x."notnull",
  (SELECT ix.coll FROM pragma_index_list(l.name, 'main') AS i
     JOIN pragma_index_xinfo(i.name, 'main') AS ix
   WHERE i.origin = 'pk' AND ix.key AND ix.cid = x.cid)
FROM pragma_table_list AS l JOIN pragma_table_xinfo(l.name, 'main') AS x
WHERE l.schema = 'main' AND l.type = 'table'
ORDER BY l.name, x.cid`

// loadMeta (re)loads the metadata of every table of the main schema.
func (cn *conn) loadMeta(untracked map[string]bool) error {
	version, err := schemaVersion(cn.c)
	if err != nil {
		return err
	}
	tables, err := cn.query(tablesSQL, nil)
	if err != nil {
		return err
	}
	meta := make(map[string]*tableMeta, len(tables.Values))
	for _, r := range tables.Values {
		name, typ, root := r[0].(string), r[1].(string), r[2].(int64)
		meta[name] = &tableMeta{
			name: name,
			root: root,
			skip: typ != "table" || untracked[strings.ToLower(name)] || hasPrefixFold(name, "sqlite_"),
		}
	}
	cols, err := cn.query(columnsSQL, nil)
	if err != nil {
		return err
	}
	keys := make(map[string]*tableKey)
	for _, r := range cols.Values {
		name, cid, col, pk, hidden := r[0].(string), int(r[1].(int64)), r[2].(string), r[3].(int64), r[4].(int64)
		m := meta[name]
		if m == nil {
			continue
		}
		k := keys[name]
		if k == nil {
			k = &tableKey{strict: r[5].(int64) != 0, withoutRowid: r[6].(int64) != 0}
			keys[name] = k
		}
		k.names = append(k.names, col)
		m.cols = max(m.cols, cid+1)
		if hidden == 2 { // VIRTUAL generated: not readable in the hook, not stored
			continue
		}
		m.cids = append(m.cids, cid)
		m.names = append(m.names, col)
		if pk > 0 {
			coll, _ := r[9].(string)
			k.key = append(k.key, keyCol{pos: int(pk), cid: cid, name: col, typ: r[7].(string), coll: coll, notNull: r[8].(int64) != 0})
		}
	}
	for name, m := range meta {
		if m.skip {
			continue
		}
		k := keys[name]
		slices.SortFunc(k.key, func(a, b keyCol) int { return cmp.Compare(a.pos, b.pos) })
		for _, c := range k.key {
			m.pk = append(m.pk, c.cid)
			m.pkPos = append(m.pkPos, slices.Index(m.cids, c.cid))
			m.pkNames = append(m.pkNames, c.name)
		}
		m.selectSQL = m.buildSelect()
		m.keyProblem = k.problem(name)
	}
	cn.meta = meta
	cn.metaVersion = version
	cn.metaDirty = false
	return nil
}

// schemaVersion reads the schema cookie, which changes with every schema
// change written to the file.
func schemaVersion(c *sqlite3.Conn) (int64, error) {
	return pragma(c, "PRAGMA main.schema_version", (*sqlite3.Stmt).ColumnInt64)
}

// buildSelect returns the statement reading one row by key, or "" when the
// table's rowid has no free name (every alias is a column).
func (m *tableMeta) buildSelect() string {
	where := make([]string, len(m.pkNames))
	for i, n := range m.pkNames {
		where[i] = fmt.Sprintf("%s IS ?%d", quoteIdent(n), i+1)
	}
	if len(m.pk) == 0 {
		rowid := rowidName(m.names)
		if rowid == "" {
			return ""
		}
		where = []string{rowid + " = ?1"}
	}
	cols := make([]string, len(m.names))
	for i, n := range m.names {
		cols[i] = quoteIdent(n)
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM main." + quoteIdent(m.name) + " WHERE " + strings.Join(where, " AND ")
}

// rowMap returns row as column name -> value, by names; when two names are
// the same, the later one wins.
func rowMap(names []string, row []any) map[string]any {
	m := make(map[string]any, len(names))
	for i, n := range names {
		m[n] = row[i]
	}
	return m
}

// reshape returns row, by names, in the shape to: by the columns to, a
// column of to missing from names NULL. Names match exactly (as map keys
// would). It returns row itself when the shapes are the same.
func reshape(names []string, row []any, to []string) []any {
	if slices.Equal(names, to) {
		return row
	}
	out := make([]any, len(to))
	for i, n := range to {
		if k := slices.Index(names, n); k >= 0 {
			out[i] = row[k]
		}
	}
	return out
}

func valueEqual(a, b any) bool {
	if ab, ok := a.([]byte); ok {
		bb, ok := b.([]byte)
		return ok && bytes.Equal(ab, bb)
	}
	return a == b // false for values of different types, a []byte b among them
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
