package sqlitestore_test

import (
	"testing"

	"github.com/seahaven/seahaven/sqlitestore"
)

func TestOpenConnections(t *testing.T) {
	base := sqlitestore.OpenConnections()
	s := MustCreate(t, `CREATE TABLE t (x);`, sqlitestore.Options{})
	if got := sqlitestore.OpenConnections(); got != base+1 {
		t.Errorf("with one open store: OpenConnections() = %d, want %d", got, base+1)
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if got := sqlitestore.OpenConnections(); got != base {
		t.Errorf("after Release: OpenConnections() = %d, want %d", got, base)
	}
	MustExec(t, s, `INSERT INTO t VALUES (1)`)
	if got := sqlitestore.OpenConnections(); got != base+1 {
		t.Errorf("after reopening: OpenConnections() = %d, want %d", got, base+1)
	}
	s.Close()
	if got := sqlitestore.OpenConnections(); got != base {
		t.Errorf("after Close: OpenConnections() = %d, want %d", got, base)
	}
}
