//go:build capturecheck

package sqlitestore

// The capturecheck build tag verifies every capture against the rows it
// touched (see verifyEvents).
func init() { verifyEvents = true }
