package sqlitestore

import (
	"cmp"
	"context"
	"fmt"
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

// Capture records the rows changed in a store between StartCapture and
// Finish. Captures nest: the innermost running capture receives the changes.
// A Capture belongs to its store's goroutine.
//
// A table renamed while a capture runs (ALTER TABLE ... RENAME TO) after
// the capture touched rows of it would have the rows reported as deleted
// from the old name, and their later changes lost; a column renamed
// (ALTER TABLE ... RENAME COLUMN) would read as NULL before, or, for a key
// column, every such row as deleted, as images are matched to the table's
// columns by name. So while a capture holds rows of a table, an ALTER
// TABLE renaming it, or any of its columns, fails as it is prepared, and
// changes nothing: through Exec, Query and ExecScript with an error naming
// the table, on the raw connection (Store.Conn) with SQLite's "not
// authorized". A rename outside a frame would commit as it ran, with no
// change describing it. One that runs all the same (a rollback undoing a
// rename, or a statement prepared on the raw connection before the
// capture touched the rows and stepped after) makes Finish fail with an
// error naming the table and its new name, or the column and its new name.
// A table the raw connection created while the capture ran, whose rows
// Finish reads by the table's name, counts as one whose rows it holds.
// When a DROP COLUMN of the table may have run along with the rename (a
// rollback undoing both, say), the columns' places no longer tell which
// column took which name, and a column gone that the rows were touched
// with fails Finish as renamed or dropped. Rows first touched under a new
// name are reported under it as usual. A capture started by
// StartCaptureAfter has a rename of a table whose rows the captures before
// it reported refused, or failing it, the same way.
//
// A column dropped on the raw connection (Store.Conn), which a rollback
// then brought back, fails Finish when the capture first touched rows of
// its table after the drop: their values in it came back unseen (through
// Exec and ExecScript, the store reads them before the drop). As a column
// added again under the dropped one's name hides that it came back, a
// rollback after such a first touch fails Finish whenever a DROP COLUMN of
// the table was prepared on the raw connection in the transaction the
// rollback ends, or before it began and not run by then. One that ran in a
// transaction committed before that began, as a RENAME COLUMN that did, is
// no rollback's to undo, and fails no capture started after it. A column
// dropped through Exec and added again is told from the one a rollback
// brings back, unless the raw connection changed the schema after a
// rollback, before the store saw where the rollback went: a row first
// touched between the drop and the rollback then fails Finish.
type Capture struct {
	s     *Store
	done  bool                // guarded by s.mu, as are the fields below
	keys  map[string]*touched // by enc
	order []*touched          // in first-touch order
	raw   []rawEvent          // events recorded while table metadata was stale
	buf   []byte              // key-encoding scratch
	err   error               // first failure inside the hook

	undoAt uint64 // Store.undo at StartCapture
	// tables holds the main schema's tables when the raw connection was
	// first exposed while the capture ran, under their names now; nil
	// while it was not. A row of another table did not exist when the
	// capture started. rawCreates holds, by foldASCII, the tables the raw
	// connection prepared a CREATE TABLE for since, and dropped those of
	// tables that a nested capture saw dropped through Exec (see
	// Store.rawCreatedLocked).
	tables, rawCreates, dropped map[string]bool
	// drops holds, in order, what the DROP COLUMNs of the store's API
	// that ran while c ran erased, and vanished, by table, the columns a
	// DROP COLUMN on the raw connection dropped while it ran (see
	// capture_ddl.go).
	drops    []*colDrop
	vanished map[string][]string
	// after holds the tables the captures c follows reported rows of, as
	// the metadata knew them when c started (see StartCaptureAfter).
	after []*tableMeta
}

// touched is a row a capture saw, with its first before-image.
type touched struct {
	meta   *tableMeta // the table's metadata at the first touch
	key    []any      // primary-key values, or the rowid
	enc    string     // the table's ident and the encoded key: the row's identity
	before []any      // by meta.names; nil when the row did not exist
	gone   *goneCols  // columns dropped before the first touch, with the row's values; nil when none were, on the raw connection neither

	last []any // by meta.names: the row's image after its last event; nil once deleted
}

// StartCapture starts a change capture. Captures nest; the innermost receives
// the hook's events. End it with Finish.
func (s *Store) StartCapture() *Capture { return s.StartCaptureAfter(nil) }

// StartCaptureAfter starts a change capture, as StartCapture does, that
// follows captures of the store which reported rows of the tables named
// reported, into one log: while it runs, a rename of one of those tables
// is refused, or fails it, as one of a table whose rows it holds is (see
// Capture); a rename of their columns is not. Changes name their table as
// it is called when their capture finishes, so the log would describe a
// row of the table under its old name, then under its new one, as two
// tables, and a log sorted by table would put the later change first.
//
// The reported tables are looked up in the store's table metadata as the
// capture starts: StartCaptureAfter loads it when it may not describe the
// schema (nothing loaded it yet, or the schema changed since), opening
// the store's connection if it was released. When that fails, so does
// Finish.
func (s *Store) StartCaptureAfter(reported []string) *Capture {
	s.mu.Lock()
	settle := false
	defer func() {
		s.mu.Unlock()
		if settle {
			s.pool.settle()
		}
	}()
	if s.closed {
		return &Capture{s: s, done: true}
	}
	var err error
	if len(reported) > 0 && (s.cn == nil || s.cn.metaDirty || s.cn.exposed) {
		err = s.doLocked(context.Background(), true, func(cn *conn) error { return s.reloadStaleLocked(cn, nil) })
		settle = s.pool != nil
	}
	c := &Capture{s: s, undoAt: s.undo, err: err}
	if err == nil {
		for _, name := range reported {
			if m := s.cn.meta[name]; m != nil && !slices.Contains(c.after, m) {
				c.after = append(c.after, m)
			}
		}
	}
	if c.err == nil && s.cn != nil && s.cn.exposed {
		c.err = s.trackTablesLocked(s.cn, c)
	}
	s.captures = append(s.captures, c)
	if s.cn != nil && len(s.captures) == 1 {
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
		if len(s.captures) == 0 && s.cn != nil {
			s.cn.c.PreUpdateHook(nil)
		}
		if inner {
			return ErrCaptureOrder
		}
		if c.err != nil {
			return c.err
		}
		if len(c.order) == 0 && len(c.raw) == 0 && len(c.rawCreates) == 0 &&
			(len(c.after) == 0 || s.cn == nil || !s.cn.metaDirty && !s.cn.exposed) {
			// Nothing to report, and no table c follows may have been
			// renamed out of sight: the reload below would tell.
			return nil
		}
		if c.eventsComplete() {
			out, _ = c.collect(func(t *touched) ([]any, []string, error) { return t.last, t.meta.names, nil })
			if verifyEvents {
				return s.doLocked(context.Background(), true, func(cn *conn) error {
					read, err := cn.readCurrent(c)
					// Compared as maps: as Finish's callers see them.
					if events, read := changes(out), changes(read); !sameChanges(events, read) {
						panic(fmt.Sprintf("sqlitestore: changes from events %v differ from the rows read back %v", events, read))
					}
					return err
				})
			}
			return nil
		}
		return s.doLocked(ctx, true, func(cn *conn) error {
			err := s.reloadStaleLocked(cn, c)
			if err != nil {
				return err
			}
			c.replay(cn)
			if c.err != nil {
				return c.err
			}
			if err := s.rawCreatedLocked(cn, c); err != nil {
				return err
			}
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
	return c.undoAt == s.undo && len(c.raw) == 0 && len(c.rawCreates) == 0 && (s.cn == nil || !s.cn.metaDirty && !s.cn.exposed)
}

// installHookLocked routes the connection's preupdate events to the
// captures. The store's connection has the hook exactly while a capture
// runs: the first capture installs it, the last to finish removes it, and
// connLocked installs it on a connection opened or rebound meanwhile.
func (s *Store) installHookLocked(cn *conn) {
	cn.c.PreUpdateHook(func(d sqlite3.PreUpdateData) { s.onPreUpdate(cn, d) })
}

// onPreUpdate records one row event. It runs inside SQLite, so it copies what
// it needs and runs no SQL.
func (s *Store) onPreUpdate(cn *conn, d sqlite3.PreUpdateData) {
	n := len(s.captures)
	if n == 0 || d.Schema != "main" || hasPrefixFold(d.Table, "sqlite_") || d.Table == cn.erasing {
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
	s.recordLocked(m, m.event(d.Op, columnReader(d.Old), columnReader(d.New), d.OldRowID, d.NewRowID))
}

// recordLocked hands one row event to the innermost capture, and keeps the
// outer ones' images current.
func (s *Store) recordLocked(m *tableMeta, ev event) {
	n := len(s.captures)
	s.captures[n-1].record(m, ev)
	for _, outer := range s.captures[:n-1] {
		outer.follow(m, ev)
	}
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
		before := ev.oldCol
		if c.tables != nil && !c.tables[m.name] {
			before = nil // a row of a table created since: its rows are read when c finishes
		}
		c.touch(m, ev.oldKey, before).last = nil
	}
	if ev.newKey != nil {
		c.touch(m, ev.newKey, nil).last = ev.newImg
	}
}

// find returns the touched row of m at key, or nil; it leaves the row's
// encoded identity in c.buf.
func (c *Capture) find(m *tableMeta, key []any) *touched {
	c.buf = appendKey(append(c.buf[:0], m.ident...), key)
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
		if len(c.drops) > 0 {
			t.gone = c.goneCols(m, t.enc)
		}
		if cn := c.s.cn; cn != nil && cn.layout.columnDrops.raw[foldASCII(m.name)] {
			if t.gone == nil {
				t.gone = &goneCols{}
			}
			t.gone.rawAt, t.gone.rawRollbacks = cn.layout.seq, cn.rollbacks
		}
	}
	c.order = append(c.order, t)
	if c.keys == nil {
		c.keys = make(map[string]*touched)
	}
	c.keys[t.enc] = t
	return t
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
			_, cerr := cn.exec("COMMIT", nil)
			err = cmp.Or(err, cerr)
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
		ch := RowChange{Table: t.meta.name, KeyNames: t.meta.keyNames, KeyValues: t.key, Names: t.meta.names, Before: t.before, After: after}
		if afterNames != nil {
			// Columns added, dropped or rolled back during the capture:
			// compare the rows in the table's current shape.
			ch.Names = afterNames
			if t.before != nil {
				if col := c.lostColumn(t, afterNames); col != "" {
					return nil, fmt.Errorf("sqlitestore: change capture cannot report the rows of table %s: a DROP COLUMN on the raw connection erased its column %s unseen, and a rollback brought it back; drop columns through Exec or ExecScript", t.meta.name, col)
				}
				if c.rawDropRolledBack(t) {
					return nil, fmt.Errorf("sqlitestore: change capture cannot report the rows of table %s: a DROP COLUMN on the raw connection erased a column of it unseen before the capture first touched them, and a rollback may have brought it back; drop columns through Exec or ExecScript", t.meta.name)
				}
				if col := t.unsureColumn(afterNames); col != "" {
					return nil, fmt.Errorf("sqlitestore: change capture cannot report the rows of table %s: its column %s was dropped and added again, and the raw connection changed the schema after a rollback, so which of the two the row holds cannot be told", t.meta.name, col)
				}
				ch.Before = t.beforeIn(afterNames)
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
// names. The row is nil when there is none, a row whose key SQLite finds
// equal to t's while it differs in type included; the names are nil when
// the table is gone.
func (cn *conn) readRow(t *touched) ([]any, []string, error) {
	m := cn.meta[t.meta.name]
	if m == nil || m.skip || m.selectSQL == "" || m.ident != t.meta.ident {
		// Gone, or created again with another key: the row is gone.
		return nil, nil, nil
	}
	st, info, err := cn.prepare(m.selectSQL)
	if err != nil {
		return nil, nil, err
	}
	defer st.Reset()
	if err := bindArgs(st, info.params, t.key); err != nil {
		return nil, nil, err
	}
	if !st.Step() {
		return nil, m.names, st.Err()
	}
	row := readRow(st, len(m.names))
	if len(m.pk) > 0 && !slices.EqualFunc(m.keyIn(row, 0), t.key, valueEqual) {
		// A key SQLite finds equal to t's, of another type: the integer
		// -2^63 and the real -2^63.0, which a column of INTEGER or NUMERIC
		// affinity keeps apart as written. The row at t's key is gone, and
		// this one has a key of its own.
		return nil, m.names, nil
	}
	return row, m.names, nil
}
