package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/fixture"
	"github.com/seahaven/seahaven/openenv"
)

// The checkpoint store's small records beside its checkpoints: the fences
// of superseded attempts, and the pointers naming each episode's newest
// checkpoint and each drained session's.

// fencePath is the file that fences attempt.
func (c *checkpoints) fencePath(attempt string) (string, bool) {
	if !isID(attempt) {
		return "", false
	}
	return filepath.Join(c.dir, fencesDir, attempt), true
}

// fence records that attempt, an attempt at episode, was superseded, by
// what. An attempt whose checkpoints are of another episode is refused:
// a restore supersedes only an attempt at the episode it continues.
func (c *checkpoints) fence(attempt, episode, by string) error {
	p, ok := c.fencePath(attempt)
	if !ok {
		return &openenv.OptionError{Option: "replaces", Value: attempt, Message: fmt.Sprintf("%q is not an attempt id (attempt ids are the lowercase UUIDs checkpoint replies carry)", attempt)}
	}
	if info, ok := c.readPointer(attemptsDir, attempt); ok && info.EpisodeID != episode {
		return &openenv.OptionError{Option: "replaces", Value: attempt, Message: fmt.Sprintf("attempt %s is an attempt at episode %q, not at %q, the episode the checkpoint continues: replaces names an attempt at the same episode; nothing was restored", attempt, info.EpisodeID, episode)}
	}
	// The fence is created whole, never replaced: of two restores replacing
	// one attempt, on this server or another sharing the store, one links
	// its fence in place and the other is refused, so the attempt has one
	// successor.
	tmp, err := writeTemp(filepath.Dir(p), []byte(by))
	if err == nil {
		err = os.Link(tmp, p)
		os.Remove(tmp)
	}
	if errors.Is(err, fs.ErrExist) {
		prev, _, _ := c.fencedBy(attempt)
		return &openenv.SupersededError{Attempt: attempt, By: prev}
	}
	if err != nil {
		return faultOr(err, "the attempt could not be fenced", fmt.Errorf("app: fence: %w", err))
	}
	return nil
}

// rewind points a world's episode's latest pointer at checkpoint id,
// which a restore fencing attempt continues, when the pointer names a
// checkpoint attempt took, or one of an attempt whose restores started
// attempt (continues): the episode goes on from id, and the superseded
// attempt's later steps are ones the restore undid. So it does when the
// pointer's checkpoint is gone (retention removed it, on another server
// perhaps, and has not yet repointed the episode): retention, repointing
// it then, would not name id, as it names a superseded attempt's
// checkpoint only in place of the one a restore continued (heirs). When
// id is gone (retention removed it once the restore read it), the pointer
// is removed: the episode has no newest checkpoint until its new attempt
// takes one. A pointer naming another attempt's checkpoint (a fork's) is
// left as it is. A failure is logged: the restore stands.
func (c *checkpoints) rewind(world, episode, attempt, id string) {
	if !isID(id) || episode == "" {
		return
	}
	defer c.lockLatest()()
	cur, ok := c.worldPointer(latestDir, world, episode)
	if !ok {
		cur, ok = c.readPointer(latestDir, worldKey(world, episode)) // its checkpoint gone
	}
	if !ok || cur.ID == id || cur.Attempt != attempt && !c.continues(attempt, cur) {
		return
	}
	m, ok := c.manifest(id)
	var err error
	if ok {
		err = c.setPointer(latestDir, worldKey(world, episode), m.CheckpointInfo)
	} else {
		err = c.removePointer(latestDir, worldKey(world, episode))
		if info, ok := c.readPointer(latestDir, episode); ok && info.ID == cur.ID {
			err = errors.Join(err, c.removePointer(latestDir, episode))
		}
	}
	if err != nil {
		c.logger.Warn("app: the episode's newest checkpoint could not be set to the one its restore continues", "checkpoint", id, "err", err)
	}
}

// continues reports whether attempt was started by the restores that
// replaced cur's attempt, and then each the attempt the one before
// started, as their fences record them. The pointer names such a
// checkpoint only while attempt has taken none: the one a restore started
// attempt from, or the one retention put in its place when that one went
// (heirs), which holds no later step.
func (c *checkpoints) continues(attempt string, cur openenv.CheckpointInfo) bool {
	chain, _ := c.restoresOf(cur.Attempt)
	return slices.ContainsFunc(chain, func(r fencedRestore) bool { return r.attempt == attempt })
}

// lockLatest takes latestMu and a lock on the store's latestLock file,
// shared by every server on the store, and returns their release: a
// checkpoint's write reads its attempt's fence and sets the episode's
// latest pointer, and a restore that fenced the attempt reads the pointer
// and rewinds it, each whole, so the restore's rewind never comes between
// the other's read and write, on two servers at once. A lock that cannot
// be taken is logged: the pointer is written all the same, as it was
// before servers locked it (and as servers of earlier versions do).
func (c *checkpoints) lockLatest() (unlock func()) {
	c.latestMu.Lock()
	f, err := os.OpenFile(filepath.Join(c.dir, latestLock), os.O_RDWR|os.O_CREATE, 0o600)
	if err == nil {
		if tryLock(f) != nil {
			testHookLatestLockWait()
			err = lockWait(f)
		}
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		c.logger.Warn("app: the lock on the episodes' newest checkpoints could not be taken", "err", err)
		return c.latestMu.Unlock
	}
	return func() {
		f.Close()
		c.latestMu.Unlock()
	}
}

// fencedBy reports whether attempt was fenced, and by what. A fence that
// cannot be read, for any reason but its absence, is an error (an
// *env.InfraError): the attempt may be fenced, and its caller refuses
// its request rather than let a superseded attempt step.
func (c *checkpoints) fencedBy(attempt string) (string, bool, error) {
	p, ok := c.fencePath(attempt)
	if !ok {
		return "", false, nil
	}
	b, err := fixture.ReadFile(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", false, nil
	case err != nil:
		const what = "the attempt's fence cannot be read, so its request was refused"
		return "", false, faultOr(err, what, &env.InfraError{Kind: env.FaultStorage, Message: "the checkpoint store failed; " + what, Err: err})
	}
	return string(b), true, nil
}

// pointerPath is the file of key in a pointer directory (latestDir,
// drainedDir): named by the key's hash, which keeps ids out of file names.
func (c *checkpoints) pointerPath(dir, key string) string {
	return filepath.Join(c.dir, dir, fixture.HashBytes([]byte(key)))
}

// setPointer records info under key in dir, atomically.
func (c *checkpoints) setPointer(dir, key string, info openenv.CheckpointInfo) error {
	data, err := json.Marshal(info)
	if err != nil {
		return err
	}
	p := c.pointerPath(dir, key)
	tmp, err := writeTemp(filepath.Dir(p), data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// writeTemp writes data to a new temporary file in dir and returns its
// name, for a caller to move into place whole.
func writeTemp(dir string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, ".tmp-")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// readPointer returns what setPointer recorded under key in dir, whether
// or not the checkpoint it names is still there.
func (c *checkpoints) readPointer(dir, key string) (openenv.CheckpointInfo, bool) {
	return readPointerFile(c.pointerPath(dir, key))
}

// readPointerFile reads the pointer file at path (see setPointer).
func readPointerFile(path string) (openenv.CheckpointInfo, bool) {
	var info openenv.CheckpointInfo
	data, err := fixture.ReadFile(path)
	if err != nil || json.Unmarshal(data, &info) != nil || !isID(info.ID) {
		return openenv.CheckpointInfo{}, false
	}
	return info, true
}

// pointer returns what setPointer recorded under key in dir, unless the
// checkpoint it names expired or is no longer in the store (retention
// removed it, perhaps on another server sharing the directory).
func (c *checkpoints) pointer(dir, key string) (openenv.CheckpointInfo, bool) {
	info, ok := c.readPointer(dir, key)
	if !ok || expired(info) {
		return openenv.CheckpointInfo{}, false
	}
	if _, err := os.Stat(filepath.Join(c.dir, info.ID, manifestName)); err != nil {
		return openenv.CheckpointInfo{}, false
	}
	return info, true
}

// worldKey is the key of a world's episode or session in a pointer
// directory (latestDir, drainedDir): servers of different worlds sharing
// the store may each have one of the same id, and a server restores only
// its own world's checkpoints.
func worldKey(world, id string) string { return world + "\n" + id }

// undrained removes a world's session's drain record: the one keyed by
// the world, and one keyed by the session alone whose checkpoint is of the
// world (see worldPointer).
func (c *checkpoints) undrained(world, session string) error {
	err := c.removePointer(drainedDir, worldKey(world, session))
	if info, ok := c.readPointer(drainedDir, session); ok && c.ofWorld(info.ID, world) {
		err = errors.Join(err, c.removePointer(drainedDir, session))
	}
	return err
}

// undrainedTo removes every drain record naming checkpoint id, whatever
// its session and its key (a checkpoint is of one world).
func (c *checkpoints) undrainedTo(id string) error {
	files, err := os.ReadDir(filepath.Join(c.dir, drainedDir))
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range files {
		p := filepath.Join(c.dir, drainedDir, f.Name())
		if info, ok := readPointerFile(p); ok && info.ID == id {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// worldPointer returns what setPointer recorded in dir for a world's id
// (worldKey). A pointer keyed by the id alone, as servers of earlier
// versions wrote them, serves when its checkpoint is of the world.
func (c *checkpoints) worldPointer(dir, world, id string) (openenv.CheckpointInfo, bool) {
	if info, ok := c.pointer(dir, worldKey(world, id)); ok {
		return info, true
	}
	if info, ok := c.pointer(dir, id); ok && c.ofWorld(info.ID, world) {
		return info, true
	}
	return openenv.CheckpointInfo{}, false
}

// ofWorld reports whether checkpoint id, by its manifest, is of world.
func (c *checkpoints) ofWorld(id, world string) bool {
	m, ok := c.manifest(id)
	return ok && m.World == world
}

// manifest reads checkpoint id's manifest, without verifying anything
// else.
func (c *checkpoints) manifest(id string) (manifest, bool) {
	var m manifest
	data, err := fixture.ReadFile(filepath.Join(c.dir, id, manifestName))
	if err != nil || json.Unmarshal(data, &m) != nil || m.ID != id {
		return manifest{}, false
	}
	return m, true
}

// removePointer removes what setPointer recorded under key in dir, if
// anything.
func (c *checkpoints) removePointer(dir, key string) error {
	if err := os.Remove(c.pointerPath(dir, key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// forget drops a checkpoint from the cache.
func (c *checkpoints) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(id)
}
