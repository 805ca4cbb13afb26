package sqlitestore

import (
	"fmt"
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

// dropRowsLocked notes, for the running captures, the rows of the table a
// DROP TABLE about to run erases, and reports whether the table a CREATE
// TABLE names exists already (createdRowsLocked needs to know).
func (s *Store) dropRowsLocked(cn *conn, info stmtInfo) (existed bool, err error) {
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
	return false, s.tableRowsLocked(cn, name, func(m *tableMeta, key, img []any) event {
		return event{oldKey: key, oldCol: func(cid int) any { return img[slices.Index(m.cids, cid)] }}
	})
}

// rawDropLocked fails the running captures when a DROP TABLE of a captured
// table is prepared on the raw connection (Store.Conn): it erases the
// table's rows with no preupdate event, and only Exec and ExecScript read
// them first (dropRowsLocked). It runs in the authorizer, under s.mu when
// the store's own statement runs (a shadow table dropped with its virtual
// table is not captured), and from the raw connection's user otherwise.
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
// a CREATE TABLE that just ran created, unless it existed before.
func (s *Store) createdRowsLocked(cn *conn, info stmtInfo, existed bool) error {
	if len(s.captures) == 0 || info.create == "" || existed {
		return nil
	}
	if err := s.refreshMetaLocked(cn); err != nil {
		return err
	}
	name, err := cn.tableName(info.create)
	if name == "" || err != nil {
		return err
	}
	return s.tableRowsLocked(cn, name, func(m *tableMeta, key, img []any) event {
		return event{newKey: key, newImg: img}
	})
}

// tableRowsLocked reads every row of the captured table name and records
// the event ev makes of each.
func (s *Store) tableRowsLocked(cn *conn, name string, ev func(m *tableMeta, key, img []any) event) error {
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
		s.recordLocked(m, ev(m, m.keyIn(img, id), img))
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
