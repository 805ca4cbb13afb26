package openenv_test

import (
	"encoding/json"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/openenv"
)

// runtimeStats reads GET /debug/runtime.
func (s *testServer) runtimeStats(tb testing.TB) openenv.RuntimeStats {
	tb.Helper()
	code, body, _ := s.httpDo(tb, "GET", "/debug/runtime", "", nil)
	if code != http.StatusOK {
		tb.Fatalf("GET /debug/runtime: status %d, body %s", code, body)
	}
	var st openenv.RuntimeStats
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		tb.Fatalf("GET /debug/runtime: %v in %s", err, body)
	}
	return st
}

func TestServer_DebugRuntime(t *testing.T) {
	t.Run("FakeBackend", func(t *testing.T) {
		s := mustServe(t, newFake(t), openenv.Config{})
		st := s.runtimeStats(t)
		if st.PID != os.Getpid() || st.Sessions != 0 || st.Goroutines <= 0 || st.HeapAlloc <= 0 {
			t.Errorf("stats %+v: want this pid, no session, some goroutines and heap", st)
		}
		if st.OpenSQLiteConnections != -1 || st.ParkedSQLiteConnections != -1 || st.InstanceDirs != -1 {
			t.Errorf("stats %+v: a backend that counts neither connections nor directories must report -1", st)
		}
		if runtime.GOOS == "linux" && (st.RSSBytes <= 0 || st.OpenFDs <= 0) {
			t.Errorf("stats %+v: want the process's RSS and open files", st)
		}
		c := s.dial(t)
		roundTrip(t, c, `{"type":"reset"}`)
		if got := s.runtimeStats(t).Sessions; got != 1 {
			t.Errorf("sessions with one socket = %d, want 1", got)
		}
	})
	t.Run("GC", func(t *testing.T) {
		s := mustServe(t, newFake(t), openenv.Config{})
		garbage = make([]byte, 64<<20) // dropped below: garbage once unreferenced
		garbage = nil
		code, body, _ := s.httpDo(t, "GET", "/debug/runtime?gc=1", "", nil)
		var st openenv.RuntimeStats
		if err := json.Unmarshal([]byte(body), &st); code != http.StatusOK || err != nil {
			t.Fatalf("GET /debug/runtime?gc=1: status %d, %v, body %s", code, err, body)
		}
		if st.HeapAlloc <= 0 || st.HeapAlloc >= 64<<20 {
			t.Errorf("heap_alloc after ?gc=1 = %d, want the live heap without the dropped 64 MiB", st.HeapAlloc)
		}
	})
	t.Run("WorldBackend", func(t *testing.T) {
		s := mustServeCompany(t, openenv.Config{})
		base := s.runtimeStats(t)
		if base.InstanceDirs != 0 || base.OpenSQLiteConnections < 0 {
			t.Fatalf("stats before any session %+v: want no instance directory and a connection count", base)
		}
		c := s.dial(t)
		roundTrip(t, c, `{"type":"reset"}`)
		mustSucceed(t, callTool(t, c, "invoice", `{"amount": 300}`))
		st := s.runtimeStats(t)
		if st.Sessions != 1 || st.InstanceDirs != 1 {
			t.Errorf("stats with one session %+v: want 1 session and 1 instance directory", st)
		}
		if want := composition.DefaultPool.Open(); st.OpenSQLiteConnections > want+2 || st.OpenSQLiteConnections < 0 {
			t.Errorf("open_sqlite_connections = %d, the pool has %d", st.OpenSQLiteConnections, want)
		}
		send(t, c, `{"type":"close"}`)
		s.settle(t)
		st = s.runtimeStats(t)
		if st.Sessions != 0 || st.InstanceDirs != 0 {
			t.Errorf("stats after close %+v: want no session and no instance directory", st)
		}
		// The closed instance's connections are parked (Linux) until the
		// pool's idle delay, or closed.
		if st.ParkedSQLiteConnections < 0 || st.ParkedSQLiteConnections > composition.DefaultPool.Parked()+2 {
			t.Errorf("parked_sqlite_connections = %d, the pool has %d", st.ParkedSQLiteConnections, composition.DefaultPool.Parked())
		}
	})
}

// garbage holds an allocation until the GC subtest drops it.
var garbage []byte
