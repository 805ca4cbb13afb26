package sqlitestore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/sqlitestore"
)

// hugeRows is 1,000 rows of 16 MB each: read whole, 16 GB.
const hugeRows = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 1000) SELECT zeroblob(16000000) FROM c`

func TestInspector_QueryLimit(t *testing.T) {
	ctx := context.Background()
	_, _, in := inspectorFixture(t)
	const five = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 5) SELECT x, 'abc' FROM c`

	t.Run("Rows", func(t *testing.T) {
		for _, tt := range []struct {
			max       int    // ReadLimit.MaxRows
			rows      int    // rows read
			truncated string // Rows.Truncated
		}{
			{3, 3, sqlitestore.TruncatedRows},
			{5, 5, ""},
			{6, 5, ""},
			{0, 5, ""},
		} {
			rows, err := in.QueryLimit(ctx, sqlitestore.ReadLimit{MaxRows: tt.max}, five)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows.Values) != tt.rows || rows.Truncated != tt.truncated {
				t.Errorf("MaxRows %d: %d rows, truncated %q; want %d, %q", tt.max, len(rows.Values), rows.Truncated, tt.rows, tt.truncated)
			}
		}
	})

	t.Run("Bytes", func(t *testing.T) {
		// Each row is 4 bytes: an integer (1) and 'abc' (3).
		for _, tt := range []struct {
			max       int64  // ReadLimit.MaxBytes
			rows      int    // rows read
			truncated string // Rows.Truncated
		}{
			{3, 0, sqlitestore.TruncatedBytes},
			{4, 1, sqlitestore.TruncatedBytes},
			{19, 4, sqlitestore.TruncatedBytes},
			{20, 5, ""},
		} {
			rows, err := in.QueryLimit(ctx, sqlitestore.ReadLimit{MaxBytes: tt.max}, five)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows.Values) != tt.rows || rows.Truncated != tt.truncated {
				t.Errorf("MaxBytes %d: %d rows, truncated %q; want %d, %q", tt.max, len(rows.Values), rows.Truncated, tt.rows, tt.truncated)
			}
			var size int64
			for _, r := range rows.Values {
				size += sqlitestore.RowSize(r)
			}
			if size > tt.max {
				t.Errorf("MaxBytes %d: read %d bytes", tt.max, size)
			}
		}
	})

	t.Run("HugeRowsStayOutOfMemory", func(t *testing.T) {
		// Reading stops at the limit, and the row past it is measured
		// where SQLite holds it, never copied.
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rows, err := in.QueryLimit(ctx, sqlitestore.ReadLimit{MaxRows: 1000, MaxBytes: 40 << 20}, hugeRows)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows.Values) != 2 || rows.Truncated != sqlitestore.TruncatedBytes {
			t.Errorf("%d rows, truncated %q; want 2 rows cut by bytes", len(rows.Values), rows.Truncated)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
			t.Errorf("the query allocated %d MiB, want at most the 32 MB it kept and some", alloc>>20)
		}
	})
}

func TestInspector_TransactionControl(t *testing.T) {
	ctx := context.Background()
	root, _, in := inspectorFixture(t)

	t.Run("Refused", func(t *testing.T) {
		for _, tt := range []struct {
			sql  string // the statement
			word string // the statement the error names
		}{
			{`BEGIN`, "BEGIN"},
			{`BEGIN IMMEDIATE`, "BEGIN"},
			{`begin exclusive transaction`, "BEGIN"},
			{`COMMIT`, "COMMIT"},
			{`END`, "COMMIT"},
			{`ROLLBACK`, "ROLLBACK"},
			{`SAVEPOINT s`, "SAVEPOINT"},
			{`RELEASE s`, "RELEASE"},
			{`ROLLBACK TO s`, "ROLLBACK TO"},
		} {
			_, err := in.Query(ctx, tt.sql)
			if !errors.Is(err, sqlitestore.ErrTransaction) || !strings.Contains(err.Error(), tt.word+" is not allowed on the inspection connection") {
				t.Errorf("%s: err = %v, want %s refused with ErrTransaction", tt.sql, err, tt.word)
			}
			if !in.Autocommit() {
				t.Errorf("%s: the connection is in a transaction after it", tt.sql)
			}
		}
	})

	t.Run("WriterNeverWaits", func(t *testing.T) {
		// A BEGIN and a read would have kept a read lock across queries:
		// the store's next commit would wait out the busy timeout and fail.
		in.Query(ctx, `BEGIN`)
		if _, err := in.Query(ctx, `SELECT count(*) FROM staff`); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, sqlitestore.BusyTimeout/2)
		defer cancel()
		if _, err := root.Exec(wctx, `INSERT INTO staff VALUES ('w1')`); err != nil {
			t.Fatalf("commit after an inspect BEGIN: %v", err)
		}
	})

	t.Run("EndsWhatIsLeftOpen", func(t *testing.T) {
		for _, sql := range []string{`SELECT 1`, `SELECT * FROM no_such_table`, `BEGIN`} {
			if err := in.BeginForTest(); err != nil {
				t.Fatal(err)
			}
			in.Query(ctx, sql)
			if !in.Autocommit() {
				t.Errorf("after %s: the transaction left open is still open", sql)
			}
		}
	})
}

func TestInspector_TempStorage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	root := MustCreate(t, `CREATE TABLE t (x);`, sqlitestore.Options{Path: filepath.Join(dir, "root.sqlite")})
	in, err := sqlitestore.OpenInspector(ctx, root.Path(), nil, sqlitestore.InspectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	// Temporary files go to SQLITE_TMPDIR; one that does not exist fails
	// every statement that writes one.
	t.Setenv("SQLITE_TMPDIR", filepath.Join(dir, "missing"))

	t.Run("InMemory", func(t *testing.T) {
		// About 8 MB to sort: more than the sorter keeps in memory before it
		// spills to temporary files when temp storage is on disk.
		const sort = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 8000)
			SELECT x FROM c ORDER BY randomblob(1000)`
		rows, err := in.QueryLimit(ctx, sqlitestore.ReadLimit{MaxRows: 1}, sort)
		if err != nil {
			t.Fatalf("sort: %v", err)
		}
		if len(rows.Values) != 1 {
			t.Errorf("%d rows", len(rows.Values))
		}
		if _, err := in.Query(ctx, `SELECT count(*) FROM (`+sort+`) GROUP BY x % 7`); err != nil {
			t.Fatalf("materialised sort: %v", err)
		}
	})

	t.Run("Capped", func(t *testing.T) {
		// 200 MB to sort: past the connection's memory cap.
		const huge = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 200000)
			SELECT x FROM c ORDER BY randomblob(1000)`
		_, err := in.QueryLimit(ctx, sqlitestore.ReadLimit{MaxRows: 1}, huge)
		if !errors.Is(err, sqlitestore.ErrOutOfMemory) {
			t.Fatalf("err = %v, want ErrOutOfMemory", err)
		}
		if rows, err := in.Query(ctx, `SELECT count(*) FROM t`); err != nil || len(rows.Values) != 1 {
			t.Fatalf("after running out of memory: %v, %v", rows, err)
		}
		if !in.Autocommit() {
			t.Error("a transaction is open after running out of memory")
		}
	})
}

func TestInspector_Random(t *testing.T) {
	ctx := context.Background()
	root, _, _ := inspectorFixture(t)
	sample := func(opts sqlitestore.InspectorOptions) []any {
		t.Helper()
		in, err := sqlitestore.OpenInspector(ctx, root.Path(), nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		rows, err := in.Query(ctx, `SELECT random(), hex(randomblob(4))`)
		if err != nil {
			t.Fatal(err)
		}
		return rows.Values[0]
	}
	a, b := sample(sqlitestore.InspectorOptions{}), sample(sqlitestore.InspectorOptions{})
	if a[0] != b[0] || a[1] != b[1] {
		t.Errorf("two inspectors with the default stream sampled %v and %v", a, b)
	}
	n := uint64(0)
	counter := func() uint64 { n++; return n }
	if got := sample(sqlitestore.InspectorOptions{Random: counter}); got[0] != int64(1) {
		t.Errorf("random() = %v, want the first value of Random", got[0])
	}
}

// TestInspector_PaddedStatementsAreNotKept sends distinct statements
// padded with megabytes of white space and comments: each is cached, and
// the cache must not keep the padding, which SQLite never sees, or 128 of
// them would pin a gigabyte of the server's memory per inspector.
func TestInspector_PaddedStatementsAreNotKept(t *testing.T) {
	ctx := context.Background()
	_, _, in := inspectorFixture(t)
	const n, size = 32, 4 << 20 // 128 MiB of padding in all
	pad := strings.Repeat(" ", size)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		sql := fmt.Sprintf("/* %d */%sSELECT count(*) + %d FROM staff;%s", i, pad, i, pad[:i])
		if i%2 == 1 {
			sql = fmt.Sprintf("SELECT count(*) + %d FROM staff; /* %s */", i, pad)
		}
		rows, err := in.Query(ctx, sql)
		if err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
		if want := int64(2 + i); rows.Values[0][0] != want {
			t.Fatalf("query %d: %v, want %d", i, rows.Values, want)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > n*size/4 {
		t.Errorf("the heap grew by %d MiB over %d padded statements: the padding is kept", grown>>20, n)
	}

	t.Run("SameStatementReused", func(t *testing.T) {
		// The same statement with a different padding, or none, is the
		// cached one, and still answers.
		for _, sql := range []string{"SELECT count(*) FROM staff", "  SELECT count(*) FROM staff ;; ",
			"SELECT count(*) FROM staff; /* c */", "SELECT count(*) FROM staff; -- c", "SELECT count(*) FROM staff -- c;"} {
			rows, err := in.Query(ctx, sql)
			if err != nil {
				t.Fatalf("%q: %v", sql, err)
			}
			if rows.Values[0][0] != int64(2) {
				t.Errorf("%q: %v, want 2", sql, rows.Values)
			}
		}
	})
}

// TestInspector_LongStatementsAreNotKept runs distinct statements near
// MaxInspectSQL: each prepared statement holds about twice its text in
// the connection's memory, and kept in the statement cache eighteen of
// them left too little of the memory cap to prepare the next. The cache
// now gives way, and every query answers.
func TestInspector_LongStatementsAreNotKept(t *testing.T) {
	ctx := context.Background()
	_, _, in := inspectorFixture(t)
	lit := strings.Repeat("x", sqlitestore.MaxInspectSQL-100)
	for i := range 40 {
		rows, err := in.Query(ctx, fmt.Sprintf("SELECT length('%s') + %d AS n", lit, i))
		if err != nil {
			t.Fatalf("statement %d: %v", i+1, err)
		}
		if want := int64(len(lit) + i); rows.Values[0][0] != want {
			t.Fatalf("statement %d: %v, want %d", i+1, rows.Values, want)
		}
		if used := in.StmtMemory(); used > sqlitestore.DefaultMaxMemory/8 {
			t.Fatalf("after statement %d the statements hold %d bytes", i+1, used)
		}
	}
	if rows, err := in.Query(ctx, `SELECT count(*) FROM staff`); err != nil || rows.Values[0][0] != int64(2) {
		t.Fatalf("a new statement after them: %v, %v", rows, err)
	}
}
