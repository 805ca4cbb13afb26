package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// CheckpointConfig configures RunCheckpoints.
type CheckpointConfig struct {
	// URL is the server to measure; "" starts Server.
	URL string
	// Server starts the server when URL is "".
	Server *ServerCommand
	// InstanceRoot is the server's instance root, for the forks' disk use;
	// "" measures it only for a started server.
	InstanceRoot string
	// Step is the step message each call sends; Calls calls precede each
	// checkpoint.
	Step  []byte
	Calls int
	// Rounds is how many resets, checkpoints and restores are measured.
	Rounds int
	// Fork is how many sessions one checkpoint is restored into at once.
	Fork int
	// Progress receives progress lines; nil discards.
	Progress io.Writer
}

// CheckpointReport is the result of RunCheckpoints.
type CheckpointReport struct {
	World   string `json:"world"`
	Fixture string `json:"fixture"`
	Calls   int    `json:"calls"`
	Rounds  int    `json:"rounds"`
	Fork    int    `json:"fork"`
	// Reset, Checkpoint and Restore are the round trips of a reset from
	// the fixture, a checkpoint after Calls calls, and a restore of it.
	Reset      Latency `json:"reset"`
	Checkpoint Latency `json:"checkpoint"`
	Restore    Latency `json:"restore"`
	// ResetCPU, CheckpointCPU and RestoreCPU are the server's CPU time
	// per operation (-1 when the server does not say).
	ResetCPU      time.Duration `json:"reset_cpu_ns"`
	CheckpointCPU time.Duration `json:"checkpoint_cpu_ns"`
	RestoreCPU    time.Duration `json:"restore_cpu_ns"`
	// ForkWall is the time to restore one checkpoint into Fork sessions,
	// one after the other, and ForkDiskBytes the bytes the siblings'
	// instance directories hold before they write (-1 when unknown).
	ForkWall      time.Duration `json:"fork_wall_ns"`
	ForkDiskBytes int64         `json:"fork_disk_bytes"`
}

// RunCheckpoints measures checkpoints against resets: Rounds times, a
// session resets from the fixture, makes Calls calls and checkpoints
// (measured), resets twice (the second measured) and restores the
// checkpoint (measured); then one checkpoint is restored into Fork
// sessions.
func RunCheckpoints(ctx context.Context, cfg CheckpointConfig) (*CheckpointReport, error) {
	if cfg.URL == "" && cfg.Server == nil {
		return nil, errors.New("bench: CheckpointConfig needs a URL or a Server command")
	}
	srv, err := openServer(ctx, cfg.URL, cfg.InstanceRoot, cfg.Server, cfg.Progress)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	rep := &CheckpointReport{Calls: cfg.Calls, Rounds: cfg.Rounds, Fork: cfg.Fork, ForkDiskBytes: -1}
	if rep.World, rep.Fixture, err = srv.describe(ctx); err != nil {
		return nil, err
	}
	r := &run{cfg: Config{}.withDefaults(), srv: srv, wsURL: "ws" + strings.TrimPrefix(srv.base, "http") + "/ws"}
	c, err := r.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.close()
	send := func(msg []byte, what string) (*reply, time.Duration, error) {
		rp, d, err := c.roundTrip(ctx, msg)
		if err == nil && rp.Type == "error" {
			err = fmt.Errorf("bench: %s: %s", what, rp.Data.Message)
		}
		return rp, d, err
	}
	cpuKnown := true
	cpu := func() int64 {
		s, err := srv.sample(ctx, false)
		if err != nil || s.CPUNanos < 0 {
			cpuKnown = false
			return 0
		}
		return s.CPUNanos
	}
	perOp := func(total int64, n int) time.Duration {
		if !cpuKnown || n == 0 {
			return -1
		}
		return time.Duration(total / int64(n))
	}
	var resets, checkpoints, restores []time.Duration
	var resetCPU, checkpointCPU, restoreCPU int64
	ids := make([]string, 0, cfg.Rounds)
	progress(cfg.Progress, "%d rounds: reset, %d calls, checkpoint, restore", cfg.Rounds, cfg.Calls)
	for range cfg.Rounds {
		if _, _, err := send([]byte(`{"type":"reset"}`), "reset"); err != nil {
			return nil, err
		}
		for range cfg.Calls {
			rp, _, err := send(cfg.Step, "step")
			if err != nil {
				return nil, err
			}
			// A call that fails writes nothing, and the checkpoints after
			// it would measure an instance that never changed.
			if e := rp.Data.Observation.Error; len(e) > 0 && string(e) != "null" {
				return nil, fmt.Errorf("bench: step: the call failed: %s", e)
			}
		}
		before := cpu()
		rp, d, err := send([]byte(`{"type":"checkpoint"}`), "checkpoint")
		if err != nil {
			return nil, err
		}
		checkpointCPU += cpu() - before
		checkpoints = append(checkpoints, d)
		id := rp.Data.CheckpointID
		if id == "" {
			return nil, errors.New("bench: the checkpoint reply names no checkpoint")
		}
		ids = append(ids, id)
		// The measured reset and restore each replace a fresh instance:
		// this reset replaces the one that made the calls, whose files
		// are removed in the background meanwhile.
		if _, _, err := send([]byte(`{"type":"reset"}`), "reset"); err != nil {
			return nil, err
		}
		time.Sleep(settleAfterClose)
		before = cpu()
		if _, d, err = send([]byte(`{"type":"reset"}`), "reset"); err != nil {
			return nil, err
		}
		resetCPU += cpu() - before
		resets = append(resets, d)
		before = cpu()
		if _, d, err = send(restoreMessage(id), "restore"); err != nil {
			return nil, err
		}
		restoreCPU += cpu() - before
		restores = append(restores, d)
	}
	rep.Reset, rep.Checkpoint, rep.Restore = summarise(resets), summarise(checkpoints), summarise(restores)
	rep.ResetCPU = perOp(resetCPU, cfg.Rounds)
	rep.CheckpointCPU = perOp(checkpointCPU, cfg.Rounds)
	rep.RestoreCPU = perOp(restoreCPU, cfg.Rounds)

	if cfg.Fork > 0 && len(ids) > 0 {
		progress(cfg.Progress, "restoring one checkpoint into %d sessions", cfg.Fork)
		before := instanceBytes(srv.instances)
		var siblings []*wsClient
		defer func() {
			for _, s := range siblings {
				s.close()
			}
		}()
		for range cfg.Fork {
			s, err := r.dial(ctx)
			if err != nil {
				return nil, err
			}
			siblings = append(siblings, s)
		}
		start := time.Now()
		for _, s := range siblings {
			rp, _, err := s.roundTrip(ctx, restoreMessage(ids[len(ids)-1]))
			if err == nil && rp.Type == "error" {
				err = fmt.Errorf("bench: fork: %s", rp.Data.Message)
			}
			if err != nil {
				return nil, err
			}
		}
		rep.ForkWall = time.Since(start)
		if after := instanceBytes(srv.instances); before >= 0 && after >= 0 {
			rep.ForkDiskBytes = after - before
		}
	}
	return rep, srv.stop()
}

// settleAfterClose is how long a round waits for the server to close
// the instance a reset replaced, before it measures.
const settleAfterClose = 20 * time.Millisecond

func restoreMessage(id string) []byte {
	return []byte(fmt.Sprintf(`{"type":"reset","data":{"checkpoint":%q}}`, id))
}

// instanceBytes sums the sizes of the files under root; -1 when root is
// "" or cannot be read.
func instanceBytes(root string) int64 {
	if root == "" {
		return -1
	}
	var n int64
	err := filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a directory removed meanwhile
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		if _, serr := os.Stat(root); serr != nil {
			return -1
		}
	}
	return n
}

// Print writes the report as the lines `seahaven bench checkpoint` prints.
func (r *CheckpointReport) Print(w io.Writer) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }
	fmt.Fprintf(w, "world %s, fixture %s: %d rounds, %d calls before each checkpoint\n", r.World, r.Fixture, r.Rounds, r.Calls)
	fmt.Fprintf(w, "reset       p50 %s  p99 %s  server CPU %s\n", ms(r.Reset.P50), ms(r.Reset.P99), ms(r.ResetCPU))
	fmt.Fprintf(w, "checkpoint  p50 %s  p99 %s  server CPU %s\n", ms(r.Checkpoint.P50), ms(r.Checkpoint.P99), ms(r.CheckpointCPU))
	fmt.Fprintf(w, "restore     p50 %s  p99 %s  server CPU %s\n", ms(r.Restore.P50), ms(r.Restore.P99), ms(r.RestoreCPU))
	if r.ResetCPU > 0 && r.Reset.P50 > 0 {
		fmt.Fprintf(w, "checkpoint CPU / reset CPU %.2fx; restore p50 / reset p50 %.2fx\n",
			float64(r.CheckpointCPU)/float64(r.ResetCPU), float64(r.Restore.P50)/float64(r.Reset.P50))
	}
	if r.Fork > 0 {
		fmt.Fprintf(w, "fork into %d: %s, %.2fx %d single restores (p50)", r.Fork, ms(r.ForkWall), float64(r.ForkWall)/float64(time.Duration(r.Fork)*r.Restore.P50), r.Fork)
		if r.ForkDiskBytes >= 0 {
			fmt.Fprintf(w, "; the siblings' instance files before they write: %d bytes", r.ForkDiskBytes)
		}
		fmt.Fprintln(w)
	}
}
