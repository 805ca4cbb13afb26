//go:build capturecheck

package sqlitestore

// captureCheck is set by the capturecheck build tag: every capture is
// verified against the rows it touched (see verifyEvents).
const captureCheck = true
