package sqlitestore

import "sync/atomic"

// liveConns counts the connections openConn made that are not closed yet.
var liveConns atomic.Int64

// OpenConnections returns how many SQLite connections of stores, inspectors
// and schema probes are open in this process right now (the few helper
// connections behind the date and time functions are not counted). With
// idle release it falls back to its baseline once every store is idle. It
// is safe for concurrent use.
func OpenConnections() int { return int(liveConns.Load()) }
