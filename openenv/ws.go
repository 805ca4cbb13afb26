package openenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// closeAbort is a pseudo close code: drop the connection without a close
// handshake, because the peer is gone or not reading.
const closeAbort websocket.StatusCode = -1

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
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		// Accept has written the HTTP error.
		s.log.Debug("openenv: websocket upgrade refused", "err", err)
		return
	}
	c.SetReadLimit(-1) // readMessage enforces MaxMessageBytes itself, to report it
	ss, perr := s.newSession(TransportWS)
	if perr != nil {
		code, reason := websocket.StatusTryAgainLater, "server at capacity"
		if perr.code == codeShuttingDown {
			code, reason = websocket.StatusGoingAway, "server shutting down"
		}
		wc := &wsConn{srv: s, c: c}
		if err := wc.write(context.Background(), perr.frame()); err != nil {
			c.CloseNow()
			return
		}
		c.Close(code, reason)
		return
	}
	(&wsConn{srv: s, ss: ss, c: c}).run()
}

// wsConn is one /ws connection and its session. Its reader goroutine reads
// ahead into a bounded queue and keeps answering pings while the worker (the
// handler's goroutine) processes messages one at a time, in order.
type wsConn struct {
	srv *Server
	ss  *session
	c   *websocket.Conn

	// blocked is set while the reader waits for room in the queue. It then
	// cannot read pongs, so the keepalive skips its ping: the peer is
	// demonstrably alive, it is sending.
	blocked atomic.Bool
}

// inbound is one message read from the peer.
type inbound struct {
	data  []byte      // a text message
	fatal *protoError // a message that ends the session: reply, then close
	code  websocket.StatusCode
}

// run serves the connection until it ends, then ends the session and closes
// the socket.
func (wc *wsConn) run() {
	s := wc.srv
	queue := make(chan inbound, s.cfg.MaxPending)
	readCtx, stopRead := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		wc.readLoop(readCtx, queue)
	}()
	if s.cfg.PingInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wc.pingLoop(readCtx)
		}()
	}

	code, reason := wc.work(queue)
	wc.ss.end()
	if code == closeAbort {
		wc.c.CloseNow()
	} else {
		wc.c.Close(code, reason)
	}
	stopRead()
	wg.Wait()
}

// work processes messages until the session stops or a message ends it, and
// returns how to close the socket.
func (wc *wsConn) work(queue <-chan inbound) (websocket.StatusCode, string) {
	ss := wc.ss
	for {
		select {
		case <-ss.ctx.Done():
			return ss.closeStatus()
		case m, ok := <-queue:
			if !ok {
				return ss.closeStatus()
			}
			if m.fatal != nil {
				if err := wc.write(context.Background(), m.fatal.frame()); err != nil {
					return closeAbort, ""
				}
				ss.stop(m.code, m.fatal.message)
				return m.code, closeReason(m.fatal.message)
			}
			reply, closing := wc.srv.handleMessage(ss, m.data)
			if ss.ctx.Err() != nil {
				return ss.closeStatus()
			}
			if closing {
				ss.stop(websocket.StatusNormalClosure, "")
				return websocket.StatusNormalClosure, ""
			}
			if err := wc.write(context.Background(), reply); err != nil {
				wc.srv.log.Info("openenv: websocket write failed", "session", ss.ref, "err", err)
				ss.stop(closeAbort, "write failed")
				return closeAbort, ""
			}
		}
	}
}

// closeReason fits a message into a close frame's 123-byte reason.
func closeReason(msg string) string {
	if len(msg) <= 123 {
		return msg
	}
	return msg[:120] + "..."
}

// write sends one frame, bounded by WriteTimeout and by ctx. A session
// stopping does not cut a write short, so a reply in flight completes and
// the close frame follows it; a peer that has stopped reading is cut off by
// WriteTimeout, and a dead one by pingLoop closing the connection.
func (wc *wsConn) write(ctx context.Context, frame object) error {
	b, err := encode(frame)
	if err != nil {
		b, err = encode(newError(codeExecution, "reply cannot be encoded as JSON: %v", err).frame())
		if err != nil {
			return err
		}
	}
	ctx, cancel := withTimeout(ctx, wc.srv.cfg.WriteTimeout)
	defer cancel()
	return wc.c.Write(ctx, websocket.MessageText, b)
}

// readLoop reads messages into queue until the connection fails or a fatal
// message is read, then closes queue. A read failure stops the session,
// which cancels a call in progress.
func (wc *wsConn) readLoop(ctx context.Context, queue chan<- inbound) {
	defer close(queue)
	for {
		m, err := wc.readMessage(ctx)
		if err != nil {
			code := closeAbort
			if websocket.CloseStatus(err) != -1 {
				code = websocket.StatusNormalClosure
			}
			wc.ss.stop(code, "connection closed by peer")
			return
		}
		select {
		case queue <- m:
		default:
			wc.blocked.Store(true)
			select {
			case queue <- m:
			case <-wc.ss.ctx.Done():
			}
			wc.blocked.Store(false)
		}
		if m.fatal != nil || wc.ss.ctx.Err() != nil {
			return
		}
	}
}

// readMessage reads one whole message. An oversized or binary message
// becomes a fatal inbound; only a broken connection is an error.
func (wc *wsConn) readMessage(ctx context.Context) (inbound, error) {
	typ, r, err := wc.c.Reader(ctx)
	if err != nil {
		return inbound{}, err
	}
	limit := wc.srv.cfg.MaxMessageBytes
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(r, limit+1))
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
	return inbound{data: buf.Bytes()}, nil
}

// pingLoop pings the peer every PingInterval and stops the session when a
// pong does not come within PongTimeout.
func (wc *wsConn) pingLoop(ctx context.Context) {
	s := wc.srv
	t := time.NewTicker(s.cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wc.ss.ctx.Done():
			return
		case <-t.C:
		}
		if wc.blocked.Load() {
			continue
		}
		pctx, cancel := withTimeout(ctx, s.cfg.PongTimeout)
		err := wc.c.Ping(pctx)
		cancel()
		if err != nil && wc.ss.ctx.Err() == nil {
			s.log.Info("openenv: websocket peer did not answer a ping", "session", wc.ss.ref, "err", err)
			wc.ss.stop(closeAbort, "no pong from peer")
			wc.c.CloseNow() // unblocks a write to the dead peer
			return
		}
	}
}

// wsTypes are the message types a client may send, with whether each takes data.
var wsTypes = map[string]bool{"reset": true, "step": true, "state": false, "close": false, "mcp": true, "inspect": true}

// handleMessage processes one text message and returns exactly one reply,
// or closing for a valid close message (which gets none). A panic, a defect
// of the server itself since Backend panics are caught closer to the call,
// becomes an EXECUTION_ERROR reply rather than ending the process.
func (s *Server) handleMessage(ss *session, raw []byte) (reply object, closing bool) {
	if perr := s.guard("handling a message", func() { reply, closing = s.dispatch(ss, raw) }); perr != nil {
		return perr.frame(), false
	}
	return reply, closing
}

// dispatch does the work of handleMessage.
func (s *Server) dispatch(ss *session, raw []byte) (reply object, closing bool) {
	ctx := ss.ctx
	if !json.Valid(raw) {
		s.observeWSMessage("invalid")
		var v any
		err := json.Unmarshal(raw, &v)
		if err == nil { // json.Valid and Unmarshal disagree only on pathological input
			err = errors.New("not a single JSON value")
		}
		return newError(codeInvalidJSON, "Invalid JSON: %v", err).frame(), false
	}
	m, ok := members(raw)
	if !ok {
		s.observeWSMessage("invalid")
		return invalid([]fieldError{{Type: "model_type", Loc: []any{}, Msg: "Input should be an object", Input: inputOf(raw)}}).frame(), false
	}
	t, present := m["type"]
	typ, isString := asString(t)
	takesData, known := wsTypes[typ]
	if !present || !isString || !known {
		s.observeWSMessage("invalid")
		label := typ
		if !isString {
			label = string(inputOf(t))
		}
		return newError(codeUnknownType, "Unknown message type: %s", label).frame(), false
	}
	s.observeWSMessage(typ)
	var errs []fieldError
	for _, k := range sortedKeys(m) {
		if k != "type" && (k != "data" || !takesData) {
			errs = append(errs, extraForbidden([]any{k}, m[k]))
		}
	}
	if len(errs) > 0 {
		return invalid(errs).frame(), false
	}
	data, hasData := m["data"]
	if !hasData && typ != "reset" && takesData {
		return invalid([]fieldError{missing([]any{"data"}, raw)}).frame(), false
	}

	switch typ {
	case "close":
		return nil, true
	case "state":
		doc, perr := ss.state(ctx)
		if perr != nil {
			return perr.frame(), false
		}
		return frameOf("state", doc), false
	case "reset":
		req, errs := parseReset(data, []any{"data"})
		if len(errs) > 0 {
			return invalid(errs).frame(), false
		}
		if perr := ss.reset(ctx, req); perr != nil {
			return perr.frame(), false
		}
		return frameOf("observation", stepResponse(resetObservation)), false
	case "step":
		a, errs := parseAction(data, []any{"data"})
		if len(errs) > 0 {
			return invalid(errs).frame(), false
		}
		resp, perr := ss.step(ctx, a, s.cfg.StepTimeout)
		if perr != nil {
			return perr.frame(), false
		}
		return frameOf("observation", resp), false
	case "inspect":
		req, errs := parseInspect(data, []any{"data"})
		if len(errs) > 0 {
			return invalid(errs).frame(), false
		}
		res, perr := ss.inspect(ctx, req)
		if perr != nil {
			return perr.frame(), false
		}
		return frameOf("inspect", res), false
	default: // "mcp"
		if !isObject(data) {
			return invalid([]fieldError{typeError("dict_type", []any{"data"}, data)}).frame(), false
		}
		resp, _ := s.handleRPC(ctx, data, ss)
		return frameOf("mcp", resp), false
	}
}
