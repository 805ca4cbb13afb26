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
// Statements on the raw connection (Store.Conn) run out of the store's
// sight. A DROP TABLE prepared there fails the running captures
// (rawDropLocked). For a CREATE TABLE, each capture running while the
// connection is exposed knows the tables there were when it began to see
// it (Capture.tables); when it finishes, every row of a table the raw
// connection prepared a CREATE TABLE for, that it did not know, is
// inserted (rawCreatedLocked).

// dropRowsLocked notes, for the running captures, the rows of the table a
// DROP TABLE about to run erases, and reports whether the table a CREATE
// TABLE names exists already (createdRowsLocked needs to know).
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
	cn.erasing = ""
	if len(s.captures) == 0 || info.drop == "" && info.create == "" {
		return false, nil
	}
	if info.create != "" {
		name, err := cn.tableName(info.create)
		return name != "", err
	}
	name, err := cn.tableName(info.drop)
	if name == "" || err != nil {
		return false, err
	}
	// The metadata describes the schema the statement runs against, though
	// the DROP's own prepare has marked it due for a reload.
	if v, err := schemaVersion(cn.c); err != nil {
		return false, err
	} else if v != cn.metaVersion {
		if err := s.loadMetaLocked(cn, nil); err != nil {
			return false, err
		}
		cn.metaDirty = true
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
		if strings.EqualFold(name, table) {
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

// foldASCII returns name with its ASCII letters in lower case, as SQLite
// compares table names.
func foldASCII(name string) string {
	b := []byte(name)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
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
