package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAttackRefusedSlowBodyHoldsShutdown: an unauthenticated client that
// declares a large body and trickles it holds its refused request (a 401
// the server decided at once) until the read timeout, since readBodyFirst
// drains before answering. Graceful shutdown (10 s) then gives up and run
// fails with "context deadline exceeded". Before readBodyFirst the 401 went
// out at once and the connection closed (Go's server gives up on more than
// 256 KiB unread), and shutdown was clean.
func TestAttackRefusedSlowBodyHoldsShutdown(t *testing.T) {
	base, stop := start(t, "-admin-secret", "s3cret")
	addr := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /realms/master/authorization-decision-provider/authorize HTTP/1.1\r\nHost: x\r\n"+
		"Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{\"a\":")
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond)
	t0 := time.Now()
	require.NoError(t, stop(), "shutdown with one refused request in flight")
	require.Less(t, time.Since(t0), 5*time.Second)
}

// TestAttackOversizedDeclaredBodyAnsweredLate: a refused request whose
// declared Content-Length is already over maxDrain (16 MiB) can never be
// drained, and its connection closes after the answer anyway; yet the
// answer waits for up to 16 MiB of body, i.e. until the read timeout for
// a client that trickles it.
func TestAttackOversizedDeclaredBodyAnsweredLate(t *testing.T) {
	base, stop := start(t, "-admin-secret", "s3cret", "-read-timeout", "4s")
	defer func() { require.NoError(t, stop()) }()
	addr := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	t0 := time.Now()
	_, err = io.WriteString(conn, "POST /realms/master/authorization-decision-provider/authorize HTTP/1.1\r\nHost: x\r\n"+
		"Content-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n{\"a\":")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Less(t, time.Since(t0), time.Second, "the 401 waited for a body the server would never drain")
}
