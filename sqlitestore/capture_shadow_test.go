package sqlitestore_test

import (
	"testing"

	"github.com/seahaven/seahaven/sqlitestore"
)

// TestCapture_FTS5ShadowAfterReopen: the rows of an FTS5 table's shadow
// tables are never reported, on a reopened connection too, where nothing
// connects the virtual table before capture reads the schema (a view that
// no longer compiles stops pragma_table_list before it does). A connection
// that read the schema before it registered FTS5 took the shadow tables for
// ordinary ones: the capture failed on ft_idx, whose key has no affinity,
// or reported the FTS5 index's own rows.
func TestCapture_FTS5ShadowAfterReopen(t *testing.T) {
	s := MustCreate(t, `CREATE TABLE old (id INTEGER PRIMARY KEY, body TEXT);
CREATE VIEW recent AS SELECT id, body FROM old;
CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
CREATE VIRTUAL TABLE ft USING fts5(body, content='notes', content_rowid='id');
CREATE TRIGGER notes_ins AFTER INSERT ON notes BEGIN INSERT INTO ft (rowid, body) VALUES (NEW.id, NEW.body); END;`, sqlitestore.Options{})
	MustExec(t, s, `DROP TABLE old`)
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	got := capture(t, s, func(t *testing.T, s *sqlitestore.Store) {
		MustExec(t, s, `INSERT INTO notes (id, body) VALUES (1, 'hello world')`)
	})
	if want := "insert notes map[id:1] after=map[body:hello world id:1]\n"; got != want {
		t.Errorf("changes:\n%s\nwant:\n%s", got, want)
	}
}
