package task

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"reflect"
	"strings"
	"sync"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/internal/runecut"
	"github.com/seahaven/seahaven/internal/wirejson"
)

// ErrNoTask is returned by (*Episode).Grade for an episode opened without a
// task.
var ErrNoTask = errors.New("task: the episode runs no task")

// InstanceOptions returns the options an instance for t is opened with:
// opts, with the task's fixture, now and seed where opts leaves them zero,
// and the task's startup keywords under those of opts.
func InstanceOptions(t env.Task, opts composition.Options) composition.Options {
	opts.Fixture = cmp.Or(opts.Fixture, t.Fixture)
	opts.Now = cmp.Or(opts.Now, t.Now)
	if opts.Seed == 0 && t.Seed != nil {
		opts.Seed = *t.Seed
	}
	if len(t.Startup) > 0 {
		kw := maps.Clone(t.Startup)
		maps.Copy(kw, opts.Startup)
		opts.Startup = kw
	}
	return opts
}

// Episode is an instance opened for a task: its calls are limited to the
// task's tool allow list, it grades on demand, and it may record its calls
// as a trajectory. It is safe for concurrent use; calls serialise on the
// instance.
type Episode struct {
	inst    *composition.Instance
	task    env.Task
	hasTask bool
	shape   *shape
	allowed map[string]bool // nil: every tool
	header  Header

	mu   sync.Mutex // guards last, regraded, rec, pending, calls and closed
	last *Result
	// regraded marks last as the grading Resume made under the task's
	// definition, the checkpoint's being another's.
	regraded bool
	rec      *Recording
	pending  *CallLine
	calls    int
	closed   bool
}

// Open opens an instance for t (see InstanceOptions) and returns it as an
// episode. It refuses a task that does not validate or does not fit the
// world's composition (a tool it allows that the surface lacks, a table
// pattern naming no node). A zero Task (every field zero) opens an
// episode without a task: every tool is allowed and Grade returns
// ErrNoTask, which is how an episode is recorded without grading.
func Open(ctx context.Context, w *env.World, t env.Task, opts composition.Options) (*Episode, error) {
	if !reflect.ValueOf(t).IsZero() {
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("task: %w", err)
		}
		opts = InstanceOptions(t, opts)
	}
	e, err := open(ctx, w, t, opts)
	if err != nil {
		return nil, err
	}
	st := e.inst.State()
	e.header = Header{
		Task: t.ID, TaskSHA256: e.definitionHash(), World: st.World, WorldVersion: st.WorldVersion, Seed: st.Seed, Now: st.Now,
		EpisodeID: opts.EpisodeID, ClockMode: st.ClockMode, Startup: opts.Startup, ControlTools: opts.ControlTools,
		MaxChangeLogBytes: opts.MaxChangeLogBytes,
	}
	if st.Fixture != nil {
		e.header.Fixture, e.header.FixtureSHA256 = st.Fixture.ID, st.Fixture.FileSHA256
	}
	return e, nil
}

// open opens an instance with opts as an episode of t (the zero Task for
// none), after checking that t fits the instance's composition, and sets
// the episode's tool allow list.
func open(ctx context.Context, w *env.World, t env.Task, opts composition.Options) (*Episode, error) {
	hasTask := !reflect.ValueOf(t).IsZero()
	if hasTask {
		t = t.Normalize()
	}
	inst, err := composition.Open(ctx, w, opts)
	if err != nil {
		return nil, err
	}
	e := &Episode{inst: inst, task: t, hasTask: hasTask, shape: shapeOf(inst.Sealed())}
	if !hasTask {
		return e, nil
	}
	if err := e.shape.fits(t); err != nil {
		inst.Close()
		return nil, fmt.Errorf("task %s: %w", t.ID, err)
	}
	if t.Tools != nil {
		e.allowed = map[string]bool{}
		for _, name := range t.Tools {
			e.allowed[name] = true
		}
	}
	return e, nil
}

// definitionHash returns DefinitionHash of the episode's task, or "" for
// an episode without one.
func (e *Episode) definitionHash() string {
	if !e.hasTask {
		return ""
	}
	return DefinitionHash(e.task)
}

// Task returns the episode's task; ok is false for an episode without one.
func (e *Episode) Task() (t env.Task, ok bool) { return e.task, e.hasTask }

// Instance returns the underlying instance, for inspection. Calls made on
// it directly bypass the allow list and the recording.
func (e *Episode) Instance() *composition.Instance { return e.inst }

// Header returns the trajectory header that describes the episode.
func (e *Episode) Header() Header {
	h := e.header
	h.Startup = maps.Clone(h.Startup)
	return h
}

// Tools returns the agent surface the task allows, in surface order. The
// control tool stays listed when the instance has it: it belongs to the
// harness, not to the task.
func (e *Episode) Tools() []env.ToolInfo {
	all := e.inst.Tools()
	if e.allowed == nil {
		return all
	}
	out := make([]env.ToolInfo, 0, len(e.allowed)+1)
	for _, t := range all {
		if e.allowed[t.Name] || t.Name == env.ControlTool {
			out = append(out, t)
		}
	}
	return out
}

// CallJSON calls a tool by its published name, as the instance's CallJSON
// does, after checking the task's allow list: a tool outside it is refused
// with a *env.ToolError of kind env.KindNotFound, before anything runs. A
// recording episode records the call, refused or not, unless it failed on
// the host (a *env.InfraError): that is no result of the call an agent
// could learn from or a replay could repeat, and when the instance says it
// was no step (env.InfraError.NoStep) it is not counted either. A call
// that ran nothing or was cancelled before it changed anything
// (env.ErrNoStep) is neither counted nor recorded.
//
// A result is checked as a server checks it before it commits (see
// env.WithResultCheck), with the server's encoding unless ctx carries a
// check of its own: a call whose result cannot be sent as JSON fails with
// a *env.ToolError of kind env.KindExecution and leaves no writes, and is
// counted and recorded as that failure, as it would be when served.
func (e *Episode) CallJSON(ctx context.Context, name string, args json.RawMessage) (any, error) {
	var out any
	var err error
	if e.allowed != nil && !e.allowed[name] && name != env.ControlTool {
		names := make([]string, 0, len(e.allowed))
		for _, t := range e.Tools() {
			names = append(names, t.Name)
		}
		err = &env.ToolError{Kind: env.KindNotFound, Message: fmt.Sprintf("unknown tool %q: task %s allows %s", runecut.Echo(name), e.task.ID, strings.Join(names, ", "))}
	} else {
		if env.ResultCheck(ctx) == nil {
			ctx = env.WithResultCheck(ctx, encodes)
		}
		out, err = e.inst.CallJSON(ctx, name, args)
		if errors.Is(err, env.ErrNoStep) {
			return out, err
		}
		if ie, ok := errors.AsType[*env.InfraError](err); ok {
			if !ie.NoStep {
				e.mu.Lock()
				e.calls++
				e.mu.Unlock()
			}
			return out, err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	if e.rec != nil {
		if ferr := e.flushLocked(); ferr != nil {
			return out, recordFailure(err, ferr)
		}
		l, lerr := NewCallLine(name, args, out, err)
		if lerr != nil {
			return out, errors.Join(err, lerr)
		}
		e.pending = &l
		if !e.hasTask {
			// No grading will put a reward on it: written now, so that
			// a server killed before the next call keeps it.
			if ferr := e.flushLocked(); ferr != nil {
				return out, recordFailure(err, ferr)
			}
		}
	}
	return out, err
}

// recordFailure is the error of a call (err) whose line, or the line
// before it, could not be written (ferr): a failure of the host, not a
// result of the call an agent should see.
func recordFailure(err, ferr error) error {
	if ie := composition.Fault(ferr, "the call ran but could not be recorded"); ie != nil {
		return ie
	}
	return errors.Join(err, ferr)
}

// Settle writes the line of the latest call, when a recording episode
// holds it back for the grading of its step (Grade puts the reward and
// done on it): a server calls it after a call no grading follows (an MCP
// tools/call), so that a server killed before the episode's next call
// keeps that call. It is a no-op when no line is held. A line that cannot
// be written is a failure of the host, as in CallJSON.
func (e *Episode) Settle() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.rec == nil || e.pending == nil {
		return nil
	}
	if err := e.flushLocked(); err != nil {
		return recordFailure(nil, err)
	}
	return nil
}

// encodes is an episode's result check (env.WithResultCheck) when its
// caller gives none: a server fails a call whose result JSON cannot
// encode, rolling back what it wrote, and records that failure in the
// words of its encoding; the episode's call fails alike, with the same
// encoding, rather than keep its writes and be unable to record its
// result. A replay of the call fails the same way.
func encodes(result any) error {
	_, err := wirejson.Marshal(result)
	return err
}

// flushLocked writes the pending call line; the caller holds e.mu.
func (e *Episode) flushLocked() error {
	if e.pending == nil {
		return e.rec.stoppedErr() // the line a failed flush dropped
	}
	l := *e.pending
	e.pending = nil
	return e.rec.Call(l)
}

// Grade grades the instance against the task (see Grade) and keeps the
// result for State and LastGrade. When recording, the reward and done flag
// go on the latest call's line. A grading that fails leaves no latest
// grading (State then has no checks): the one before no longer describes
// the episode.
func (e *Episode) Grade(ctx context.Context) (Result, error) {
	if !e.hasTask {
		return Result{}, ErrNoTask
	}
	res, err := grade(ctx, e.inst, e.shape, e.task)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.last, e.regraded = nil, false
		return Result{}, err
	}
	e.last, e.regraded = &res, false
	if e.pending != nil {
		e.pending.Reward, e.pending.Done = new(res.Reward), new(res.Done)
		if err := e.flushLocked(); err != nil {
			return res, err
		}
	}
	return res, nil
}

// Regraded returns the grading Resume made of the restored episode under
// its task's definition, when the checkpoint's latest grading was made
// under another (see Resume); ok is false otherwise, and once a later
// Grade replaced it.
func (e *Episode) Regraded() (r Result, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.regraded {
		return Result{}, false
	}
	return *e.last, true
}

// LastGrade returns the result of the latest Grade; ok is false before the
// first.
func (e *Episode) LastGrade() (r Result, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.last == nil {
		return Result{}, false
	}
	return *e.last, true
}

// State returns the instance's state document with the task's id and the
// per-check results of the latest grading.
func (e *Episode) State() env.StateDoc {
	doc := e.inst.State()
	if e.hasTask {
		doc.Task = new(e.task.ID)
		if r, ok := e.LastGrade(); ok {
			doc.Checks = r.Checks
		}
	}
	return doc
}

// Record starts recording the episode's calls into a new file of r. It must
// be called before the first call.
func (e *Episode) Record(r *Recorder) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.rec != nil:
		return errors.New("task: the episode is already recording")
	case e.calls > 0:
		return fmt.Errorf("task: cannot record an episode after its first call (%d made)", e.calls)
	case e.closed:
		return errors.New("task: the episode is closed")
	}
	rec, err := r.Start(e.Header())
	if err != nil {
		return err
	}
	e.rec = rec
	return nil
}

// Recording returns the episode's recording, or nil.
func (e *Episode) Recording() *Recording {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rec
}

// Close closes the episode. A recording episode first grades (when it runs
// a task), hashes the final state and writes the end line. It is safe to
// call more than once.
func (e *Episode) Close() error {
	rec, first := e.markClosed()
	if !first {
		return nil
	}
	var errs []error
	if rec != nil {
		ctx := context.Background()
		end := EndLine{}
		if e.hasTask {
			if res, err := e.Grade(ctx); err == nil {
				end.Result = &res
			}
		}
		e.mu.Lock()
		errs = append(errs, e.flushLocked())
		e.mu.Unlock()
		hash, err := StateHash(ctx, e.inst)
		if err != nil {
			errs = append(errs, err)
			rec.Close()
		} else {
			end.StateSHA256 = hash
			errs = append(errs, rec.End(end))
		}
	}
	errs = append(errs, e.inst.Close())
	return errors.Join(errs...)
}

// markClosed marks the episode closed, and returns its recording and
// whether it was open until now (Close and Discard do their work once).
func (e *Episode) markClosed() (rec *Recording, first bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	first = !e.closed
	e.closed = true
	return e.rec, first
}

// Discard closes an episode that served no one, as if it had never been
// opened: its instance, and its recording, whose file is removed. A server
// discards an episode it opened for a request it then refused (a restore
// whose attempt was already replaced), of which no trajectory may be left.
// It is safe to call more than once; after Close it does nothing.
func (e *Episode) Discard() error {
	rec, first := e.markClosed()
	if !first {
		return nil
	}
	var errs []error
	if rec != nil {
		errs = append(errs, rec.Close())
		if err := os.Remove(rec.Path()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, e.inst.Close())...)
}

// Saved is what a checkpoint keeps of an episode beside its instance's
// (composition.Checkpoint): its task, its calls and its latest grading. It
// encodes as JSON.
type Saved struct {
	// Task is the task's id; "" for an episode without one.
	Task string `json:"task"`
	// Calls counts the calls made through the episode.
	Calls int `json:"calls"`
	// Last is the latest grading, or nil.
	Last *Result `json:"last"`
	// Header describes the episode as its recording's header does.
	Header Header `json:"header"`
}

// Checkpoint captures the episode between calls: its instance (see
// composition.Instance.Checkpoint) and the rest, Saved. A recording
// episode first writes the line of its latest call, which otherwise waits
// for the next call or grading: the recording of an episode restored from
// the checkpoint holds only the calls after it, so the calls before must
// be in this one even if the process dies before its next call. A line
// that cannot be written fails the checkpoint.
func (e *Episode) Checkpoint(ctx context.Context) (*composition.Checkpoint, Saved, error) {
	cp, err := e.inst.Checkpoint(ctx)
	if err != nil {
		return nil, Saved{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pending != nil {
		if err := e.flushLocked(); err != nil {
			if ie := composition.Fault(err, "no checkpoint was taken, as its latest call could not be recorded"); ie != nil {
				return nil, Saved{}, ie
			}
			return nil, Saved{}, err
		}
	}
	sv := Saved{Task: e.task.ID, Calls: e.calls, Header: e.header}
	if e.last != nil {
		sv.Last = new(*e.last)
	}
	return cp, sv, nil
}

// Resume opens the episode checkpoint id saved: its instance from opts
// (Options.Checkpoint), with t the task it runs (the zero Task for none),
// whose id must be saved's. Its header names the checkpoint, the
// change-log bound opts gives the instance from here on, w's version and
// t's definition (DefinitionHash): the calls from here on run on them and
// are graded under it, whatever the episode ran on before (a server
// restoring a checkpoint another took, an older version, a task edited
// since). When saved holds a grading made under another definition than
// t's (or under one its header does not name: a checkpoint taken before
// headers did), the episode is graded anew under t as it is restored,
// within ctx, so that its latest grading (LastGrade, State's checks) is
// the one its calls are graded under from here on, not the old
// definition's (see Regraded); a grading that fails fails the restore.
// A recorder, when not nil, records the calls from here on, in a new
// recording.
func Resume(ctx context.Context, w *env.World, t env.Task, saved Saved, opts composition.Options, rec *Recorder, id string) (*Episode, error) {
	if t.ID != saved.Task {
		return nil, fmt.Errorf("task: the checkpoint ran task %q, not %q", saved.Task, t.ID)
	}
	e, err := open(ctx, w, t, opts)
	if err != nil {
		return nil, err
	}
	e.header, e.last = saved.Header, saved.Last
	e.header.Checkpoint, e.header.MaxChangeLogBytes = id, opts.MaxChangeLogBytes
	e.header.WorldVersion = w.Version() // the root world's, as State says
	e.header.TaskSHA256 = e.definitionHash()
	if e.last != nil && saved.Header.TaskSHA256 != e.header.TaskSHA256 {
		res, err := grade(ctx, e.inst, e.shape, e.task)
		if err != nil {
			e.inst.Close()
			return nil, fmt.Errorf("task %s: grading the checkpoint under this definition of the task, which is not the one it was graded under: %w", t.ID, err)
		}
		e.last, e.regraded = &res, true
	}
	if rec != nil {
		if err := e.Record(rec); err != nil {
			e.inst.Close()
			return nil, err
		}
	}
	e.calls = saved.Calls
	return e, nil
}
