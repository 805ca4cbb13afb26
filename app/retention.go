package app

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/seahaven/seahaven/openenv"
)

// retentionEvery is how often retention runs on its own, beside when the
// store opens and after a tenth of the budget was written: so that a
// server that only restores removes what expired and what killed writers
// left too.
const retentionEvery = time.Minute

// wrote counts size bytes written, for checkpoint id, and has retention
// run when a tenth of the budget has been written since it last ran.
func (c *checkpoints) wrote(id string, size int64) {
	c.mu.Lock()
	c.fresh[id] = true
	c.written += size
	due := c.maxBytes > 0 && c.written > c.maxBytes/10
	c.mu.Unlock()
	if due {
		select {
		case c.kick <- struct{}{}:
		default: // a sweep is due already
		}
	}
}

// retain runs retention when the store opens, every retentionEvery, and
// when wrote asks, until c.close.
func (c *checkpoints) retain() {
	defer close(c.done)
	t := time.NewTicker(retentionEvery)
	defer t.Stop()
	for {
		c.sweep(time.Now())
		select {
		case <-c.stop:
			return
		case <-t.C:
		case <-c.kick:
		}
	}
}

// stored is a checkpoint directory as retention sees it.
type stored struct {
	id       string
	episode  string // its worldKey, from its manifest; "" when it has none that parses
	attempt  string // the attempt that took it, from its manifest
	revision int    // the attempt's revision it was taken at, from its manifest
	at       time.Time
	size     int64
	newest   bool // the newest checkpoint of its episode
}

// sweep removes the checkpoints and records older than the TTL (a fence
// not while a checkpoint of its episode is left: expireRecords), the
// temporary directories of checkpoints whose writing was killed (older
// than a minute), and then, while the rest take more than nine tenths of
// the size budget, the oldest checkpoints that are not their episode's
// newest, then the oldest of those. An episode whose newest checkpoint
// went is pointed at its newest left that may stand for it (heirs), or
// at none (repoint). A checkpoint is removed by renaming it aside
// first, so a restore never reads half of one, and so is a temporary
// directory, so a writer never publishes half of one.
//
// Nine tenths leave room for the tenth of the budget written before the
// next sweep starts (wrote): the directory holds at most the budget and
// the checkpoint that started the sweep. That checkpoint, and any being
// written, are never removed by the sweep (fresh): their ids are about to
// be named to a client. Nor does the budget remove the checkpoint a drain
// named for a session's next request (drainedDir) while its record lasts.
func (c *checkpoints) sweep(now time.Time) {
	c.sweepMu.Lock()
	defer c.sweepMu.Unlock()
	c.mu.Lock()
	c.written = 0
	var started []string // written before this sweep: fresh until it ends
	for id, written := range c.fresh {
		if written {
			started = append(started, id)
		}
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		for _, id := range started {
			delete(c.fresh, id)
		}
		c.mu.Unlock()
	}()
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		c.logger.Error("app: checkpoint retention: cannot list the checkpoint store", "err", err)
		return
	}
	// Read after the listing: a checkpoint renamed into place before it
	// was marked fresh before it.
	c.mu.Lock()
	fresh := maps.Clone(c.fresh)
	c.mu.Unlock()
	spared := func(id string) bool { _, ok := fresh[id]; return ok }
	drained := c.drainedIDs()
	var live []stored
	var total int64
	lost := map[string]bool{} // episodes that lost a checkpoint ("" for none)
	removed := 0
	for _, e := range entries {
		name := e.Name()
		fi, err := e.Info()
		if err != nil || !e.IsDir() || slices.Contains(subDirs, name) {
			continue
		}
		age := now.Sub(fi.ModTime())
		switch {
		case strings.HasPrefix(name, tmpPrefix):
			if age > time.Minute {
				// Renamed aside before it is removed, as a checkpoint is: a
				// writer that was only slow then fails to rename it into
				// place, instead of publishing a checkpoint whose files the
				// removal deleted as the rename happened.
				aside := filepath.Join(c.dir, trashPrefix+name)
				if os.Rename(filepath.Join(c.dir, name), aside) == nil {
					os.RemoveAll(aside)
				}
			}
			continue
		case strings.HasPrefix(name, trashPrefix):
			if age > time.Minute {
				os.RemoveAll(filepath.Join(c.dir, name))
			}
			continue
		case c.ttl > 0 && age > c.ttl && !spared(name):
			ep, _, _ := c.episodeOf(name)
			if c.remove(name) {
				lost[ep] = true
				removed++
			}
			continue
		}
		s := stored{id: name, at: fi.ModTime(), size: dirSize(filepath.Join(c.dir, name))}
		s.episode, s.attempt, s.revision = c.episodeOf(name)
		live = append(live, s)
		total += s.size
	}
	// An episode's newest is the last written of those that may stand for
	// it (heirs): not a superseded attempt's that may hold steps a restore
	// undid;
	superseded := c.superseded()
	heir := c.heirs(superseded)
	newest := map[string]int{}
	for i, s := range live {
		if j, ok := newest[s.episode]; s.episode != "" && heir(s) && (!ok || live[j].at.Before(s.at)) {
			newest[s.episode] = i
		}
	}
	// but the checkpoint an episode's latest pointer names is its newest,
	// when it is here: after a restore replacing an attempt (rewind), the
	// one the episode goes on from, written before the superseded
	// attempt's, and of that attempt when the restore replaced its own.
	at, episodes := make(map[string]int, len(live)), map[string]bool{}
	for i, s := range live {
		at[s.id] = i
		if s.episode != "" {
			episodes[s.episode] = true
		}
	}
	for episode := range episodes {
		if info, ok := c.readPointer(latestDir, episode); ok {
			if j, ok := at[info.ID]; ok && live[j].episode == episode {
				newest[episode] = j
			}
		}
	}
	for _, i := range newest {
		live[i].newest = true
	}
	// Older revisions first, then episodes' newest; oldest first in each.
	slices.SortFunc(live, func(a, b stored) int {
		if a.newest != b.newest {
			if a.newest {
				return 1
			}
			return -1
		}
		return a.at.Compare(b.at)
	})
	if c.maxBytes > 0 {
		var kept []stored // checkpoints that could not be removed
		for target := c.maxBytes - c.maxBytes/10; len(live) > 0 && total > target; live = live[1:] {
			if spared(live[0].id) || drained[live[0].id] || !c.remove(live[0].id) {
				kept = append(kept, live[0])
				continue
			}
			lost[live[0].episode] = true
			total -= live[0].size
			removed++
		}
		live = append(kept, live...)
	}
	delete(lost, "") // a checkpoint of no episode has no latest pointer
	for ep := range lost {
		c.repoint(ep, live)
	}
	if c.ttl > 0 {
		c.expireRecords(now, live)
	}
	if removed > 0 {
		c.logger.Info("app: checkpoint retention removed checkpoints", "removed", removed, "kept", len(live), "bytes", total)
	}
}

// expireRecords removes the files of the store's subDirs older than the
// TTL, but for a fence while live holds a checkpoint of its attempt's
// episode, and the record of a fenced attempt's episode while its fence
// is kept: a checkpoint of the episode could otherwise be restored to
// replace the attempt a second time, giving the episode two live
// continuations.
func (c *checkpoints) expireRecords(now time.Time, live []stored) {
	episodes := map[string]bool{} // the episode ids of live
	for _, s := range live {
		if _, ep, ok := strings.Cut(s.episode, "\n"); ok {
			episodes[ep] = true
		}
	}
	kept := map[string]bool{} // the records of fenced attempts, by file name
	old := func(f os.DirEntry) bool {
		fi, err := f.Info()
		return err == nil && now.Sub(fi.ModTime()) > c.ttl
	}
	fences, _ := os.ReadDir(filepath.Join(c.dir, fencesDir))
	for _, f := range fences {
		attempt := f.Name()
		if isID(attempt) {
			if info, ok := c.readPointer(attemptsDir, attempt); (ok && episodes[info.EpisodeID]) || !old(f) {
				kept[filepath.Base(c.pointerPath(attemptsDir, attempt))] = true
				continue
			}
		}
		if old(f) {
			os.Remove(filepath.Join(c.dir, fencesDir, attempt))
		}
	}
	for _, sub := range []string{latestDir, drainedDir, attemptsDir} {
		files, _ := os.ReadDir(filepath.Join(c.dir, sub))
		for _, f := range files {
			if !(sub == attemptsDir && kept[f.Name()]) && old(f) {
				os.Remove(filepath.Join(c.dir, sub, f.Name()))
			}
		}
	}
}

// drainedIDs returns the ids of the checkpoints drains named for
// sessions' next requests (drainedDir).
func (c *checkpoints) drainedIDs() map[string]bool {
	ids := map[string]bool{}
	files, _ := os.ReadDir(filepath.Join(c.dir, drainedDir))
	for _, f := range files {
		if info, ok := readPointerFile(filepath.Join(c.dir, drainedDir, f.Name())); ok {
			ids[info.ID] = true
		}
	}
	return ids
}

// episodeOf returns the worldKey of checkpoint id's episode, from its
// manifest, "" when it has no episode or no manifest that parses, and
// the attempt that took it, at which revision.
func (c *checkpoints) episodeOf(id string) (episode, attempt string, revision int) {
	m, ok := c.manifest(id)
	if !ok || m.EpisodeID == "" {
		return "", m.Attempt, m.Revision
	}
	return worldKey(m.World, m.EpisodeID), m.Attempt, m.Revision
}

// superseded returns a function reporting whether an attempt was fenced
// (a restore replaced it), reading each attempt's fence once. An attempt
// whose fence cannot be read counts as fenced: it may be.
func (c *checkpoints) superseded() func(attempt string) bool {
	fenced := map[string]bool{}
	return func(attempt string) bool {
		if f, ok := fenced[attempt]; ok {
			return f
		}
		_, f, err := c.fencedBy(attempt)
		f = f || err != nil
		fenced[attempt] = f
		return f
	}
}

// heirs returns a function reporting whether a checkpoint may stand for
// its episode's newest once the one the episode's latest pointer names is
// gone: one of an attempt no restore superseded (a fork's, or a restored
// attempt's), or one of the pointer's checkpoint's own attempt taken at
// or before that checkpoint's revision, when the pointer's checkpoint is
// the one the episode's live attempt was restored from (kept). A
// superseded attempt's other checkpoints may hold steps a restore undid.
func (c *checkpoints) heirs(superseded func(attempt string) bool) func(s stored) bool {
	type bound struct {
		attempt  string
		revision int
	}
	kept := map[string]bound{} // by episode: the attempt and revision up to which its checkpoints may stand
	return func(s stored) bool {
		if !superseded(s.attempt) {
			return true
		}
		b, ok := kept[s.episode]
		if !ok {
			b.revision = -1
			if p, ok := c.readPointer(latestDir, s.episode); ok && c.kept(p) {
				b = bound{p.Attempt, p.Revision}
			}
			kept[s.episode] = b
		}
		return s.attempt == b.attempt && s.revision <= b.revision
	}
}

// kept reports whether checkpoint p holds no step a restore undid, though
// its attempt was superseded: of the restores that replaced its attempt,
// and then each the attempt the one before started, the last (the one
// whose attempt no restore replaced) continued from p. Its attempt's
// checkpoints of no later revision hold none either: an attempt's
// checkpoints are of one line of steps (a reset or a restore starts a new
// attempt), and its revision counts them. Any other chain (a fence that
// cannot be read, one another kind of restore wrote, a live attempt
// restored from elsewhere) is not: p may hold undone steps.
func (c *checkpoints) kept(p openenv.CheckpointInfo) bool {
	chain, ended := c.restoresOf(p.Attempt)
	return ended && len(chain) > 0 && chain[len(chain)-1].from == p.ID
}

// fencedRestore is a restore that replaced an attempt, as its fence records
// it: from the checkpoint it continued, as the attempt it started.
type fencedRestore struct{ from, attempt string }

// restoresOf returns the restores that replaced attempt, and then each the
// attempt the one before started, in order, from the fences; ended is
// false when the chain stops at a fence that cannot be read or that
// another kind of restore wrote, rather than at an attempt no restore
// replaced.
func (c *checkpoints) restoresOf(attempt string) (chain []fencedRestore, ended bool) {
	seen := map[string]bool{}
	for !seen[attempt] {
		seen[attempt] = true
		by, fenced, err := c.fencedBy(attempt)
		switch {
		case err != nil:
			return chain, false
		case !fenced:
			return chain, true
		}
		var r fencedRestore
		var ok bool
		if r.from, r.attempt, ok = openenv.RestoredFrom(by); !ok {
			return chain, false
		}
		chain = append(chain, r)
		attempt = r.attempt
	}
	return chain, false
}

// repoint points the latest pointer of episode (a worldKey), when the
// checkpoint it names is gone, at the episode's newest checkpoint among
// live that may stand for it (heirs) and is still in the store, or
// removes it when there is none: a superseded attempt's checkpoints may
// hold steps its restore undid (those after the checkpoint the restore
// continued), and another server sharing the store may have removed one
// of live since the sweep listed it. It reads the fences and the
// manifests again, under the lock: a restore may have fenced an attempt
// since the sweep read them.
func (c *checkpoints) repoint(episode string, live []stored) {
	defer c.lockLatest()()
	if _, ok := c.pointer(latestDir, episode); ok {
		return // names a checkpoint that is there (a newer one, perhaps)
	}
	heir := c.heirs(c.superseded()) // under the lock: the pointer and fences as they are now
	var heirs []stored
	for _, s := range live {
		if s.episode == episode && heir(s) {
			heirs = append(heirs, s)
		}
	}
	slices.SortStableFunc(heirs, func(a, b stored) int { return b.at.Compare(a.at) }) // newest first
	for _, s := range heirs {
		if m, ok := c.manifest(s.id); ok {
			if c.setPointer(latestDir, episode, m.CheckpointInfo) == nil {
				return
			}
			break
		}
	}
	c.removePointer(latestDir, episode)
}

// remove renames a checkpoint aside, then removes it. It reports whether
// the checkpoint left the store, and logs why not: a checkpoint that could
// not be renamed aside still counts against the size budget. One that is
// no longer there left it too: another server sharing the store removed
// it since this one listed it.
func (c *checkpoints) remove(id string) bool {
	c.forget(id)
	aside := filepath.Join(c.dir, trashPrefix+id)
	err := os.Rename(filepath.Join(c.dir, id), aside)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		c.logger.Error("app: checkpoint retention cannot remove a checkpoint", "checkpoint", id, "err", err)
		return false
	}
	os.RemoveAll(aside)
	testHookRemoved(id)
	return true
}

// dirSize sums the sizes of a directory's files.
func dirSize(dir string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range entries {
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}
