package openenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// The ids of refusals: a request refused before its body is read whole
// (too large, too slow, a header refused) names the id its body's start
// gives.

// refusedID is the id a refusal of the JSON-RPC request whose body begins
// with prefix (the whole body, or the part of one too large or too slow to
// read whole) names: a top-level "id" member that comes before the first
// member prefix cuts short, and that is a string or a number; null when
// there is none. The official Go SDK's client writes the id second, after
// "jsonrpc".
func refusedID(prefix []byte) json.RawMessage {
	id, _ := scanRefusedID(prefix)
	return id
}

// scanRefusedID returns refusedID(prefix), and whether more of the body
// could not change it: false when prefix ends before the id or the member
// that would come before it.
func scanRefusedID(prefix []byte) (id json.RawMessage, decided bool) {
	// A read that fails at the end of prefix would read on in more of it.
	settled := func(err error) bool { return err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) }
	dec := jsontext.NewDecoder(bytes.NewReader(prefix))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nullID, err == nil || settled(err)
	}
	for {
		tok, err := dec.ReadToken()
		if err != nil || tok.Kind() != '"' {
			return nullID, err == nil || settled(err)
		}
		name := tok.String() // before the decoder reads on, which voids tok
		v, err := dec.ReadValue()
		if err != nil {
			return nullID, settled(err)
		}
		if name == "id" {
			// A number the prefix ends in may be cut short: 12 of 123.
			if k := v.Kind(); k == '0' && dec.InputOffset() == int64(len(prefix)) {
				return nullID, false
			} else if k != '"' && k != '0' {
				return nullID, true
			}
			return json.RawMessage(v.Clone()), true
		}
	}
}

// refusedIDWait bounds how long the server reads a body it refused
// for its Content-Length, to find the request's id.
const refusedIDWait = time.Second

// readIDPrefix reads the start of r's body, which its Content-Length
// already put over MaxMessageBytes, for refusedID: until the bytes read
// decide the id, MaxMessageBytes of them were read, the client stops
// sending for refusedIDWait, or the read fails. The connection is closed
// after the reply, so what was not read is never taken for a request. A
// request that expects 100-continue is not asked for its body: its reads
// fail at once (limitBodies), and its id goes unnamed.
func (s *Server) readIDPrefix(w http.ResponseWriter, r *http.Request) []byte {
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(refusedIDWait))
	limit := int(s.cfg.MaxMessageBytes)
	buf := make([]byte, 0, min(limit, 4<<10))
	scanned := 0
	for len(buf) < limit {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(len(buf), limit-len(buf)))
		}
		n, err := r.Body.Read(buf[len(buf):min(cap(buf), limit)])
		buf = buf[:len(buf)+n]
		if err != nil {
			break
		}
		// Scanned again only once it has doubled, so a body read in
		// small pieces is not scanned over and over.
		if len(buf) >= 2*scanned {
			scanned = len(buf)
			if _, decided := scanRefusedID(buf); decided {
				break
			}
		}
	}
	return buf
}
