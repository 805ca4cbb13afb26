package openenv

// DuplicateKey exposes duplicateKey to the external tests, which check it
// against a reference built on encoding/json.
var DuplicateKey = duplicateKey

// PendingBytes returns the bytes WebSocket sessions have read ahead (held
// in the server's MaxPendingTotal budget) and the readers waiting for room
// in their session's or the server's read-ahead budget.
func (s *Server) PendingBytes() (used int64, waiting int) {
	return s.pending.held(), int(s.aheadWaiting.Load())
}
