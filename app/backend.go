package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/seahaven/seahaven/openenv"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/sqlitestore"
	"github.com/seahaven/seahaven/task"
)

// Backend serves one world through the composition engine. It is safe
// for concurrent use.
type Backend struct {
	world          *env.World
	fixturesDir    string
	defaultFixture string
	dir            string
	minFree        int64
	maxChangeLog   int64
	baseLogger     *slog.Logger       // unlabelled; component labels it
	logger         *slog.Logger       // the fixtures' lines
	calls          *slog.Logger       // the instances' lines, one per tool call
	gate           gate               // resets, tool calls and grading
	inspectGate    gate               // inspect queries
	inspectPacer   *sqlitestore.Pacer // inspect queries' share of the CPU; nil: unpaced
	tasks          []env.Task
	recorder       *task.Recorder // nil: no recording
	checkpoints    *checkpoints

	dirMu   sync.Mutex // guards release, the remaking of dir, open and closed
	release func()     // unlocks dir
	open    int        // the instances opened and not yet closed
	closed  bool       // Close was called

	mu       sync.Mutex // guards fixtures, listed and broken
	fixtures []openenv.FixtureInfo
	listed   time.Time
	broken   string // the last broken fixtures logged, so each change is logged once
}

// Config configures New.
type Config struct {
	// FixturesDir overrides the world's fixtures (its FixturesDir or
	// Fixtures).
	FixturesDir string
	// DefaultFixture is used by resets that name none; "" is the world's
	// DefaultFixture, which "" there keeps genesis.
	DefaultFixture string
	// InstanceRoot is where per-process instance directories are made; ""
	// is <os temp dir>/seahaven-instances.
	InstanceRoot string
	// Logger receives one line per tool call (labelled component=calls),
	// and the lines of the fixtures' repair and the instance directory
	// (component=fixtures, component=instances) and of the checkpoint
	// store's retention (component=checkpoints); nil discards.
	Logger *slog.Logger
	// MaxActive caps the resets and tool calls running in the engine at
	// once, across sessions; the others wait their turn in arrival order
	// (within their step timeout). A drain's checkpoints take no slot: the
	// drain runs a few at a time itself, and they would otherwise wait for
	// other sessions' steps. Work of the agent listener
	// (openenv.FromAgentListener) holds at most three quarters of the
	// slots, at least one, so the main listener always has the rest
	// (with one slot there is no rest: agents share it), its work on
	// the agents' sessions included. Zero means
	// DefaultMaxActive; negative means no cap.
	MaxActive int
	// MaxInspect caps the inspect queries running at once, across
	// sessions, apart from MaxActive: graders polling with slow queries
	// never hold a slot a tool call waits for. The others wait their turn
	// within their inspect timeout. Zero means DefaultMaxInspect(MaxActive);
	// negative means no cap.
	MaxInspect int
	// InspectCPU is how many CPUs' worth of time the inspect queries of
	// all sessions may use together (0.5: half of one CPU): past it they
	// pause while they run (see sqlitestore.Pacer), so that graders' or
	// hostile clients' heavy queries leave the rest of the CPU to tool
	// calls. Zero means DefaultInspectCPU(); negative means unpaced.
	InspectCPU float64
	// RecordDir, when set, is where every episode's trajectory is written:
	// one JSONL file per episode (see package task), with or without a task.
	RecordDir string
	// MinFreeDisk is the space, in bytes, a reset leaves free on the
	// instance directory's file system beyond the instance's own files: a
	// reset that would leave less fails with an infrastructure error
	// (disk_full) instead of opening an instance whose first call fails.
	// Zero means DefaultMinFreeDisk; negative checks nothing.
	MinFreeDisk int64
	// MaxChangeLogBytes bounds each instance's change log in memory (see
	// composition.Options.MaxChangeLogBytes): past it the oldest records
	// are dropped and the state document says how many. Zero means
	// composition.DefaultMaxChangeLogBytes; negative means no bound.
	MaxChangeLogBytes int64
	// Checkpoints is the directory checkpoints are written to and restored
	// from; "" is <os temp dir>/seahaven-checkpoints. Servers that share
	// it restore each other's checkpoints.
	Checkpoints string
	// CheckpointTTL is how long a checkpoint is kept: zero means
	// DefaultCheckpointTTL, negative forever.
	CheckpointTTL time.Duration
	// CheckpointMaxBytes bounds the checkpoint directory's size: past
	// nine tenths of it, the oldest checkpoints are removed, every
	// episode's older revisions before any episode's newest, and an
	// episode's latest pointer follows to its newest left. With one
	// server writing to it, the directory holds at most the budget and
	// the checkpoint that started a sweep. Zero means DefaultCheckpointMaxBytes; negative is no bound.
	CheckpointMaxBytes int64
}

// DefaultMaxInspect is Config.MaxInspect when it is zero: a
// quarter of maxActive's slots (DefaultMaxActive when zero), at least one;
// with no cap on calls (negative), no cap on queries either.
func DefaultMaxInspect(maxActive int) int {
	if maxActive < 0 {
		return -1
	}
	return max(1, cmp.Or(maxActive, DefaultMaxActive)/4)
}

// DefaultInspectCPU is Config.InspectCPU when it is zero: a
// quarter of the CPUs the process may use (runtime.GOMAXPROCS), at least a
// quarter of one.
func DefaultInspectCPU() float64 {
	return max(0.25, float64(runtime.GOMAXPROCS(0))/4)
}

// DefaultMinFreeDisk is Config.MinFreeDisk's default.
const DefaultMinFreeDisk = 8 << 20

// fixtureListTTL bounds how stale GET /fixtures may be.
const fixtureListTTL = 2 * time.Second

// New returns a Backend for w. It seals the world (so a tree
// that does not seal fails here, not at the first reset), repairs what
// interrupted publishes left in the fixtures directory (fixture.Recover,
// logged on cfg.Logger), logs each fixture whose sidecar does not parse
// (the others still serve), checks that the default fixture exists, loads the
// world's tasks (its Go tasks and the tasks.yaml of the fixtures directory;
// a bad one fails here), makes this process's instance directory, and
// removes instance directories left by processes that are no longer
// running.
func New(w *env.World, cfg Config) (_ *Backend, err error) {
	if _, err := composition.Seal(w); err != nil {
		return nil, err
	}
	// Absolute: the stores' paths are, and a relative root would fail
	// every reset rather than the start.
	root, err := filepath.Abs(cmp.Or(cfg.InstanceRoot, filepath.Join(os.TempDir(), "seahaven-instances")))
	if err != nil {
		return nil, fmt.Errorf("app: instance root: %w", err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("app: instance root: %w", err)
	}
	dir, release, err := makeInstanceDir(root)
	if err != nil {
		return nil, err
	}
	b := &Backend{world: w, fixturesDir: cfg.FixturesDir, defaultFixture: cmp.Or(cfg.DefaultFixture, w.Spec().DefaultFixture), dir: dir, release: release,
		minFree: cmp.Or(cfg.MinFreeDisk, DefaultMinFreeDisk), maxChangeLog: cfg.MaxChangeLogBytes, baseLogger: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		gate: newAgentGate(cfg.MaxActive), inspectGate: newGate(cmp.Or(cfg.MaxInspect, DefaultMaxInspect(cfg.MaxActive)))}
	b.logger, b.calls = b.component("fixtures"), b.component("calls")
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	if cpu := cmp.Or(cfg.InspectCPU, DefaultInspectCPU()); cpu > 0 {
		b.inspectPacer = sqlitestore.NewPacer(cpu)
	}
	if b.fixturesDir == "" {
		if b.fixturesDir, err = composition.FixturesDir(w); err != nil {
			return nil, err
		}
	}
	if b.fixturesDir != "" {
		// A failed repair (a read-only directory holding leftovers) is
		// logged, not fatal: the fixtures that are whole still serve.
		if _, err := fixture.Recover(b.fixturesDir, b.logger); err != nil {
			b.logger.Error("fixtures: recovery failed", "dir", b.fixturesDir, "err", err)
		}
		b.listFixtures() // logs the fixtures that are broken
	}
	if b.defaultFixture != "" {
		// A default fixture no reset could open (missing, its files not
		// matching their hashes, frozen for another world or schema) stops
		// the server rather than fail every default reset of a server
		// that reports ready.
		if err := composition.CheckFixture(w, b.fixturesDir, b.defaultFixture); err != nil {
			if errors.Is(err, fixture.ErrNotFound) {
				// Named as given, not as the copy embedded fixtures are
				// read from, with the ids there are.
				where := cmp.Or(cfg.FixturesDir, w.Spec().FixturesDir)
				if where == "" {
					where = "the fixtures embedded in world " + w.Name()
				}
				return nil, fmt.Errorf("app: default fixture: %q is not in %s (fixtures: %s)", b.defaultFixture, where, b.fixtureIDs())
			}
			return nil, fmt.Errorf("app: default fixture: %w", err)
		}
	}
	// cfg's, not b.fixturesDir: the world's own tasks file is read where it
	// is, so an error names the author's file or the embedded one, not a copy.
	if b.tasks, err = task.ForWorldDir(w, cfg.FixturesDir); err != nil {
		return nil, fmt.Errorf("app: tasks: %w", err)
	}
	ckdir := cmp.Or(cfg.Checkpoints, filepath.Join(os.TempDir(), "seahaven-checkpoints"))
	if b.checkpoints, err = newCheckpoints(ckdir, cfg.CheckpointTTL, cfg.CheckpointMaxBytes, b.component("checkpoints")); err != nil {
		return nil, err
	}
	if cfg.RecordDir != "" {
		if b.recorder, err = task.NewRecorder(cfg.RecordDir); err != nil {
			return nil, fmt.Errorf("app: %w", err)
		}
	}
	return b, nil
}

// component returns the backend's logger with its lines labelled as
// name's.
func (b *Backend) component(name string) *slog.Logger {
	return b.baseLogger.With("component", name)
}

// InstanceDir returns the directory this backend makes instances in.
func (b *Backend) InstanceDir() string { return b.dir }

// Close stops the checkpoint store's retention and removes the backend's
// instance directory. Call it after the server has closed every session.
// While instances are still open (sessions a server's Shutdown left
// closing in the background when its deadline passed), it removes nothing
// and logs how many: the instances go on with their files, and the last
// to close removes the directory; should the process exit first, the
// next backend made on the same root removes it, as it does what a killed
// process left (New).
func (b *Backend) Close() error {
	if b.checkpoints != nil {
		b.checkpoints.close()
	}
	b.dirMu.Lock()
	defer b.dirMu.Unlock()
	b.closed = true
	if b.open > 0 {
		b.component("instances").Warn("app: instances still closing: their directory is left to them, removed when the last closes or, should the process exit first, when the next server starts on the root",
			"dir", b.dir, "instances", b.open)
		return nil
	}
	return b.removeDirLocked()
}

// removeDirLocked removes the instance directory and unlocks it; b.dirMu
// must be held.
func (b *Backend) removeDirLocked() error {
	err := os.RemoveAll(b.dir)
	b.release()
	return err
}

// closedInstance counts an instance closed: the last one to close after
// Close removes the instance directory Close left to it.
func (b *Backend) closedInstance() {
	b.dirMu.Lock()
	defer b.dirMu.Unlock()
	b.open--
	if b.closed && b.open == 0 {
		if err := b.removeDirLocked(); err != nil {
			b.component("instances").Warn("app: removing the instance directory failed", "dir", b.dir, "err", err)
		}
	}
}

// Ready reports whether the backend can open instances: it makes the
// instance directory again when something removed it (ensureDir), and
// fails with an *env.InfraError when it cannot, or when its file system
// has less free space than Config.MinFreeDisk, which fails every reset
// with disk_full. It implements [ReadinessChecker].
func (b *Backend) Ready() error {
	if err := b.ensureDir(); err != nil {
		return err
	}
	if free, ok := sqlitestore.FreeSpace(b.dir); ok && b.minFree >= 0 && free < b.minFree {
		return &env.InfraError{Kind: env.FaultDiskFull, Message: "the server's disk is full; no instance can be opened",
			Err: fmt.Errorf("app: %s has %d bytes free, fewer than the %d a reset leaves free", b.dir, free, b.minFree)}
	}
	return nil
}

// ensureDir makes the instance directory again when something removed it
// (a cleaner of the temp directory), and fails with an *env.InfraError
// when it cannot. A reset runs it before opening; the free space it then
// checks itself, counting the instance's files (composition.Options.MinFree).
func (b *Backend) ensureDir() error {
	b.dirMu.Lock()
	defer b.dirMu.Unlock()
	remade, release, err := remakeInstanceDir(b.dir, b.release)
	b.release = release
	if err != nil {
		return &env.InfraError{Kind: env.FaultStorage, Message: "the server's instance directory is gone and cannot be made again", Err: err}
	}
	if remade {
		b.component("instances").Warn("app: the instance directory was removed; made it again", "dir", b.dir)
	}
	return nil
}

// Info describes the world: its surface and fixtures.
func (b *Backend) Info() openenv.Info {
	info := openenv.Info{Name: b.world.Name(), Version: b.world.Version(), Description: b.world.Spec().Description, DefaultFixture: b.defaultFixture}
	if s, err := composition.Seal(b.world); err == nil {
		info.Tools = s.Tools()
	}
	info.Fixtures = b.listFixtures()
	info.Tasks = make([]openenv.TaskInfo, len(b.tasks))
	for i, t := range b.tasks {
		info.Tasks[i] = openenv.TaskInfo{ID: t.ID, Instruction: t.Instruction, Fixture: t.Fixture, Difficulty: t.Difficulty}
	}
	return info
}

func (b *Backend) listFixtures() []openenv.FixtureInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Since(b.listed) < fixtureListTTL && b.fixtures != nil {
		return b.fixtures
	}
	list, err := fixture.List(b.fixturesDir)
	le, _ := errors.AsType[*fixture.ListError](err)
	switch {
	case le != nil:
		// A broken fixture is left out; the others are listed. Each is
		// logged when the set of broken fixtures differs from the one last
		// logged.
		if msg := le.Error(); msg != b.broken {
			b.broken = msg
			for _, br := range le.Broken {
				b.logger.Error("fixtures: a fixture is broken and cannot be served", "dir", b.fixturesDir, "fixture", br.ID, "err", br.Err)
			}
		}
	case err != nil:
		b.logger.Error("fixtures: cannot list the fixtures directory", "dir", b.fixturesDir, "err", err)
		return b.fixtures
	default:
		b.broken = ""
	}
	out := make([]openenv.FixtureInfo, 0, len(list))
	for _, s := range list {
		if s.World != b.world.Name() {
			continue // another world's, in a shared directory: no reset opens it
		}
		out = append(out, openenv.FixtureInfo{ID: s.ID, Description: s.Description, ParentID: s.ParentID, CreatedAt: s.CreatedAt, WorldVersion: s.WorldVersion, FileSHA256: s.FileHashes()})
	}
	b.fixtures, b.listed = out, time.Now()
	return out
}

// Open creates an instance. With opts.Task it opens the task's episode:
// the task's fixture, now, startup keywords and seed where opts leaves them
// zero, its tool allow list, and a grader (the Instance is a Grader). With
// a RecordDir, the episode's calls are recorded.
func (b *Backend) Open(ctx context.Context, opts openenv.OpenOptions) (openenv.Instance, error) {
	var t env.Task
	if opts.Task != "" {
		var ok bool
		if t, ok = task.Find(b.tasks, opts.Task); !ok {
			return nil, b.unknownTask(opts.Task)
		}
	}
	if opts.Fixture != "" {
		if err := fixture.ValidID(opts.Fixture); err != nil {
			return nil, &openenv.OptionError{Option: "fixture", Value: opts.Fixture, Message: err.Error()}
		}
	}
	if err := b.ensureDir(); err != nil {
		return nil, err
	}
	leave, err := b.gate.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	ep, err := task.Open(ctx, b.world, t, composition.Options{
		Fixture: opts.Fixture, FixturesDir: b.fixturesDir, Now: opts.Now, Seed: opts.Seed,
		Startup: opts.Startup, ControlTools: opts.ControlTools, ClockMode: opts.ClockMode,
		Dir: b.dir, EpisodeID: opts.EpisodeID, Logger: b.calls, MinFree: b.minFree, MaxChangeLogBytes: b.maxChangeLog,
	})
	if errors.Is(err, fixture.ErrNotFound) {
		return nil, b.unknownFixture(opts.Fixture, t.Fixture)
	}
	if bug, ok := errors.AsType[*env.WorldBug](err); ok && errors.Is(err, composition.ErrStartupRefused) {
		// A task's own keywords fit the tree (task.Fits): the refused
		// one is the caller's.
		return nil, &openenv.OptionError{Option: "startup", Value: opts.Startup, Message: bug.Message}
	}
	if err != nil {
		return nil, err
	}
	if b.recorder != nil {
		if err := ep.Record(b.recorder); err != nil {
			ep.Close()
			return nil, faultOr(err, "the episode could not be recorded", err)
		}
	}
	return b.instance(ep), nil
}

// instance adapts an episode to openenv.Instance: a taskInstance when it
// runs a task.
func (b *Backend) instance(ep *task.Episode) openenv.Instance {
	b.dirMu.Lock()
	b.open++
	b.dirMu.Unlock()
	wi := worldInstance{ep: ep, b: b, closed: sync.OnceFunc(b.closedInstance)}
	if _, ok := ep.Task(); ok {
		return taskInstance{wi}
	}
	return wi
}

// Restore opens an instance that continues checkpoint id (see
// openenv.Restorer): it verifies the checkpoint, finds the task it runs
// among the world's, and opens the instance on the checkpoint's files. An
// episode graded under another definition of its task than the world's
// is graded anew under the world's (task.Resume), within ctx, and the
// request carries that grading (CheckpointRequest.Regraded).
func (b *Backend) Restore(ctx context.Context, id string) (openenv.Instance, openenv.CheckpointRequest, error) {
	l, err := b.checkpoints.load(id)
	if err != nil {
		return nil, openenv.CheckpointRequest{}, err
	}
	m, saved := l.m, l.ep
	if m.World != b.world.Name() {
		return nil, openenv.CheckpointRequest{}, b.checkpoints.unknown(id, fmt.Sprintf("is of world %s; this server serves %s", m.World, b.world.Name()))
	}
	var t env.Task
	if saved.Episode.Task != "" {
		var ok bool
		if t, ok = task.Find(b.tasks, saved.Episode.Task); !ok {
			return nil, openenv.CheckpointRequest{}, b.checkpoints.unknown(id, fmt.Sprintf("runs task %q, which this server does not have", saved.Episode.Task))
		}
	}
	if err := b.ensureDir(); err != nil {
		return nil, openenv.CheckpointRequest{}, err
	}
	leave, err := b.gate.enter(ctx)
	if err != nil {
		return nil, openenv.CheckpointRequest{}, err
	}
	defer leave()
	ep, err := task.Resume(ctx, b.world, t, saved.Episode, composition.Options{
		Checkpoint: l.cp, Dir: b.dir, Logger: b.calls, MinFree: b.minFree, MaxChangeLogBytes: b.maxChangeLog,
	}, b.recorder, id)
	if err != nil {
		if ctx.Err() != nil {
			// Cut by its deadline or its client (grading it under another
			// definition of its task, say): no fault of the checkpoint's.
			return nil, openenv.CheckpointRequest{}, faultOr(err, "nothing was restored", fmt.Errorf("checkpoint %q: nothing was restored: %w", id, err))
		}
		return nil, openenv.CheckpointRequest{}, faultOr(err, "nothing was restored", b.checkpoints.unknown(id, fmt.Sprintf("cannot be restored: %v", err)))
	}
	req := openenv.CheckpointRequest{Revision: m.Revision, Attempt: m.Attempt, Session: saved.Session}
	if res, ok := ep.Regraded(); ok {
		req.Regraded = &openenv.Grading{Reward: res.Reward, Done: res.Done, Checks: res.Checks, Idle: res.Idle}
	}
	return b.instance(ep), req, nil
}

// Fence records that attempt was superseded (see openenv.Restorer), in
// the checkpoint store, so every server sharing it sees it. It refuses an
// attempt whose checkpoints are of another episode than episodeID. When
// the episode's latest pointer names a checkpoint of attempt, or the one
// a restore started attempt from (or, once retention removed that one,
// the one it named in its place), whether or not that checkpoint is still
// there, it then names checkpointID, the checkpoint the episode goes on
// from, or none when that one is gone.
func (b *Backend) Fence(attempt, episodeID, checkpointID, by string) error {
	if err := b.checkpoints.fence(attempt, episodeID, by); err != nil {
		return err
	}
	b.checkpoints.rewind(b.world.Name(), episodeID, attempt, checkpointID)
	return nil
}

// FencedBy reports whether attempt was fenced, and by what. A fence that
// cannot be read (but is not absent) is an *env.InfraError.
func (b *Backend) FencedBy(attempt string) (string, bool, error) {
	return b.checkpoints.fencedBy(attempt)
}

// Latest returns the newest checkpoint of an episode of the backend's
// world in the checkpoint store (see openenv.Restorer): a checkpoint of
// another world, which this server cannot restore, is none.
func (b *Backend) Latest(episodeID string) (openenv.CheckpointInfo, bool) {
	return b.checkpoints.worldPointer(latestDir, b.world.Name(), episodeID)
}

// Drained records the checkpoint a draining server took of a session
// (see openenv.Restorer), for the servers of the backend's world.
func (b *Backend) Drained(sessionID string, info openenv.CheckpointInfo) error {
	return b.checkpoints.setPointer(drainedDir, worldKey(b.world.Name(), sessionID), info)
}

// DrainedTo returns the checkpoint a draining server of the backend's
// world took of a session: a session of the same id that a server of
// another world drained is not this one.
func (b *Backend) DrainedTo(sessionID string) (openenv.CheckpointInfo, bool) {
	return b.checkpoints.worldPointer(drainedDir, b.world.Name(), sessionID)
}

// Undrained forgets the drain record of a session of the backend's world
// that lives again.
func (b *Backend) Undrained(sessionID string) error {
	return b.checkpoints.undrained(b.world.Name(), sessionID)
}

// UndrainedTo forgets every drain record naming checkpoint id (see
// openenv.DrainsForgetter).
func (b *Backend) UndrainedTo(id string) error {
	return b.checkpoints.undrainedTo(id)
}

// unknownTask is the error of a reset naming no task of the world.
func (b *Backend) unknownTask(id string) error {
	if len(b.tasks) == 0 {
		return &openenv.OptionError{Option: "task", Value: id, Message: fmt.Sprintf("unknown task %q: %s has no tasks", id, b.world.Name())}
	}
	ids := make([]string, len(b.tasks))
	for i, t := range b.tasks {
		ids[i] = t.ID
	}
	return &openenv.OptionError{Option: "task", Value: id, Message: fmt.Sprintf("unknown task %q (tasks: %s)", id, strings.Join(ids, ", "))}
}

// unknownFixture is the error of a reset whose fixture does not exist:
// the reset's own (an *openenv.OptionError), or the fixture of the task it names
// (taskFixture, a fault of the server's setup). Neither names the fixtures
// directory.
func (b *Backend) unknownFixture(id, taskFixture string) error {
	known := b.fixtureIDs()
	if id == "" {
		return fmt.Errorf("the task's fixture %q does not exist on this server (fixtures: %s)", taskFixture, known)
	}
	return &openenv.OptionError{Option: "fixture", Value: id, Message: fmt.Sprintf("unknown fixture %q (fixtures: %s)", id, known)}
}

// fixtureIDs lists the ids of the fixtures served, for errors: "none"
// when there are none.
func (b *Backend) fixtureIDs() string {
	list := b.listFixtures()
	if len(list) == 0 {
		return "none"
	}
	ids := make([]string, len(list))
	for i, f := range list {
		ids[i] = f.ID
	}
	return strings.Join(ids, ", ")
}
