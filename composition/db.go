package composition

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/sqlitestore"
)

// nodeDB is a node's store as world code sees it in one turn of an
// activation.
type nodeDB nodeTurn

// ready starts a use of the store: it enters the turn (see turn), and
// close must follow when ready succeeds.
func (d *nodeDB) ready() error {
	if err := d.a.enter(d.t); err != nil {
		return err
	}
	d.a.touch(d.ns)
	if err := d.a.ensureGroup(d.ns); err != nil {
		d.close()
		return err
	}
	d.a.looseCapture(d.ns)
	return nil
}

// close ends a use ready started.
func (d *nodeDB) close() { d.a.leave(d.t) }

func (d *nodeDB) Exec(sql string, args ...any) (env.Result, error) {
	if err := d.ready(); err != nil {
		return env.Result{}, err
	}
	defer d.close()
	r, err := d.ns.store.Exec(d.a.ctx, sql, args...)
	return env.Result{RowsAffected: r.RowsAffected, LastInsertID: r.LastInsertID}, dbError("Exec", sql, d.a.note(err))
}

func (d *nodeDB) Rows(sql string, args ...any) ([]env.Row, error) { return d.query("Rows", sql, args) }

func (d *nodeDB) One(sql string, args ...any) (env.Row, error) {
	return first(d.query("One", sql, args))
}

// query runs Rows or One (method, for errors).
func (d *nodeDB) query(method, sql string, args []any) ([]env.Row, error) {
	if err := d.ready(); err != nil {
		return nil, err
	}
	defer d.close()
	rows, err := d.ns.store.Query(d.a.ctx, sql, args...)
	return toRows(rows, dbError(method, sql, d.a.note(err)))
}

func (d *nodeDB) Conn() (any, error) {
	if err := d.ready(); err != nil {
		return nil, err
	}
	defer d.close()
	c, err := d.ns.store.Conn(d.a.ctx)
	return c, d.a.note(err)
}

// first returns the first of rows, or nil.
func first(rows []env.Row, err error) (env.Row, error) {
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	return rows[0], nil
}

// Transaction runs fn in a savepoint of the node's frame or, on a node used
// directly (a handle's DB), in a transaction of its own. Either is a
// stretch of its own in the change log: the frame's changes or the direct
// statements before it are recorded first, and its own before what
// follows. When either rolls back, the
// records of the calls nested in it on this node (a tool calling its own
// instance, a host calling through a handle) go with their rows. The turn
// is in use while the transaction begins, and free for fn's own statements.
func (d *nodeDB) Transaction(fn func() error) error {
	if err := d.ready(); err != nil {
		return err
	}
	a, ns := d.a, d.ns
	direct := a.kind == kindCall && len(ns.frames) == 0
	if direct {
		if err := a.unowned(ns); err != nil {
			d.close()
			return err
		}
		if err := a.cutLoose(ns); err != nil {
			d.close()
			return err
		}
	}
	// The frame's changes so far are recorded before the mark: a rollback
	// drops the records past it, and undoes none of those changes.
	a.cutFrame(ns)
	mark := len(a.records)
	tx, err := ns.store.Begin(a.ctx)
	a.resumeFrame(ns)
	if err != nil {
		a.resumeLoose(ns)
		d.close()
		return a.note(err)
	}
	a.looseCapture(ns)
	d.close()
	err = a.guard(func() string { return "a Transaction on node " + ns.node.Path }, fn)
	// The frame's changes in the transaction are recorded in it, so that
	// a rollback drops their records, and no capture of the frame spans
	// the rollback (its first images would be rows the rollback undid).
	a.cutFrame(ns)
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		tx.Rollback()
	}
	a.resumeFrame(ns)
	var cerr error
	if direct {
		cerr = a.cutLoose(ns)
		a.resumeLoose(ns)
	}
	if err != nil {
		a.dropRecords(ns, mark)
		return a.note(err)
	}
	return a.note(cerr)
}

// dbError turns the store's refusal of a statement that would begin,
// commit or roll back a transaction, reach a savepoint across a frame,
// attach or detach a database, vacuum a store during a call, or set a
// PRAGMA the store keeps its own, into the
// WorldBug that says what to do instead; other errors pass unchanged.
func dbError(method, sql string, err error) error {
	switch {
	case errors.Is(err, sqlitestore.ErrTransactionControl):
		return &env.WorldBug{Err: err, Message: fmt.Sprintf("DB.%s(%q): a world does not begin, commit or roll back transactions: "+
			"a call's statements run in its transaction, which commits when the tool returns and rolls back when it fails, "+
			"and statements outside calls autocommit; use DB.Transaction for a part that may fail on its own (Bulk outside calls)", method, strings.TrimSpace(sql))}
	case errors.Is(err, sqlitestore.ErrAttach):
		return &env.WorldBug{Err: err, Message: fmt.Sprintf("DB.%s(%q): a world's store reaches its own file only: ATTACH and DETACH are refused, "+
			"as a write to another file would be in no change log; reach an added world through its tools or its DB, "+
			"and read every store at once through the instance's inspection view", method, strings.TrimSpace(sql))}
	case errors.Is(err, sqlitestore.ErrVacuum):
		return &env.WorldBug{Err: err, Message: fmt.Sprintf("DB.%s(%q): VACUUM is refused during a call: it may renumber the rowids "+
			"that key the change log's records of tables without a primary key; vacuum between calls, through the instance's DB", method, strings.TrimSpace(sql))}
	case errors.Is(err, sqlitestore.ErrPragma):
		return &env.WorldBug{Err: err, Message: fmt.Sprintf("DB.%s(%q): the store keeps journal_mode, writable_schema and schema_version its own: "+
			"a failed call and each ROLLBACK TO roll back through its journal, and the change log reads the schema SQLite keeps; "+
			"a world may read these PRAGMAs, not set them", method, strings.TrimSpace(sql))}
	case errors.Is(err, sqlitestore.ErrSavepointScope):
		return &env.WorldBug{Err: err, Message: fmt.Sprintf("DB.%s(%q): no savepoint of that name was opened in this frame since its last "+
			"DB.Transaction or nested call on this store began: RELEASE and ROLLBACK TO reach only those, as one opened before "+
			"would undo or merge work a transaction or a nested call did (and the change log recorded) from outside it; "+
			"release or roll back to a savepoint before beginning one, or use DB.Transaction", method, strings.TrimSpace(sql))}
	}
	return err
}

func toRows(rows *sqlitestore.Rows, err error) ([]env.Row, error) {
	if err != nil {
		return nil, err
	}
	out := make([]env.Row, len(rows.Values))
	for k, m := range rows.Maps() {
		out[k] = env.Row(m)
	}
	return out, nil
}

// instanceDB is the root's store for code outside any call: each method
// takes the instance's lock and runs as a handle's DB does, in an
// activation of its own that logs nothing (and is refused inside a Bulk
// block, where the block's c.DB is the root's store).
type instanceDB struct{ inst *Instance }

// useRoot runs fn with the root's store as the first turn of an activation
// of its own reaches it, and returns what fn returned, or the error the
// activation ended with.
func useRoot[T any](i *Instance, fn func(db *nodeDB) (T, error)) (out T, err error) {
	if err := i.lockOpen(context.Background(), "inst.DB() (inside a Bulk block, use the block's c.DB)"); err != nil {
		return out, err
	}
	defer i.unlock()
	err = i.activate(context.Background(), "db", kindDB, func(a *activation) (err error) {
		v, _ := a.push(nil, i.nodes[0], nil)
		defer a.pop(v)
		out, err = fn((*nodeDB)(&v.node))
		return err
	})
	return out, err
}

func (d instanceDB) Exec(sql string, args ...any) (env.Result, error) {
	return useRoot(d.inst, func(db *nodeDB) (env.Result, error) { return db.Exec(sql, args...) })
}

func (d instanceDB) Rows(sql string, args ...any) ([]env.Row, error) {
	return useRoot(d.inst, func(db *nodeDB) ([]env.Row, error) { return db.Rows(sql, args...) })
}

func (d instanceDB) One(sql string, args ...any) (env.Row, error) {
	return useRoot(d.inst, func(db *nodeDB) (env.Row, error) { return db.One(sql, args...) })
}

func (d instanceDB) Conn() (any, error) {
	return useRoot(d.inst, (*nodeDB).Conn)
}

func (d instanceDB) Transaction(fn func() error) error {
	return env.Bugf("inst.DB().Transaction: use Bulk for transactions outside a call")
}

// ControlArgs are the arguments of the seahaven_control tool.
type ControlArgs struct {
	Action  string   `json:"action" enum:"advance_clock,set_clock" doc:"advance_clock moves the clock forward by seconds; set_clock sets it to now."`
	Seconds *float64 `json:"seconds,omitempty" doc:"For advance_clock: how many seconds to move forward, from 0 to 3153600000 (100 years); the clock may not pass 9000-01-01T00:00:00.000Z."`
	Now     *string  `json:"now,omitempty" doc:"For set_clock: the new time, RFC 3339 in UTC, from 1000-01-01T00:00:00.000Z to 9000-01-01T00:00:00.000Z."`
}

// ControlResult is what the control tool returns.
type ControlResult struct {
	Now string `json:"now"`
}

var controlDef = env.BuiltinTool(env.ControlTool,
	"Control the instance: move its one clock (advance_clock by seconds, or set_clock to now). Covers every store.",
	func(c *env.Ctx, in ControlArgs) (ControlResult, error) { return ControlResult{}, nil })

// control runs the control tool on the instance's clock.
func (a *activation) control(in any) (any, error) {
	args := in.(ControlArgs)
	c := a.inst.clock
	switch args.Action {
	case "advance_clock":
		// Checked before the conversion: a float beyond time.Duration's
		// range converts to a duration of either sign, depending on the CPU.
		if args.Seconds == nil || !(*args.Seconds >= 0 && *args.Seconds <= env.MaxAdvance.Seconds()) {
			return nil, &env.ToolError{Kind: env.KindInvalidArgs, Message: fmt.Sprintf(
				`invalid arguments: field "seconds": advance_clock needs 0 <= seconds <= %.0f (100 years)`, env.MaxAdvance.Seconds())}
		}
		d := time.Duration(*args.Seconds * float64(time.Second))
		if to, ok := c.advanceWithin(d, maxTime); !ok {
			return nil, &env.ToolError{Kind: env.KindInvalidArgs, Message: fmt.Sprintf(
				`invalid arguments: field "seconds": advance_clock would move the clock to %s, past its maximum %s`, to.Format(env.TimeFormat), env.MaxTime)}
		}
	case "set_clock":
		if args.Now == nil {
			return nil, &env.ToolError{Kind: env.KindInvalidArgs, Message: `invalid arguments: field "now": set_clock needs now`}
		}
		t, err := ParseTime(*args.Now)
		if err != nil {
			return nil, &env.ToolError{Kind: env.KindInvalidArgs, Message: `invalid arguments: field "now": ` + err.Error()}
		}
		c.set(t)
	}
	return ControlResult{Now: c.Now().Format(env.TimeFormat)}, nil
}
