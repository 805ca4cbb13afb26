package composition

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/sqlitestore"
)

// TestInfraError classifies errors as failures of the host or not.
func TestInfraError(t *testing.T) {
	tests := []struct {
		name string
		err  error  // what a store or the file system returned
		kind string // the InfraError kind, "" for none
	}{
		{"NoSpace", &fs.PathError{Op: "write", Path: "/x/state.sqlite", Err: syscall.ENOSPC}, env.FaultDiskFull},
		{"Quota", fmt.Errorf("wrapped: %w", syscall.EDQUOT), env.FaultDiskFull},
		{"TooManyFiles", &fs.PathError{Op: "open", Path: "/x/state.sqlite", Err: syscall.EMFILE}, env.FaultTooManyFiles},
		{"SystemFileTable", fmt.Errorf("open: %w", syscall.ENFILE), env.FaultTooManyFiles},
		{"MissingDirectory", &fs.PathError{Op: "mkdirtemp", Path: "/x/seahaven-inst-*", Err: syscall.ENOENT}, env.FaultStorage},
		{"Storage", fmt.Errorf("node main: %w", sqlitestore.ErrStorage), env.FaultStorage},
		{"IO", syscall.EIO, env.FaultStorage},
		{"Constraint", errors.New("sqlitestore: UNIQUE constraint failed: t.id"), ""},
		{"Deadline", context.DeadlineExceeded, ""},
		{"ToolError", env.Errorf("no such invoice"), ""},
		{"ToolErrorWrappingNoSpace", &env.ToolError{Kind: env.KindExecution, Message: "failed", Err: syscall.ENOSPC}, env.FaultDiskFull},
		{"Nil", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ie := Fault(tt.err, "the call could not complete")
			switch {
			case tt.kind == "" && ie != nil:
				t.Fatalf("Fault(%v) = %v, want none", tt.err, ie)
			case tt.kind == "":
			case ie == nil:
				t.Fatalf("Fault(%v) = nil, want %s", tt.err, tt.kind)
			case ie.Kind != tt.kind || !errors.Is(ie, tt.err):
				t.Fatalf("Fault(%v) = %s %v, want %s wrapping the error", tt.err, ie.Kind, ie, tt.kind)
			}
		})
	}
}
