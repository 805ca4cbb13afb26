package openenv

import (
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"time"
)

// ConnectionCounter is implemented by a Backend whose instances hold
// database connections. GET /debug/runtime reports the count, so load tests
// can check that idle sessions hold none. OpenConnections must be safe for
// concurrent use.
type ConnectionCounter interface {
	OpenConnections() int
}

// ParkedCounter is implemented by a Backend whose released connections are
// kept open for reuse, bound to no instance. GET /debug/runtime reports the
// count. ParkedConnections must be safe for concurrent use.
type ParkedCounter interface {
	ParkedConnections() int
}

// RuntimeStats is the body of GET /debug/runtime: what a load generator
// samples to watch the server's footprint. A field the server cannot read on
// this platform or from this backend is -1.
type RuntimeStats struct {
	// PID is the server's process id.
	PID int `json:"pid"`
	// Goroutines is the number of live goroutines.
	Goroutines int64 `json:"goroutines"`
	// HeapAlloc is the bytes of live and not yet swept heap objects.
	HeapAlloc int64 `json:"heap_alloc"`
	// Sessions is the number of live sessions of every transport.
	Sessions int `json:"sessions"`
	// OpenSQLiteConnections is the backend's open connections
	// ([ConnectionCounter]).
	OpenSQLiteConnections int `json:"open_sqlite_connections"`
	// ParkedSQLiteConnections is the backend's parked connections, open but
	// held by no instance ([ParkedCounter]); not counted in
	// OpenSQLiteConnections.
	ParkedSQLiteConnections int `json:"parked_sqlite_connections"`
	// InstanceDirs is the backend's instance directories on disk
	// ([InstanceDirCounter]).
	InstanceDirs int `json:"instance_dirs"`
	// RSSBytes is the process's resident set size (Linux: VmRSS).
	RSSBytes int64 `json:"rss_bytes"`
	// OpenFDs is the process's open file descriptors (Linux: /proc/self/fd).
	OpenFDs int `json:"open_fds"`
	// CPUNanos is the CPU time, user and system, the process has used
	// (Linux: /proc/self/stat, in steps of 10 ms).
	CPUNanos int64 `json:"cpu_ns"`
}

// Runtime samples the server's runtime statistics. It is safe for concurrent
// use and cheap enough to call every second.
func (s *Server) Runtime() RuntimeStats {
	// Reading runtime/metrics does not stop the world.
	samples := []metrics.Sample{{Name: "/sched/goroutines:goroutines"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(samples)
	st := RuntimeStats{
		PID:                     os.Getpid(),
		Goroutines:              sampleInt(samples[0]),
		HeapAlloc:               sampleInt(samples[1]),
		OpenSQLiteConnections:   -1,
		ParkedSQLiteConnections: -1,
		InstanceDirs:            -1,
		RSSBytes:                -1,
		OpenFDs:                 -1,
		CPUNanos:                -1,
	}
	s.processFootprint(&st)
	s.mu.Lock()
	st.Sessions = len(s.sessions)
	s.mu.Unlock()
	if cc, ok := s.backend.(ConnectionCounter); ok {
		st.OpenSQLiteConnections = cc.OpenConnections()
	}
	if pc, ok := s.backend.(ParkedCounter); ok {
		st.ParkedSQLiteConnections = pc.ParkedConnections()
	}
	if dc, ok := s.backend.(InstanceDirCounter); ok {
		if n, err := dc.InstanceDirs(); err == nil {
			st.InstanceDirs = n
		}
	}
	return st
}

// DebugGCInterval is the least time between two garbage collections that
// GET /debug/runtime?gc=1 forces. A collection stops the world's
// allocations and costs CPU in proportion to the heap, so a client must
// not be able to force one per request.
const DebugGCInterval = 5 * time.Second

// serveRuntime serves GET /debug/runtime, an infrastructure route. With
// ?gc=1 it collects garbage first, so heap_alloc counts live objects only;
// see runtimeAfterGC.
func (s *Server) serveRuntime(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("gc") == "1" {
		writeJSON(w, http.StatusOK, s.runtimeAfterGC())
		return
	}
	s.respond(w, http.StatusOK, s.Runtime())
}

// runtimeAfterGC forces a garbage collection and samples the statistics,
// at most once per DebugGCInterval; a request within the interval gets the
// statistics sampled after the last collection. Concurrent requests wait
// for one collection rather than each forcing their own.
func (s *Server) runtimeAfterGC() RuntimeStats {
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	if !s.gcAt.IsZero() && time.Since(s.gcAt) < DebugGCInterval {
		return s.gcStats
	}
	runtime.GC()
	s.gcStats, s.gcAt = s.Runtime(), time.Now()
	return s.gcStats
}

func sampleInt(s metrics.Sample) int64 {
	if s.Value.Kind() != metrics.KindUint64 {
		return -1
	}
	return int64(s.Value.Uint64())
}

// processFootprint fills st's RSS, open files and CPU time from the
// Prometheus process collector the server's metrics serve; a figure the
// platform does not report stays -1.
func (s *Server) processFootprint(st *RuntimeStats) {
	families, err := s.metrics.process.Gather()
	if err != nil {
		return
	}
	for _, f := range families {
		if len(f.GetMetric()) == 0 {
			continue
		}
		m := f.GetMetric()[0]
		switch f.GetName() {
		case "process_resident_memory_bytes":
			st.RSSBytes = int64(m.GetGauge().GetValue())
		case "process_open_fds":
			st.OpenFDs = int(m.GetGauge().GetValue())
		case "process_cpu_seconds_total":
			st.CPUNanos = int64(m.GetCounter().GetValue() * 1e9)
		}
	}
}
