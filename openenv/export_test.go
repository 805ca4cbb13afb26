package openenv

import "time"

// DuplicateKey exposes checkJSON's duplicate-key location to the external
// tests, which check it against a reference built on encoding/json.
func DuplicateKey(b []byte) ([]any, bool) {
	if perr := checkJSON(b, nil); perr != nil && perr.code == codeValidation {
		return perr.errors[0].Loc, true
	}
	return nil, false
}

// IdleConns returns how many counted connections are idle between requests
// (those a connection at the cap may close to make room).
func (l *ConnLimit) IdleConns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, info := range l.conns {
		if !info.idleSince.IsZero() {
			n++
		}
	}
	return n
}

// Probes returns how many connections beyond Max hold a probe's place.
func (l *ConnLimit) Probes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.probes)
}

// SetProbeQuiet sets how long a connection in the probes' places may go
// without a whole request before a new one takes its place.
func (l *ConnLimit) SetProbeQuiet(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.quiet = d
}

// MaxReplayBytes exposes the bound on the bytes of the step replies a
// session keeps by request_id.
const MaxReplayBytes = maxReplayBytes

// OnDrainRefused makes f run when a drain is refused a session's call slot,
// before it tells why; lateGone reports whether no call past its deadline
// holds the session any more. It returns a function restoring the hook.
func OnDrainRefused(f func(lateGone func() bool)) (restore func()) {
	testHookDrainRefused = func(ss *session) { f(func() bool { return ss.lateCall() == nil }) }
	return func() { testHookDrainRefused = func(*session) {} }
}

// Callers returns how many goroutines the server keeps for tool calls,
// busy or idle (each exits once idle for a second).
func (s *Server) Callers() int { return int(s.callers.running.Load()) }
