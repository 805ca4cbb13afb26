package composition

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/sqlitestore"
)

// View is an instance's read-only inspection connection: the root store as
// main and every added node attached read-only under its path with / as __
// (payments.charges, payments__tax.rates). Writes, ATTACH and DETACH are
// denied. Queries take the instance's lock, so they never interleave with a
// call, and wait for it no longer than their context allows; a query made
// inside a call or a Bulk block of the same instance is refused with a
// *env.WorldBug (see Instance.Bulk).
//
// The view's connection opens on the first query and is closed again once
// the view has not been queried for the instance pool's idle delay
// (sqlitestore.Pool.IdleDelay), so an idle instance holds no connection; the
// next query reopens it.
//
// random() and randomblob() in a query draw from a stream of its own,
// seeded from the instance's seed and the query's text (with a salt of its
// own, so it is no node's stream): the same query on the same episode reads
// the same samples, whatever queries ran before it (a grading, a console's,
// one cut off by its timeout) and across checkpoints and restores.
type View struct {
	inst *Instance

	// guarded by inst.lock:
	insp      *sqlitestore.Inspector
	rng       *rand.PCG   // random() of the running query, seeded by QueryLimit
	idleTimer *time.Timer // releases insp once idle; nil until the first query
}

// Inspect returns the instance's inspection view.
func (i *Instance) Inspect() *View {
	i.lockFor("Inspect")
	defer i.unlock()
	if i.view == nil {
		i.view = &View{inst: i, rng: rand.NewPCG(0, 0)}
	}
	return i.view
}

// Query runs read-only SQL and returns its columns and rows.
func (v *View) Query(ctx context.Context, sql string, args ...any) (*sqlitestore.Rows, error) {
	return v.QueryLimit(ctx, sqlitestore.ReadLimit{}, sql, args...)
}

// QueryLimit runs read-only SQL and returns its columns and the rows read
// before lim stopped reading (see sqlitestore.Inspector.QueryLimit). A
// failure of the host (the stores' files gone or unopenable, no file
// descriptors left) is an *env.InfraError.
func (v *View) QueryLimit(ctx context.Context, lim sqlitestore.ReadLimit, sql string, args ...any) (rows *sqlitestore.Rows, err error) {
	defer func() {
		if ie := Fault(err, "the query failed"); ie != nil {
			rows, err = nil, ie
		}
	}()
	i := v.inst
	if err := i.lockOpen(ctx, "View query"); err != nil {
		return nil, err
	}
	defer i.unlock()
	v.rng.Seed(env.StreamSeed(i.opts.Seed, sql, "inspect"))
	// Node stores hold their files' locks while open; no call runs now.
	for _, ns := range i.nodes {
		if err := ns.store.Yield(); err != nil {
			return nil, err
		}
	}
	if v.insp == nil {
		// Every node's file must exist for the inspector to attach it.
		for _, ns := range i.nodes {
			if err := ns.store.Materialize(); err != nil {
				return nil, err
			}
		}
		var attach []sqlitestore.Attachment
		for _, n := range i.sealed.Load().Nodes[1:] {
			attach = append(attach, sqlitestore.Attachment{Schema: SchemaName(n.Path), Path: filepath.Join(i.dir, n.File)})
		}
		insp, err := sqlitestore.OpenInspector(ctx, i.StatePath(), attach, sqlitestore.InspectorOptions{Clock: i.clock.Now, Random: v.rng.Uint64})
		if err != nil {
			return nil, err
		}
		v.insp = insp
	}
	defer v.scheduleReleaseLocked()
	return v.insp.QueryLimit(ctx, lim, sql, args...)
}

// scheduleReleaseLocked arms the timer that releases the connection once the
// view has been idle for the pool's idle delay, again from now when it is
// armed already. The caller holds inst.lock.
func (v *View) scheduleReleaseLocked() {
	idle := v.inst.pool.IdleDelay()
	if idle <= 0 {
		return
	}
	if v.idleTimer == nil {
		v.idleTimer = time.AfterFunc(idle, v.release)
	} else {
		v.idleTimer.Reset(idle)
	}
}

// release runs on the idle timer: it closes the connection. A query that
// ends while it waits for the lock has armed the timer again, and the next
// query reopens the connection.
func (v *View) release() {
	i := v.inst
	i.lockWait()
	defer i.unlock()
	if !i.closed {
		v.close()
	}
}

// Rows runs read-only SQL and returns every row.
func (v *View) Rows(ctx context.Context, sql string, args ...any) ([]env.Row, error) {
	return toRows(v.Query(ctx, sql, args...))
}

// One returns the first row, or nil when there is none.
func (v *View) One(ctx context.Context, sql string, args ...any) (env.Row, error) {
	return first(v.Rows(ctx, sql, args...))
}

// close closes the connection; the caller holds inst.lock.
func (v *View) close() error {
	if v.idleTimer != nil {
		v.idleTimer.Stop()
	}
	if v.insp == nil {
		return nil
	}
	err := v.insp.Close()
	v.insp = nil
	return err
}
