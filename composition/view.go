package composition

import (
	"context"
	"path/filepath"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/sqlitestore"
)

// View is an instance's read-only inspection connection: the root store as
// main and every added node attached read-only under its path with / as __
// (payments.charges, payments__tax.rates). Writes, ATTACH and DETACH are
// denied. Queries take the instance's lock, so they never interleave with a
// call; do not query a view from inside a call of the same instance.
type View struct {
	inst *Instance
	insp *sqlitestore.Inspector // guarded by inst.mu
}

// Inspect returns the instance's inspection view.
func (i *Instance) Inspect() *View {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.view == nil {
		i.view = &View{inst: i}
	}
	return i.view
}

// Query runs read-only SQL and returns its columns and rows.
func (v *View) Query(ctx context.Context, sql string, args ...any) (*sqlitestore.Rows, error) {
	i := v.inst
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.closed {
		return nil, errClosed
	}
	if v.insp == nil {
		var attach []sqlitestore.Attachment
		for _, n := range i.sealed.Nodes[1:] {
			attach = append(attach, sqlitestore.Attachment{Schema: SchemaName(n.Path), Path: filepath.Join(i.dir, n.File)})
		}
		insp, err := sqlitestore.OpenInspector(ctx, i.StatePath(), attach, i.clock.Now)
		if err != nil {
			return nil, err
		}
		v.insp = insp
	}
	return v.insp.Query(ctx, sql, args...)
}

// Rows runs read-only SQL and returns every row.
func (v *View) Rows(ctx context.Context, sql string, args ...any) ([]env.Row, error) {
	return toRows(v.Query(ctx, sql, args...))
}

// One returns the first row, or nil when there is none.
func (v *View) One(ctx context.Context, sql string, args ...any) (env.Row, error) {
	rows, err := v.Rows(ctx, sql, args...)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	return rows[0], nil
}

// close closes the connection; the caller holds inst.mu.
func (v *View) close() error {
	if v.insp == nil {
		return nil
	}
	err := v.insp.Close()
	v.insp = nil
	return err
}

// release closes the connection until the next query; the caller holds
// inst.mu.
func (v *View) release() { v.close() }
