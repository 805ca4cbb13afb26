package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/seahaven/seahaven/app"
	"github.com/seahaven/seahaven/composition"
	"github.com/seahaven/seahaven/openenv"
	"github.com/seahaven/seahaven/web"
)

// ServeCommand serves a world over OpenEnv.
type ServeCommand struct {
	m *Main
	// Listening, when set, is called with the bound address once the server
	// accepts connections (tests serve on ":0").
	Listening func(addr string)
	// AgentListening, when set, is called with the agent listener's bound
	// address (--agent-addr) once it accepts connections.
	AgentListening func(addr string)
}

// Run runs `seahaven serve`.
func (c *ServeCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet(c.m, "serve")
	worldName := fs.String("world", c.m.Default, "the world to serve: "+strings.Join(c.m.names(), ", ")+" (env SEAHAVEN_WORLD)")
	addr := fs.String("addr", "127.0.0.1:8000", "the address to listen on; one other hosts reach needs a token or --insecure-no-token (env SEAHAVEN_ADDR)")
	allowedHosts := fs.String("allowed-hosts", "", "comma-separated host names the server answers to besides IP addresses and localhost; default: none for a request reaching a loopback address (a wildcard listener's through 127.0.0.1 too), any for one reaching another (env SEAHAVEN_ALLOWED_HOSTS)")
	allowedOrigins := fs.String("allowed-origins", "", "comma-separated origins (https://ui.example.com) of other sites' pages that may reset, step, inspect and use /mcp and /ws (env SEAHAVEN_ALLOWED_ORIGINS)")
	insecure := fs.Bool("insecure-no-token", false, "serve without a token on an address other hosts reach, where anyone who reaches it drives every episode (env SEAHAVEN_INSECURE_NO_TOKEN)")
	fixturesDir := fs.String("fixtures", "", "the fixtures directory (default: the world's own; env SEAHAVEN_FIXTURES)")
	fixtureID := fs.String("fixture", "", "the fixture a reset uses when it names none (default: the world's own default, else genesis; env SEAHAVEN_FIXTURE)")
	maxSessions := fs.Int("max-sessions", 0, "the most live sessions; 0 derives it from the file-descriptor, memory-map and memory limits (env SEAHAVEN_MAX_SESSIONS)")
	scale := addScaleFlags(fs)
	idle := fs.Duration("idle-timeout", openenv.DefaultIdleTimeout, "close sessions idle this long; negative disables (env SEAHAVEN_IDLE_TIMEOUT)")
	stepTimeout := fs.Duration("step-timeout", openenv.DefaultStepTimeout, "bound on each reset and tool call (env SEAHAVEN_STEP_TIMEOUT)")
	instances := fs.String("instances", "", "where instance directories are made (default: <tmp>/seahaven-instances; env SEAHAVEN_INSTANCES)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error (env SEAHAVEN_LOG_LEVEL)")
	logFormat := fs.String("log-format", "json", "json or text (env SEAHAVEN_LOG_FORMAT)")
	agentMax := fs.Int("agent-max-sessions", 0, "the most live sessions started through --agent-addr, within --max-sessions; 0 is a quarter of --max-sessions (env SEAHAVEN_AGENT_MAX_SESSIONS)")
	agentIdle := fs.Duration("agent-idle-timeout", 0, "close sessions started through --agent-addr idle this long; 0 is 2m or --idle-timeout if shorter, negative disables (env SEAHAVEN_AGENT_IDLE_TIMEOUT)")
	agentAddr := fs.String("agent-addr", "", "also listen here serving only the agent routes: /mcp, /health, /metadata, /schema, /openapi.json (default: off; env SEAHAVEN_AGENT_ADDR)")
	agentToken := fs.String("agent-token", "", "require Authorization: Bearer <token> on --agent-addr instead of --token, which that listener then refuses (env SEAHAVEN_AGENT_TOKEN, preferred)")
	token := fs.String("token", "", "require Authorization: Bearer <token> on every route but /health, /ready and /accepting (env SEAHAVEN_TOKEN, preferred: a flag shows in ps)")
	production := fs.Bool("production", false, "production mode: no POST /reset, POST /step, GET /state, POST /inspect, POST /grade, POST /checkpoint (env SEAHAVEN_PRODUCTION=true)")
	maxMessage := fs.Int64("max-message-bytes", int64(openenv.DefaultMaxMessageBytes), "the largest WebSocket message or request body (env SEAHAVEN_MAX_MESSAGE_BYTES)")
	maxReply := fs.Int("max-reply-bytes", openenv.DefaultMaxReplyBytes, fmt.Sprintf("the largest reply: an inspect reply holds the rows that fit, a larger tool result or state is an error; at least %d (env SEAHAVEN_MAX_REPLY_BYTES)", openenv.MinReplyBytes))
	recordDir := fs.String("record", "", "write one trajectory (JSONL) per episode into this directory, for "+c.m.name()+" grade (default: off; env SEAHAVEN_RECORD)")
	readTimeout := fs.Duration("read-timeout", openenv.DefaultReadTimeout, "bound on reading a request's headers and body; a slower client is cut off (env SEAHAVEN_READ_TIMEOUT)")
	keepAlive := fs.Duration("keepalive-timeout", openenv.DefaultKeepAliveTimeout, "close an HTTP keep-alive connection idle this long between requests (env SEAHAVEN_KEEPALIVE_TIMEOUT)")
	maxPendingBytes := fs.Int64("max-pending-bytes", int64(openenv.DefaultMaxPendingBytes), "the bytes a WebSocket session reads ahead of the message being processed; past them it stops reading (env SEAHAVEN_MAX_PENDING_BYTES)")
	largeRate := fs.Int64("large-message-rate", int64(openenv.DefaultLargeMessageRate), "bytes per second, across the server, at which the part of WebSocket messages and request bodies past 64 KiB is read; negative: unbounded (env SEAHAVEN_LARGE_MESSAGE_RATE)")
	maxPendingTotal := fs.Int64("max-pending-total", int64(openenv.DefaultMaxPendingTotal), "the bytes all WebSocket sessions together read ahead (env SEAHAVEN_MAX_PENDING_TOTAL)")
	minFreeDisk := fs.Int64("min-free-disk", int64(app.DefaultMinFreeDisk), "bytes a reset leaves free on the instances' file system beyond the instance's own files; a reset that would leave less fails with an infrastructure error (disk_full); 0 checks only that the instance's files fit, negative checks nothing (env SEAHAVEN_MIN_FREE_DISK)")
	maxChangeLog := fs.Int64("max-changelog-bytes", int64(composition.DefaultMaxChangeLogBytes), "bound on each session's change log in memory; past it the oldest records are dropped and the state document's change_log_truncated says how many; negative disables (env SEAHAVEN_MAX_CHANGELOG_BYTES)")
	checkpoints := fs.String("checkpoints", "", "the directory checkpoints are written to and restored from; servers sharing it restore each other's (default <temp dir>/seahaven-checkpoints; env SEAHAVEN_CHECKPOINTS)")
	checkpointTTL := fs.Duration("checkpoint-ttl", app.DefaultCheckpointTTL, "how long a checkpoint is kept; negative: forever (env SEAHAVEN_CHECKPOINT_TTL)")
	checkpointMax := fs.Int64("checkpoint-max-bytes", app.DefaultCheckpointMaxBytes, "the checkpoint directory's size budget: past it the oldest checkpoints are removed, each episode's newest last; negative: none (env SEAHAVEN_CHECKPOINT_MAX_BYTES)")
	replica := fs.String("replica", "", "this replica's name among those behind one proxy: every reply carries it in X-Seahaven-Replica (env SEAHAVEN_REPLICA; default: none)")
	checkpointEvery := fs.Int("checkpoint-every", 0, "checkpoint every session after every N steps, so a replica killed outright loses at most N steps of each; GET /checkpoints/latest names an episode's newest (env SEAHAVEN_CHECKPOINT_EVERY; default 0: off)")
	drainCheckpoints := fs.Bool("drain-checkpoints", true, "on SIGTERM, checkpoint every live session before closing it, and tell its client the checkpoint to restore (env SEAHAVEN_DRAIN_CHECKPOINTS)")
	shutdownTimeout := fs.Duration("shutdown-timeout", 30*time.Second, "on SIGTERM, how long to wait for sessions and requests to end (env SEAHAVEN_SHUTDOWN_TIMEOUT)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := applyEnv(fs); err != nil {
		return err
	}
	// A token from a secret file may end in a newline. (Tokens have no
	// flag default, so that -h never prints one; applyEnv read them.)
	*token, *agentToken = strings.TrimSpace(*token), strings.TrimSpace(*agentToken)
	if *agentToken != "" && *agentToken == *token {
		// The agent's token would open the main listener too.
		return errors.New("the agent token (SEAHAVEN_AGENT_TOKEN, --agent-token) is the token (SEAHAVEN_TOKEN, --token): an agent holding it could reset, inspect and close every episode; give the agent listener a token of its own")
	}
	if err := checkOrigins(commaList(*allowedOrigins)); err != nil {
		return err
	}
	if *maxReply < openenv.MinReplyBytes {
		return fmt.Errorf("--max-reply-bytes %d: want at least %d, so that every error and envelope fits", *maxReply, openenv.MinReplyBytes)
	}
	logger, err := newLogger(c.m, *logLevel, *logFormat)
	if err != nil {
		return err
	}
	if *instances, err = instanceRoot(*scale.storage, *instances); err != nil {
		return err
	}
	limits, err := scale.capacity(logger, *maxSessions, c.m.name())
	if err != nil {
		return err
	}
	*maxSessions = limits.MaxSessions
	w, err := c.m.world(*worldName)
	if err != nil {
		return err
	}
	if *minFreeDisk == 0 {
		// app.Config reads zero as its default; no reserve beyond the
		// instance's files is one byte.
		*minFreeDisk = 1
	}
	if *fixturesDir != "" {
		// Not refused: fixtures are read as they come, and a volume may be
		// mounted later. But a mistyped path would serve no fixture silently.
		if notDir(*fixturesDir) != nil {
			logger.Warn("serve: the --fixtures directory is not there (yet): no fixture is served until it is", "dir", *fixturesDir)
		}
	}
	backend, err := app.New(w, app.Config{
		FixturesDir: *fixturesDir, DefaultFixture: *fixtureID, InstanceRoot: *instances, Logger: logger,
		MaxActive: *scale.maxActive, MaxInspect: *scale.maxInspect, InspectCPU: *scale.inspectCPU, RecordDir: *recordDir, MinFreeDisk: *minFreeDisk, MaxChangeLogBytes: *maxChangeLog,
		Checkpoints: *checkpoints, CheckpointTTL: *checkpointTTL, CheckpointMaxBytes: *checkpointMax,
	})
	if err != nil {
		return err
	}
	defer backend.Close()
	srv := openenv.NewServer(backend, openenv.Config{
		MaxSessions: *maxSessions, AgentMaxSessions: *agentMax, IdleTimeout: *idle, AgentIdleTimeout: *agentIdle, StepTimeout: *stepTimeout, Logger: logger,
		MaxMessageBytes: *maxMessage, MaxReplyBytes: *maxReply, Token: *token, AgentToken: *agentToken, AllowedHosts: commaList(*allowedHosts), AllowedOrigins: commaList(*allowedOrigins), Production: *production,
		MaxPendingBytes: *maxPendingBytes, MaxPendingTotal: *maxPendingTotal, LargeMessageRate: *largeRate,
		Replica: *replica, CheckpointEvery: *checkpointEvery, DrainCheckpoints: *drainCheckpoints,
	})
	// One bound for the connections of both listeners: they share the
	// process's file descriptors. The agent listener's take at most a
	// quarter of them, as its sessions do of --max-sessions, so agents
	// holding connections open cannot shut the trainer out.
	conns := &openenv.ConnLimit{Max: limits.MaxConns, ReadTimeout: *readTimeout, KeepAliveTimeout: *keepAlive, Logger: logger}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	servers := []*http.Server{conns.Server(withWeb(srv, *token != "", scale.debug(func(h http.Handler) http.Handler { return srv.BrowserGuard(srv.RequireToken(h)) }, srv.Handler())))}
	listeners := []net.Listener{conns.Listener(ln)}
	boundAgentAddr := ""
	if *agentAddr != "" {
		aln, err := net.Listen("tcp", *agentAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("--agent-addr: %w", err)
		}
		servers = append(servers, conns.Server(srv.AgentHandler()))
		share := 0 // no bound but --max-conns's, when that is none
		if limits.MaxConns > 0 {
			share = max(limits.MaxConns/4, 1)
		}
		listeners = append(listeners, conns.ListenerShare(aln, share))
		boundAgentAddr = aln.Addr().String()
	}
	if err := checkExposure(logger, listeners, []string{*addr, *agentAddr}, *token, *agentToken, *insecure); err != nil {
		for _, l := range listeners {
			l.Close()
		}
		return err
	}
	logger.Info("serving", "world", w.Name(), "version", w.Version(), "addr", ln.Addr().String(), "agent_addr", boundAgentAddr,
		"default_fixture", backend.Info().DefaultFixture, "max_sessions", *maxSessions, "production", *production, "token", *token != "")
	if c.Listening != nil {
		c.Listening(ln.Addr().String())
	}
	if c.AgentListening != nil && boundAgentAddr != "" {
		c.AgentListening(boundAgentAddr)
	}
	errc := make(chan error, len(servers))
	for i, hs := range servers {
		go func() { errc <- hs.Serve(listeners[i]) }()
	}
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), *shutdownTimeout)
	defer cancel()
	serr := srv.Shutdown(sctx)
	if errors.Is(serr, context.DeadlineExceeded) {
		// Its error says what was not done; this, what to change.
		serr = fmt.Errorf("--shutdown-timeout %s (SEAHAVEN_SHUTDOWN_TIMEOUT) was too short for the shutdown: %w", shutdownTimeout, serr)
	}
	errs := []error{err, serr}
	for i, hs := range servers {
		// Every session has ended by now (or the timeout has passed): a
		// request still running past the timeout, such as a client still
		// sending its body slowly, has no session left to act on, so its
		// connection is cut, logged, and not counted as a failed shutdown.
		herr := hs.Shutdown(sctx)
		if herr != nil && sctx.Err() != nil {
			logger.Warn("shutdown: connections still open at --shutdown-timeout were closed", "addr", listeners[i].Addr().String(), "timeout", shutdownTimeout.String())
			// Its listeners are closed already, which is all Close can
			// report; what it does here is close the connections.
			_ = hs.Close()
			herr = nil
		}
		errs = append(errs, herr)
	}
	err = errors.Join(errs...)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// withWeb serves the inspector and playground (package web) at /web, which
// signs a browser in when the server has a token (and only then shows its
// sign-out button), behind the server's checks against pages of other
// sites, and api everywhere else.
func withWeb(srv *openenv.Server, hasToken bool, api http.Handler) http.Handler {
	ui := web.Handler()
	if hasToken {
		ui = web.HandlerWithAuth(srv)
	}
	ui = srv.BrowserGuard(ui)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/web" || strings.HasPrefix(r.URL.Path, web.Prefix) {
			ui.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
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

// checkExposure refuses to serve without a token on a listener that other
// hosts can reach (not a loopback address), unless insecure is set, which
// logs a warning instead. The agent listener counts as protected by the
// agent token too. addrs are the listeners' addresses as configured.
func checkExposure(log *slog.Logger, listeners []net.Listener, addrs []string, token, agentToken string, insecure bool) error {
	for i, l := range listeners {
		tcp, ok := l.Addr().(*net.TCPAddr)
		if !ok || tcp.IP.IsLoopback() || token != "" || (i == 1 && agentToken != "") {
			continue
		}
		flag, tokens := "--addr", "SEAHAVEN_TOKEN (or --token)"
		if i == 1 {
			flag, tokens = "--agent-addr", "SEAHAVEN_AGENT_TOKEN (or --agent-token) or "+tokens
		}
		if insecure {
			log.Warn("serving without a token on an address other hosts reach: anyone who reaches it drives every episode", flag, addrs[i])
			continue
		}
		return fmt.Errorf("%s %s is reachable from other hosts and no token is set, so anyone who reaches it could drive every episode: "+
			"set %s, listen on 127.0.0.1, or pass --insecure-no-token", flag, addrs[i], tokens)
	}
	return nil
}

// checkOrigins refuses an --allowed-origins item that no browser's Origin
// header can equal, which would leave its pages refused with 403 and the
// operator wondering why: an origin is scheme://host[:port], http or https,
// without a path, a user or the scheme's default port.
func checkOrigins(origins []string) error {
	for _, o := range origins {
		u, err := url.Parse(o)
		why := ""
		switch {
		case err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Opaque != "":
			why = "it is not an http or https URL"
		case u.User != nil || strings.TrimSuffix(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#"):
			why = "it has more than a scheme, a host and a port"
		case u.Scheme == "http" && u.Port() == "80" || u.Scheme == "https" && u.Port() == "443":
			why = "a browser leaves the scheme's default port out of Origin"
		}
		if why != "" {
			return fmt.Errorf("--allowed-origins %q: %s; write each origin as a page's Origin header names it, scheme://host[:port] such as https://ui.example.com (env SEAHAVEN_ALLOWED_ORIGINS)", o, why)
		}
	}
	return nil
}

// commaList splits a comma-separated flag value, dropping empty items and
// surrounding space.
func commaList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
