//go:build !linux

package sqlitestore

import "errors"

// rebindSupported reports whether connections can be parked and rebound
// (see Options.ShareKey): only on Linux, whose open file description locks
// the slot VFS uses.
const rebindSupported = false

// rebindFile is never made off Linux.
type rebindFile struct{}

var errNoRebind = errors.New("sqlitestore: parked connections need Linux")

func newSlot(string) (*rebindFile, string, error) { return nil, "", errNoRebind }

func (*rebindFile) bind(string) error      { return errNoRebind }
func (*rebindFile) unbind() error          { return nil }
func (*rebindFile) locked() bool           { return false }
func (*rebindFile) cookie() (int64, error) { return 0, errNoRebind }
func (*rebindFile) Close() error           { return nil }
func (*rebindFile) mapped() bool           { return false }
