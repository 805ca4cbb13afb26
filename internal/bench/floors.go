package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/coder/websocket"
)

// Floors are what the work under a tool call costs with nothing of Seahaven
// in between, measured in the same run: a WebSocket round trip on loopback
// and the SQL on raw driver connections.
type Floors struct {
	// EchoRTT is the median round trip of a message the size of a tool call
	// through a bare WebSocket echo server on loopback (the same library),
	// served by this process.
	EchoRTT time.Duration `json:"echo_rtt_ns"`
	// EchoRTTProcess is the same round trip to an echo server in its own
	// process (Config.Echo), as the server under test is: each message then
	// also wakes another process. Zero when not measured.
	EchoRTTProcess time.Duration `json:"echo_rtt_process_ns"`
	// RawOpen is the median open, schema read and close of a small store
	// (RawFloor).
	RawOpen time.Duration `json:"raw_open_ns"`
	// RawInsertTxn is the median prepared one-row insert transaction into
	// a rowid table (RawFloor).
	RawInsertTxn time.Duration `json:"raw_insert_txn_ns"`
	// RawKeyedInsertTxn is the same transaction inserting a row shaped as
	// the example worlds' rows: keyed by a random UUID text, with a CHECK
	// and a timestamp default (RawFloor).
	RawKeyedInsertTxn time.Duration `json:"raw_keyed_insert_txn_ns"`

	// Measured after the load, when it called a tool:

	// EchoAfter is the round trip Echo counts (cross-process when
	// measured, else in-process) measured again after the load: a shared
	// machine's speed drifts over a run, and Echo takes the mean.
	EchoAfter time.Duration `json:"echo_after_ns,omitempty"`
	// GrownRows is how many rows a session's store gained in the run (the
	// compared tool's calls over the sessions), within
	// MinGrownRows and MaxGrownRows.
	GrownRows int `json:"grown_rows,omitempty"`
	// RawKeyedGrownTxn is the median of GrownRows keyed insert transactions
	// into one table starting empty (RawKeyedGrowth): the raw
	// SQL of the calls one session made, at the table sizes it made them.
	RawKeyedGrownTxn time.Duration `json:"raw_keyed_grown_txn_ns,omitempty"`
}

// echoRoundTrips is the sample size of the echo floor.
const echoRoundTrips = 2000

// echoMessage is the size of a call_tool step.
var echoMessage = []byte(`{"type":"step","data":{"type":"call_tool","tool_name":"invoice","arguments":{"amount":500}}}`)

// Echo returns the echo round trip a call's floor counts: the one to another
// process when it was measured, since the server under test is one; the
// mean of the medians before and after the load when both were measured.
func (f Floors) Echo() time.Duration {
	before := f.EchoRTT
	if f.EchoRTTProcess > 0 {
		before = f.EchoRTTProcess
	}
	if f.EchoAfter > 0 {
		return (before + f.EchoAfter) / 2
	}
	return before
}

// measureFloors measures the echo and raw SQL floors, the raw SQL in dir
// (the OS temp dir when ""); echo, when not nil, starts the cross-process
// echo server.
func measureFloors(ctx context.Context, echo *ServerCommand, dir string) (Floors, error) {
	var f Floors
	var err error
	if f.EchoRTT, err = echoFloor(ctx, echoRoundTrips); err != nil {
		return f, err
	}
	if echo != nil {
		if f.EchoRTTProcess, err = processEchoFloor(ctx, echo, echoRoundTrips); err != nil {
			return f, err
		}
	}
	raw, err := RawFloor(floorDir(dir))
	if err != nil {
		return f, fmt.Errorf("bench: %w", err)
	}
	f.RawOpen, f.RawInsertTxn, f.RawKeyedInsertTxn = raw.Open, raw.InsertTxn, raw.KeyedInsertTxn
	return f, nil
}

// measureFloorsAfter measures the floors that follow the load: the echo
// round trip again, and the keyed inserts of rows calls per session.
func measureFloorsAfter(ctx context.Context, f *Floors, echo *ServerCommand, dir string, rows int) error {
	var err error
	if echo != nil {
		f.EchoAfter, err = processEchoFloor(ctx, echo, echoRoundTrips)
	} else {
		f.EchoAfter, err = echoFloor(ctx, echoRoundTrips)
	}
	if err != nil {
		return err
	}
	if f.RawKeyedGrownTxn, f.GrownRows, err = RawKeyedGrowth(floorDir(dir), rows); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// floorDir is dir, or the OS temp dir when dir is "".
func floorDir(dir string) string {
	if dir == "" {
		return os.TempDir()
	}
	return dir
}

// EchoHandler is a bare WebSocket echo server: every message comes back
// as it was sent. It is the floor's server, in this process or in another
// (`seahaven bench echo`). It is safe for concurrent use.
func EchoHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, b, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, b); err != nil {
				return
			}
		}
	})
}

// echoFloor starts an in-process WebSocket echo server on loopback and
// returns the median of n round trips on one connection.
func echoFloor(ctx context.Context, n int) (time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("bench: echo floor: %w", err)
	}
	hs := &http.Server{Handler: EchoHandler()}
	go hs.Serve(ln)
	defer hs.Close()
	return echoRoundTrip(ctx, "ws://"+ln.Addr().String()+"/", n)
}

// processEchoFloor starts the echo server ec on a free loopback port (Run
// appends --addr 127.0.0.1:<port> to its arguments), measures n round trips
// and stops it.
func processEchoFloor(ctx context.Context, ec *ServerCommand, n int) (time.Duration, error) {
	cmd, addr, err := startProcess(ec, "the echo server")
	if err != nil {
		return 0, err
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	url := "ws://" + addr + "/"
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, fmt.Errorf("bench: the echo server %s did not listen on %s: %w", ec.Path, addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return echoRoundTrip(ctx, url, n)
}

// echoRoundTrip returns the median of n round trips to the echo server at
// url on one connection.
func echoRoundTrip(ctx context.Context, url string, n int) (time.Duration, error) {
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return 0, fmt.Errorf("bench: echo floor: %w", err)
	}
	defer c.CloseNow()
	times := make([]time.Duration, 0, n)
	for i := 0; i < n+n/10; i++ { // the first tenth warms up
		start := time.Now()
		if err := c.Write(ctx, websocket.MessageText, echoMessage); err != nil {
			return 0, fmt.Errorf("bench: echo floor: %w", err)
		}
		if _, _, err := c.Read(ctx); err != nil {
			return 0, fmt.Errorf("bench: echo floor: %w", err)
		}
		if i >= n/10 {
			times = append(times, time.Since(start))
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
	if len(times) == 0 {
		return 0, errors.New("bench: echo floor: no round trip")
	}
	return percentile(times, 50), nil
}
