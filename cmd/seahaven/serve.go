package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/seahaven/seahaven/openenv"
)

// defaultFixtures names the fixture a reset uses when it names none, per
// example world.
var defaultFixtures = map[string]string{"company": "acme"}

// ServeCommand serves a world over OpenEnv.
type ServeCommand struct {
	m *Main
	// Listening, when set, is called with the bound address once the server
	// accepts connections (tests serve on ":0").
	Listening func(addr string)
}

// Run runs `seahaven serve`.
func (c *ServeCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet(c.m, "serve")
	worldName := fs.String("world", envOr("SEAHAVEN_WORLD", "company"), "the world to serve (env SEAHAVEN_WORLD)")
	addr := fs.String("addr", envOr("SEAHAVEN_ADDR", ":8000"), "the address to listen on (env SEAHAVEN_ADDR)")
	fixturesDir := fs.String("fixtures", envOr("SEAHAVEN_FIXTURES", ""), "the fixtures directory (default: the world's own; env SEAHAVEN_FIXTURES)")
	fixtureID := fs.String("fixture", envOr("SEAHAVEN_FIXTURE", ""), "the fixture a reset uses when it names none (default: acme for company, else genesis; env SEAHAVEN_FIXTURE)")
	maxSessions := fs.Int("max-sessions", envInt("SEAHAVEN_MAX_SESSIONS", openenv.DefaultMaxSessions), "the most live sessions (env SEAHAVEN_MAX_SESSIONS)")
	idle := fs.Duration("idle-timeout", envDuration("SEAHAVEN_IDLE_TIMEOUT", openenv.DefaultIdleTimeout), "close sessions idle this long; negative disables (env SEAHAVEN_IDLE_TIMEOUT)")
	stepTimeout := fs.Duration("step-timeout", envDuration("SEAHAVEN_STEP_TIMEOUT", openenv.DefaultStepTimeout), "bound on each reset and tool call (env SEAHAVEN_STEP_TIMEOUT)")
	instances := fs.String("instances", envOr("SEAHAVEN_INSTANCES", ""), "where instance directories are made (default: <tmp>/seahaven-instances; env SEAHAVEN_INSTANCES)")
	logLevel := fs.String("log-level", envOr("SEAHAVEN_LOG_LEVEL", "info"), "debug, info, warn or error (env SEAHAVEN_LOG_LEVEL)")
	logFormat := fs.String("log-format", envOr("SEAHAVEN_LOG_FORMAT", "json"), "json or text (env SEAHAVEN_LOG_FORMAT)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger, err := newLogger(c.m, *logLevel, *logFormat)
	if err != nil {
		return err
	}
	w, err := c.m.world(*worldName)
	if err != nil {
		return err
	}
	if *fixtureID == "" {
		*fixtureID = defaultFixtures[*worldName]
	}
	backend, err := openenv.NewWorldBackend(w, openenv.WorldBackendConfig{
		FixturesDir: *fixturesDir, DefaultFixture: *fixtureID, InstanceRoot: *instances, Logger: logger.With("component", "calls"),
	})
	if err != nil {
		return err
	}
	defer backend.Close()
	srv := openenv.NewServer(backend, openenv.Config{
		MaxSessions: *maxSessions, IdleTimeout: *idle, StepTimeout: *stepTimeout, Logger: logger,
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	logger.Info("serving", "world", w.Name(), "version", w.Version(), "addr", ln.Addr().String(), "default_fixture", *fixtureID, "max_sessions", *maxSessions)
	if c.Listening != nil {
		c.Listening(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err = errors.Join(srv.Shutdown(sctx), hs.Shutdown(sctx))
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func newLogger(m *Main, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "json":
		return slog.New(slog.NewJSONHandler(m.Stderr, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(m.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want json or text", format)
}

func envInt(key string, def int) int {
	if v, ok := os.LookupEnv(key); ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

func envDuration(key string, def time.Duration) time.Duration {
	if v, ok := os.LookupEnv(key); ok {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return def
}
