//go:build !linux

package openenv_test

import "testing"

// watchOpens needs inotify; elsewhere the tests using it are skipped.
type watchOpens struct{}

// newWatchOpens skips the test: watching for file opens needs inotify.
func newWatchOpens(tb testing.TB, _ ...string) *watchOpens {
	tb.Skip("watching for file opens needs inotify (Linux)")
	return nil
}

// events is never reached.
func (w *watchOpens) events(testing.TB) []string { return nil }
