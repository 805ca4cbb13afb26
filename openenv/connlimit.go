package openenv

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the ConnLimit fields.
const (
	DefaultMaxConns          = 1024
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = time.Minute
	DefaultKeepAliveTimeout  = time.Minute
)

// ConnLimit bounds the HTTP connections of the listeners it serves and how
// long each may hold the server without sending: serve each listener with
// [ConnLimit.Server] on [ConnLimit.Listener]. One ConnLimit may serve
// several listeners, which then share Max. Set the fields before the first
// call; a ConnLimit is safe for concurrent use afterwards. The zero value
// uses the defaults.
type ConnLimit struct {
	// Max caps the connections open at once, not counting WebSocket
	// connections once upgraded: each of those is a session, bounded by
	// Config.MaxSessions. A connection accepted at the cap closes the
	// keep-alive connection idle the longest to make room; when none is
	// idle it is answered 503 {"detail":"…","code":"CAPACITY_REACHED"}
	// and closed, unless it asks for a probe (/health,
	// /ready, /accepting), which a few connections beyond the cap are
	// kept for (see probeHeadroom). Default DefaultMaxConns; negative means
	// no bound.
	Max int
	// ReadHeaderTimeout bounds reading a request's headers. Default
	// DefaultReadHeaderTimeout, or ReadTimeout when that is shorter.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a request, headers and body, from its first
	// byte; a client that sends its body slower gets an error and the
	// connection is closed. The handler's work once the body is read is not
	// bounded by it (a step has StepTimeout). Default DefaultReadTimeout;
	// negative means no bound.
	ReadTimeout time.Duration
	// KeepAliveTimeout is how long a keep-alive connection may wait for its
	// next request before it is closed. Default DefaultKeepAliveTimeout.
	KeepAliveTimeout time.Duration
	// Logger, when set, takes the server's own error log (a failed
	// accept, such as one out of file descriptors), at warn level;
	// otherwise net/http writes it through the log package, as plain
	// text.
	Logger *slog.Logger

	mu      sync.Mutex            // guards conns, probes, refused and each limitListener's open
	conns   map[net.Conn]connInfo // the counted connections
	probes  []*probeConn          // connections open beyond Max for the probes, oldest first
	refused int64                 // connections answered 503
	quiet   time.Duration         // probeQuiet, unless a test sets another

	lingering atomic.Int32 // refused connections read until their clients close (see refuse)
}

// connInfo is what a ConnLimit knows of a counted connection.
type connInfo struct {
	idleSince time.Time      // when it went idle between requests; zero while busy
	ln        *limitListener // the listener that accepted it
}

// probeHeadroom is how many connections beyond Max are taken anyway, for
// the probes: each may send one request within probeReadTimeout, which is
// answered only when it is a probe (/health, /ready, /accepting), and is
// then closed. So clients that hold every place (slow ones included) do
// not fail a replica's liveness and readiness, which would restart a pod
// that is only busy. When the headroom is full, a new connection takes the
// place of the oldest whose request has not come whole within probeQuiet:
// a probe sends its request at once, so connections left silent, or
// sending slowly, cannot hold the places.
const (
	probeHeadroom    = 8
	probeReadTimeout = 2 * time.Second
	probeQuiet       = 250 * time.Millisecond
)

// probeConn is a connection taken beyond Max for the probes: reading from
// it ends by its deadline, whatever net/http asks for.
type probeConn struct {
	net.Conn
	deadline time.Time
	accepted time.Time
	active   bool   // its request has been read; guarded by the ConnLimit's mu
	released bool   // it left the headroom; guarded by the ConnLimit's mu
	refusal  string // the 503's detail for a request other than a probe
}

func (c *probeConn) SetReadDeadline(t time.Time) error {
	if t.IsZero() || t.After(c.deadline) {
		t = c.deadline
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *probeConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

// probeConnKey marks the context of a request on a probeConn.
type probeConnKey struct{}

// Server returns an http.Server serving h with the limit's timeouts, which
// tracks its connections for Max. Serve it on a listener from Listener.
func (l *ConnLimit) Server(h http.Handler) *http.Server {
	read := max(cmp.Or(l.ReadTimeout, DefaultReadTimeout), 0)
	header := cmp.Or(l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	if read > 0 {
		// net/http gives the headers ReadHeaderTimeout alone, however
		// short ReadTimeout is.
		header = min(header, read)
	}
	var errorLog *log.Logger
	if l.Logger != nil {
		errorLog = slog.NewLogLogger(l.Logger.Handler(), slog.LevelWarn)
	}
	return &http.Server{
		ErrorLog: errorLog,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Context().Value(probeConnKey{}) != nil {
				w.Header().Set("Connection", "close")
				if !openPaths[r.URL.Path] {
					l.mu.Lock()
					l.refused++
					l.mu.Unlock()
					writeJSON(w, http.StatusServiceUnavailable, httpError{Detail: r.Context().Value(probeConnKey{}).(string), Code: codeCapacity})
					return
				}
			}
			h.ServeHTTP(w, r)
		}),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if pc, ok := c.(*probeConn); ok {
				return context.WithValue(ctx, probeConnKey{}, pc.refusal)
			}
			return ctx
		},
		ReadHeaderTimeout: header,
		// Once a body has been read, net/http lifts the read deadline for
		// its background read, so a step outlasting ReadTimeout goes on.
		ReadTimeout: read,
		IdleTimeout: cmp.Or(l.KeepAliveTimeout, DefaultKeepAliveTimeout),
		ConnState:   l.track,
	}
}

// Listener returns ln with every accepted connection counted against Max.
func (l *ConnLimit) Listener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, l: l}
}

// ListenerShare returns ln with every accepted connection counted against
// Max, of which it holds at most share at once (none when share is not
// positive): a connection past its share makes room by closing one of its
// own idle keep-alive connections, else is refused 503 at once, as is one
// past Max: none of its connections takes a place kept for the probes. So
// the clients of a listener trusted less than the others (the agent
// listener's) cannot hold every place, nor the probes', and shut the
// others' clients, or the orchestrator's probes, out.
func (l *ConnLimit) ListenerShare(ln net.Listener, share int) net.Listener {
	return &limitListener{Listener: ln, l: l, share: share}
}

// Refused returns how many connections were answered 503 at the cap.
func (l *ConnLimit) Refused() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

// Open returns how many counted connections are open.
func (l *ConnLimit) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// limitListener is a listener whose connections a ConnLimit counts.
type limitListener struct {
	net.Listener
	l     *ConnLimit
	share int // the most connections of this listener open at once; 0: Max alone
	open  int // its counted connections; guarded by l.mu
}

// Accept returns the next connection within the limit, answering those
// beyond it 503.
func (ln *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		admitted, evicted, refusal := ln.l.admit(c, ln)
		if evicted != nil {
			evicted.Close()
		}
		if admitted {
			return c, nil
		}
		if ln.share > 0 {
			// The probes come to the other listeners: this one's clients
			// get none of the places kept for them.
			ln.l.mu.Lock()
			ln.l.refused++
			ln.l.mu.Unlock()
			ln.l.refuse(c, refusal)
			continue
		}
		pc, quiet := ln.l.admitProbe(c, refusal)
		if quiet != nil {
			quiet.Close()
		}
		if pc != nil {
			return pc, nil
		}
		ln.l.refuse(c, refusal)
	}
}

// admit counts c, accepted by ln, when there is room, or when an idle
// connection can make room (it is returned, uncounted, for the caller to
// close): one of ln's own when ln holds its share. Else refusal is why
// not, the detail of the 503.
func (l *ConnLimit) admit(c net.Conn, ln *limitListener) (admitted bool, evicted net.Conn, refusal string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns == nil {
		l.conns = map[net.Conn]connInfo{}
	}
	switch max := cmp.Or(l.Max, DefaultMaxConns); {
	case ln.share > 0 && ln.open >= ln.share:
		if evicted = l.evictIdle(ln); evicted == nil {
			return false, nil, fmt.Sprintf("Too many connections: this listener holds its share of %d of the server's %d; retry later", ln.share, max)
		}
	case max > 0 && len(l.conns) >= max:
		if evicted = l.evictIdle(nil); evicted == nil {
			return false, nil, fmt.Sprintf("Too many connections: the server holds its limit of %d; retry later", max)
		}
	}
	l.conns[c] = connInfo{ln: ln}
	ln.open++
	return true, evicted, ""
}

// evictIdle uncounts and returns the connection idle the longest (of ln,
// unless ln is nil), or nil when none is idle: the one least likely to be
// sending its next request as it is closed. l.mu must be held.
func (l *ConnLimit) evictIdle(ln *limitListener) net.Conn {
	var oldest net.Conn
	var since time.Time
	for c, info := range l.conns {
		if !info.idleSince.IsZero() && (ln == nil || info.ln == ln) && (oldest == nil || info.idleSince.Before(since)) {
			oldest, since = c, info.idleSince
		}
	}
	if oldest != nil {
		l.forget(oldest, l.conns[oldest])
	}
	return oldest
}

// forget uncounts c. l.mu must be held.
func (l *ConnLimit) forget(c net.Conn, info connInfo) {
	delete(l.conns, c)
	info.ln.open--
}

// admitProbe takes c beyond Max for the probes, when there is headroom or
// a connection in it has not sent its request within probeQuiet (it is returned,
// released, for the caller to close); nil when c is refused, which is
// counted. refusal is the 503's detail for a request other than a probe.
func (l *ConnLimit) admitProbe(c net.Conn, refusal string) (pc, evicted *probeConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if len(l.probes) >= probeHeadroom {
		quiet := cmp.Or(l.quiet, probeQuiet)
		i := slices.IndexFunc(l.probes, func(p *probeConn) bool { return !p.active && now.Sub(p.accepted) >= quiet })
		if i < 0 {
			l.refused++
			return nil, nil
		}
		evicted = l.probes[i]
		evicted.released = true
		l.probes = slices.Delete(l.probes, i, i+1)
	}
	pc = &probeConn{Conn: c, deadline: now.Add(probeReadTimeout), accepted: now, refusal: refusal}
	l.probes = append(l.probes, pc)
	return pc, evicted
}

// Bounds of a refused connection: writing its 503, and then reading what
// its client sent, at most refuseLingerBytes within refuseLinger, for at
// most maxLingering connections at once (the rest are closed at once).
const (
	refuseWriteTimeout = time.Second
	refuseLinger       = time.Second
	refuseLingerBytes  = 64 << 10
	maxLingering       = 64
)

// refuse answers c 503 with the detail refusal and closes it. Closing a
// socket whose client's request is still unread resets the connection,
// and a client told of the reset before it reads the 503 (on Windows, say)
// loses it; so c's sending side is shut first and what its client sends
// is read and dropped until it closes its side too, as net/http does for
// a connection it closes, within the bounds above.
func (l *ConnLimit) refuse(c net.Conn, refusal string) {
	body := string(mustEncode(httpError{Detail: refusal, Code: codeCapacity}))
	c.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
	fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s", len(body), body)
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok || l.lingering.Add(1) > maxLingering {
		if ok {
			l.lingering.Add(-1)
		}
		c.Close()
		return
	}
	go func() {
		defer l.lingering.Add(-1)
		defer c.Close()
		if cw.CloseWrite() == nil {
			c.SetReadDeadline(time.Now().Add(refuseLinger))
			io.CopyN(io.Discard, c, refuseLingerBytes)
		}
	}()
}

// track follows a counted connection through its states: idle between
// requests, busy, or gone (closed, or hijacked into a WebSocket session).
func (l *ConnLimit) track(c net.Conn, state http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if pc, ok := c.(*probeConn); ok {
		switch {
		case state == http.StateActive:
			pc.active = true
		case (state == http.StateClosed || state == http.StateHijacked) && !pc.released:
			pc.released = true
			l.probes = slices.DeleteFunc(l.probes, func(p *probeConn) bool { return p == pc })
		}
		return
	}
	info, counted := l.conns[c]
	if !counted {
		return // evicted, or not accepted through Listener
	}
	switch state {
	case http.StateIdle, http.StateNew, http.StateActive:
		info.idleSince = time.Time{}
		if state == http.StateIdle {
			info.idleSince = time.Now()
		}
		l.conns[c] = info
	case http.StateHijacked, http.StateClosed:
		l.forget(c, info)
	}
}
