package openenv

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/seahaven/seahaven/env"
)

// Backend opens instances of one world. The engine provides one; the server
// depends on nothing else of it. A Backend must be safe for concurrent use:
// the server opens and lists for many sessions at once.
type Backend interface {
	// Info describes the world. The server calls it whenever it needs the
	// description, so a Backend may return fresh fixture lists.
	Info() Info
	// Open starts one instance. It returns an error for an unknown fixture,
	// an unknown startup keyword, or a bad Now or ClockMode; the server
	// reports the error's text to the client. An unknown fixture or task
	// should be an *OptionError, which the client gets as a validation
	// error; a failure of the host an *env.InfraError, which the client gets
	// as an infrastructure error with only its Message. ctx bounds the
	// opening only.
	Open(ctx context.Context, opts OpenOptions) (Instance, error)
}

// ReadinessChecker is implemented by a Backend that can tell whether it is
// able to open instances now. GET /ready answers 503 while Ready returns an
// error (with the fault's kind when it is an *env.InfraError), so a load
// balancer stops sending new sessions to a server whose resets would all
// fail. Ready must be safe for concurrent use and quick: it runs on every
// probe.
type ReadinessChecker interface {
	Ready() error
}

// Info describes the world a Backend serves.
type Info struct {
	// Name, Version and Description identify the world (GET /metadata, the
	// state document's world and world_version, MCP serverInfo).
	Name, Version, Description string
	// DefaultFixture is the fixture a reset uses when it names none; "" means
	// a genesis instance.
	DefaultFixture string
	// Fixtures lists the fixtures a reset may name (GET /fixtures).
	Fixtures []FixtureInfo
	// Tools is the tool surface, served by MCP tools/list without a session.
	Tools []env.ToolInfo
	// Tasks lists the tasks a reset may name (GET /tasks).
	Tasks []TaskInfo
}

// TaskInfo describes one task for listing.
type TaskInfo struct {
	ID          string `json:"id"`
	Instruction string `json:"instruction"`
	// Fixture is the fixture the task starts from; "" is genesis.
	Fixture    string `json:"fixture"`
	Difficulty string `json:"difficulty,omitempty"`
}

// FixtureInfo describes one fixture for listing.
type FixtureInfo struct {
	ID           string  `json:"id"`
	Description  string  `json:"description"`
	ParentID     *string `json:"parent_id"`
	CreatedAt    string  `json:"created_at"`
	WorldVersion string  `json:"world_version"`
	// FileSHA256 is the SHA-256 (hex) of each node's frozen file, by node
	// path ("main" for the root); omitted when the Backend does not say.
	FileSHA256 map[string]string `json:"file_sha256,omitempty"`
	// Default marks the fixture a reset that names none starts from
	// (Info.DefaultFixture); the server sets it.
	Default bool `json:"default,omitzero"`
}

// OpenOptions are the options of one instance, taken from a reset.
type OpenOptions struct {
	// Seed seeds the instance's id streams and SQL random(); a reset's seed, default 0.
	Seed int64
	// EpisodeID labels the episode; a reset's episode_id, default a new UUID.
	EpisodeID string
	// Fixture is the fixture id, or "" for a genesis instance. A reset that
	// names no fixture gets Info().DefaultFixture.
	Fixture string
	// Now is the clock's start as the client wrote it, or "" for the world's default.
	Now string
	// ClockMode is env.ClockFrozen, env.ClockStep, env.ClockWall, or "" for the default.
	ClockMode string
	// Startup holds the broadcast startup keywords, or nil. JSON numbers in it
	// are json.Number, so integers keep their precision.
	Startup map[string]any
	// ControlTools lists and allows the seahaven_control tool.
	ControlTools bool
	// Task is the id of the task the episode runs, or "" for none. The
	// instance then starts from the task's fixture, now, startup keywords
	// and seed where Fixture, Now and Seed are zero (Startup keys win over
	// the task's), and the task's tool allow list applies.
	Task string
}

// Grader is implemented by an Instance that runs a task. After every step
// the server grades the instance and sends the reward and done flag with
// the observation; without a Grader they are null and false. A grade
// request (/ws {"type":"grade"}, POST /grade, JSON-RPC seahaven/grade)
// returns the whole Grading.
type Grader interface {
	// Grade grades the instance's current state against its task. An
	// error means the grader could not run; the server reports it as an
	// EXECUTION_ERROR, saying it ran past its deadline if that passed,
	// unless the error wraps env.ErrNoStep: the grading ran nothing (it
	// waited for a turn in the engine), and its message says so. The
	// server serialises Grade with the other calls.
	Grade(ctx context.Context) (Grading, error)
}

// Grading is one grading of a task episode: the reply to a grade request.
type Grading struct {
	// Reward is in [0, 1].
	Reward float64 `json:"reward"`
	// Done says the episode is over.
	Done bool `json:"done"`
	// Checks are the per-check results, in the task's order.
	Checks []env.CheckResult `json:"checks"`
	// Idle says the episode changed no store and its task is not
	// no_change_correct: the reward is 0, whatever the checks found.
	Idle bool `json:"idle,omitempty"`
}

// Instance is one live episode. An Instance is not safe for concurrent use:
// the server serialises every call on a session, including Close, and never
// calls an Instance after Close.
type Instance interface {
	// Tools returns the tool listing, in order.
	Tools() []env.ToolInfo
	// CallJSON calls a tool with JSON arguments and returns the tool's result,
	// which the server encodes as JSON. A failure the agent may see is a
	// *env.ToolError, of kind env.KindNotFound for a name Tools does not
	// list (the server's metrics then name no series after it); an error wrapping context.DeadlineExceeded is reported as
	// a timeout. A failure of the host is an *env.InfraError, reported as the
	// server's own error; with NoStep set it is no step of the episode.
	// CallJSON must return soon after ctx is done, and commit nothing it
	// returns after: a call that has not returned a second after is
	// answered as timed out without it, and the server calls nothing else
	// on the instance until it returns.
	CallJSON(ctx context.Context, name string, args json.RawMessage) (any, error)
	// State returns the state document; the server fills in EpisodeID and StepCount.
	State() env.StateDoc
	// Inspect runs one read-only SQL statement over the inspection
	// connection. It should stop reading at lim, so that a query with huge
	// rows costs no more memory than the server can send; the server cuts
	// whatever it returns past lim.
	Inspect(ctx context.Context, sql string, args []any, lim InspectLimit) (InspectRows, error)
	// Close releases the instance.
	Close() error
}

// InspectLimit bounds what one inspect query reads.
type InspectLimit struct {
	// MaxRows is the most rows a reply holds (Config.InspectRowLimit).
	MaxRows int
	// MaxBytes bounds the size of the rows read, counted as
	// sqlitestore.RowSize counts it: the bytes of text and blob values and
	// one for every other value (Config.MaxReplyBytes).
	MaxBytes int64
}

// InspectRows is what one inspect query read.
type InspectRows struct {
	// Columns are the result column names.
	Columns []string
	// Rows holds one slice per row; each value is nil, int64, float64,
	// bool, string or []byte.
	Rows [][]any
	// Truncated names the limit that stopped reading before the last row:
	// TruncatedRows or TruncatedBytes; "" when every row was read.
	Truncated string
}

// Values of InspectRows.Truncated.
const (
	// TruncatedRows: the query has more rows than InspectLimit.MaxRows.
	TruncatedRows = "rows"
	// TruncatedBytes: the next row would take the rows past
	// InspectLimit.MaxBytes.
	TruncatedBytes = "bytes"
)

// Checkpointer is implemented by an Instance whose episodes can be
// checkpointed: /ws {"type":"checkpoint"}, POST /checkpoint and the
// JSON-RPC method seahaven/checkpoint. The server serialises Checkpoint
// with the other calls on the session, so it runs between steps.
type Checkpointer interface {
	// Checkpoint captures the instance as it stands, with req (the
	// server's own record of the session), as an immutable checkpoint a
	// Restorer restores, and describes it. Taking it must not change the
	// episode. An error the client may see is an *OptionError (the
	// episode holds something a checkpoint cannot carry) or an
	// *env.InfraError.
	Checkpoint(ctx context.Context, req CheckpointRequest) (CheckpointInfo, error)
}

// CheckpointRequest is what the server keeps in a checkpoint of its own,
// and how it takes it.
type CheckpointRequest struct {
	// Revision is the session's revision: its step count.
	Revision int
	// Attempt names the session's attempt at the episode; a restore may
	// fence it (Restorer.Fence).
	Attempt string
	// Session is the server's record of the session, opaque to the
	// Backend: Restore returns it.
	Session json.RawMessage
	// Drain reports that the server's drain takes the checkpoint
	// (Config.DrainCheckpoints). A drain takes a few at a time (as many
	// as GOMAXPROCS), so a Backend that bounds the calls running in its
	// engine need not make one wait its turn: it would wait for other
	// sessions' steps, however long they run, and the session would close
	// without a checkpoint when the drain's deadline passed.
	Drain bool
	// Regraded is, from Restore, the grading of the restored episode under
	// the restoring Backend's definition of its task, when that is not the
	// definition its latest grading was made under (a task edited since
	// the checkpoint, or another server's): the session's latest reward is
	// its reward, and a grading that says done latches done as a step's
	// would. nil keeps the checkpoint's grading; Checkpoint ignores it.
	Regraded *Grading
}

// CheckpointInfo describes a checkpoint: the reply to a checkpoint request.
type CheckpointInfo struct {
	// ID names the checkpoint for a restore (reset data "checkpoint").
	ID string `json:"checkpoint_id"`
	// Revision is the session's revision when it was taken.
	Revision int `json:"revision"`
	// FileSHA256 is the SHA-256 (hex) of each node's store file as the
	// checkpoint holds it, by node path ("main" for the root).
	FileSHA256 map[string]string `json:"file_sha256"`
	// EpisodeID is the episode's id.
	EpisodeID string `json:"episode_id"`
	// Attempt is the attempt that took it: the one a restore names in
	// "replaces" to fence it.
	Attempt string `json:"attempt"`
	// CreatedAt is when it was taken (env.TimeFormat).
	CreatedAt string `json:"created_at"`
	// ExpiresAt is when it may be removed (env.TimeFormat); "" is never.
	ExpiresAt string `json:"expires_at,omitempty"`
}

// Settler is implemented by an Instance that holds back what it records
// of a call for the grading of its step (Grader), to put the reward on it.
// The server calls Settle after a call no grading follows (an MCP
// tools/call), so that what the instance holds is written then, and a
// server killed before the episode's next call keeps the call.
type Settler interface {
	Settle() error
}

// Discarder is implemented by an Instance that can be closed as if it had
// never been opened. The server discards, rather than closes, an instance
// Restore opened for a restore it then refused (the attempt it replaces
// was already replaced, or its checkpoint's session record is corrupt):
// nothing was restored, so nothing of the instance, such as the recording
// of its episode, may be left.
type Discarder interface {
	Discard() error
}

// DrainsForgetter is implemented by a Restorer that can forget every
// drain record (Restorer.Drained) naming a checkpoint. A checkpoint that
// a server of an earlier version took does not say whether a drain took
// it, or of which session: its restore ends the records naming it this
// way, so that no server sends a drained session back to the checkpoint
// once its episode goes on.
type DrainsForgetter interface {
	UndrainedTo(checkpointID string) error
}

// SupersededError is the error Restorer.Fence returns for an attempt a
// restore fenced already: an attempt is replaced once, so that an episode
// has one live continuation. The server refuses the restore as it refuses
// an *OptionError on option "replaces", naming the attempt that restore
// started (superseded_by) and its newest checkpoint, for the client to
// replace in turn.
type SupersededError struct {
	// Attempt is the attempt the refused restore named in "replaces".
	Attempt string
	// By is what the fence that stands records (FencedBy).
	By string
}

// Error says what was refused, and why.
func (e *SupersededError) Error() string {
	return fmt.Sprintf("attempt %s was already superseded by %s: an attempt is replaced once (to replace that attempt, name it in replaces); nothing was restored", e.Attempt, e.By)
}

// Restorer is implemented by a Backend that restores checkpoints: a reset
// whose data names "checkpoint" continues the episode it holds. It must be
// safe for concurrent use.
type Restorer interface {
	// Restore opens an instance that continues checkpoint id exactly, and
	// returns it with the request the checkpoint was taken with. An
	// unknown, expired, incomplete or corrupt checkpoint is an
	// *OptionError on option "checkpoint", and nothing is opened.
	Restore(ctx context.Context, id string) (Instance, CheckpointRequest, error)
	// Fence records that attempt was superseded by the restore described
	// by by, which continues episode episodeID from checkpoint
	// checkpointID, so that every server sharing the checkpoint store
	// refuses its further steps. An attempt at another episode is refused
	// with an *OptionError on option "replaces", and an attempt fenced
	// already with a *SupersededError; nothing is fenced then.
	// When the episode's newest checkpoint (Latest) is one attempt took,
	// or the one a restore started attempt from (or the one named in its
	// place once it was removed), checkpointID becomes its newest: the
	// episode goes on from there, not from the superseded attempt's later
	// steps.
	Fence(attempt, episodeID, checkpointID, by string) error
	// FencedBy reports whether attempt was fenced, and by what. An error
	// says the fence could not be read (a server then refuses the
	// attempt's request, as it might be fenced); an *env.InfraError is
	// reported as such.
	FencedBy(attempt string) (by string, fenced bool, err error)
	// Latest returns the newest checkpoint taken of an episode, on any
	// server sharing the checkpoint store; ok is false when there is none
	// (or it expired, or was removed).
	Latest(episodeID string) (info CheckpointInfo, ok bool)
	// Drained records that a draining server checkpointed a session and
	// closed it; DrainedTo returns that checkpoint to whichever server the
	// session's next request reaches.
	Drained(sessionID string, info CheckpointInfo) error
	DrainedTo(sessionID string) (info CheckpointInfo, ok bool)
	// Undrained forgets a session's drain record once the session lives
	// again (a reset under its id, on any server): its old checkpoint is
	// no longer where it went.
	Undrained(sessionID string) error
}
