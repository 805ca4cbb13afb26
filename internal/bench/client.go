package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/coder/websocket"
)

// wsClient is one session's WebSocket connection; roundTrip is used by one
// goroutine at a time. A session that thinks between round trips has a
// reader goroutine that reads every frame, so the server's pings are
// answered while it thinks; one that does not reads its replies itself
// (the reader would only add a hand-off between goroutines per reply).
type wsClient struct {
	c       *websocket.Conn
	timeout time.Duration
	replies chan frame    // frames the reader read, in order; nil without a reader
	closing chan struct{} // closed by close: the reader stops delivering
	done    chan struct{} // closed when the reader has exited
}

// frame is one read from the connection.
type frame struct {
	b   []byte
	err error
}

// reply is the part of a server frame the bench reads.
type reply struct {
	Type string `json:"type"`
	Data struct {
		Code         string `json:"code"`
		Message      string `json:"message"`
		CheckpointID string `json:"checkpoint_id"` // of a checkpoint reply
		Observation  struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"input_schema"`
			} `json:"tools"`
			Error json.RawMessage `json:"error"`
		} `json:"observation"`
	} `json:"data"`
}

// dialClient is shared by every dial: the upgrade hijacks each connection,
// so nothing is pooled.
var dialClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DisableCompression: true}}

// dial opens a session.
func (r *run) dial(ctx context.Context) (*wsClient, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.RoundTripTimeout)
	defer cancel()
	c, _, err := websocket.Dial(ctx, r.wsURL, &websocket.DialOptions{HTTPClient: dialClient})
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(64 << 20)
	w := &wsClient{c: c, timeout: r.cfg.RoundTripTimeout, closing: make(chan struct{}), done: make(chan struct{})}
	if r.cfg.Think > 0 || (len(r.cfg.ToolMix) == 0 && !r.cfg.ResetLoop) {
		w.replies = make(chan frame, 1)
		go w.readLoop()
	} else {
		close(w.done)
	}
	return w, nil
}

// readLoop reads frames until the connection fails or closes.
func (w *wsClient) readLoop() {
	defer close(w.done)
	for {
		_, b, err := w.c.Read(context.Background())
		select {
		case w.replies <- frame{b, err}:
		case <-w.closing:
			return
		}
		if err != nil {
			return
		}
	}
}

// roundTrip sends msg and reads the one reply; an error frame is an error.
// It also returns the round trip: from the send to the reply's last byte,
// before the reply is decoded (as the echo floor is timed).
func (w *wsClient) roundTrip(ctx context.Context, msg []byte) (*reply, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	start := time.Now()
	if err := w.c.Write(ctx, websocket.MessageText, msg); err != nil {
		return nil, 0, err
	}
	var f frame
	if w.replies == nil {
		_, f.b, f.err = w.c.Read(ctx)
	} else {
		select {
		case f = <-w.replies:
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("no reply: %w", ctx.Err())
		}
	}
	d := time.Since(start)
	if f.err != nil {
		return nil, d, f.err
	}
	var rep reply
	if err := json.Unmarshal(f.b, &rep); err != nil {
		return nil, d, fmt.Errorf("reply is not JSON: %w", err)
	}
	if rep.Type == "error" {
		return nil, d, fmt.Errorf("error frame %s: %s", rep.Data.Code, rep.Data.Message)
	}
	return &rep, d, nil
}

// close ends the session with a normal closure and waits for the reader.
func (w *wsClient) close() {
	close(w.closing)
	w.c.Close(websocket.StatusNormalClosure, "")
	w.c.CloseNow()
	<-w.done
}
