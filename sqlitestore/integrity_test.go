package sqlitestore_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/seahaven/seahaven/sqlitestore"
)

// TestInspector_IntegrityCheck checks that a grader can verify every store
// through the read-only inspection connection: integrity_check and
// quick_check are allowed (over every attached schema when none is named),
// and they report a damaged store.
func TestInspector_IntegrityCheck(t *testing.T) {
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		_, _, in := inspectorFixture(t)
		for _, q := range []string{
			"PRAGMA integrity_check",
			"PRAGMA payments.integrity_check",
			"PRAGMA quick_check",
			"PRAGMA main.quick_check(10)",
			"SELECT * FROM pragma_integrity_check",
		} {
			rows, err := in.Query(ctx, q)
			if err != nil {
				t.Errorf("%s: %v", q, err)
				continue
			}
			if want := [][]any{{"ok"}}; !reflect.DeepEqual(rows.Values, want) {
				t.Errorf("%s = %v, want %v", q, rows.Values, want)
			}
		}
	})
	t.Run("Damaged", func(t *testing.T) {
		dir := t.TempDir()
		root := MustCreate(t, `CREATE TABLE staff (id TEXT PRIMARY KEY) STRICT;`, sqlitestore.Options{Path: filepath.Join(dir, "state.sqlite")})
		pay := MustCreate(t, `CREATE TABLE charges (id TEXT PRIMARY KEY, amount INTEGER NOT NULL) STRICT;`,
			sqlitestore.Options{Path: filepath.Join(dir, "state.payments.sqlite")})
		for i := range 200 {
			MustExec(t, pay, `INSERT INTO charges VALUES (?, ?)`, i, i)
		}
		// Close the stores, so every row is in the file, then damage the
		// table's pages behind SQLite's back.
		if err := pay.Close(); err != nil {
			t.Fatal(err)
		}
		if err := root.Close(); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(pay.Path(), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() < 3*4096 {
			t.Fatalf("the store has %d bytes, too few pages to damage one", fi.Size())
		}
		junk := make([]byte, 4096)
		for i := range junk {
			junk[i] = byte(i*7 + 3)
		}
		if _, err := f.WriteAt(junk, 2*4096); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		in, err := sqlitestore.OpenInspector(ctx, root.Path(),
			[]sqlitestore.Attachment{{Schema: "payments", Path: pay.Path()}}, sqlitestore.InspectorOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		rows, err := in.Query(ctx, "PRAGMA integrity_check")
		if err == nil && reflect.DeepEqual(rows.Values, [][]any{{"ok"}}) {
			t.Fatal("integrity_check reports ok for a damaged store")
		}
	})
}
