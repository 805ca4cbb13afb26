package openenv

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// testHookDrainRefused runs when a drain is refused the session's call
// slot, before it tells why; tests set it.
var testHookDrainRefused = func(*session) {}

// drain checkpoints the session once its step in progress is done and one
// of turns is free (it holds one while it checkpoints), records the
// checkpoint for its next request (Restorer.Drained) and stops it: a
// /ws session closes with status 1012 and the reason "checkpoint <id>",
// and has no record, since no request names it (its id is never told).
// A session without an instance, or whose checkpoint fails or does not end
// before ctx does, just stops.
// So does a session whose attempt a restore superseded: its episode goes
// on in the session that restored it, and a checkpoint of it would fork
// the episode; a /ws session closes with status 1001 and the reason
// "superseded by …". It returns which of these it did.
func (ss *session) drain(ctx context.Context, turns chan struct{}) drainOutcome {
	r, ok := ss.srv.backend.(Restorer)
	if !ok {
		return drainNoEpisode
	}
	if perr := ss.acquire(ctx); perr != nil {
		testHookDrainRefused(ss)
		// A call past its deadline held the slot: when it was refused for
		// one (CALL_RUNNING), though the call may have returned since.
		if late := ss.lateCall(); late != nil || perr.code == codeCallRunning {
			const msg = " past its deadline holds the session; it closes without a checkpoint"
			if late != nil {
				ss.srv.warnLate("openenv: drain: a "+late.kind+msg, late)
			} else {
				ss.srv.log.Warn("openenv: drain: a tool call or grading"+msg, "session", ss.ref, "transport", ss.transport, "refusal", perr.message)
			}
			return drainLate
		}
		if ctx.Err() != nil { // its step in progress outlasted the drain
			return drainCut
		}
		return drainNoEpisode // it ended meanwhile
	}
	if ss.inst == nil || ss.ended { // no episode to keep
		ss.release()
		return drainNoEpisode
	}
	// Its step done, the session waits for its turn to checkpoint, its
	// slot held, so no step runs past the checkpoint.
	select {
	case turns <- struct{}{}:
		defer func() { <-turns }()
	case <-ctx.Done():
		ss.release()
		return drainCut
	}
	by, fenced, err := ss.supersededBy()
	if err != nil {
		// It may have been superseded: a checkpoint could fork the episode.
		ss.release()
		ss.srv.log.Warn("openenv: drain: the session's fence cannot be read; the session closes without a checkpoint", "session", ss.ref, "err", digested(err.Error()))
		return drainFailed
	}
	if fenced {
		ss.ended = true
		ss.stop(websocket.StatusGoingAway, closeReason("superseded by "+by))
		ss.release()
		ss.srv.log.Info("openenv: drain: the session was superseded; no checkpoint taken", "session", ss.ref, "by", digested(by))
		return drainSuperseded
	}
	named := "" // a /ws session's id is never told: no request names it
	if ss.transport != TransportWS {
		named = ss.id
	}
	// The checkpoint ends with the drain: a slow one would otherwise hold
	// Shutdown past its deadline.
	cctx, cancel := context.WithCancel(ss.tagged)
	defer context.AfterFunc(ctx, cancel)()
	info, perr := ss.checkpointLocked(cctx, true, named)
	cancel()
	if perr != nil {
		ss.release()
		ss.srv.log.Warn("openenv: drain: the session closes without a checkpoint", "session", ss.ref, "err", perr.message)
		if ctx.Err() != nil {
			return drainCut
		}
		return drainFailed
	}
	if named != "" {
		if err := r.Drained(named, info); err != nil {
			ss.srv.log.Warn("openenv: drain: the checkpoint could not be recorded for the session's next request", "session", ss.ref, "checkpoint", refOf(info.ID), "err", err)
		}
	}
	// No step may run past the checkpoint: the session's next request
	// gets the checkpoint instead (acquire, Server.unknownSession).
	ss.ended = true
	ss.stop(websocket.StatusServiceRestart, "checkpoint "+info.ID)
	ss.release()
	ss.srv.log.Info("openenv: drain: session checkpointed", "session", ss.ref, "checkpoint", refOf(info.ID), "revision", info.Revision)
	return drainCheckpointed
}

// drain checkpoints the sessions of list (see session.drain), as many at
// a time as there are CPUs (GOMAXPROCS), within ctx. Each waits for its
// step in progress on its own: a long step delays its session's
// checkpoint alone.
func (s *Server) drain(ctx context.Context, list []*session) *drainTally {
	start := time.Now()
	// Every CPU checkpoints: the drain's deadline is the shutdown timeout,
	// and a session whose checkpoint does not start before it loses its
	// episode. Half of them, one on two, left a server of a few hundred
	// sessions checkpointing them one by one past the timeout.
	turns := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		tally drainTally
	)
	for _, ss := range list {
		wg.Go(func() {
			outcome := ss.drain(ctx, turns)
			mu.Lock()
			tally[outcome]++
			mu.Unlock()
		})
	}
	wg.Wait()
	level := slog.LevelInfo
	if tally[drainCut] > 0 || tally[drainFailed] > 0 || tally[drainLate] > 0 {
		level = slog.LevelWarn // episodes were lost
	}
	s.log.Log(context.Background(), level, "openenv: drained", "sessions", len(list), "checkpointed", tally[drainCheckpointed],
		"cut_short", tally[drainCut], "failed", tally[drainFailed], "late", tally[drainLate], "superseded", tally[drainSuperseded], "no_episode", tally[drainNoEpisode],
		durationMS(time.Since(start)))
	return &tally
}

// drainOutcome is what a drain did with a session (session.drain).
type drainOutcome int

const (
	// drainNoEpisode: the session had no episode to keep, or had ended.
	drainNoEpisode drainOutcome = iota
	// drainCheckpointed: it was checkpointed and stopped.
	drainCheckpointed
	// drainSuperseded: a restore superseded its attempt; no checkpoint.
	drainSuperseded
	// drainFailed: its checkpoint failed, or its fence could not be read.
	drainFailed
	// drainLate: a tool call or grading past its deadline held it (lateCall).
	drainLate
	// drainCut: the drain's context ended first, while its step ran, it
	// waited for its turn, or its checkpoint was being taken.
	drainCut
)

// drainTally counts a drain's sessions by outcome.
type drainTally [drainCut + 1]int

// String says what the drain did, for Shutdown's error.
func (t *drainTally) String() string {
	parts := []string{fmt.Sprintf("%d checkpointed", t[drainCheckpointed])}
	if n := t[drainCut]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d not checkpointed as the shutdown ended first (a step still running or a checkpoint not yet done)", n))
	}
	if n := t[drainFailed]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d not checkpointed as their checkpoint failed (logged)", n))
	}
	if n := t[drainLate]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d not checkpointed as a tool call or grading past its deadline held them (logged)", n))
	}
	if n := t[drainSuperseded]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d not checkpointed as a restore superseded them", n))
	}
	if n := t[drainNoEpisode]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d with no episode to keep", n))
	}
	return strings.Join(parts, ", ")
}
