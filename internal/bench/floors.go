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

	"github.com/seahaven/seahaven/sqlitestore"
)

// Floors are what the work under a tool call costs with nothing of Seahaven
// in between, measured in the same run: a WebSocket round trip on loopback
// and the SQL on raw driver connections.
type Floors struct {
	// EchoRTT is the median round trip of a message the size of a tool call
	// through a bare WebSocket echo server on loopback (the same library).
	EchoRTT time.Duration `json:"echo_rtt_ns"`
	// RawOpen is the median open, schema read and close of a small store
	// (sqlitestore.RawFloor).
	RawOpen time.Duration `json:"raw_open_ns"`
	// RawInsertTxn is the median prepared one-row insert transaction
	// (sqlitestore.RawFloor).
	RawInsertTxn time.Duration `json:"raw_insert_txn_ns"`
}

// echoRoundTrips is the sample size of the echo floor.
const echoRoundTrips = 2000

// echoMessage is the size of a call_tool step.
var echoMessage = []byte(`{"type":"step","data":{"type":"call_tool","tool_name":"invoice","arguments":{"amount":500}}}`)

// measureFloors measures the echo and raw SQL floors. dir holds RawFloor's
// scratch file ("" is the OS temp dir).
func measureFloors(ctx context.Context, dir string) (Floors, error) {
	var f Floors
	var err error
	if f.EchoRTT, err = echoFloor(ctx, echoRoundTrips); err != nil {
		return f, err
	}
	if dir == "" {
		dir = os.TempDir()
	}
	if f.RawOpen, f.RawInsertTxn, err = sqlitestore.RawFloor(dir); err != nil {
		return f, fmt.Errorf("bench: %w", err)
	}
	return f, nil
}

// echoFloor starts an in-process WebSocket echo server on loopback and
// returns the median of n round trips on one connection.
func echoFloor(ctx context.Context, n int) (time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("bench: echo floor: %w", err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	})}
	go hs.Serve(ln)
	defer hs.Close()
	c, _, err := websocket.Dial(ctx, "ws://"+ln.Addr().String()+"/", nil)
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
