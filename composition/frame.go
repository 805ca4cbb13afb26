package composition

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/sqlitestore"
)

// touch pins a node's store for the rest of the activation.
func (a *activation) touch(ns *nodeState) {
	if !slices.Contains(a.pinned, ns) {
		ns.store.Pin()
		a.pinned = append(a.pinned, ns)
	}
}

// frame is one open transaction on one node.
type frame struct {
	ns      *nodeState
	tx      *sqlitestore.Frame
	capture *sqlitestore.Capture
	// mark is the length of the activation's records when the frame
	// began: the node's records past it are of the frame's transaction,
	// its nested frames' included, and go when it rolls back.
	mark int
	// tool and internal are what the frame's records say of the call
	// (info.Own and info.Internal); empty for a group frame.
	tool     string
	internal bool
	// cut is set while a frame nested on the same node (a tool calling
	// its own instance) or a DB.Transaction has cut the frame's capture
	// (see cutFrame); err is the failure of a cut's capture, which fails
	// the frame.
	cut bool
	err error
}

// begin opens a transaction frame on a node, capturing changes when the
// activation logs; info is the call the frame runs (nil for a group
// frame).
func (a *activation) begin(ns *nodeState, info *env.CallInfo) (*frame, error) {
	a.touch(ns)
	if err := a.unowned(ns); err != nil {
		return nil, err
	}
	if err := a.cutLoose(ns); err != nil {
		return nil, err
	}
	a.cutFrame(ns)
	tx, err := ns.store.Begin(a.ctx)
	if err != nil {
		a.resumeFrame(ns)
		// The text names no node: an agent may read it, and nothing an
		// agent reads says a world is composed.
		return nil, fmt.Errorf("begin: %w", a.note(err))
	}
	f := &frame{ns: ns, tx: tx, mark: len(a.records)}
	if info != nil {
		f.tool, f.internal = info.Own, info.Internal
	}
	if a.kind == kindCall {
		f.capture = a.startCapture(ns)
	}
	ns.frames = append(ns.frames, f)
	return f, nil
}

// end commits (err == nil) or rolls back a frame and records its changes.
// A committing frame finishes its capture before COMMIT, so any row it must
// read back is read inside its own transaction; if COMMIT then fails the
// records are dropped with the rollback, and so are those of the frames
// nested in it on the same node (a call the tool made into its own
// instance), whose savepoints the rollback undoes.
func (a *activation) end(f *frame, err error) error {
	var changes []sqlitestore.RowChange
	if err == nil {
		err = f.err
	}
	if err == nil && f.capture != nil {
		changes, err = f.capture.FinishRows(a.ctx)
		a.note(err)
		f.capture = nil
	}
	if err == nil {
		if cerr := f.tx.Commit(); cerr != nil {
			err = fmt.Errorf("commit: %w", a.note(cerr)) // naming no node, as begin's
		}
	}
	if err != nil {
		changes = nil
		f.tx.Rollback()
		a.dropRecords(f.ns, f.mark)
	}
	if f.capture != nil {
		// Rolled back: the capture ends with no net change to report.
		f.capture.FinishRows(a.ctx)
	}
	f.ns.frames = slices.DeleteFunc(f.ns.frames, func(x *frame) bool { return x == f })
	a.record(f.ns, f.tool, f.internal, changes)
	a.resumeFrame(f.ns)
	a.resumeLoose(f.ns)
	return err
}

// errUnowned is the WorldBug for a transaction begun on a store's raw
// connection outside its frames while the change log captures it.
func errUnowned() error {
	return env.Bugf("a transaction begun on a store's raw connection (DB().Conn()) is open: " +
		"the change log cannot describe a nested call, a Transaction or the end of the call inside it; " +
		"end it (COMMIT or ROLLBACK) before any of those, or use DB().Transaction")
}

// unowned refuses, when the activation logs, a frame or a transaction on
// a node whose store is in a transaction no frame owns: begun on the raw
// connection of a store used directly (a handle's DB), or between calls
// on the instance's. Begun inside it, the frame would commit only a
// savepoint, and the stretch cut before it would record rows read inside
// it: a ROLLBACK of it then left records of rows never committed, and
// leaving it open kept them uncommitted and the file locked against the
// inspection view.
func (a *activation) unowned(ns *nodeState) error {
	if a.kind == kindCall && len(ns.frames) == 0 && ns.store.InUnownedTransaction() {
		return errUnowned()
	}
	return nil
}

// commitUnowned commits, on every node an agent call touched, a
// transaction begun on the store's raw connection outside its frames and
// left open when the call ends, after the direct statements' captures
// ended (finishLoose), which read their rows inside it: committed, the
// files hold what those records say. The call then fails with
// errUnowned.
func (a *activation) commitUnowned() error {
	var errs []error
	for _, ns := range a.pinned {
		open, err := ns.store.CommitUnowned()
		if open {
			errs = append(errs, errUnowned())
		}
		if err != nil {
			errs = append(errs, a.note(err))
		}
	}
	return errors.Join(errs...)
}

// cutFrame ends the capture of the node's innermost frame, if one is
// open, and records its changes, so that the frame about to begin inside
// it on the same node (a tool calling its own instance) records its own
// changes apart from them and after them, as cutLoose does for direct
// statements. Without the cut, the outer frame's record of a row both
// wrote would span the nested frame's change too, or start from the image
// the nested frame left: records the log could not chain. The frame's
// capture resumes when the nested frame ends (resumeFrame); a failure of
// the cut capture fails the frame.
func (a *activation) cutFrame(ns *nodeState) {
	if len(ns.frames) == 0 {
		return
	}
	f := ns.frames[len(ns.frames)-1]
	if f.capture == nil {
		return
	}
	changes, err := f.capture.FinishRows(a.ctx)
	f.capture, f.cut = nil, true
	if err != nil {
		f.err = cmp.Or(f.err, a.note(err))
		return
	}
	a.record(ns, f.tool, f.internal, changes)
}

// resumeFrame starts a new capture for the node's innermost frame when a
// cut stopped its last one.
func (a *activation) resumeFrame(ns *nodeState) {
	if len(ns.frames) == 0 {
		return
	}
	if f := ns.frames[len(ns.frames)-1]; f.cut {
		f.cut = false
		f.capture = a.startCapture(ns)
	}
}

// record keeps a frame's changes, in compact form, for the change log.
func (a *activation) record(ns *nodeState, tool string, internal bool, changes []sqlitestore.RowChange) {
	for _, c := range changes {
		a.records = append(a.records, logRecord{call: a.id, tool: tool, internal: internal, world: ns.node.Path, row: c})
		if !slices.Contains(ns.recorded, c.Table) {
			ns.recorded = append(ns.recorded, c.Table)
		}
	}
}

// startCapture starts a capture on a node that follows the activation's
// earlier ones there: it fails when a table the node's kept records name
// is renamed while it runs, as one that wrote rows of the table itself
// would. Records name a table as it is called when their stretch ends, and
// a call's are sorted by table name, so the row's record under the new
// name would come apart from, and may sort before, those under the old.
func (a *activation) startCapture(ns *nodeState) *sqlitestore.Capture {
	return ns.store.StartCaptureAfter(ns.recorded)
}

// looseCapture starts a capture of statements run on a node outside any
// frame (a handle's DB used directly), unless one is running.
func (a *activation) looseCapture(ns *nodeState) {
	if a.kind != kindCall || len(ns.frames) > 0 {
		return
	}
	if a.loose == nil {
		a.loose = map[*nodeState]*sqlitestore.Capture{}
	}
	if a.loose[ns] == nil {
		a.loose[ns] = a.startCapture(ns)
	}
}

// cutLoose ends the node's running capture of direct statements, if any,
// and records its changes, so that the frame or transaction about to begin
// records its own changes apart from them and after them: each record then
// describes what one stretch of the call did, in order.
func (a *activation) cutLoose(ns *nodeState) error {
	c := a.loose[ns]
	if c == nil {
		return nil
	}
	a.loose[ns] = nil
	return a.finishCapture(ns, c)
}

// resumeLoose starts a new capture of direct statements on a node whose
// capture a frame or a transaction cut, once none is open: statements on a
// raw connection taken before give no other sign.
func (a *activation) resumeLoose(ns *nodeState) {
	if c, cut := a.loose[ns]; cut && c == nil {
		a.looseCapture(ns)
	}
}

// finishCapture ends a capture of direct statements and records its
// changes. Those statements committed one by one, so the read-back their
// records may need does not depend on the call's context: past its
// deadline, the rows stay and so must their records. When the capture
// fails they stay all the same, with no record, and its error says so:
// the call failing undoes none of them.
func (a *activation) finishCapture(ns *nodeState, c *sqlitestore.Capture) error {
	changes, err := c.FinishRows(context.WithoutCancel(a.ctx))
	a.record(ns, a.own, false, changes)
	if err != nil {
		err = fmt.Errorf("%w; the statements run directly on node %s's DB committed as they ran: what they changed stays in its store, and the change log does not describe it", err, ns.node.Path)
	}
	return err
}

// dropRecords removes the records of a node kept since mark: the changes of
// a transaction or savepoint on its store that rolled back after its nested
// frames committed their savepoints.
func (a *activation) dropRecords(ns *nodeState, mark int) {
	kept := slices.DeleteFunc(a.records[mark:], func(r logRecord) bool { return r.world == ns.node.Path })
	a.records = a.records[:mark+len(kept)]
	ns.recorded = ns.recorded[:0]
	for _, r := range a.records {
		if r.world == ns.node.Path && !slices.Contains(ns.recorded, r.row.Table) {
			ns.recorded = append(ns.recorded, r.row.Table)
		}
	}
}

func (a *activation) finishLoose() error {
	var errs []error
	for _, ns := range a.inst.nodes {
		if c := a.loose[ns]; c != nil {
			errs = append(errs, a.note(a.finishCapture(ns, c)))
		}
	}
	return errors.Join(errs...)
}

// startGroup puts the activation in grouped mode (startup hooks and bulk
// blocks): every node touched gets one transaction frame that stays open
// until endGroup. A frame is opened on a node's first use rather than
// up front, which no hook can tell apart from every transaction being open
// before the first hook runs, and which spares the nodes nobody touches a
// connection.
func (a *activation) startGroup() { a.group = map[*nodeState]*frame{} }

// ensureGroup opens the node's group frame, in grouped mode.
func (a *activation) ensureGroup(ns *nodeState) error {
	if _, open := a.group[ns]; open || a.group == nil {
		return nil
	}
	f, err := a.begin(ns, nil)
	if err != nil {
		return err
	}
	a.group[ns] = f
	return nil
}

// endGroup rolls every group frame back when err is set or the
// activation's context is done; otherwise it commits them one at a time
// in node order, the root last. On a failed commit the remaining frames
// roll back and the error names the node.
func (a *activation) endGroup(err error) error {
	var frames []*frame
	for _, ns := range a.inst.nodes[1:] {
		if f, ok := a.group[ns]; ok {
			frames = append(frames, f)
		}
	}
	if f, ok := a.group[a.inst.nodes[0]]; ok {
		frames = append(frames, f)
	}
	a.group = nil
	if err == nil {
		err = a.ctx.Err() // as a call's layer (see layers)
	}
	if err != nil {
		for _, f := range frames {
			f.tx.Rollback()
		}
		return err
	}
	for k, f := range frames {
		if cerr := f.tx.Commit(); cerr != nil {
			a.note(cerr)
			for _, rest := range frames[k:] {
				rest.tx.Rollback()
			}
			return fmt.Errorf("node %s: commit: %w", f.ns.node.Path, cerr)
		}
	}
	return nil
}
