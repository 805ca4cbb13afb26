package openenv

import (
	"context"
	"sync"
	"time"
)

// keepalive pings the peer every PingInterval and stops the session when
// neither a pong nor a written reply comes within PongTimeout. The pings
// run from a timer, so a session holds no goroutine for them between two.
// The returned stop ends the pings, cutting short one waiting for its
// pong, and waits for it.
func (wc *wsConn) keepalive() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	interval := wc.srv.cfg.PingInterval
	var (
		mu      sync.Mutex // guards stopped, t, and Add on pinging
		stopped bool
		t       *time.Timer
		pinging sync.WaitGroup
	)
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(interval, func() {
		mu.Lock()
		if stopped {
			mu.Unlock()
			return
		}
		pinging.Add(1)
		mu.Unlock()
		defer pinging.Done()
		if !wc.ping(ctx) {
			return
		}
		mu.Lock()
		if !stopped {
			t.Reset(interval)
		}
		mu.Unlock()
	})
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
		cancel()
		pinging.Wait()
	}
}

// ping is one keepalive ping; it reports whether to go on pinging. A reply
// being written or written meanwhile counts as a pong (see wsConn.writing):
// WriteTimeout tells a peer that stopped reading. So do bytes of a message
// received meanwhile (see wsConn.received): IdleTimeout tells a peer that
// never ends its message.
func (wc *wsConn) ping(ctx context.Context) bool {
	s := wc.srv
	if wc.ss.ctx.Err() != nil {
		return false
	}
	if wc.blocked.Load() {
		return true
	}
	writeBounded := s.cfg.WriteTimeout > 0
	if writeBounded && wc.writing.Load() {
		s.log.Debug("openenv: websocket ping deferred: a reply is being written", "session", wc.ss.ref)
		return true
	}
	written, received := wc.written.Load(), wc.received.Load()
	pctx, cancel := withTimeout(ctx, s.cfg.PongTimeout)
	err := wc.c.Ping(pctx)
	cancel()
	if err == nil || wc.ss.ctx.Err() != nil || ctx.Err() != nil {
		return err == nil
	}
	if wc.written.Load() != written || wc.received.Load() != received || (writeBounded && wc.writing.Load()) {
		s.log.Debug("openenv: websocket pong late, but the peer is reading replies or sending", "session", wc.ss.ref, "err", err)
		return true
	}
	s.log.Info("openenv: websocket peer did not answer a ping", "session", wc.ss.ref, "err", err)
	wc.ss.stop(closeAbort, "no pong from peer")
	wc.c.CloseNow() // unblocks a write to the dead peer
	return false
}
