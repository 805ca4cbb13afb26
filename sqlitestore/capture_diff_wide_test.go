package sqlitestore_test

import (
	"fmt"
	"testing"
)

// The wider generator of the differential test (capture_diff_test.go):
// what an eval world's SQL meets beyond the first one's tables and
// statements. Partial and expression unique indexes, several unique
// indexes with their own conflict clauses, DEFAULTs drawn from the
// store's clock and random stream, STORED columns over the columns a
// statement updates, foreign keys that set NULL or the default on update,
// deferred ones, and one whose child's rowid alias cascades; recursive
// triggers, triggers that raise ABORT or FAIL after writing, INSTEAD OF
// triggers on a view, FTS5 tables (plain, and fed by triggers from a
// captured table); UPDATE ... FROM, RETURNING (through Exec and Query),
// upserts with WHERE and several ON CONFLICT clauses, keys set to new
// values, the connection's trigger and foreign-key pragmas; and values at
// the edges: integers at 2^63, infinities and the NaN SQLite stores as
// NULL, text with NUL in it, empty text and blobs, blobs with a text's
// bytes, random values.

// wideTables are diffTables with more variants, and a view and an FTS5
// table.
var wideTables = func() []diffTableSpec {
	more := map[string][]string{
		"r": {
			`CREATE TABLE r (a INTEGER, b TEXT, c BLOB);
CREATE UNIQUE INDEX r_a ON r (a) WHERE b IS NOT NULL;
CREATE UNIQUE INDEX r_lc ON r (lower(b), c)`,
			`CREATE TABLE r (a INTEGER DEFAULT (random()), b TEXT DEFAULT CURRENT_TIMESTAMP, c DEFAULT (randomblob(4)))`,
		},
		"ip": {
			`CREATE TABLE ip (id INTEGER PRIMARY KEY, a INTEGER UNIQUE, b TEXT UNIQUE, g INTEGER GENERATED ALWAYS AS (coalesce(a, 0) + length(b)) STORED)`,
			`CREATE TABLE ip (id INTEGER PRIMARY KEY, a INTEGER NOT NULL DEFAULT 0 UNIQUE ON CONFLICT IGNORE, b TEXT UNIQUE ON CONFLICT REPLACE) STRICT`,
			`CREATE TABLE ip (id INTEGER PRIMARY KEY, a INTEGER, b TEXT DEFAULT (datetime('now')));
CREATE UNIQUE INDEX ip_ab ON ip (a, b);
CREATE UNIQUE INDEX ip_b ON ip (b) WHERE a > 1`,
		},
		"ck": {
			`CREATE TABLE ck (k1 TEXT NOT NULL, k2 INTEGER NOT NULL, v BLOB UNIQUE, PRIMARY KEY (k1, k2)) STRICT`,
			`CREATE TABLE ck (k1 INTEGER, k2 TEXT, v ANY, PRIMARY KEY (k1, k2), UNIQUE (v)) STRICT, WITHOUT ROWID`,
		},
		"tk": {
			`CREATE TABLE tk (k TEXT PRIMARY KEY, v INTEGER, w TEXT UNIQUE) STRICT`,
			`CREATE TABLE tk (k TEXT NOT NULL PRIMARY KEY, v INTEGER, w TEXT, g TEXT GENERATED ALWAYS AS (upper(k) || v) STORED UNIQUE)`,
		},
		"ch": {
			`CREATE TABLE ch (id INTEGER PRIMARY KEY, pid INTEGER DEFAULT 1 REFERENCES ip (id) ON UPDATE SET DEFAULT ON DELETE SET DEFAULT, v TEXT)`,
			`CREATE TABLE ch (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES ip (id) ON UPDATE SET NULL ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED, v TEXT)`,
			`CREATE TABLE ch (id INTEGER PRIMARY KEY REFERENCES ip (id) ON DELETE CASCADE ON UPDATE CASCADE, pid INTEGER, v TEXT)`,
		},
		"au": {
			`CREATE TABLE au (id INTEGER PRIMARY KEY, what TEXT);
CREATE TRIGGER ip_rec AFTER UPDATE OF a ON ip WHEN NEW.a BETWEEN 0 AND 4 BEGIN UPDATE ip SET a = NEW.a + 1 WHERE id = NEW.id; INSERT INTO au (what) VALUES ('rec ' || NEW.a); END;
CREATE TRIGGER ip_gone AFTER DELETE ON ip BEGIN INSERT INTO au (what) VALUES ('gone ' || OLD.id); END;`,
			`CREATE TABLE au (id INTEGER PRIMARY KEY, what TEXT);
CREATE TRIGGER ip_abort AFTER INSERT ON ip WHEN NEW.b = 'a' BEGIN INSERT INTO au (what) VALUES ('abort ' || NEW.id); SELECT RAISE(ABORT, 'no a'); END;
CREATE TRIGGER ip_fail BEFORE UPDATE ON ip WHEN NEW.a = 2 BEGIN INSERT INTO au (what) VALUES ('fail ' || NEW.id); SELECT RAISE(FAIL, 'no 2'); END;
CREATE TRIGGER au_ins AFTER INSERT ON au WHEN NEW.id % 3 = 0 BEGIN DELETE FROM au WHERE id = NEW.id - 1; END;`,
		},
	}
	var out []diffTableSpec
	for _, t := range diffTables {
		t.variants = append(t.variants[:len(t.variants):len(t.variants)], more[t.name]...)
		out = append(out, t)
	}
	return append(out,
		diffTableSpec{name: "vw", needs: []string{"ip"}, variants: []string{
			`CREATE VIEW vw AS SELECT id, a, b FROM ip;
CREATE TRIGGER vw_ins INSTEAD OF INSERT ON vw BEGIN INSERT OR REPLACE INTO ip (id, a, b) VALUES (NEW.id, NEW.a, NEW.b); END;
CREATE TRIGGER vw_up INSTEAD OF UPDATE ON vw BEGIN UPDATE ip SET id = NEW.id, a = NEW.a, b = NEW.b WHERE id = OLD.id; END;
CREATE TRIGGER vw_del INSTEAD OF DELETE ON vw BEGIN DELETE FROM ip WHERE id = OLD.id; END;`,
		}},
		diffTableSpec{name: "ft", variants: []string{
			`CREATE VIRTUAL TABLE ft USING fts5(a, b)`,
			`CREATE TABLE ft (id INTEGER PRIMARY KEY, a TEXT, b TEXT);
CREATE VIRTUAL TABLE fts USING fts5(a, b, content='ft', content_rowid='id');
CREATE TRIGGER ft_i AFTER INSERT ON ft BEGIN INSERT INTO fts (rowid, a, b) VALUES (NEW.id, NEW.a, NEW.b); END;
CREATE TRIGGER ft_d AFTER DELETE ON ft BEGIN INSERT INTO fts (fts, rowid, a, b) VALUES ('delete', OLD.id, OLD.a, OLD.b); END;
CREATE TRIGGER ft_u AFTER UPDATE ON ft BEGIN INSERT INTO fts (fts, rowid, a, b) VALUES ('delete', OLD.id, OLD.a, OLD.b); INSERT INTO fts (rowid, a, b) VALUES (NEW.id, NEW.a, NEW.b); END;`,
		}},
	)
}()

// wideValues are diffValues and the values at the edges.
var wideValues = append(diffValues[:len(diffValues):len(diffValues)],
	"-9223372036854775808", "9223372036854775806", "9223372036854775808", "(9223372036854775807 + 1)",
	"(1e308 * 10)", "(-1e308 * 10)", "(1e308 * 10 - 1e308 * 10)", "(0.0 * -1)",
	"('a' || char(0) || 'b')", "char(0)", "''", "x''", "x'41'", "x'00'", "' 1'", "'1.0'",
	"random()", "randomblob(2)", "CURRENT_TIMESTAMP", "julianday('now')",
)

// wideStatements is how many statements wideStatement makes.
const wideStatements = 16

// wideStatement returns the statement k of the wider generator on table t.
func wideStatement(d *diffSource, k int, t string, tables []string, col func() string) string {
	v := d.value
	other := func() string { return tables[d.n(len(tables))] }
	switch k {
	case 0:
		return fmt.Sprintf("UPDATE %s SET %s = x.v FROM (SELECT %s AS v, %s AS w FROM %s) AS x WHERE %s.%s IS x.w", t, col(), col(), col(), other(), t, col())
	case 1:
		c1, c2 := col(), col()
		return fmt.Sprintf("INSERT INTO %s (%s, %s) VALUES (%s, %s), (%s, %s) RETURNING *", t, c1, c2, v(), v(), v(), v())
	case 2:
		return fmt.Sprintf("UPDATE %s SET %s = %s WHERE %s IS NOT %s RETURNING %s", t, col(), v(), col(), v(), col())
	case 3:
		return fmt.Sprintf("DELETE FROM %s WHERE %s IS %s RETURNING *", t, col(), v())
	case 4:
		c1, c2 := col(), col()
		return fmt.Sprintf("INSERT INTO %s (%s, %s) VALUES (%s, %s), (%s, %s) ON CONFLICT DO UPDATE SET %s = excluded.%s WHERE excluded.%s IS NOT %s",
			t, c1, c2, v(), v(), v(), v(), col(), col(), col(), v())
	case 5:
		c1, c2 := col(), col()
		return fmt.Sprintf("INSERT INTO %s (%s, %s) VALUES (%s, %s) ON CONFLICT (%s) DO NOTHING ON CONFLICT DO UPDATE SET %s = %s", t, c1, c2, v(), v(), col(), col(), v())
	case 6:
		return fmt.Sprintf("PRAGMA recursive_triggers = %s", []string{"ON", "OFF"}[d.n(2)])
	case 7:
		return fmt.Sprintf("PRAGMA %s = %s", []string{"defer_foreign_keys", "foreign_keys"}[d.n(2)], []string{"ON", "OFF"}[d.n(2)])
	case 8:
		c1, c2 := col(), col()
		return fmt.Sprintf("INSERT OR %s INTO %s (%s, %s) VALUES (%s, %s), (%s, %s)", []string{"FAIL", "IGNORE", "REPLACE", "ABORT"}[d.n(4)], t, c1, c2, v(), v(), v(), v())
	case 9:
		c := col()
		return fmt.Sprintf("UPDATE OR %s %s SET %s = %s + 1 WHERE %s IS NOT %s", []string{"FAIL", "IGNORE", "REPLACE"}[d.n(3)], t, c, c, col(), v())
	case 10:
		return fmt.Sprintf("INSERT INTO %s DEFAULT VALUES", t)
	case 11:
		return fmt.Sprintf("INSERT INTO %s (%s) WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < %d) SELECT %s FROM s", t, col(), 1+d.n(4), []string{"x", "-x", "x * 1.0", "'k' || x", "NULL"}[d.n(5)])
	case 12:
		c1, c2 := col(), col()
		return fmt.Sprintf("UPDATE %s SET %s = -%s, %s = %s || 'x'", t, c1, c1, c2, c2)
	case 13:
		c := col()
		return fmt.Sprintf("UPDATE %s SET %s = (SELECT max(%s) FROM %s) + 1 WHERE %s IS %s", t, c, c, t, col(), v())
	case 14:
		c1, c2, c3 := col(), col(), col()
		return fmt.Sprintf("REPLACE INTO %s (%s, %s, %s) VALUES (%s, %s, %s), (%s, %s, %s)", t, c1, c2, c3, v(), v(), v(), v(), v(), v())
	default:
		c := col()
		return fmt.Sprintf("UPDATE %s SET %s = CASE %s WHEN %s THEN %s WHEN %s THEN %s ELSE %s END", t, c, c, v(), v(), v(), v(), c)
	}
}

// TestCapture_DifferentialWide runs the differential test on random inputs
// with the wider generator.
func TestCapture_DifferentialWide(t *testing.T) { runCaptureDiffSeeds(t, true) }

// FuzzCaptureDiffWide is the differential test with the wider generator
// under the fuzzer. Its seeds include an input whose FTS5 shadow tables a
// reopened connection took for ordinary ones (453), and one whose
// AUTOINCREMENT runs out of rowids, which rolls the transaction back
// (1347).
func FuzzCaptureDiffWide(f *testing.F) { fuzzCaptureDiff(f, true, 0, 1, 453, 1347) }
