package sqlitestore_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/seahaven/seahaven/sqlitestore"
)

// The differential test of change capture: random small schemas and random
// statements, each capture's changes compared with the difference between a
// full read of every table before and after it.

// diffTables are the tables a schema picks from; each has variants, and
// some need another (a foreign key's parent, a trigger's target).
var diffTables = []diffTableSpec{
	{name: "r", variants: []string{
		`CREATE TABLE r (a INTEGER, b TEXT, c)`,
		`CREATE TABLE r (a INTEGER UNIQUE ON CONFLICT REPLACE, b TEXT, c)`,
		`CREATE TABLE r (rowid TEXT, a INTEGER, b TEXT, c INTEGER GENERATED ALWAYS AS (a + 1) VIRTUAL)`,
		`CREATE TABLE r (oid INTEGER, _rowid_ TEXT, a INTEGER UNIQUE, b TEXT, c)`,
		`CREATE TABLE r (a INTEGER, b TEXT, c ANY) STRICT`,
		`CREATE TABLE r (a REAL, b NUMERIC, c INTEGER GENERATED ALWAYS AS (a * 2) STORED)`,
	}},
	{name: "ip", variants: []string{
		`CREATE TABLE ip (id INTEGER PRIMARY KEY, a INTEGER UNIQUE, b TEXT)`,
		`CREATE TABLE ip (id INTEGER PRIMARY KEY, a INTEGER UNIQUE ON CONFLICT REPLACE, b TEXT, g INTEGER GENERATED ALWAYS AS (a * 2) VIRTUAL)`,
		`CREATE TABLE ip (id INTEGER PRIMARY KEY AUTOINCREMENT, a INTEGER, b TEXT, g GENERATED ALWAYS AS (b || a) STORED)`,
		`CREATE TABLE ip (id INTEGER NOT NULL PRIMARY KEY, a REAL, b TEXT COLLATE NOCASE UNIQUE) STRICT`,
		`CREATE TABLE ip (a INTEGER, id INTEGER, b TEXT, PRIMARY KEY (id))`,
		`CREATE TABLE ip (id INT PRIMARY KEY NOT NULL, a INTEGER, b TEXT)`,
		`CREATE TABLE ip (id INTEGER PRIMARY KEY DESC NOT NULL, a INTEGER UNIQUE, b TEXT)`,
	}},
	{name: "ck", variants: []string{
		`CREATE TABLE ck (k1 TEXT NOT NULL, k2 INTEGER NOT NULL, v, PRIMARY KEY (k1, k2))`,
		`CREATE TABLE ck (k1 TEXT, k2 INTEGER, v, PRIMARY KEY (k2, k1)) WITHOUT ROWID`,
		`CREATE TABLE ck (k1 TEXT, k2 INTEGER, v INTEGER UNIQUE ON CONFLICT REPLACE, PRIMARY KEY (k1, k2)) STRICT, WITHOUT ROWID`,
		`CREATE TABLE ck (k1 TEXT COLLATE NOCASE NOT NULL, k2 INTEGER NOT NULL, v, PRIMARY KEY (k1, k2))`,
		`CREATE TABLE ck (k1 REAL NOT NULL, k2 NUMERIC NOT NULL, v TEXT, PRIMARY KEY (k1 DESC, k2)) WITHOUT ROWID`,
	}},
	{name: "tk", variants: []string{
		`CREATE TABLE tk (k TEXT PRIMARY KEY NOT NULL, v INTEGER, w TEXT UNIQUE ON CONFLICT REPLACE)`,
		`CREATE TABLE tk (k TEXT PRIMARY KEY, v INTEGER, w TEXT COLLATE NOCASE UNIQUE, g TEXT GENERATED ALWAYS AS (k || w) VIRTUAL) WITHOUT ROWID`,
		`CREATE TABLE tk (rowid TEXT PRIMARY KEY, v INTEGER, w TEXT, g INTEGER GENERATED ALWAYS AS (v * 10) STORED) WITHOUT ROWID`,
		`CREATE TABLE tk (k TEXT NOT NULL PRIMARY KEY ON CONFLICT REPLACE, v INTEGER, w TEXT)`,
	}},
	{name: "ch", needs: []string{"ip"}, variants: []string{
		`CREATE TABLE ch (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES ip (id) ON DELETE CASCADE ON UPDATE CASCADE, v TEXT)`,
		`CREATE TABLE ch (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES ip (id) ON DELETE SET NULL, v TEXT)`,
		`CREATE TABLE ch (pid INTEGER REFERENCES ip (id) ON DELETE CASCADE, v TEXT)`,
		`CREATE TABLE ch (id INTEGER NOT NULL, pid INTEGER NOT NULL REFERENCES ip (id) ON DELETE CASCADE, v TEXT, PRIMARY KEY (pid, id)) WITHOUT ROWID`,
	}},
	{name: "au", needs: []string{"ip"}, variants: []string{
		`CREATE TABLE au (id INTEGER PRIMARY KEY, what TEXT);
CREATE TRIGGER ip_ins AFTER INSERT ON ip BEGIN INSERT INTO au (what) VALUES ('ins ' || NEW.id); END;
CREATE TRIGGER ip_del BEFORE DELETE ON ip BEGIN INSERT INTO au (what) VALUES ('del ' || OLD.id); END;`,
		`CREATE TABLE au (what TEXT);
CREATE TRIGGER ip_up AFTER UPDATE OF a ON ip WHEN NEW.a = 3 BEGIN UPDATE ip SET b = 'three' WHERE id = NEW.id; INSERT INTO au VALUES ('up ' || NEW.id); END;`,
		`CREATE TABLE au (id INTEGER PRIMARY KEY, what TEXT);
CREATE TRIGGER ip_ins BEFORE INSERT ON ip WHEN NEW.a = 2 BEGIN SELECT RAISE(IGNORE); END;
CREATE TRIGGER au_del AFTER DELETE ON au BEGIN UPDATE ip SET b = 'au gone' WHERE id = OLD.id; END;`,
	}},
}

// diffTableSpec is a table a schema may pick: its variants, and the
// tables it needs.
type diffTableSpec struct {
	name     string
	variants []string
	needs    []string
}

// diffValues are the values statements write: integers and reals SQLite
// may find equal, zeros of both signs, text in both cases, a blob, NULL.
var diffValues = []string{"0", "1", "2", "3", "-1", "1.0", "2.5", "-0.0", "0.0", "'a'", "'A'", "'b'", "'1'", "x'61'", "NULL", "9223372036854775807", "1e300"}

// diffSource draws choices from the bytes of a fuzz input, then zeros.
// A wide source also draws from the tables, values and statements of
// capture_diff_wide_test.go.
type diffSource struct {
	in   []byte
	wide bool
}

func (d *diffSource) n(k int) int {
	if len(d.in) == 0 || k <= 0 {
		return 0
	}
	b := d.in[0]
	d.in = d.in[1:]
	return int(b) % k
}

func (d *diffSource) done() bool { return len(d.in) == 0 }

func (d *diffSource) value() string {
	if d.wide {
		return wideValues[d.n(len(wideValues))]
	}
	return diffValues[d.n(len(diffValues))]
}

// diffSchema picks tables and their variants.
func diffSchema(d *diffSource) (schema string, tables []string) {
	var picked []string
	list, mask := diffTables, d.n(64)
	if d.wide {
		list = wideTables
		mask = d.n(1 << len(list))
	}
	var add func(i int)
	add = func(i int) {
		t := list[i]
		if slices.Contains(tables, t.name) {
			return
		}
		for _, need := range t.needs {
			add(slices.IndexFunc(list, func(x diffTableSpec) bool { return x.name == need }))
		}
		tables = append(tables, t.name)
		picked = append(picked, t.variants[d.n(len(t.variants))]+";")
	}
	for i := range list {
		if mask&(1<<i) != 0 {
			add(i)
		}
	}
	if len(tables) == 0 {
		add(d.n(len(list)))
	}
	return strings.Join(picked, "\n"), tables
}

// diffColumns are the columns a statement may name, by table: some of them
// exist in a given variant.
var diffColumns = map[string][]string{
	"r":  {"a", "b", "c", "rowid", "oid", "_rowid_", "x1"},
	"ip": {"id", "a", "b", "g", "x1"},
	"ck": {"k1", "k2", "v", "x1"},
	"tk": {"k", "v", "w", "rowid", "x1"},
	"ch": {"id", "pid", "v", "x1"},
	"au": {"id", "what"},
	"vw": {"id", "a", "b"},
	"ft": {"id", "a", "b", "rowid", "x1"},
}

// diffStatement returns a random statement on tables; many fail, which is
// part of the test.
func diffStatement(d *diffSource, tables []string, savepoints *int) string {
	t := tables[d.n(len(tables))]
	cols := diffColumns[t]
	col := func() string { return cols[d.n(len(cols))] }
	v := d.value
	k := 26
	if d.wide {
		k += wideStatements
	}
	k = d.n(k)
	if k >= 26 {
		return wideStatement(d, k-26, t, tables, col)
	}
	switch k {
	case 0, 1, 2:
		c1, c2 := col(), col()
		return fmt.Sprintf("INSERT INTO %s (%s, %s) VALUES (%s, %s), (%s, %s)", t, c1, c2, v(), v(), v(), v())
	case 3:
		c1, c2, c3 := col(), col(), col()
		return fmt.Sprintf("INSERT OR REPLACE INTO %s (%s, %s, %s) VALUES (%s, %s, %s)", t, c1, c2, c3, v(), v(), v())
	case 4:
		c1, c2 := col(), col()
		return fmt.Sprintf("INSERT INTO %s (%s, %s) VALUES (%s, %s) ON CONFLICT DO UPDATE SET %s = excluded.%s", t, c1, c2, v(), v(), col(), col())
	case 5:
		c1, c2 := col(), col()
		return fmt.Sprintf("INSERT OR IGNORE INTO %s (%s, %s) VALUES (%s, %s)", t, c1, c2, v(), v())
	case 6, 7:
		return fmt.Sprintf("UPDATE %s SET %s = %s WHERE %s = %s", t, col(), v(), col(), v())
	case 8:
		c := col()
		return fmt.Sprintf("UPDATE OR REPLACE %s SET %s = %s + 1 WHERE %s IS NOT %s", t, c, c, col(), v())
	case 9:
		return fmt.Sprintf("UPDATE %s SET rowid = rowid + %d WHERE %s = %s", t, d.n(3), col(), v())
	case 10, 11:
		return fmt.Sprintf("DELETE FROM %s WHERE %s = %s", t, col(), v())
	case 12:
		return fmt.Sprintf("DELETE FROM %s", t)
	case 13:
		*savepoints++
		return fmt.Sprintf("SAVEPOINT sp%d", *savepoints)
	case 14:
		return fmt.Sprintf("ROLLBACK TO sp%d", d.n(*savepoints+1))
	case 15:
		return fmt.Sprintf("RELEASE sp%d", d.n(*savepoints+1))
	case 16:
		return fmt.Sprintf("ALTER TABLE %s ADD COLUMN x1 %s", t, []string{"INTEGER", "TEXT DEFAULT 'd'", "INTEGER DEFAULT 7", "REAL DEFAULT -0.0", "AS (1) VIRTUAL"}[d.n(5)])
	case 17:
		return fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", t, col())
	case 18:
		c := col()
		return fmt.Sprintf("ALTER TABLE %s RENAME COLUMN %s TO %s", t, c, col())
	case 19:
		return fmt.Sprintf("DROP TABLE %s", t)
	case 20:
		return fmt.Sprintf("CREATE TABLE %s AS SELECT %s, %s FROM %s", []string{"r", "tk", "zz"}[d.n(3)], v(), v(), tables[d.n(len(tables))])
	case 21:
		return fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (k TEXT PRIMARY KEY NOT NULL, v)", t)
	case 22:
		return fmt.Sprintf("CREATE INDEX IF NOT EXISTS i%d ON %s (%s)", d.n(3), t, col())
	case 23:
		return fmt.Sprintf("INSERT INTO %s SELECT * FROM %s", t, tables[d.n(len(tables))])
	case 24:
		return fmt.Sprintf("UPDATE %s SET %s = %s, %s = %s", t, col(), v(), col(), v())
	default:
		return fmt.Sprintf("REPLACE INTO %s (%s) SELECT %s FROM %s", t, col(), col(), tables[d.n(len(tables))])
	}
}

// refusal reports whether err is one of capture's documented refusals: a
// table whose rows cannot be keyed, a column renamed (or renamed or
// dropped, with both in the call), columns changed
// before an event was keyed, a table dropped on the raw connection, or
// dropped in a nested capture and perhaps created again on it, a column
// dropped on the raw connection that a rollback brought back, or that a
// rollback may have brought back under the name of one added again, a
// column dropped and added again through Exec when the raw connection
// changed the schema after a rollback. No
// statement here renames a table, so a table's rename is a false refusal.
func refusal(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "cannot key the rows") ||
		strings.Contains(msg, "its column ") && (strings.Contains(msg, " renamed to ") || strings.Contains(msg, " renamed or dropped ")) ||
		strings.Contains(msg, "cannot key a change") || strings.Contains(msg, "DROP TABLE on the raw connection") ||
		strings.Contains(msg, "a nested capture dropped it") || strings.Contains(msg, "DROP COLUMN on the raw connection") ||
		strings.Contains(msg, "was dropped and added again, and the raw connection changed the schema after a rollback")
}

// diffRig is one run of the differential test: the store, its sibling
// (which takes the store's parked connection, when the two share one),
// and the log of what ran.
type diffRig struct {
	t       *testing.T
	d       *diffSource
	s, sib  *sqlitestore.Store
	tables  []string
	log     []string
	renamed map[string]bool // tables whose columns a statement renamed in this call (see noteDDL)
	dropped map[string]bool // table and column, NUL between, a statement dropped in this call
	// addedAgain holds the columns added in this call under the name of
	// one dropped in it, that no rollback undid since (see noteDDL);
	// marks the savepoints and frames open, innermost last; seq numbers
	// both, in the order they came.
	addedAgain []diffMark
	marks      []diffMark
	seq        int
	// rolledBack is set when a ROLLBACK TO ran in the innermost capture:
	// it may undo rows an outer capture touched, which the outer one
	// reports.
	rolledBack bool
	sp         int // savepoints named so far
	open       int // frames open, in every capture
}

func (r *diffRig) logf(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf(format, args...))
}

// exec runs one random statement on the store, through Exec or the raw
// connection.
func (r *diffRig) exec(raw bool) {
	ctx := context.Background()
	q := diffStatement(r.d, r.tables, &r.sp)
	var err error
	if raw {
		if strings.Contains(q, "SAVEPOINT") || strings.Contains(q, "ROLLBACK") || strings.Contains(q, "RELEASE") {
			return // transaction control on the raw connection is the caller's own
		}
		// The raw connection is the store's only while it is pinned: a
		// pool's sweeper may release it between two uses otherwise.
		r.s.Pin()
		var c *sqlite3.Conn
		if c, err = r.s.Conn(ctx); err == nil {
			err = c.Exec(q)
		}
		r.s.Unpin()
		q = "raw: " + q
	} else if r.d.wide && strings.Contains(q, "RETURNING") && r.d.n(2) == 0 {
		_, err = r.s.Query(ctx, q)
		q = "query: " + q
	} else {
		_, err = r.s.Exec(ctx, q)
	}
	if err == nil {
		r.noteDDL(strings.TrimPrefix(q, "raw: "))
		r.noteSavepoint(q)
	}
	if err == nil && strings.Contains(q, "ROLLBACK TO") {
		r.rolledBack = true
	}
	if err != nil {
		r.logf("%s -- %v", q, err)
	} else {
		r.logf("%s", q)
	}
}

// script runs a few random statements as one ExecScript.
func (r *diffRig) script() {
	var qs []string
	for range 1 + r.d.n(3) {
		qs = append(qs, diffStatement(r.d, r.tables, &r.sp))
	}
	q := strings.Join(qs, ";\n")
	err := r.s.ExecScript(context.Background(), q)
	if err != nil {
		r.logf("script: %s -- %v", q, err)
	} else {
		r.logf("script: %s", q)
	}
	for _, q := range qs {
		r.noteDDL(q) // it may have run before a later statement failed
		if strings.Contains(q, "ROLLBACK TO") {
			r.rolledBack = true
		}
		if err == nil {
			r.noteSavepoint(q) // which ran is not known otherwise: none undoes an ADD COLUMN
		}
	}
}

// diffMark is a savepoint (name) or a frame ("") open, or a column added
// again (name: its table), and its place in the order of these.
type diffMark struct {
	name string
	seq  int
}

// mark returns the next diffMark of name.
func (r *diffRig) mark(name string) diffMark {
	r.seq++
	return diffMark{name, r.seq}
}

// noteSavepoint follows the savepoints a statement of the store's API
// that ran opened, released or rolled back to.
func (r *diffRig) noteSavepoint(q string) {
	f := strings.Fields(q)
	switch {
	case len(f) == 2 && f[0] == "SAVEPOINT":
		r.marks = append(r.marks, r.mark(f[1]))
	case len(f) == 2 && f[0] == "RELEASE":
		if i := r.markIndex(f[1]); i >= 0 {
			r.marks = r.marks[:i]
		}
	case len(f) == 3 && f[0] == "ROLLBACK":
		if i := r.markIndex(f[2]); i >= 0 {
			r.undo(r.marks[i])
			r.marks = r.marks[:i+1]
		}
	}
}

// markIndex returns the index in r.marks of the savepoint or frame name
// names, the innermost one; -1 when none is open.
func (r *diffRig) markIndex(name string) int {
	for i := len(r.marks) - 1; i >= 0; i-- {
		if r.marks[i].name == name {
			return i
		}
	}
	return -1
}

// undo forgets the columns added again after m: a rollback to m undid them.
func (r *diffRig) undo(m diffMark) {
	r.addedAgain = slices.DeleteFunc(r.addedAgain, func(a diffMark) bool { return a.seq > m.seq })
}

// noteDDL notes the tables whose rows checkDiff cannot compare after q ran:
// a table one of whose columns q renamed, one whose rowid's name it
// changed (dropping a column named rowid, oid or _rowid_), or one it added
// a column to that a statement dropped earlier in the call, which holds
// other values in rows no statement wrote (r.addedAgain, unless a rollback
// undoes the ADD COLUMN: the rows then hold their first values). A column
// dropped changes no row.
func (r *diffRig) noteDDL(q string) {
	f := strings.Fields(q)
	switch {
	case strings.Contains(q, "RENAME COLUMN"):
		r.renamed[f[2]] = true
	case strings.Contains(q, "DROP COLUMN"):
		r.dropped[f[2]+"\x00"+f[5]] = true
		if slices.Contains([]string{"rowid", "oid", "_rowid_"}, f[5]) {
			r.renamed[f[2]] = true
		}
	case strings.Contains(q, "ADD COLUMN"):
		if r.dropped[f[2]+"\x00"+f[5]] {
			r.addedAgain = append(r.addedAgain, r.mark(f[2]))
		}
	}
}

// release releases the store's connection and has the sibling use (and
// release) one, which rebinds the connection parked.
func (r *diffRig) release() {
	ctx := context.Background()
	r.logf("Release")
	if err := r.s.Release(); err != nil {
		r.t.Fatal(err)
	}
	if r.sib != nil {
		if _, err := r.sib.Query(ctx, `SELECT count(*) FROM main.sqlite_schema`); err != nil {
			r.t.Fatal(err)
		}
		if err := r.sib.Release(); err != nil {
			r.t.Fatal(err)
		}
	}
}

// endFrame commits or rolls back f.
func (r *diffRig) endFrame(f *sqlitestore.Frame) {
	r.open--
	i := r.markIndex("")
	var err error
	if r.d.n(2) == 0 {
		r.logf("Rollback")
		err = f.Rollback()
		r.undo(r.marks[i])
	} else {
		r.logf("Commit")
		if err = f.Commit(); err != nil {
			r.logf("Commit -- %v", err)
			err = f.Rollback()
			r.undo(r.marks[i])
		}
	}
	r.marks = r.marks[:i]
	if err != nil {
		r.t.Fatal(err)
	}
}

// call runs a random captured call, nested captures (depth > 0) in it, and
// checks its changes against the rows. It returns the identities of the
// rows the capture reported, for the capture around it; nil when it was
// refused, and the rows it touched are unknown.
func (r *diffRig) call(depth int) map[string]bool {
	ctx := context.Background()
	// SQLite may have rolled an open frame's transaction back on its own
	// (SQLITE_FULL once AUTOINCREMENT runs out of rowids): the store then
	// refuses every statement until the frames end, snapshots included.
	lost := r.open > 0 && !r.s.InTransaction()
	var before diffSnapshot
	if !lost {
		before = snapshotTables(r.t, r.s)
	}
	c := r.s.StartCapture()
	r.logf("-- capture %d", depth)
	var frames []*sqlitestore.Frame
	inner := map[string]bool{}
	refused := false // an inner capture's rows are unknown
	outerRolledBack := r.rolledBack
	r.rolledBack = false
	defer func() { r.rolledBack = r.rolledBack || outerRolledBack }()
	if depth == 0 {
		r.renamed, r.dropped, r.addedAgain = map[string]bool{}, map[string]bool{}, nil
	}
	for n := r.d.n(10); n >= 0 && !r.d.done(); n-- {
		switch r.d.n(16) {
		case 0:
			if f, err := r.s.Begin(ctx); err == nil {
				frames = append(frames, f)
				r.open++
				r.marks = append(r.marks, r.mark(""))
				r.logf("Begin")
			} else {
				r.logf("Begin -- %v", err)
			}
		case 1:
			if len(frames) > 0 {
				r.endFrame(frames[len(frames)-1])
				frames = frames[:len(frames)-1]
			}
		case 2:
			if len(frames) == 0 {
				r.release()
			}
		case 3:
			if depth < 2 {
				ids := r.call(depth + 1)
				refused = refused || ids == nil
				for id := range ids {
					inner[id] = true
				}
			}
		case 4:
			r.script()
		case 5:
			r.exec(true)
		default:
			r.exec(false)
		}
	}
	for i := len(frames) - 1; i >= 0; i-- {
		r.endFrame(frames[i])
	}
	rows, err := c.FinishRows(ctx)
	r.logf("-- end of capture %d", depth)
	if err != nil {
		if refusal(err) {
			r.logf("refused: %v", err)
			return nil
		}
		r.t.Fatalf("Finish: %v", err)
	}
	if refused {
		return nil
	}
	if lost || r.open > 0 && !r.s.InTransaction() {
		r.logf("not checked: the transaction was lost")
		return nil
	}
	if depth > 0 && r.rolledBack {
		// Rows the rollback undid that the outer capture touched are the
		// outer one's to report.
		r.logf("not checked: a ROLLBACK TO ran in an inner capture")
		ids := map[string]bool{}
		for _, row := range rows {
			ids[rowID(row)] = true
		}
		for id := range inner {
			ids[id] = true
		}
		return ids
	}
	after := snapshotTables(r.t, r.s)
	skip := maps.Clone(r.renamed)
	for _, a := range r.addedAgain {
		skip[a.name] = true
	}
	if err := checkDiff(before, after, rows, skip, inner); err != nil {
		changes := make([]sqlitestore.Change, len(rows))
		for i, r := range rows {
			changes[i] = r.Change()
		}
		r.t.Fatalf("capture %d: changes differ from the rows:\n%v\nchanges:\n%s", depth, err, formatChanges(changes))
	}
	for _, row := range rows {
		inner[rowID(row)] = true
	}
	return inner
}

// rowID is a reported row's identity: table, key columns, key.
func rowID(r sqlitestore.RowChange) string {
	return r.Table + "\x00" + strings.Join(r.KeyNames, "\x00") + "\x00" + diffKey(r.KeyValues)
}

// runCaptureDiff runs the differential test on one input.
// A wide run draws from the wider generator too.
func runCaptureDiff(t *testing.T, in []byte, wide bool) {
	ctx := context.Background()
	d := &diffSource{in: in, wide: wide}
	schema, tables := diffSchema(d)
	r := &diffRig{t: t, d: d, tables: tables}
	defer func() {
		if t.Failed() {
			t.Logf("schema:\n%s\nstatements:\n%s", schema, strings.Join(r.log, "\n"))
		}
	}()
	if d.n(3) == 0 && rebindSupported() {
		// Two stores copied from one file, which share a parked connection.
		dir := t.TempDir()
		path := filepath.Join(dir, "frozen.sqlite")
		f := MustCreate(t, schema, sqlitestore.Options{Path: path})
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		pool := sqlitestore.NewPool(8)
		t.Cleanup(pool.CloseParked)
		for i, s := range []**sqlitestore.Store{&r.s, &r.sib} {
			if *s, err = sqlitestore.Open(ctx, sqlitestore.Options{
				Path: filepath.Join(dir, fmt.Sprintf("s%d.sqlite", i)), Pool: pool,
				Lazy: true, Data: data, ShareKey: "k", ExclusiveLock: true,
			}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { (*s).Close() })
		}
	} else {
		r.s = MustCreate(t, schema, sqlitestore.Options{ExclusiveLock: d.n(2) == 0})
	}
	// Rows to start from, outside any capture.
	for range 4 {
		var sp int
		q := diffStatement(d, tables, &sp)
		if strings.HasPrefix(q, "INSERT") {
			if _, err := r.s.Exec(ctx, q); err == nil {
				r.logf("setup: %s", q)
			}
		}
	}
	for call := 0; !d.done() && call < 6; call++ {
		r.call(0)
		if t.Failed() {
			return
		}
	}
	if got := MustOne(t, r.s, `PRAGMA integrity_check`); got != "ok" {
		t.Fatalf("integrity_check: %v", got)
	}
}

// rebindSupported reports whether parked connections can be rebound here.
func rebindSupported() bool { return runtime.GOOS == "linux" }

// diffInput is the input of the differential test for seed.
func diffInput(seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0))
	in := make([]byte, 300)
	for i := range in {
		in[i] = byte(r.Uint32())
	}
	return in
}

// raceBuild is set in a build with the race detector, which makes the
// differential test about twenty times slower.
var raceBuild bool

// TestCapture_Differential runs the differential test on random inputs.
func TestCapture_Differential(t *testing.T) { runCaptureDiffSeeds(t, false) }

// FuzzCaptureDiff is the differential test under the fuzzer. Its seeds
// include inputs whose rows hold the integral default of a REAL column
// added by ALTER TABLE (226, 332).
func FuzzCaptureDiff(f *testing.F) { fuzzCaptureDiff(f, false, 0, 1, 226, 332) }

// runCaptureDiffSeeds runs the differential test, with the wider generator
// when wide is set, on the inputs of the first 120 seeds (20 under -short
// or the race detector).
func runCaptureDiffSeeds(t *testing.T, wide bool) {
	n := 120
	if testing.Short() || raceBuild {
		n = 20
	}
	for seed := range uint64(n) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runCaptureDiff(t, diffInput(seed), wide) })
		if t.Failed() {
			return
		}
	}
}

// fuzzCaptureDiff runs the differential test under the fuzzer, starting
// from the inputs of seeds.
func fuzzCaptureDiff(f *testing.F, wide bool, seeds ...uint64) {
	for _, seed := range seeds {
		f.Add(diffInput(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 400 {
			in = in[:400]
		}
		runCaptureDiff(t, in, wide)
	})
}
