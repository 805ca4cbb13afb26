package openenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/env"
	"github.com/seahaven/seahaven/fixture"
)

// WorldBackend serves one world through the composition engine. It is safe
// for concurrent use.
type WorldBackend struct {
	world          *env.World
	fixturesDir    string
	defaultFixture string
	dir            string
	logger         *slog.Logger

	mu       sync.Mutex // guards fixtures and listed
	fixtures []FixtureInfo
	listed   time.Time
}

// WorldBackendConfig configures NewWorldBackend.
type WorldBackendConfig struct {
	// FixturesDir overrides the world's FixturesDir.
	FixturesDir string
	// DefaultFixture is used by resets that name none; "" keeps genesis.
	DefaultFixture string
	// InstanceRoot is where per-process instance directories are made; ""
	// is <os temp dir>/seahaven-instances.
	InstanceRoot string
	// Logger receives one line per tool call; nil discards.
	Logger *slog.Logger
}

// fixtureListTTL bounds how stale GET /fixtures may be.
const fixtureListTTL = 2 * time.Second

// NewWorldBackend returns a Backend for w. It seals the world (so a tree
// that does not seal fails here, not at the first reset), checks that the
// default fixture exists, makes this process's instance directory, and
// removes instance directories left by processes that are no longer running.
func NewWorldBackend(w *env.World, cfg WorldBackendConfig) (*WorldBackend, error) {
	if _, err := composition.Seal(w); err != nil {
		return nil, err
	}
	root := cfg.InstanceRoot
	if root == "" {
		root = filepath.Join(os.TempDir(), "seahaven-instances")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("openenv: instance root: %w", err)
	}
	if _, err := CleanStaleInstances(root); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(root, strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("openenv: instance directory: %w", err)
	}
	b := &WorldBackend{world: w, fixturesDir: cfg.FixturesDir, defaultFixture: cfg.DefaultFixture, dir: dir, logger: cfg.Logger}
	if b.fixturesDir == "" {
		b.fixturesDir = w.Spec().FixturesDir
	}
	if b.defaultFixture != "" {
		if _, err := fixture.Read(b.fixturesDir, b.defaultFixture); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("openenv: default fixture: %w", err)
		}
	}
	return b, nil
}

// InstanceDir returns the directory this backend makes instances in.
func (b *WorldBackend) InstanceDir() string { return b.dir }

// Close removes the backend's instance directory. Call it after the server
// has closed every session.
func (b *WorldBackend) Close() error { return os.RemoveAll(b.dir) }

// CleanStaleInstances removes the instance directories under root made by
// processes that are no longer running (a server killed with SIGKILL leaves
// them behind). It returns the directories it removed.
func CleanStaleInstances(root string) ([]string, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var removed []string
	for _, e := range ents {
		pidText, _, ok := strings.Cut(e.Name(), "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || !e.IsDir() || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		p := filepath.Join(root, e.Name())
		if err := os.RemoveAll(p); err != nil {
			return removed, err
		}
		removed = append(removed, p)
	}
	return removed, nil
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Info describes the world: its surface and fixtures.
func (b *WorldBackend) Info() Info {
	info := Info{Name: b.world.Name(), Version: b.world.Version(), Description: b.world.Spec().Description, DefaultFixture: b.defaultFixture}
	if s, err := composition.Seal(b.world); err == nil {
		info.Tools = s.Tools()
	}
	info.Fixtures = b.listFixtures()
	return info
}

func (b *WorldBackend) listFixtures() []FixtureInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Since(b.listed) < fixtureListTTL && b.fixtures != nil {
		return b.fixtures
	}
	list, err := fixture.List(b.fixturesDir)
	if err != nil {
		return b.fixtures
	}
	out := make([]FixtureInfo, 0, len(list))
	for _, s := range list {
		out = append(out, FixtureInfo{ID: s.ID, Description: s.Description, ParentID: s.ParentID, CreatedAt: s.CreatedAt, WorldVersion: s.WorldVersion})
	}
	b.fixtures, b.listed = out, time.Now()
	return out
}

// Open creates an instance.
func (b *WorldBackend) Open(ctx context.Context, opts OpenOptions) (Instance, error) {
	inst, err := composition.Open(ctx, b.world, composition.Options{
		Fixture: opts.Fixture, FixturesDir: b.fixturesDir, Now: opts.Now, Seed: opts.Seed,
		Startup: opts.Startup, ControlTools: opts.ControlTools, ClockMode: opts.ClockMode,
		Dir: b.dir, EpisodeID: opts.EpisodeID, Logger: b.logger,
	})
	if err != nil {
		return nil, err
	}
	return worldInstance{inst}, nil
}

// worldInstance adapts a composition.Instance to Instance.
type worldInstance struct{ *composition.Instance }

func (w worldInstance) Inspect(ctx context.Context, sql string, args []any) ([]string, [][]any, error) {
	rows, err := w.Instance.Inspect().Query(ctx, sql, args...)
	if err != nil {
		return nil, nil, err
	}
	return rows.Columns, rows.Values, nil
}
