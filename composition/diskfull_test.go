package composition_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/examples/worlds/company"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/internal/testfs"
)

// isDiskFull reports whether err says the file system ran out of space, in
// SQLite's words or the operating system's, or, when the space came back
// before the error was returned, that a write failed and the disk may be
// full.
func isDiskFull(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "database or disk is full") || strings.Contains(msg, "no space left on device") ||
		strings.Contains(msg, "writing to the file failed (the disk may be full)")
}

// mustIntegrity fails unless every store of inst passes integrity_check.
func mustIntegrity(tb testing.TB, inst *composition.Instance) {
	tb.Helper()
	rows, err := inst.Inspect().Query(context.Background(), "PRAGMA integrity_check")
	if err != nil {
		tb.Fatalf("integrity_check: %v", err)
	}
	if want := [][]any{{"ok"}}; !reflect.DeepEqual(rows.Values, want) {
		tb.Fatalf("integrity_check = %v", rows.Values)
	}
}

// inspectInt returns the single integer a query over the inspection view yields.
func inspectInt(tb testing.TB, inst *composition.Instance, sql string) int64 {
	tb.Helper()
	rows, err := inst.Inspect().Query(context.Background(), sql)
	if err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
	if len(rows.Values) != 1 || len(rows.Values[0]) != 1 {
		tb.Fatalf("%s: %v, want one value", sql, rows.Values)
	}
	n, ok := rows.Values[0][0].(int64)
	if !ok {
		tb.Fatalf("%s: %v is not an integer", sql, rows.Values[0][0])
	}
	return n
}

// fillerWorld writes as much as it is asked to in one call.
var fillerWorld = env.NewWorld(env.WorldSpec{
	Name: "filler", Version: "1.0.0",
	Schema: `CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB NOT NULL) STRICT;`,
})

// FillArgs are the arguments of fill.
type FillArgs struct {
	Rows int `json:"rows" doc:"How many rows to insert." min:"1"`
	Size int `json:"size" doc:"Bytes of random data per row." min:"1"`
}

var _ = env.Tool(fillerWorld, "fill", "Insert rows of random bytes, all in this one call.",
	func(c *env.Ctx, in FillArgs) (int, error) {
		for i := range in.Rows {
			if _, err := c.DB.Exec("INSERT INTO blobs (data) VALUES (randomblob(?))", in.Size); err != nil {
				return i, err
			}
		}
		return in.Rows, nil
	})

// TestDiskFull_DirectWrite runs out of disk space in a statement a host
// runs directly on an added world's store: the statement rolls back, and
// the call, which changed nothing, is no step.
func TestDiskFull_DirectWrite(t *testing.T) {
	ctx := context.Background()
	host := env.NewWorld(env.WorldSpec{Name: "directfiller", Version: "1.0.0", Schema: "CREATE TABLE h (x TEXT) STRICT;"})
	host.AddWorld(fillerWorld, env.Name("filler"), env.ToolAllowList())
	env.Tool(host, "fill_directly", "Insert rows of random bytes into the filler's store, in one statement.", func(c *env.Ctx, in FillArgs) (int, error) {
		_, err := c.Worlds.Get("filler").DB().Exec("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) INSERT INTO blobs (data) SELECT randomblob(?) FROM n", in.Rows, in.Size)
		return in.Rows, err
	})
	dir := testfs.MountTmpfs(t, "512k")
	inst, err := composition.Open(ctx, host, composition.Options{Dir: dir, ClockMode: env.ClockStep})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close() })
	// 64 rows of 16 KiB: twice the file system, in one statement.
	_, err = inst.CallJSON(ctx, "fill_directly", []byte(`{"rows":64,"size":16384}`))
	if ie := mustInfra(t, err, dir, env.FaultDiskFull, env.FaultStorage); !ie.NoStep {
		t.Errorf("NoStep is false for a call that changed nothing")
	}
	if st := inst.State(); st.StepCount != 0 || len(st.ChangeLog) != 0 {
		t.Errorf("after the failed call: step %d, change log %v; want no step and no change", st.StepCount, st.ChangeLog)
	}
	if n := inspectInt(t, inst, "SELECT count(*) FROM filler.blobs"); n != 0 {
		t.Errorf("%d rows after the failed call, want none", n)
	}
	if _, err := inst.CallJSON(ctx, "fill_directly", []byte(`{"rows":1,"size":100}`)); err != nil {
		t.Fatalf("a small call after the failure: %v", err)
	}
	if st := inst.State(); st.StepCount != 1 || len(st.ChangeLog) != 1 || st.ChangeLog[0].Call != 1 {
		t.Errorf("after the small call: step %d, change log %v; want its record as call 1", st.StepCount, st.ChangeLog)
	}
}

// TestDiskFull_Call runs out of disk space in the middle of calls on an
// instance whose directory is a small tmpfs. The call that fills the disk
// fails with an error that says so, nothing of it is committed, every store
// stays consistent, and the instance keeps serving calls.
func TestDiskFull_Call(t *testing.T) {
	ctx := context.Background()
	t.Run("OneLargeCall", func(t *testing.T) {
		dir := testfs.MountTmpfs(t, "512k")
		inst, err := composition.Open(ctx, fillerWorld, composition.Options{Dir: dir, ClockMode: env.ClockStep})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { inst.Close() })
		if _, err := inst.CallJSON(ctx, "fill", []byte(`{"rows":1,"size":100}`)); err != nil {
			t.Fatal(err)
		}
		mustIntegrity(t, inst) // opens the view before the disk fills
		before := inst.State()
		// 64 rows of 16 KiB: twice the file system, in one transaction.
		_, err = inst.CallJSON(ctx, "fill", []byte(`{"rows":64,"size":16384}`))
		if !isDiskFull(err) {
			t.Fatalf("filling the disk: %v, want an error saying the disk is full", err)
		}
		t.Logf("the call failed with: %v", err)
		// A failure of the host that changed nothing is no step: a retry
		// runs as the call would have.
		if after := inst.State(); after.StepCount != before.StepCount || after.Now != before.Now {
			t.Errorf("after the failed call: step %d at %s, want step %d at %s as before it", after.StepCount, after.Now, before.StepCount, before.Now)
		}
		if n := inspectInt(t, inst, "SELECT count(*) FROM blobs"); n != 1 {
			t.Errorf("%d rows after the failed call, want the 1 committed before it", n)
		}
		mustIntegrity(t, inst)
		if log := inst.ChangeLog(); len(log) != 1 {
			t.Errorf("change log has %d records, want only the first call's", len(log))
		}
		if _, err := inst.CallJSON(ctx, "fill", []byte(`{"rows":1,"size":100}`)); err != nil {
			t.Fatalf("a small call after the failure: %v", err)
		}
		if n := inspectInt(t, inst, "SELECT count(*) FROM blobs"); n != 2 {
			t.Errorf("%d rows, want 2", n)
		}
		if log := inst.ChangeLog(); len(log) != 2 || log[1].Call != 2 {
			t.Errorf("change log %+v, want the small call's record as call 2", log)
		}
		mustIntegrity(t, inst)
	})
	t.Run("CompanyChatUntilFull", func(t *testing.T) {
		dir := testfs.MountTmpfs(t, "512k")
		inst, err := composition.Open(ctx, company.World, composition.Options{Fixture: company.AcmeID, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { inst.Close() })
		before := inspectInt(t, inst, "SELECT count(*) FROM chat.messages")
		text := strings.Repeat("m", 4000)
		sent := int64(0)
		var failure error
		for range 1000 {
			_, err := inst.CallJSON(ctx, "chat_send_message", []byte(`{"channel":"general","text":"`+text+`"}`))
			if err != nil {
				failure = err
				break
			}
			sent++
		}
		if !isDiskFull(failure) {
			t.Fatalf("after %d messages: %v, want an error saying the disk is full", sent, failure)
		}
		t.Logf("message %d failed with: %v", sent+1, failure)
		if n := inspectInt(t, inst, "SELECT count(*) FROM chat.messages"); n != before+sent {
			t.Errorf("%d messages, want the %d of acme and the %d sent before the disk filled", n, before, sent)
		}
		mustIntegrity(t, inst)
		inserts := int64(0)
		for _, r := range inst.ChangeLog() {
			if r.World == "chat" && r.Table == "messages" && r.Op == env.OpInsert {
				inserts++
			}
		}
		if inserts != sent {
			t.Errorf("change log records %d messages, want %d", inserts, sent)
		}
		if _, err := inst.CallJSON(ctx, "list_staff", nil); err != nil {
			t.Errorf("a reading call after the failure: %v", err)
		}
	})
}

// TestDiskFull_Freeze freezes an acme instance into a fixtures directory on
// a tmpfs too small to hold it, at sizes that run out in different files.
// Each Freeze fails with an error that says the disk is full, publishes
// nothing, and leaves no temporary directory behind; with room enough, the
// same Freeze publishes a fixture that verifies.
func TestDiskFull_Freeze(t *testing.T) {
	ctx := context.Background()
	inst, err := composition.Open(ctx, company.World, composition.Options{Fixture: company.AcmeID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close() })
	if _, err := inst.CallJSON(ctx, "hire", []byte(`{"name":"Barbara Liskov"}`)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		size string // of the fixtures file system
		fits bool   // whether the fixture fits
	}{
		{"8k", false},  // not even the root file
		{"24k", false}, // the root file, not the next
		{"60k", false}, // some node files
		{"72k", false}, // all but the last node file
		{"1m", true},
	}
	for _, tt := range tests {
		t.Run(tt.size, func(t *testing.T) {
			dir := testfs.MountTmpfs(t, tt.size)
			s, err := inst.Freeze(ctx, "hired", "Acme with one more hire.", composition.FreezeOptions{FixturesDir: dir})
			list, lerr := fixture.List(dir)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if tt.fits {
				if err != nil {
					t.Fatalf("Freeze with room: %v", err)
				}
				if len(list) != 1 || list[0].ID != "hired" {
					t.Fatalf("fixtures %v, want hired", list)
				}
				if err := fixture.Verify(filepath.Join(dir, "hired"), s); err != nil {
					t.Fatalf("the published fixture: %v", err)
				}
				return
			}
			if !isDiskFull(err) || !strings.Contains(err.Error(), `freeze "hired"`) {
				t.Fatalf("Freeze: %v, want an error naming the fixture and saying the disk is full", err)
			}
			t.Logf("Freeze failed with: %v", err)
			if len(list) != 0 {
				t.Errorf("a failed Freeze published %d fixtures", len(list))
			}
			r, err := fixture.Recover(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Removed) != 0 {
				t.Errorf("Freeze left temporary directories: %v", r.Removed)
			}
			if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
				t.Errorf("fixtures directory holds %v (%v), want nothing", ents, err)
			}
			if errors.Is(err, fixture.ErrExists) {
				t.Errorf("Freeze reported %v", err)
			}
		})
	}
	if _, err := inst.CallJSON(ctx, "list_staff", nil); err != nil {
		t.Errorf("the instance after failed freezes: %v", err)
	}
}
