package openenv

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestConnLimit_RefuseWithoutReset refuses a connection whose client sent
// its request before the refusal: the client reads the whole 503 and then
// the end of the stream, where closing the socket with the request unread
// reset the connection ("connection reset by peer" after the 503, or
// instead of it on a client told of the reset first).
func TestConnLimit_RefuseWithoutReset(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(client, "POST /step HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"); err != nil {
		t.Fatal(err)
	}
	// The request came in one segment: once its first byte is read, the
	// rest is in c's receive buffer, unread, when c is refused.
	if _, err := c.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	var l ConnLimit
	l.refuse(c, "full")
	client.SetReadDeadline(time.Now().Add(20 * time.Second))
	got, err := io.ReadAll(client)
	if err != nil || !strings.HasPrefix(string(got), "HTTP/1.1 503 ") || !strings.HasSuffix(string(got), `{"detail":"full","code":"CAPACITY_REACHED"}`) {
		t.Fatalf("a refused client read %q, %v; want the whole 503 and the end of the stream", got, err)
	}
}
