package sqlitestore

import "testing"

// TestAffinity: declared types get SQLite's affinities, by its rules in
// order (https://sqlite.org/datatype3.html, 3.1), and STRICT tables keep
// REAL and ANY as named.
func TestAffinity(t *testing.T) {
	for _, c := range []struct {
		typ  string
		want string
	}{
		{"INTEGER", "INTEGER"}, {"BIGINT", "INTEGER"}, {"POINT", "INTEGER"}, {"FLOATING POINT", "INTEGER"},
		{"VARCHAR(10)", "TEXT"}, {"CLOB", "TEXT"}, {"text", "TEXT"}, {"CHARINT", "INTEGER"},
		{"", "BLOB"}, {"BLOB", "BLOB"}, {"BLOBDOUBLE", "BLOB"}, {"REALBLOB", "BLOB"},
		{"REAL", "REAL"}, {"DOUBLE PRECISION", "REAL"}, {"float", "REAL"},
		{"NUMERIC", "NUMERIC"}, {"DECIMAL(10,5)", "NUMERIC"}, {"BOOLEAN", "NUMERIC"}, {"DATETIME", "NUMERIC"}, {"STRING", "NUMERIC"},
	} {
		if got := affinity(c.typ); got != c.want {
			t.Errorf("affinity(%q) = %s, want %s", c.typ, got, c.want)
		}
		if got := realAffinity(c.typ, false); got != (c.want == "REAL") {
			t.Errorf("realAffinity(%q, false) = %v", c.typ, got)
		}
		if got := blobAffinity(c.typ, false); got != (c.want == "BLOB") {
			t.Errorf("blobAffinity(%q, false) = %v", c.typ, got)
		}
	}
	for _, c := range []struct {
		typ        string
		real, blob bool
	}{{"REAL", true, false}, {"real", true, false}, {"ANY", false, true}, {"INTEGER", false, false}, {"BLOB", false, false}} {
		if got := realAffinity(c.typ, true); got != c.real {
			t.Errorf("realAffinity(%q, true) = %v", c.typ, got)
		}
		if got := blobAffinity(c.typ, true); got != c.blob {
			t.Errorf("blobAffinity(%q, true) = %v", c.typ, got)
		}
	}
}
