package sqlitestore

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ncruces/go-sqlite3"
)

// Table metadata: what change capture knows about the tables of the main
// schema, when it must be reloaded, and the renames a reload finds (the
// events recorded while it was stale are keyed in layout.go).

// tableMeta is what change capture knows about one table of the main schema.
type tableMeta struct {
	name      string
	root      int64    // the root page of the table's b-tree, which a rename keeps; 0 when it has none
	skip      bool     // not captured: untracked, shadow, virtual, view
	cols      int      // all columns, as the preupdate hook counts them
	cids      []int    // indexes of captured columns (all but VIRTUAL generated)
	names     []string // names of captured columns
	real      []bool   // by names: the column has REAL affinity (see read)
	pk        []int    // column indexes of the primary key, in key order; nil: keyed by rowid
	keyNames  []string // RowChange.KeyNames: the key columns' names, or the rowid's name (rowid unless a column takes it)
	pkPos     []int    // positions of the primary-key columns in names
	rowid     string   // with no primary key: the rowid's first name no column has, VIRTUAL ones included; "" when none is free
	selectSQL string   // reads one row by key
	// ident is the table name and its key's column names, each ended by
	// NUL: the start of a touched row's identity, which tells apart the
	// rows of a table dropped and created again with another key.
	ident string

	keyProblem *KeyProblem // non-nil: rows cannot be keyed exactly, and a capture touching one fails
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
			skip: typ != "table" || untracked[foldASCII(name)] || hasPrefixFold(name, "sqlite_"),
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
		m.real = append(m.real, realAffinity(r[7].(string), k.strict))
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
			m.keyNames = append(m.keyNames, c.name)
		}
		if len(m.pk) == 0 {
			m.rowid = rowidName(k.names)
			// A column named rowid is not the row's id: the key names the
			// alias a grader can read it back by (_rowid_, or oid).
			m.keyNames = []string{cmp.Or(m.rowid, "rowid")}
		}
		m.selectSQL = m.buildSelect()
		m.ident = m.name + "\x00" + strings.Join(m.keyNames, "\x00") + "\x00"
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
//
// Key columns compare BINARY, as the key's index does (a key compared
// otherwise cannot key changes: see KeyProblems), not with the column's
// own collation: under a column's NOCASE, 'a' would find the row 'A'.
func (m *tableMeta) buildSelect() string {
	where := make([]string, len(m.pk))
	for i := range m.pk {
		where[i] = fmt.Sprintf("%s IS ?%d COLLATE BINARY", quoteIdent(m.keyNames[i]), i+1)
	}
	if len(m.pk) == 0 {
		if m.rowid == "" {
			return ""
		}
		where = []string{m.rowid + " = ?1"}
	}
	cols := make([]string, len(m.names))
	for i, n := range m.names {
		cols[i] = quoteIdent(n)
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM main." + quoteIdent(m.name) + " WHERE " + strings.Join(where, " AND ")
}

func (m *tableMeta) keyOf(col func(int) any, rowid int64) []any {
	if len(m.pk) == 0 {
		return []any{rowid}
	}
	key := make([]any, len(m.pk))
	for i, cid := range m.pk {
		key[i] = m.read(m.pkPos[i], col(cid))
	}
	return key
}

// read returns v, the value of the column at i in names, as SQLite reads
// it from the table: an integer in a column of REAL affinity as a real.
// The preupdate hook gives the default of a column added by ALTER TABLE
// ADD COLUMN, to a row stored before the column was added, as the default
// is written: the integer 3 for REAL DEFAULT 3, which SQLite reads as 3.0.
func (m *tableMeta) read(i int, v any) any {
	if m.real[i] {
		if n, ok := v.(int64); ok {
			return float64(n)
		}
	}
	return v
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

// image returns a row's captured columns, by m.names, from col.
func (m *tableMeta) image(col func(int) any) []any {
	row := make([]any, len(m.names))
	for i, cid := range m.cids {
		row[i] = m.read(i, col(cid))
	}
	return row
}

// renamedTo returns the name under which meta holds the table m describes
// when the table has another name there, and "" otherwise: the table of
// m's name in meta has m's root page, or no table has it (the table was
// dropped). A root page that another name holds was the table's own,
// renamed, unless old, the metadata meta replaces, did not hold the table
// there under its name: no table there is a dropped table's page reused
// by a table created since, and another name there is such a table
// created before an earlier reload, which that reload saw. Old cannot
// tell every reuse (a ROLLBACK TO on the raw connection undoing the
// table's creation, then a CREATE TABLE there, before any reload):
// Store.loadMetaLocked asks only when an ALTER TABLE ... RENAME may have
// renamed a table since old was loaded.
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
	if o := old[m.name]; o != nil && o.root == m.root {
		return to
	}
	return ""
}

// reloadStaleLocked reloads the metadata (loadMetaLocked, with finishing)
// when it may not describe the schema: it is due for a reload or, on a
// connection handed out raw, a statement prepared there before may have
// changed the schema as it stepped, which the authorizer, seeing
// statements only as they are prepared, did not see.
func (s *Store) reloadStaleLocked(cn *conn, finishing *Capture) error {
	if !cn.metaDirty {
		if !cn.exposed {
			return nil
		}
		if v, err := schemaVersion(cn.c); err != nil || v == cn.metaVersion {
			return err
		}
	}
	return s.loadMetaLocked(cn, finishing)
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
//
// Only an ALTER TABLE ... RENAME renames a table or column, as it runs or
// as a rollback undoes it (a rollback undoing a DROP COLUMN and an ADD
// COLUMN looks like one, and counts as one for the tables, not for the
// columns: see checkRenames), and a rollback undoes only what ran in the
// transaction it ends: when none was noted since the transaction open at
// the last load began (txnSeq then), and none was prepared on the raw
// connection, whose statements may run long after they are prepared,
// nothing was renamed since, and the captures are not checked. A table
// then holding the root page of one gone (a ROLLBACK TO undid its
// creation, or a rollback brought a dropped table back over the one
// created since on its page) is another table, though renamedTo would
// take it for the gone one renamed. With no metadata before (old is nil),
// the captures' comes from another connection, whose log is gone: they
// are checked.
func (s *Store) loadMetaLocked(cn *conn, finishing *Capture) error {
	old, since := cn.meta, cn.renameSeq
	renames := old == nil || cn.layout.rawRename || cn.layout.rename > since
	if !cn.rolledBack {
		// What ran before the last load was checked then.
		since = max(since, cn.loadSeq)
	}
	if err := s.loadMetaOnlyLocked(cn); err != nil {
		return err
	}
	cn.loadSeq = cn.layout.seq
	cn.loadInTxn = cn.layout.seq != cn.txnSeq && !cn.c.GetAutocommit()
	cn.renameSeq = cn.txnSeq
	unsure := cn.rolledBack && cn.changedAfter
	cn.rolledBack, cn.changedAfter = false, false
	captures := s.captures
	if finishing != nil {
		captures = append(slices.Clip(captures), finishing)
	}
	for _, c := range captures {
		c.noteUndone(cn.metaVersion, unsure)
		if renames {
			c.checkRenames(old, cn.meta, cn.layout, since)
			c.knowRenames(old, cn.meta)
			c.noteVanished(old, cn.meta, cn.colDrop)
		}
		c.replay(cn)
	}
	return nil
}

// knowRenames has c know, under its new name, each table it knows that was
// renamed between old and meta (see Capture.tables).
func (c *Capture) knowRenames(old, meta map[string]*tableMeta) {
	for name := range c.tables {
		if m := old[name]; m != nil {
			if to := m.renamedTo(old, meta); to != "" {
				c.tables[to] = true
			}
		}
	}
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

// checkRenames fails c when a table it holds rows of, as the metadata of
// their first touch names it, was renamed by the time meta was loaded
// (old is the metadata meta replaces, nil when there was none), or one of
// its columns was. Changes are reported by table name, and a row of a
// renamed table would be reported as deleted from its old name, with its
// later changes under the new name lost or reported against another row.
// A column can have been renamed only when a RENAME COLUMN of its table
// may have run since old was loaded, or a rollback since undid one: the
// layout log noted one after since, or one was prepared on the raw
// connection (with no old metadata, one may have run unnoted). Otherwise a
// column dropped and another added, which a rollback may undo together,
// renamed nothing, though the table's columns may read as if. A DROP
// COLUMN of the table, noted the same way, may have run along with it (see
// renamedColumn). It fails c the same way when a table the captures c
// follows reported rows of (c.after) was renamed.
func (c *Capture) checkRenames(old, meta map[string]*tableMeta, log *layoutLog, since uint64) {
	if c.err != nil {
		return
	}
	for _, m := range c.after {
		if to := m.renamedTo(old, meta); to != "" {
			c.err = fmt.Errorf("sqlitestore: change capture cannot report the rows of table %s: it was renamed to %s while the capture ran, after the captures it follows reported rows of it", m.name, to)
			return
		}
	}
	if len(c.order) == 0 {
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
		if old != nil && !log.columnRenames.since(t.meta.name, since) {
			continue
		}
		dropped := old == nil || log.columnDrops.since(t.meta.name, since)
		from, to := t.meta.renamedColumn(old, meta, dropped)
		if to != "" {
			c.err = fmt.Errorf("sqlitestore: change capture cannot report the rows of table %s: its column %s was renamed to %s while the capture ran", t.meta.name, from, to)
			return
		}
		if from != "" {
			c.err = fmt.Errorf("sqlitestore: change capture cannot report the rows of table %s: its column %s was renamed or dropped while the capture ran, as were others of the table, so where it went cannot be told", t.meta.name, from)
			return
		}
	}
}

// renameRefusalLocked returns the error refusing an ALTER TABLE, as it is
// prepared, that renames table (column: one of its columns), when a
// running capture holds rows of the table, or, for a rename of the table
// itself, follows captures that reported rows of it (see
// StartCaptureAfter); nil when it may run. Finish would fail such a
// capture (see checkRenames), but a rename run outside a frame commits as
// it runs: it would stay in the file with no change describing it.
// Refused, it changes nothing. The authorizer does not tell which column
// a RENAME COLUMN renames, so a rename of any is refused, one the rows'
// images lack (added since) too. A table the raw connection created
// while a capture ran, which the capture reads as it finishes, by name
// (see rawCreatedLocked), counts as one whose rows it holds, whether it
// holds rows yet or not. It runs in the authorizer, from the raw
// connection's user too (see rawDropLocked).
//
// A rename runs unrefused when its statement was prepared on the raw
// connection before the capture held rows of the table, and stepped
// after; and a rollback may undo a rename. Finish fails then.
func (s *Store) renameRefusalLocked(table string, column bool) error {
	for _, c := range s.captures {
		if name := c.rowsOf(table); name != "" {
			if column {
				return fmt.Errorf("sqlitestore: renaming a column of table %s refused: change capture holds rows of it, and its changes would name a column that is gone", name)
			}
			return fmt.Errorf("sqlitestore: renaming table %s refused: change capture holds rows of it, and its changes would name a table that is gone", name)
		}
		if column {
			continue
		}
		if c.rawCreated(table) {
			return fmt.Errorf("sqlitestore: renaming table %s refused: change capture reads the rows of it, which the raw connection created while it ran, by this name when it finishes", table)
		}
		for _, m := range c.after {
			if foldASCII(m.name) == foldASCII(table) {
				return fmt.Errorf("sqlitestore: renaming table %s refused: change capture follows captures that reported rows of it, and its changes would name it otherwise", m.name)
			}
		}
	}
	return nil
}

// rowsOf returns the name of the table, named table in any letter case
// (as SQLite compares names), that c holds rows of; "" when it holds none.
func (c *Capture) rowsOf(table string) string {
	table = foldASCII(table)
	var last *tableMeta
	for _, t := range c.order {
		if t.meta != last {
			if last = t.meta; foldASCII(t.meta.name) == table {
				return t.meta.name
			}
		}
	}
	for _, ev := range c.raw {
		if foldASCII(ev.table) == table {
			return ev.table
		}
	}
	return ""
}

// rawCreated reports whether c reads the rows of the table named table,
// in any letter case, as it finishes: the raw connection prepared a
// CREATE TABLE for it while c ran, and c did not know the table (see
// rawCreatedLocked).
func (c *Capture) rawCreated(table string) bool {
	table = foldASCII(table)
	if !c.rawCreates[table] {
		return false
	}
	for name := range c.tables {
		if foldASCII(name) == table {
			return false
		}
	}
	return true
}

// renamedColumn returns a column of the table m describes, as a row was
// first touched, that was renamed (ALTER TABLE ... RENAME COLUMN, or a
// rollback undoing one) between old and meta, and its new name; "", ""
// when none was. Images are matched to the table's columns by name, so a
// renamed column would read as one dropped and one added (NULL before),
// and a renamed key column as every touched row deleted. A rename keeps
// the table's root page and the columns' places, and an added column
// comes last, so with no column dropped (dropped says one may have been)
// a column whose place holds another name was renamed to it. With one
// dropped, places move, and a column m has and meta has not was renamed
// or dropped: renamedColumn returns it with to "". Old is the metadata
// meta replaces, m itself when there was none.
func (m *tableMeta) renamedColumn(old, meta map[string]*tableMeta, dropped bool) (from, to string) {
	o := m
	if old != nil {
		o = old[m.name]
	}
	n := meta[m.name]
	if o == nil || n == nil || m.root == 0 || o.root != m.root || n.root != m.root {
		return "", ""
	}
	for i, name := range o.names {
		switch {
		case !slices.Contains(m.names, name):
		case !dropped && i < len(n.names) && n.names[i] != name:
			return name, n.names[i]
		case dropped && !slices.Contains(n.names, name):
			return name, ""
		}
	}
	return "", ""
}
