package app

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/task"
)

// Defaults of Config's checkpoint retention.
const (
	DefaultCheckpointTTL      = 24 * time.Hour
	DefaultCheckpointMaxBytes = 4 << 30
)

// Files of a checkpoint directory beside the fixture sidecar and the
// store files (see composition.Checkpoint.WriteDir).
const (
	manifestName = "checkpoint.json" // written last: its presence marks a whole checkpoint
	stateName    = "state.json"      // composition.Checkpoint.State
	episodeName  = "episode.json"    // savedEpisode
	fencesDir    = "fences"          // one file per fenced attempt
	latestDir    = "episodes"        // one file per world's episode: its newest checkpoint
	latestLock   = "episodes.lock"   // locked while a latest pointer is read and written (lockLatest)
	drainedDir   = "drained"         // one file per drained session: its checkpoint
	attemptsDir  = "attempts"        // one file per attempt: its newest checkpoint
	tmpPrefix    = ".ckpt-"          // a checkpoint being written
	trashPrefix  = ".gone-"          // a checkpoint being removed
)

// subDirs are the directories of the store beside its checkpoints: small
// files, each removed once older than the store's TTL.
var subDirs = []string{fencesDir, latestDir, drainedDir, attemptsDir}

// manifest is a checkpoint's checkpoint.json.
type manifest struct {
	Format int `json:"format"`
	openenv.CheckpointInfo
	World        string `json:"world"`
	WorldVersion string `json:"world_version"`
	// SHA256 holds the hash of each file of the checkpoint that is not a
	// store file (those are in the sidecar and FileSHA256).
	SHA256 map[string]string `json:"sha256"`
}

// savedEpisode is a checkpoint's episode.json: the episode's part and the
// server's.
type savedEpisode struct {
	Episode task.Saved      `json:"episode"`
	Session json.RawMessage `json:"session"`
}

// checkpoints is a directory of checkpoints, one directory each, named by
// id. A checkpoint is written in a temporary directory and renamed into
// place, with its manifest written last and every file hashed in it: a
// process killed while writing leaves only a temporary directory, which no
// id names; a file changed or cut short afterwards fails its hash at the
// restore. Retention (sweep) runs when the store opens, every minute and
// after a tenth of maxBytes was written: it removes checkpoints older
// than ttl, and the oldest when the directory holds more than maxBytes,
// each episode's newest last. Several servers may share the
// directory. A checkpoints is safe for concurrent use.
type checkpoints struct {
	dir      string
	ttl      time.Duration
	maxBytes int64
	logger   *slog.Logger

	// Retention runs on its own goroutine (retain): kick asks it for a
	// sweep, stop ends it, and done is closed when it has. close stops it
	// and waits for a sweep in progress; it is safe to call more than once.
	kick, stop, done chan struct{}
	close            func()
	sweepMu          sync.Mutex // held by a sweep: one at a time
	// latestMu is held while an episode's latest pointer is written, so
	// that retention does not point one away from a checkpoint written
	// meanwhile; lockLatest takes it.
	latestMu sync.Mutex
	mu       sync.Mutex // guards written, fresh, loaded and order
	// written counts the bytes written since retention last ran.
	written int64
	// fresh holds the ids of the checkpoints being written (false) and
	// written since the last sweep started (true): a sweep removes none
	// of them, so the sweep a checkpoint's write starts never removes the
	// checkpoint a reply is about to name.
	fresh map[string]bool
	// loaded caches the checkpoints restored last, by id (order holds
	// their ids oldest first, within maxLoaded and maxLoadedBytes): the
	// restores of a fork read and verify the files once, and share their
	// bytes. loadedBytes is their size.
	loaded      map[string]*loadedCheckpoint
	order       []string
	loadedBytes int64
}

// maxLoaded and maxLoadedBytes bound the checkpoints that stay in memory
// for more restores: by count, and by the bytes of their files. A
// checkpoint larger than maxLoadedBytes is read from disk at each restore.
const (
	maxLoaded      = 32
	maxLoadedBytes = 64 << 20
)

// loadedCheckpoint is a checkpoint read and verified.
type loadedCheckpoint struct {
	m  manifest
	cp *composition.Checkpoint
	ep savedEpisode
	// stamp is its directory's files as they were when read or written
	// (fixture.Stamp): the cached bytes serve a restore only while the
	// files on disk are unchanged, so a checkpoint removed, cut short or
	// changed there is not restored from memory.
	stamp string
	size  int64 // the bytes of its files
}

// files names every file of the checkpoint's directory.
func (l *loadedCheckpoint) files() []string {
	names := []string{manifestName, fixture.SidecarName, stateName, episodeName}
	for _, path := range slices.Sorted(maps.Keys(l.m.FileSHA256)) {
		names = append(names, fixture.FileName(path))
	}
	return names
}

// newCheckpoints makes (if needed) and returns the checkpoint directory,
// and starts its retention; close stops it.
func newCheckpoints(dir string, ttl time.Duration, maxBytes int64, logger *slog.Logger) (*checkpoints, error) {
	for _, sub := range subDirs {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("app: checkpoint directory: %w", err)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	c := &checkpoints{dir: abs, ttl: cmp.Or(ttl, DefaultCheckpointTTL), maxBytes: cmp.Or(maxBytes, DefaultCheckpointMaxBytes), logger: logger, loaded: map[string]*loadedCheckpoint{}, fresh: map[string]bool{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	c.close = sync.OnceFunc(func() {
		close(c.stop)
		<-c.done
	})
	go c.retain()
	return c, nil
}

// testHookWrote runs after each file a checkpoint writes, with the file's
// name; tests replace it.
var testHookWrote = func(name string) {}

// testHookFenceChecked runs when a checkpoint's write has read the fence
// of its attempt, before it sets the episode's latest pointer; tests
// replace it.
var testHookFenceChecked = func(attempt string) {}

// testHookRemoved runs when retention has removed a checkpoint, with its
// id.
var testHookRemoved = func(id string) {}

// testHookLatestLockWait runs when the lock on the episodes' latest
// pointers is held elsewhere, before waiting for it; tests replace it.
var testHookLatestLockWait = func() {}

// save writes a checkpoint and returns its description.
func (c *checkpoints) save(cp *composition.Checkpoint, ep task.Saved, req openenv.CheckpointRequest) (openenv.CheckpointInfo, error) {
	id := uuid.NewString()
	now := time.Now().UTC()
	m := manifest{Format: 1, World: cp.Sidecar.World, WorldVersion: cp.Sidecar.WorldVersion, SHA256: map[string]string{}}
	m.CheckpointInfo = openenv.CheckpointInfo{
		ID: id, Revision: req.Revision, EpisodeID: ep.Header.EpisodeID, Attempt: req.Attempt,
		CreatedAt: now.Format(env.TimeFormat), FileSHA256: cp.Sidecar.FileHashes(),
	}
	if c.ttl > 0 {
		m.ExpiresAt = now.Add(c.ttl).Format(env.TimeFormat)
	}
	cp.Sidecar.ID = id
	cp.Sidecar.CreatedAt = m.CreatedAt
	episode, err := json.Marshal(savedEpisode{Episode: ep, Session: req.Session})
	if err != nil {
		return openenv.CheckpointInfo{}, fmt.Errorf("app: checkpoint: %w", err)
	}
	tmp, err := os.MkdirTemp(c.dir, tmpPrefix+id+"-")
	if err != nil {
		return openenv.CheckpointInfo{}, err
	}
	defer os.RemoveAll(tmp) // nothing left there once renamed into place
	sidecar, err := cp.WriteDir(tmp)
	if err != nil {
		return openenv.CheckpointInfo{}, err
	}
	testHookWrote(fixture.SidecarName)
	size := int64(len(cp.State) + len(episode))
	for _, b := range cp.Files {
		size += int64(len(b))
	}
	m.SHA256[fixture.SidecarName] = fixture.HashBytes(sidecar)
	for _, f := range []struct {
		name string
		data []byte
	}{{stateName, cp.State}, {episodeName, episode}} {
		if err := os.WriteFile(filepath.Join(tmp, f.name), f.data, 0o600); err != nil {
			return openenv.CheckpointInfo{}, err
		}
		m.SHA256[f.name] = fixture.HashBytes(f.data)
		testHookWrote(f.name)
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return openenv.CheckpointInfo{}, err
	}
	if err := os.WriteFile(filepath.Join(tmp, manifestName), data, 0o600); err != nil {
		return openenv.CheckpointInfo{}, err
	}
	testHookWrote(manifestName)
	c.mu.Lock()
	c.fresh[id] = false
	c.mu.Unlock()
	if err := os.Rename(tmp, filepath.Join(c.dir, id)); err != nil {
		c.mu.Lock()
		delete(c.fresh, id)
		c.mu.Unlock()
		return openenv.CheckpointInfo{}, err
	}
	c.wrote(id, size)
	l := &loadedCheckpoint{m: m, cp: cp, ep: savedEpisode{Episode: ep, Session: req.Session}, size: size}
	l.stamp, _ = fixture.Stamp(filepath.Join(c.dir, id), l.files())
	if m.Attempt != "" {
		if err := c.setPointer(attemptsDir, m.Attempt, m.CheckpointInfo); err != nil {
			c.logger.Warn("app: the attempt's episode could not be recorded", "checkpoint", id, "err", err)
		}
	}
	if m.EpisodeID != "" {
		unlock := c.lockLatest()
		// A restore that fenced the attempt while this checkpoint was
		// written (on another server, say) continues the episode: its
		// checkpoint stays the episode's newest (rewind), and this one's
		// steps are ones the restore undid. A restore fencing it once
		// it was read rewinds after this write: both hold the lock.
		var err error
		_, fenced, _ := c.fencedBy(m.Attempt)
		testHookFenceChecked(m.Attempt)
		if !fenced {
			err = c.setPointer(latestDir, worldKey(m.World, m.EpisodeID), m.CheckpointInfo)
		}
		unlock()
		if err != nil {
			c.logger.Warn("app: the episode's newest checkpoint could not be recorded", "checkpoint", id, "err", err)
		}
	}
	// The bytes are at hand: a restore here (a fork, a branch) needs not
	// read them back.
	c.keep(id, l)
	return m.CheckpointInfo, nil
}

// isID reports whether s is an id the store issued: a UUID in its
// canonical, lowercase form (which also keeps it a plain file name).
func isID(s string) bool {
	u, err := uuid.Parse(s)
	return err == nil && u.String() == s
}

// expired reports whether a checkpoint is past its expiry.
func expired(info openenv.CheckpointInfo) bool {
	return info.ExpiresAt != "" && info.ExpiresAt < time.Now().UTC().Format(env.TimeFormat)
}

// unknown is the error of a restore naming no checkpoint.
func (c *checkpoints) unknown(id, why string) error {
	return &openenv.OptionError{Option: "checkpoint", Value: id, Message: fmt.Sprintf("checkpoint %q %s; nothing was restored", id, why)}
}

// load returns a checkpoint, read and verified (the store files against
// the sidecar's hashes when the first instance opens from it), from the
// cache when it was written or restored here lately and its files are
// unchanged on disk.
func (c *checkpoints) load(id string) (*loadedCheckpoint, error) {
	c.mu.Lock()
	l, ok := c.loaded[id]
	c.mu.Unlock()
	if ok && l.stamp != "" {
		if stamp, err := fixture.Stamp(filepath.Join(c.dir, id), l.files()); err == nil && stamp == l.stamp && !expired(l.m.CheckpointInfo) {
			return l, nil
		}
	}
	if ok {
		c.forget(id)
	}
	l, err := c.read(id)
	if err != nil {
		return nil, err
	}
	c.keep(id, l)
	return l, nil
}

// keep caches a checkpoint read or written, forgetting the oldest past
// maxLoaded or maxLoadedBytes.
func (c *checkpoints) keep(id string, l *loadedCheckpoint) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(id)
	if l.size > maxLoadedBytes {
		return
	}
	c.loaded[id], c.loadedBytes = l, c.loadedBytes+l.size
	c.order = append(c.order, id)
	for len(c.order) > maxLoaded || c.loadedBytes > maxLoadedBytes {
		c.dropLocked(c.order[0])
	}
}

// dropLocked removes id from the cache, if there.
func (c *checkpoints) dropLocked(id string) {
	if l, ok := c.loaded[id]; ok {
		delete(c.loaded, id)
		c.loadedBytes -= l.size
		c.order = slices.DeleteFunc(c.order, func(o string) bool { return o == id })
	}
}

// read reads a checkpoint and verifies every file but the store files
// against its manifest.
func (c *checkpoints) read(id string) (*loadedCheckpoint, error) {
	if !isID(id) {
		return nil, c.unknown(id, "is not a checkpoint id (checkpoint ids are the lowercase UUIDs checkpoint replies carry)")
	}
	dir := filepath.Join(c.dir, id)
	data, err := fixture.ReadFile(filepath.Join(dir, manifestName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, serr := os.Stat(dir); serr == nil {
			return nil, c.unknown(id, "is incomplete: it has no manifest")
		}
		switch {
		case c.ttl == 0: // ReadCheckpoint's store
			return nil, fmt.Errorf("app: checkpoint %s is not in %s: %w", id, c.dir, fs.ErrNotExist)
		case c.ttl < 0:
			return nil, c.unknown(id, "does not exist in this server's checkpoint store (checkpoints are kept until the store is over its size budget)")
		}
		return nil, c.unknown(id, fmt.Sprintf("does not exist in this server's checkpoint store (checkpoints are kept %s, fewer when the store is over its size budget)", c.ttl))
	case errors.Is(err, fixture.ErrNotRegular):
		return nil, c.unknown(id, fmt.Sprintf("is corrupt: %s is not a regular file", manifestName))
	case err != nil:
		return nil, &env.InfraError{Kind: env.FaultStorage, Message: "the checkpoint store cannot be read; nothing was restored", Err: err}
	}
	l := &loadedCheckpoint{}
	err = json.Unmarshal(data, &l.m)
	switch {
	case err == nil && l.m.Format != 1:
		return nil, c.unknown(id, fmt.Sprintf("is of format %d; this server reads checkpoints of format 1 (a newer server wrote it: restore it on a server of that version or later; or its manifest was edited)", l.m.Format))
	case err != nil:
		return nil, c.unknown(id, "is corrupt: its manifest does not parse")
	case l.m.ID != id:
		return nil, c.unknown(id, "is corrupt: its manifest names another checkpoint")
	}
	// Expiry bounds what a server restores; ReadCheckpoint's store (no
	// TTL), read to grade a recording that continues the checkpoint, reads
	// an expired one that is still there.
	if c.ttl != 0 && expired(l.m.CheckpointInfo) {
		return nil, c.unknown(id, "expired at "+l.m.ExpiresAt)
	}
	// Stamped before reading: a file changed while it is read fails its
	// hash now, or the stamp at the next restore.
	l.stamp, _ = fixture.Stamp(dir, l.files())
	files := map[string][]byte{}
	for _, name := range []string{fixture.SidecarName, stateName, episodeName} {
		b, err := fixture.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fixture.ErrNotRegular) {
			return nil, c.unknown(id, fmt.Sprintf("is corrupt: %s is not a regular file", name))
		}
		if err != nil {
			return nil, c.unknown(id, fmt.Sprintf("is incomplete: %s cannot be read", name))
		}
		if got, want := fixture.HashBytes(b), l.m.SHA256[name]; got != want {
			return nil, c.unknown(id, fmt.Sprintf("is corrupt: %s has sha256 %s, its manifest says %s", name, got, want))
		}
		files[name] = b
	}
	if l.cp, err = composition.ReadCheckpoint(dir, files[fixture.SidecarName], files[stateName]); errors.Is(err, fixture.ErrNotRegular) {
		return nil, c.unknown(id, fmt.Sprintf("is corrupt: %v", err))
	} else if err != nil {
		return nil, c.unknown(id, fmt.Sprintf("is incomplete: %v", err))
	}
	if !maps.Equal(l.cp.Sidecar.FileHashes(), l.m.FileSHA256) {
		return nil, c.unknown(id, "is corrupt: its sidecar and its manifest disagree on the store files' hashes")
	}
	if err := json.Unmarshal(files[episodeName], &l.ep); err != nil {
		return nil, c.unknown(id, fmt.Sprintf("is corrupt: %s does not parse", episodeName))
	}
	l.size = int64(len(files[episodeName]) + len(l.cp.State))
	for _, b := range l.cp.Files {
		l.size += int64(len(b))
	}
	return l, nil
}

// ReadCheckpoint reads checkpoint id from the checkpoint store dir (a
// server's Config.Checkpoints) and verifies it as a restore does: the
// instance's part, for composition.Options.Checkpoint, and the episode's,
// for task.Resume. A checkpoint that is not in dir is an error wrapping
// fs.ErrNotExist; an incomplete or corrupt one is an error saying which.
// One past its expiry is read all the same: expiry bounds what a server
// restores, and a recording that continues the checkpoint is graded from
// it (seahaven grade --checkpoints) when it is no longer served.
func ReadCheckpoint(dir, id string) (*composition.Checkpoint, task.Saved, error) {
	l, err := (&checkpoints{dir: dir}).read(id)
	if err != nil {
		return nil, task.Saved{}, err
	}
	return l.cp, l.ep.Episode, nil
}
