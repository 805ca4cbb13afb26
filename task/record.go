package task

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/seahaven/seahaven/env"
)

// Line types of a trajectory.
const (
	LineHeader = "header"
	LineCall   = "call"
	LineEnd    = "end"
)

// Header is the first line of a trajectory: everything needed to open the
// same instance again.
type Header struct {
	// Type is LineHeader.
	Type string `json:"type"`
	// Task is the task's id, or "" for an episode without a task.
	Task string `json:"task"`
	// TaskSHA256 is DefinitionHash of the task's definition the episode
	// ran and was graded under: a replay under another definition of the
	// same id warns. Absent without a task, and in recordings made before
	// it was written.
	TaskSHA256 string `json:"task_sha256,omitempty"`
	// World and WorldVersion name the root world.
	World        string `json:"world"`
	WorldVersion string `json:"world_version"`
	// Fixture is the fixture id, or "" for genesis.
	Fixture string `json:"fixture"`
	// FixtureSHA256 holds the SHA-256 of each of the fixture's files, by
	// node path, as the state document's fixture.file_sha256 has them: a
	// replay on another fixture of the same id is refused, rather than
	// reported as nondeterministic. Absent in recordings made before it
	// was written.
	FixtureSHA256 map[string]string `json:"fixture_sha256,omitempty"`
	// Seed is the instance seed.
	Seed int64 `json:"seed"`
	// Now is the clock's start, in env.TimeFormat.
	Now string `json:"now"`
	// EpisodeID labels the episode.
	EpisodeID string `json:"episode_id"`
	// ClockMode is the instance's clock mode.
	ClockMode string `json:"clock_mode,omitempty"`
	// Startup holds the broadcast startup keywords the instance was opened with.
	Startup map[string]any `json:"startup,omitempty"`
	// ControlTools is true when the seahaven_control tool was available.
	ControlTools bool `json:"control_tools,omitempty"`
	// MaxChangeLogBytes is the bound the instance's change log was kept
	// within (composition.Options.MaxChangeLogBytes): a replay keeps its
	// log within the same, so that a grading that failed because the log
	// lost records it needed fails again. Absent (0) means the default;
	// negative, no bound.
	MaxChangeLogBytes int64 `json:"max_changelog_bytes,omitempty"`
	// Checkpoint is the checkpoint the episode was restored from: the
	// calls before it are in the recording of the episode that took it,
	// and this recording holds the calls after.
	Checkpoint string `json:"checkpoint,omitempty"`
}

// CallLine is one tool call of a trajectory.
type CallLine struct {
	// Type is LineCall.
	Type string `json:"type"`
	// Tool is the published name called.
	Tool string `json:"tool"`
	// Arguments are the call's JSON arguments (null when none were given),
	// compacted.
	Arguments json.RawMessage `json:"arguments"`
	// ArgumentsText holds the arguments verbatim when they were not valid
	// JSON, or when their text was not that of Arguments (white space
	// between tokens, which a tool reading its raw arguments sees and the
	// size limit on them counts): a replay passes the call this text.
	ArgumentsText *string `json:"arguments_text,omitempty"`
	// Result is the tool's result as JSON; absent when the call failed.
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the call's failure; absent when it succeeded.
	Error *CallError `json:"error,omitempty"`
	// Reward and Done are the task's grading right after the call, when it
	// was graded.
	Reward *float64 `json:"reward,omitempty"`
	Done   *bool    `json:"done,omitempty"`
}

// CallError is a failed call as a trajectory records it.
type CallError struct {
	// Type is the *env.ToolError kind, or "" for an error that is not one.
	Type string `json:"error_type"`
	// Message is the error's text.
	Message string `json:"message"`
}

// EndLine is the last line of a trajectory whose episode closed cleanly.
type EndLine struct {
	// Type is LineEnd.
	Type string `json:"type"`
	// Calls is the number of call lines.
	Calls int `json:"calls"`
	// Result is the task's final grading; nil without a task, or when the
	// grading failed.
	Result *Result `json:"result,omitempty"`
	// StateSHA256 is StateHash of the instance at the end.
	StateSHA256 map[string]string `json:"state_sha256"`
}

// NewCallLine builds the line of one call from what CallJSON took and
// returned. A result that does not encode as JSON is an error.
func NewCallLine(tool string, args json.RawMessage, result any, callErr error) (CallLine, error) {
	l := CallLine{Type: LineCall, Tool: tool}
	switch {
	case len(args) == 0:
		l.Arguments = json.RawMessage("null")
	case json.Valid(args):
		l.Arguments = compactJSON(args)
		if !bytes.Equal(l.Arguments, args) {
			l.ArgumentsText = new(string(args))
		}
	default:
		l.Arguments, l.ArgumentsText = json.RawMessage("null"), new(string(args))
	}
	if callErr != nil {
		l.Error = &CallError{Message: callErr.Error()}
		if te, ok := env.AsToolError(callErr); ok {
			l.Error.Type, l.Error.Message = te.Kind, te.Message
		}
		return l, nil
	}
	b, err := json.Marshal(result)
	if err != nil {
		return l, fmt.Errorf("task: record %s: result does not encode as JSON: %w", tool, err)
	}
	l.Result = b
	return l, nil
}

// arguments returns the raw arguments the call was made with.
func (l CallLine) arguments() json.RawMessage {
	if l.ArgumentsText != nil {
		return json.RawMessage(*l.ArgumentsText)
	}
	if string(l.Arguments) == "null" {
		return nil
	}
	return l.Arguments
}

func compactJSON(b []byte) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return b
	}
	return buf.Bytes()
}

// Recorder writes one trajectory file per episode into a directory. It is
// safe for concurrent use: episodes running at once get distinct files.
type Recorder struct {
	dir string
}

// NewRecorder returns a Recorder writing into dir, which it creates.
func NewRecorder(dir string) (*Recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("task: recorder: %w", err)
	}
	return &Recorder{dir: dir}, nil
}

var safeNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)

// nameTime is how a recording's file name writes its start (UTC, to the
// millisecond): sortable as text.
const nameTime = "20060102T150405.000Z"

// Start creates the file of one episode and writes its header. The file is
// <episode_id>.<start>.<random>.jsonl: the episode id ("episode" when it is
// empty or not a plain file name), the wall time the recording started in
// UTC to the millisecond (20261203T093812.123Z), and 8 random hex digits. So
// any number of episodes with one id are recorded side by side, each file is
// created with one O_EXCL open (another only on a random collision), and
// sorted by name one id's files come in the order they started.
func (r *Recorder) Start(h Header) (*Recording, error) {
	h.Type = LineHeader
	base := h.EpisodeID
	if !safeNameRE.MatchString(base) {
		base = "episode"
	}
	var f *os.File
	for attempt := 1; ; attempt++ {
		var b [4]byte
		rand.Read(b[:]) // never fails (crypto/rand panics on failure)
		name := base + "." + time.Now().UTC().Format(nameTime) + "." + hex.EncodeToString(b[:]) + ".jsonl"
		var err error
		f, err = os.OpenFile(filepath.Join(r.dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || attempt == 3 {
			return nil, fmt.Errorf("task: recorder: %w", err)
		}
	}
	rec := &Recording{f: f}
	if err := rec.writeLocked(h); err != nil { // rec is not shared yet
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return rec, nil
}

// Recording is one trajectory file being written. Each line is written with
// one write, so a file cut short by a crash holds whole lines. A write that
// fails (a full disk) stops the recording: the part of the line it wrote is
// cut off, so the file holds the episode's whole lines up to that one and
// no end line, and every later Call and End fails saying so, rather than
// leaving a gap in a file that reads as whole. It is safe for concurrent
// use.
type Recording struct {
	mu      sync.Mutex // guards the fields below
	f       *os.File
	size    int64 // the bytes of the whole lines written
	calls   int
	closed  bool
	stopped error // the write that stopped the recording
}

// Path returns the file's path.
func (r *Recording) Path() string { return r.f.Name() }

// Call appends a call line.
func (r *Recording) Call(l CallLine) error {
	l.Type = LineCall
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("task: recording is closed")
	}
	if err := r.writeLocked(l); err != nil {
		return err
	}
	r.calls++
	return nil
}

// End appends the end line (its Calls is filled in) and closes the file.
func (r *Recording) End(e EndLine) error {
	e.Type = LineEnd
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("task: recording is closed")
	}
	e.Calls = r.calls
	err := r.writeLocked(e)
	r.closed = true
	return errors.Join(err, r.f.Close())
}

// Close closes the file without an end line. It is safe to call more than
// once, and after End.
func (r *Recording) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	return r.f.Close()
}

// stoppedErr returns the error a write after a failed one returns, or nil.
func (r *Recording) stoppedErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stoppedLocked()
}

// stoppedLocked is stoppedErr for a caller holding r.mu.
func (r *Recording) stoppedLocked() error {
	if r.stopped == nil {
		return nil
	}
	return fmt.Errorf("task: recording stopped after %d calls, when a line could not be written: %w", r.calls, r.stopped)
}

// writeLocked writes v as one line; the caller holds r.mu.
func (r *Recording) writeLocked(v any) error {
	if err := r.stoppedLocked(); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("task: recording: %w", err)
	}
	n, err := r.f.Write(append(b, '\n'))
	if err != nil {
		r.stopped = err
		if n > 0 {
			// Cut off the part written, which the next line would run into.
			if terr := r.f.Truncate(r.size); terr != nil {
				err = errors.Join(err, terr)
			}
		}
		return fmt.Errorf("task: recording: %w", err)
	}
	r.size += int64(n)
	return nil
}

// Trajectory is a recorded episode read back.
type Trajectory struct {
	// Header is the first line.
	Header Header
	// Calls are the call lines in order.
	Calls []CallLine
	// End is the end line, or nil when the episode did not close cleanly.
	End *EndLine
}

// ReadTrajectory reads a trajectory strictly: a header line first, then
// call lines, then at most one end line, last; every line one JSON object
// with no unknown keys. Errors name the line.
func ReadTrajectory(r io.Reader) (*Trajectory, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var tr Trajectory
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			return nil, fmt.Errorf("line %d: empty line", n)
		}
		var kind struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(line, &kind); err != nil {
			return nil, fmt.Errorf("line %d: not a JSON object: %v", n, err)
		}
		if tr.End != nil {
			return nil, fmt.Errorf("line %d: a %q line after the end line", n, kind.Type)
		}
		want := LineCall
		if n == 1 {
			want = LineHeader
		}
		switch {
		case kind.Type == want:
		case n > 1 && kind.Type == LineEnd:
		default:
			return nil, fmt.Errorf("line %d: type %q, want %q", n, kind.Type, want)
		}
		var err error
		switch kind.Type {
		case LineHeader:
			err = strictJSON(line, &tr.Header)
			if err == nil && tr.Header.World == "" {
				err = errors.New("world is empty")
			}
		case LineCall:
			var c CallLine
			if err = strictJSON(line, &c); err == nil {
				switch {
				case c.Tool == "":
					err = errors.New("tool is empty")
				case (c.Error == nil) == (c.Result == nil):
					err = errors.New("want exactly one of result and error")
				}
			}
			tr.Calls = append(tr.Calls, c)
		case LineEnd:
			tr.End = &EndLine{}
			if err = strictJSON(line, tr.End); err == nil && tr.End.StateSHA256 == nil {
				// Every end line a recording writes has it: without it,
				// the final state would be compared with nothing.
				err = errors.New("state_sha256 is missing")
			}
		}
		if err != nil {
			return nil, fmt.Errorf("line %d (%s): %v", n, kind.Type, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errors.New("empty trajectory: want a header line")
	}
	return &tr, nil
}

// ReadTrajectoryFile reads the trajectory file at path.
func ReadTrajectoryFile(path string) (*Trajectory, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("task: %w", err)
	}
	defer f.Close()
	tr, err := ReadTrajectory(f)
	if err != nil {
		return nil, fmt.Errorf("task: %s: %w", path, err)
	}
	return tr, nil
}

func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}
