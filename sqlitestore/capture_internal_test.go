package sqlitestore

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestCapture_HookFailureOuterRereads makes the preupdate hook fail on an
// event the inner of two captures receives: the inner capture fails, and
// the outer one, which had touched the same row before, reads the row back
// instead of trusting the image it kept from before the lost event.
func TestCapture_HookFailureOuterRereads(t *testing.T) {
	NoVerifyEvents(t) // the outer capture's result is compared below instead
	ctx := context.Background()
	s, err := Create(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a');`,
		Options{Path: filepath.Join(t.TempDir(), "state.sqlite")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	exec := func(sql string) {
		t.Helper()
		if _, err := s.Exec(ctx, sql); err != nil {
			t.Fatalf("Exec(%q): %v", sql, err)
		}
	}
	outer := s.StartCapture()
	exec(`UPDATE t SET v = 'b'`)
	inner := s.StartCapture()
	// Metadata whose key position is out of range: keying the event's new
	// image panics inside the hook.
	s.mu.Lock()
	good := s.cn.meta["t"]
	bad := *good
	bad.pkPos = []int{99}
	s.cn.meta["t"] = &bad
	s.mu.Unlock()
	exec(`UPDATE t SET v = 'c'`)
	s.mu.Lock()
	s.cn.meta["t"] = good
	s.mu.Unlock()
	if _, err := inner.Finish(ctx); err == nil || !strings.Contains(err.Error(), "change capture lost an event on t") {
		t.Fatalf("inner Finish = %v, want the lost event", err)
	}
	changes, err := outer.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(changes), "[{t update map[id:1] [1] map[id:1 v:a] map[id:1 v:c]}]"; got != want {
		t.Errorf("outer changes = %s, want %s", got, want)
	}
}
