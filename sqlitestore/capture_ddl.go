package sqlitestore

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Rows that move with no preupdate event.
//
// A DROP TABLE erases its table's rows, and a CREATE TABLE ... AS SELECT
// fills its new table, without a preupdate event for any row. While a
// capture runs, the store reads those rows itself: before a DROP TABLE
// runs, every row of the table is noted as touched, with its image as
// its before-image, so the capture reports it deleted (or, when the
// drop is rolled back, unchanged); after a CREATE TABLE created a table,
// every row of it is noted as inserted.
//
// An ALTER TABLE ... DROP COLUMN erases the column's values with no
// preupdate event, and a rollback undoing it brings them back: a row first
// touched after the drop would then read, before, as NULL in the column.
// While a capture runs, the store reads the table's rows before the drop
// runs, and keeps the dropped columns' values for the captures running
// then (Capture.drops): a row one of them first touches after the drop
// takes its values there into its before-image (touched.gone). Images are
// reported in the columns the table has when the capture finishes, so the
// values show only when a rollback brought their column back. A column
// added again under a dropped one's name is told from the dropped one
// by the schema cookie: SQLite counts it up with each schema change and a
// rollback sets it back, so the metadata loaded after a rollback that
// undid the drop reads a cookie no greater than the one before the drop
// (colDrop.undone).
//
// Statements on the raw connection (Store.Conn) run out of the store's
// sight. A DROP TABLE prepared there fails the running captures
// (rawDropLocked). For a CREATE TABLE, each capture running while the
// connection is exposed knows the tables there were when it began to see
// it (Capture.tables); when it finishes, every row of a table the raw
// connection prepared a CREATE TABLE for, that it did not know, is
// inserted (rawCreatedLocked). A column a DROP COLUMN there dropped is seen
// gone when the metadata is next reloaded (Capture.noteVanished): a row
// first touched after that, when a rollback brought the column back, fails
// the capture as it finishes (Capture.lostColumn). A column dropped there
// and added again under its name looks, to the metadata, as if it had
// stayed: a row first touched after a DROP COLUMN of its table was
// prepared there fails the capture when a rollback follows
// (Capture.rawDropRolledBack).

// colDrop is what a DROP COLUMN of the store's API erased: read before it
// ran, every row of the table, then, once it ran, the values of the columns
// it dropped.
type colDrop struct {
	meta   *tableMeta       // the table's metadata before the drop
	names  []string         // the columns dropped
	rows   map[string][]any // by row identity (touched.enc): the row's values, by names once the drop ran
	cookie int64            // the schema cookie before the drop ran
	// undone says metadata loaded since read a cookie no greater than
	// cookie: a rollback undid the drop. unsure says one may have,
	// unseen: the raw connection changed the schema after a rollback,
	// before the metadata was loaded again.
	undone, unsure bool
}

// goneCols are columns DROP COLUMNs of the store's API dropped before a
// capture first touched a row, and the row's values in them then, by drop
// (a name may come once per drop).
type goneCols struct {
	names []string
	vals  []any
	drops []*colDrop // by names: the drop that read the value
	// rawAt is the layout log's seq at the first touch when a DROP
	// COLUMN of the table was prepared on the raw connection before (see
	// Capture.rawDropRolledBack), 0 when none was; rawRollbacks is the
	// connection's count of transactions rolled back then.
	rawAt, rawRollbacks uint64
}

// dropRowsLocked notes, for the running captures, the rows of the table a
// DROP TABLE about to run erases, reads those of the table a DROP COLUMN
// about to run alters (keepDroppedLocked keeps their values once it ran),
// and reports whether the table a CREATE TABLE names exists already
// (createdRowsLocked needs to know).
//
// With foreign keys on, a DROP TABLE of a parent table deletes its rows
// first, one by one, and fails when that violates a child's immediate
// constraint. The preupdate hook leaves those events out (cn.erasing): the
// rows are noted already, and the statement ends with the table gone or
// undone, which the captures then read back. Keyed as they come, while
// the DROP's own prepare has the table's metadata due for a reload, a
// failed DROP would fail the captures as if the table's columns had
// changed.
func (s *Store) dropRowsLocked(cn *conn, info stmtInfo) (existed bool, err error) {
	cn.erasing, cn.colDrop = "", nil
	if len(s.captures) == 0 || info.drop == "" && info.create == "" && !info.dropColumn {
		return false, nil
	}
	if info.create != "" {
		name, err := cn.tableName(info.create)
		return name != "", err
	}
	if info.dropColumn {
		return false, s.readColumnsLocked(cn, info.alter)
	}
	name, err := cn.tableName(info.drop)
	if name == "" || err != nil {
		return false, err
	}
	if err := s.stmtMetaLocked(cn); err != nil {
		return false, err
	}
	err = cn.tableRows(name, func(m *tableMeta, key, img []any) {
		s.recordLocked(m, event{oldKey: key, oldCol: func(cid int) any { return img[slices.Index(m.cids, cid)] }})
	})
	if err == nil {
		cn.erasing = name
	}
	// The innermost capture has noted every row: to it, a table of the
	// name created again is new. The outer ones have not.
	for i, c := range s.captures {
		if i == len(s.captures)-1 {
			delete(c.tables, name)
		} else if c.tables != nil {
			c.dropped = setAdd(c.dropped, name)
		}
	}
	return false, err
}

// stmtMetaLocked has the metadata describe the schema the statement about
// to run runs against, though the statement's own prepare has marked it
// due for a reload.
func (s *Store) stmtMetaLocked(cn *conn) error {
	v, err := schemaVersion(cn.c)
	if err != nil || v == cn.metaVersion {
		return err
	}
	if err := s.loadMetaLocked(cn, nil); err != nil {
		return err
	}
	cn.metaDirty = true
	return nil
}

// readColumnsLocked reads every row of the table an ALTER TABLE ... DROP
// COLUMN about to run alters, whole, by the row's identity (the statement
// does not tell which column it drops). A table whose rows cannot be keyed
// is not read: a capture touching one fails anyway.
func (s *Store) readColumnsLocked(cn *conn, table string) error {
	name, err := cn.tableName(table)
	if name == "" || err != nil {
		return err
	}
	if err := s.stmtMetaLocked(cn); err != nil {
		return err
	}
	m := cn.meta[name]
	if m == nil || m.skip || m.keyProblem != nil {
		return nil
	}
	d := &colDrop{meta: m, rows: make(map[string][]any), cookie: cn.metaVersion}
	var enc []byte
	err = cn.tableRows(name, func(m *tableMeta, key, img []any) {
		enc = appendKey(append(enc[:0], m.ident...), key)
		d.rows[string(enc)] = img
	})
	if err == nil {
		cn.colDrop = d
	}
	return err
}

// keepDroppedLocked hands the running captures the values of the columns
// the DROP COLUMN that just ran dropped, from the rows readColumnsLocked
// read before it ran. The metadata is current (afterLocked has reloaded
// it).
func (s *Store) keepDroppedLocked(cn *conn) {
	d := cn.colDrop
	cn.colDrop = nil
	if d == nil || len(s.captures) == 0 {
		return
	}
	m := cn.meta[d.meta.name]
	if m == nil || m.ident != d.meta.ident {
		return // the rows are keyed otherwise now (a column named rowid was dropped)
	}
	var at []int
	for i, n := range d.meta.names {
		if !slices.Contains(m.names, n) {
			at = append(at, i)
			d.names = append(d.names, n)
		}
	}
	if len(at) == 0 {
		return
	}
	for enc, img := range d.rows {
		vals := make([]any, len(at))
		for i, k := range at {
			vals[i] = img[k]
		}
		d.rows[enc] = vals
	}
	for _, c := range s.captures {
		c.drops = append(c.drops, d)
	}
}

// goneCols returns the columns DROP COLUMNs of the store's API dropped
// while c ran, that the row of m at enc lost before c first touched it,
// and the row's values in them; nil when there are none. A drop a
// rollback undid already is not among them: the row has its columns
// back. A column m has was added again under a dropped one's name.
func (c *Capture) goneCols(m *tableMeta, enc string) *goneCols {
	var g *goneCols
	for _, d := range c.drops {
		vals, ok := d.rows[enc]
		if !ok || d.undone {
			continue
		}
		if g == nil {
			g = &goneCols{}
		}
		for i, n := range d.names {
			g.names = append(g.names, n)
			g.vals = append(g.vals, vals[i])
			g.drops = append(g.drops, d)
		}
	}
	return g
}

// noteUndone marks the drops c holds that a rollback undid, as metadata
// loaded at cookie tells (see colDrop); unsure says the raw connection
// changed the schema after a rollback since the last load.
func (c *Capture) noteUndone(cookie int64, unsure bool) {
	for _, d := range c.drops {
		if cookie <= d.cookie {
			d.undone = true
		} else if unsure {
			d.unsure = true
		}
	}
}

// rawDropRolledBack reports whether t was first touched after a DROP
// COLUMN of its table was prepared on the raw connection, and a rollback
// was noted since: the rollback may have brought back a column, under
// the name of one the table has now or not, with values the capture
// never read.
func (c *Capture) rawDropRolledBack(t *touched) bool {
	g, cn := t.gone, c.s.cn
	return g != nil && g.rawAt > 0 && cn != nil && (cn.layout.rollback > g.rawAt || cn.rollbacks != g.rawRollbacks)
}

// unsureColumn returns a column of the shape to that t's before-image
// takes from a drop (t.gone) that a rollback may have undone unseen (see
// colDrop.unsure), and that t's first image has too: the rollback would
// bring back the dropped column, the capture cannot tell whether it did.
// It returns "" when there is none.
func (t *touched) unsureColumn(to []string) string {
	if t.gone == nil {
		return ""
	}
	for i, n := range t.gone.names {
		if d := t.gone.drops[i]; d.unsure && !d.undone && slices.Contains(to, n) && slices.Contains(t.meta.names, n) {
			return n
		}
	}
	return ""
}

// noteVanished notes, for c, each column of a table that old had and meta
// has not, when the table has fewer columns in meta: one a DROP COLUMN
// dropped out of the store's sight, on the raw connection (see
// lostColumn). The table the DROP COLUMN of the store's API running now
// alters (exec, nil when none does) is left out: its rows were read.
func (c *Capture) noteVanished(old, meta map[string]*tableMeta, exec *colDrop) {
	for name, o := range old {
		n := meta[name]
		if n == nil || o.skip || n.root != o.root || n.cols >= o.cols || exec != nil && exec.meta.name == name {
			continue
		}
		for _, col := range o.names {
			if !slices.Contains(n.names, col) && !slices.Contains(c.vanished[name], col) {
				if c.vanished == nil {
					c.vanished = make(map[string][]string)
				}
				c.vanished[name] = append(c.vanished[name], col)
			}
		}
	}
}

// lostColumn returns a column of the shape to that t's first image lacks
// and that a DROP COLUMN on the raw connection dropped while c ran (see
// noteVanished): a rollback brought the column back, with values the
// capture never read. It returns "" when there is none.
func (c *Capture) lostColumn(t *touched, to []string) string {
	for _, n := range c.vanished[t.meta.name] {
		if slices.Contains(to, n) && !slices.Contains(t.meta.names, n) && (t.gone == nil || !slices.Contains(t.gone.names, n)) {
			return n
		}
	}
	return ""
}

// rawDropLocked fails the running captures when a DROP TABLE of a captured
// table is prepared on the raw connection (Store.Conn): it erases the
// table's rows with no preupdate event, and only Exec and ExecScript read
// them first (dropRowsLocked). It runs in the authorizer, from the raw
// connection's user.
func (s *Store) rawDropLocked(table string) {
	cn := s.cn
	if len(s.captures) == 0 || cn == nil {
		return
	}
	var m *tableMeta // SQLite names tables case-insensitively
	for name, t := range cn.meta {
		if SameName(name, table) {
			m = t
		}
	}
	if m == nil || m.skip {
		return
	}
	for _, c := range s.captures {
		if c.err == nil {
			c.err = fmt.Errorf("sqlitestore: change capture cannot report the rows of table %s: a DROP TABLE on the raw connection erased them unseen; drop tables through Exec or ExecScript", m.name)
		}
	}
}

// createdRowsLocked notes, for the running captures, the rows of the table
// a CREATE TABLE that just ran created, unless it existed before. The
// metadata is current (afterLocked has reloaded it).
func (s *Store) createdRowsLocked(cn *conn, info stmtInfo, existed bool) error {
	if len(s.captures) == 0 || info.create == "" || existed {
		return nil
	}
	name, err := cn.tableName(info.create)
	if name == "" || err != nil {
		return err
	}
	return cn.tableRows(name, func(m *tableMeta, key, img []any) {
		s.recordLocked(m, event{newKey: key, newImg: img})
	})
}

// trackTablesLocked has c know the tables of the main schema now, once the
// raw connection is exposed while c runs (see rawCreatedLocked).
func (s *Store) trackTablesLocked(cn *conn, c *Capture) error {
	if c.tables != nil {
		return nil
	}
	if cn.metaDirty { // as it is until the first load
		if err := s.loadMetaLocked(cn, nil); err != nil {
			return err
		}
	}
	c.tables = make(map[string]bool, len(cn.meta))
	for name := range cn.meta {
		c.tables[name] = true
	}
	return nil
}

// rawCreateLocked notes, for the running captures, a CREATE TABLE prepared
// on the raw connection. It runs in the authorizer, from the raw
// connection's user (see rawDropLocked).
func (s *Store) rawCreateLocked(table string) {
	for _, c := range s.captures {
		c.rawCreates = setAdd(c.rawCreates, foldASCII(table))
	}
}

// setAdd adds name to set, made when nil, and returns it.
func setAdd(set map[string]bool, name string) map[string]bool {
	if set == nil {
		set = make(map[string]bool)
	}
	set[name] = true
	return set
}

// rawCreatedLocked notes as inserted, for c as it finishes, every row of
// each table the raw connection prepared a CREATE TABLE for that c did not
// know, and has the captures still running know those tables: their rows
// are c's. cn's metadata is current (Finish has reloaded it).
func (s *Store) rawCreatedLocked(cn *conn, c *Capture) error {
	if c.tables == nil || len(c.rawCreates) == 0 {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(cn.meta)) {
		if !c.rawCreates[foldASCII(name)] {
			continue
		}
		if c.dropped[name] {
			return fmt.Errorf("sqlitestore: change capture cannot report the rows of table %s: a nested capture dropped it, and the raw connection may have created it again; create tables through Exec or ExecScript", name)
		}
		if c.tables[name] {
			continue
		}
		err := cn.tableRows(name, func(m *tableMeta, key, img []any) {
			c.record(m, event{newKey: key, newImg: img})
		})
		if err != nil {
			return err
		}
		for _, outer := range s.captures {
			if outer.tables != nil {
				outer.tables[name] = true
				delete(outer.dropped, name)
			}
		}
	}
	return nil
}

// tableRows reads every row of the captured table name and hands each to
// fn with its key.
func (cn *conn) tableRows(name string, fn func(m *tableMeta, key, img []any)) error {
	m := cn.meta[name]
	if m == nil || m.skip || len(m.names) == 0 {
		return nil
	}
	cols := make([]string, len(m.names), len(m.names)+1)
	for i, n := range m.names {
		cols[i] = quoteIdent(n)
	}
	rowid := len(m.pk) == 0 && m.rowid != ""
	if rowid {
		cols = append(cols, m.rowid)
	}
	rows, err := cn.query("SELECT "+strings.Join(cols, ", ")+" FROM main."+quoteIdent(name), nil)
	if err != nil {
		return err
	}
	for _, r := range rows.Values {
		img := r[:len(m.names)]
		var id int64
		if rowid {
			id = r[len(m.names)].(int64)
		}
		fn(m, m.keyIn(img, id), img)
	}
	return nil
}

// tableName returns the name of the main schema's table that name, as a
// statement writes it, designates (SQLite folds the case of ASCII letters
// in names); "" when there is none.
func (cn *conn) tableName(name string) (string, error) {
	rows, err := cn.query("SELECT name FROM main.sqlite_schema WHERE type = 'table' AND name = ?1 COLLATE NOCASE", []any{name})
	if err != nil || len(rows.Values) == 0 {
		return "", err
	}
	return rows.Values[0][0].(string), nil
}

// beforeIn returns t's before-image in the shape to (see reshape), a
// column dropped before the first touch (t.gone) holding the row's value
// then: one in to was brought back by a rollback, or added again since.
// A rollback that undid drops brought back the columns the first of them
// dropped, or, for a name it did not drop, one a later one did, with the
// row's values when it ran; a column added again before the first touch
// that no rollback took away holds the row's value then.
func (t *touched) beforeIn(to []string) []any {
	g := t.gone
	if g == nil || len(g.names) == 0 {
		return reshape(t.meta.names, t.before, to)
	}
	names, vals := slices.Clone(t.meta.names), slices.Clone(t.before)
	var back []string // names a rollback brought back
	for i, n := range g.names {
		if !g.drops[i].undone || slices.Contains(back, n) {
			continue
		}
		back = append(back, n)
		if k := slices.Index(names, n); k >= 0 {
			vals[k] = g.vals[i]
		} else {
			names, vals = append(names, n), append(vals, g.vals[i])
		}
	}
	for i, n := range g.names {
		if !slices.Contains(names, n) {
			names, vals = append(names, n), append(vals, g.vals[i])
		}
	}
	return reshape(names, vals, to)
}
