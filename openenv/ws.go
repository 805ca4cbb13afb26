package openenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"golang.org/x/sync/semaphore"

	"github.com/seahaven/seahaven/internal/runecut"
)

// closeAbort is a pseudo close code: drop the connection without a close
// handshake, because the peer is gone or not reading.
const closeAbort websocket.StatusCode = -1

// closeWS closes c with code and reason, or drops it for closeAbort.
func closeWS(c *websocket.Conn, code websocket.StatusCode, reason string) {
	if code == closeAbort {
		c.CloseNow()
	} else {
		c.Close(code, reason)
	}
}

// drainFactor bounds how much of an oversized message is read (and thrown
// away) to report its size: up to drainFactor times the limit.
const drainFactor = 4

// serveWS serves GET /ws: one session per connection.
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	// A hijacked connection keeps the deadlines http.Server set for the
	// request (ReadTimeout, WriteTimeout); a session outlives them, and the
	// server bounds its own reads and writes.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	rc.SetWriteDeadline(time.Time{})
	if o := r.Header.Get("Origin"); o != "" && !s.originAllowed(o, r) {
		// The handshake's own check admits the request's host of any
		// scheme: a page over http behind a proxy that ends TLS too.
		writeJSON(w, http.StatusForbidden, detail{originRefused(o)})
		return
	}
	refusal := &upgradeRefusal{ResponseWriter: w}
	c, err := websocket.Accept(refusal, r, &websocket.AcceptOptions{OriginPatterns: s.originPatterns()})
	if err != nil {
		s.log.Debug("openenv: websocket upgrade refused", "err", err)
		if refusal.status != 0 {
			// It may quote the request's headers: at most 1 KiB of it.
			writeJSON(w, refusal.status, detail{runecut.Echo(strings.TrimSpace(refusal.text.String()))})
		}
		return
	}
	c.SetReadLimit(-1) // readMessage enforces MaxMessageBytes itself, to report it
	s.mu.Lock()
	ss, perr := s.newSessionLocked(TransportWS, "")
	if perr == nil {
		ss.ws = c // before Shutdown can see the session
	}
	s.mu.Unlock()
	if perr != nil {
		code, reason := websocket.StatusTryAgainLater, "server at capacity"
		if perr.code == codeShuttingDown {
			code, reason = websocket.StatusGoingAway, "server shutting down"
		}
		if err := (&wsConn{srv: s, c: c, writes: r.Context()}).write(perr.frame()); err != nil {
			c.CloseNow()
			return
		}
		c.Close(code, reason)
		return
	}
	(&wsConn{srv: s, ss: ss, c: c}).run()
}

// upgradeRefusal is the ResponseWriter websocket.Accept writes to: the
// plain-text error it writes when it refuses an upgrade (a request without
// Upgrade: websocket, an invalid Sec-WebSocket-Key) is kept, for serveWS
// to answer as every route does, {"detail": …}. It passes the rest on, and
// unwraps to the writer it hijacks.
type upgradeRefusal struct {
	http.ResponseWriter
	status int          // the error status Accept wrote; 0 if none
	text   bytes.Buffer // the text it wrote with it
}

func (u *upgradeRefusal) WriteHeader(status int) {
	if status >= http.StatusBadRequest {
		u.status = status
		return
	}
	u.ResponseWriter.WriteHeader(status)
}

func (u *upgradeRefusal) Write(b []byte) (int, error) {
	if u.status != 0 {
		return u.text.Write(b)
	}
	return u.ResponseWriter.Write(b)
}

func (u *upgradeRefusal) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// wsEndGrace is how long a write of a /ws connection may go on once its
// session has ended (drained, reaped, closed): a reply in flight then has
// that long to reach its client, where it had WriteTimeout. A client that
// does not read would otherwise hold the session's end, and the server's
// shutdown, for WriteTimeout.
const wsEndGrace = 2 * time.Second

// wsConn is one /ws connection and its session, served by two goroutines
// and a timer for its keepalive pings (see keepalive).
// The reader reads messages, which keeps pings answered and a disconnect
// noticed while a step runs, and queues them for the worker, reading ahead
// at most MaxPending messages and MaxPendingBytes (MaxPendingTotal across
// the server). The worker (the handler's goroutine) answers the queued
// messages one at a time, in order, and is the only writer of replies.
type wsConn struct {
	srv *Server
	ss  *session
	c   *websocket.Conn
	// writes bounds every write: it ends wsEndGrace after the session does
	// (run makes it).
	writes context.Context

	queue  chan inbound        // messages read and not yet taken by the worker; the reader closes it
	budget *semaphore.Weighted // MaxPendingBytes: the bytes of the queued messages

	// blocked is set while the reader waits for room in the queue. It then
	// cannot read pongs, so the keepalive skips its ping: the peer is
	// demonstrably alive, it is sending.
	blocked atomic.Bool

	// writing is set while a reply is being written, and written counts
	// the replies written. A write to a slow reader holds the socket, and
	// the pong to a ping sent after it queues behind the reply, so the
	// keepalive counts a write in progress (bounded by WriteTimeout) or
	// completed as a sign of life, like a pong.
	writing atomic.Bool
	written atomic.Uint64

	// received counts the bytes of messages read: a pong queues behind the
	// message being sent, which the server may read slowly
	// (LargeMessageRate), so the keepalive counts them as a sign of life.
	received atomic.Int64
}

// inbound is one message read from the peer.
type inbound struct {
	data  []byte      // a text message
	cost  int64       // the bytes of data taken from the read-ahead budgets
	fatal *protoError // a message that ends the session: reply, then close
	code  websocket.StatusCode
}

// run serves the connection until it ends, then ends the session and closes
// the socket.
func (wc *wsConn) run() {
	s := wc.srv
	wc.queue = make(chan inbound, s.cfg.MaxPending)
	wc.budget = semaphore.NewWeighted(s.cfg.MaxPendingBytes)
	var reading sync.WaitGroup
	reading.Go(wc.readLoop)
	stopPings := func() {}
	if s.cfg.PingInterval > 0 {
		stopPings = wc.keepalive()
	}
	var cutWrites context.CancelFunc
	wc.writes, cutWrites = context.WithCancel(context.Background())
	defer cutWrites()
	unwatch := context.AfterFunc(wc.ss.ctx, func() { time.AfterFunc(wsEndGrace, cutWrites) })
	defer unwatch()

	code, reason := wc.work()
	wc.ss.end()
	closeWS(wc.c, code, reason)
	stopPings()
	reading.Wait()
	// The reader closed the queue; what is left was never answered.
	for m := range wc.queue {
		wc.release(m.cost)
	}
}

// work answers queued messages in order until the session stops or a
// message ends it, and returns how to close the socket. A message's bytes
// leave the read-ahead budgets when the worker takes it.
func (wc *wsConn) work() (websocket.StatusCode, string) {
	ss := wc.ss
	for {
		var m inbound
		var ok bool
		select {
		case <-ss.ctx.Done():
			return ss.closeStatus()
		case m, ok = <-wc.queue:
		}
		if !ok {
			return ss.closeStatus()
		}
		wc.release(m.cost)
		if m.fatal != nil {
			if err := wc.write(m.fatal.frame()); err != nil {
				return closeAbort, ""
			}
			ss.stop(m.code, m.fatal.message)
			return m.code, closeReason(m.fatal.message)
		}
		reply, closing := wc.srv.handleMessage(ss, m.data)
		switch {
		case ss.ctx.Err() != nil: // the reply is not sent
			return ss.closeStatus()
		case closing:
			ss.stop(websocket.StatusNormalClosure, "")
			return websocket.StatusNormalClosure, ""
		}
		if err := wc.write(reply); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				wc.srv.log.Info("openenv: websocket write timed out", "session", ss.ref, "timeout", wc.srv.cfg.WriteTimeout)
			} else {
				wc.srv.log.Info("openenv: websocket write failed", "session", ss.ref, "err", err)
			}
			ss.stop(closeAbort, "write failed")
			return closeAbort, ""
		}
	}
}

// closeReason fits a message into a close frame's 123-byte reason, which
// must be UTF-8: a longer one is cut at a character boundary.
func closeReason(msg string) string {
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	if len(msg) <= 123 {
		return msg
	}
	return clip(msg, 120)
}

// write sends one frame, bounded by WriteTimeout. A session stopping does
// not cut a write short, so a reply in flight completes and the close frame
// follows it; a peer that has stopped reading is cut off by WriteTimeout,
// or wsEndGrace once the session has stopped, and a dead one by keepalive
// closing the connection. Writes do not overlap:
// one goroutine at a time answers (see wsConn).
func (wc *wsConn) write(frame any) error {
	wc.writing.Store(true)
	defer wc.writing.Store(false)
	b, err := encode(frame)
	switch {
	case err != nil:
		b, err = encode(newError(codeExecution, "reply cannot be encoded as JSON: %v", err).frame())
	case len(b) > wc.srv.cfg.MaxReplyBytes: // never the refusal of a connection without a session
		b, err = encode(wc.srv.replyTooLarge(len(b), "session", wc.ss.ref).frame())
	}
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(wc.writes, wc.srv.cfg.WriteTimeout)
	defer cancel()
	if err := wc.c.Write(ctx, websocket.MessageText, b); err != nil {
		if wc.writes.Err() != nil {
			wc.srv.log.Warn("openenv: websocket closed: its client did not take a reply within "+wsEndGrace.String()+" of the session's end", "session", wc.ss.ref)
		}
		return err
	}
	wc.written.Add(1)
	return nil
}

// readLoop reads messages and queues them for the worker until the
// connection fails, a fatal message is read or the session ends; then it
// closes the queue. A read failure stops the session, which cancels a call
// in progress.
func (wc *wsConn) readLoop() {
	defer close(wc.queue)
	for {
		// Reads take no context: closing the socket ends a read.
		m, err := wc.readMessage(context.Background())
		if err != nil {
			code := closeAbort
			if websocket.CloseStatus(err) != -1 {
				code = websocket.StatusNormalClosure
			}
			wc.ss.stop(code, "connection closed by peer")
			return
		}
		if !wc.enqueue(m) || m.fatal != nil || wc.ss.ctx.Err() != nil {
			return
		}
	}
}

// enqueue queues m for the worker once its bytes fit the read-ahead
// budgets (MaxPendingBytes and MaxPendingTotal) and the queue has room,
// waiting for both without reading on. It reports false, holding nothing,
// when the session ends first.
func (wc *wsConn) enqueue(m inbound) bool {
	n := int64(len(m.data))
	if !wc.reserve(n) {
		return false
	}
	m.cost = n
	select {
	case wc.queue <- m:
		return true
	default:
	}
	wc.blocked.Store(true)
	defer wc.blocked.Store(false)
	select {
	case wc.queue <- m:
		return true
	case <-wc.ss.ctx.Done():
		wc.release(n)
		return false
	}
}

// reserve takes n bytes of the connection's and of the server's read-ahead
// budgets, waiting for them; it fails, holding nothing, when the session
// ends first. A message larger than a budget takes the whole of it, so it
// waits until nothing else holds any.
func (wc *wsConn) reserve(n int64) bool {
	if n == 0 {
		return true
	}
	own, all := wc.costs(n)
	if wc.budget.TryAcquire(own) {
		if wc.srv.pending.TryAcquire(all) {
			wc.srv.pendingBytes.Add(all)
			return true
		}
		wc.budget.Release(own)
	}
	wc.blocked.Store(true)
	wc.srv.aheadWaiting.Add(1)
	defer func() {
		wc.blocked.Store(false)
		wc.srv.aheadWaiting.Add(-1)
	}()
	ctx := wc.ss.ctx
	if wc.budget.Acquire(ctx, own) != nil {
		return false
	}
	if wc.srv.pending.Acquire(ctx, all) != nil {
		wc.budget.Release(own)
		return false
	}
	wc.srv.pendingBytes.Add(all)
	return true
}

// costs is what a message of n bytes holds of the connection's and of the
// server's read-ahead budgets.
func (wc *wsConn) costs(n int64) (own, all int64) {
	return min(n, wc.srv.cfg.MaxPendingBytes), min(n, wc.srv.cfg.MaxPendingTotal)
}

// release gives back the read-ahead bytes of a message the worker took or
// that was dropped.
func (wc *wsConn) release(n int64) {
	if n > 0 {
		own, all := wc.costs(n)
		wc.budget.Release(own)
		wc.srv.pending.Release(all)
		wc.srv.pendingBytes.Add(-all)
	}
}

// readMessage reads one whole message. An oversized or binary message, or
// a text message that is not UTF-8, becomes a fatal inbound; only a broken connection is an error.
func (wc *wsConn) readMessage(ctx context.Context) (inbound, error) {
	typ, r, err := wc.c.Reader(ctx)
	if err != nil {
		return inbound{}, err
	}
	limit := wc.srv.cfg.MaxMessageBytes
	buf := readBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledFrame {
			buf.Reset()
			readBuffers.Put(buf)
		}
	}()
	r = countingReader{r, &wc.received}
	if wc.srv.large != nil {
		r = &pacedBody{ReadCloser: io.NopCloser(r), s: wc.srv, ctx: wc.ss.ctx}
	}
	n, err := io.Copy(buf, io.LimitReader(r, limit+1))
	if err != nil {
		return inbound{}, err
	}
	if n > limit {
		most := drainFactor * limit
		rest, err := io.Copy(io.Discard, io.LimitReader(r, most-n+1))
		if err != nil {
			return inbound{}, err
		}
		size := fmt.Sprintf("%d bytes", n+rest)
		if n+rest > most {
			size = fmt.Sprintf("more than %d bytes", most)
		}
		return inbound{
			fatal: newError(codeTooLarge, "Message of %s exceeds the limit of %d bytes", size, limit),
			code:  websocket.StatusMessageTooBig,
		}, nil
	}
	if typ != websocket.MessageText {
		return inbound{
			fatal: newError(codeSession, "Binary frames are not supported: send each message as a JSON text frame"),
			code:  websocket.StatusUnsupportedData,
		}, nil
	}
	if !utf8.Valid(buf.Bytes()) {
		// RFC 6455 §8.1: a text frame must be UTF-8; failing that, close 1007.
		return inbound{
			fatal: newError(codeInvalidJSON, "Invalid UTF-8 in a text frame: a message must be UTF-8 encoded JSON"),
			code:  websocket.StatusInvalidFramePayloadData,
		}, nil
	}
	// The message outlives the buffer: parsed values share its memory.
	return inbound{data: bytes.Clone(buf.Bytes())}, nil
}

// countingReader adds the bytes it reads to n.
type countingReader struct {
	io.Reader
	n *atomic.Int64
}

func (r countingReader) Read(p []byte) (int, error) {
	k, err := r.Reader.Read(p)
	r.n.Add(int64(k))
	return k, err
}

// readBuffers holds buffers for reading messages, of at most
// maxPooledFrame bytes.
var readBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledFrame = 64 << 10

// wsTypes are the message types a client may send, with whether each takes data.
var wsTypes = map[string]bool{"reset": true, "step": true, "state": false, "close": false, "mcp": true, "inspect": true, "grade": false, "checkpoint": false}

// handleMessage processes one text message and returns exactly one reply,
// or closing for a valid close message (which gets none). A panic, a defect
// of the server itself since Backend panics are caught closer to the call,
// becomes an EXECUTION_ERROR reply rather than ending the process.
func (s *Server) handleMessage(ss *session, raw []byte) (reply any, closing bool) {
	if perr := s.guard("handling a message", func() { reply, closing = s.dispatch(ss, raw) }); perr != nil {
		return perr.frame(), false
	}
	return reply, closing
}

// answerStep runs the step a of a /ws session and returns its reply: the
// observation, or the error frame.
func (s *Server) answerStep(ss *session, a action) wsFrame {
	res, perr := ss.step(ss.ctx, a, s.cfg.StepTimeout)
	if perr != nil {
		return perr.frame()
	}
	return wsFrame{"observation", res}
}

// dispatch does the work of handleMessage.
func (s *Server) dispatch(ss *session, raw []byte) (reply any, closing bool) {
	ctx := ss.ctx
	if a, ok := readCallToolStep(raw); ok {
		s.metrics.wsMessages.WithLabelValues("step").Inc()
		return s.answerStep(ss, a), false
	}
	if perr := checkJSON(raw, nil); perr != nil {
		s.metrics.wsMessages.WithLabelValues("invalid").Inc()
		return perr.frame(), false
	}
	m, ok := members(raw)
	if !ok {
		s.metrics.wsMessages.WithLabelValues("invalid").Inc()
		return invalid([]fieldError{{Type: "model_type", Loc: []any{}, Msg: "Input should be an object", Input: inputOf(raw)}}).frame(), false
	}
	t, present := m["type"]
	typ, isString := str(t)
	takesData, known := wsTypes[typ]
	if !present || !isString || !known {
		s.metrics.wsMessages.WithLabelValues("invalid").Inc()
		label := typ
		if !isString {
			label = string(inputOf(t))
		}
		return newError(codeUnknownType, "Unknown message type: %s", runecut.Echo(label)).frame(), false
	}
	s.metrics.wsMessages.WithLabelValues(typ).Inc()
	var errs []fieldError
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k != "type" && (k != "data" || !takesData) {
			errs = addExtra(errs, nil, k, m[k])
		}
	}
	if len(errs) > 0 {
		return invalid(errs).frame(), false
	}
	data, hasData := m["data"]
	if !hasData && typ != "reset" && takesData {
		return invalid([]fieldError{missing([]any{"data"}, raw)}).frame(), false
	}

	var res any
	var perr *protoError
	switch typ {
	case "close":
		return nil, true
	case "state":
		res, perr = ss.state(ctx)
	case "reset":
		var req resetData
		if req, errs = parseReset(data, []any{"data"}); len(errs) == 0 {
			typ = "observation"
			res, perr = ss.resetReply(ctx, req)
		}
	case "step":
		var a action
		if a, errs = parseAction(data, []any{"data"}); len(errs) == 0 {
			return s.answerStep(ss, a), false
		}
	case "grade":
		res, perr = ss.grade(ctx)
	case "checkpoint":
		res, perr = ss.checkpoint(ctx)
	case "inspect":
		var req inspectData
		if req, errs = parseInspect(data, []any{"data"}); len(errs) == 0 {
			res, perr = ss.inspect(ctx, req)
		}
	default: // "mcp"
		if data.Kind() != '{' {
			errs = []fieldError{typeError("dict_type", []any{"data"}, data)}
		} else {
			res, _, _ = s.handleRPC(ctx, data, ss, rpcWS)
		}
	}
	switch {
	case len(errs) > 0:
		return invalid(errs).frame(), false
	case perr != nil:
		return perr.frame(), false
	}
	return wsFrame{typ, res}, false
}
