//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris

package main

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
)

// TestLimitKeepsConnectionsWithBytesWaiting: an idle or silent connection
// whose request waits in its socket, not read by the server yet, keeps its
// slot however long the server has read from it: the bytes came while the
// server could not read them (a burst, a process stopped and resumed), and
// it counts as a request in progress from then on. One whose peer sent
// nothing, or closed it, gives way. The listener used to take such a
// connection by its state alone, and lost the request.
func TestLimitKeepsConnectionsWithBytesWaiting(t *testing.T) {
	a := netip.MustParseAddr("192.0.2.1")
	for _, tc := range []struct {
		name     string
		peer     func(t *testing.T, c net.Conn) // what the client does
		readable bool                           // the server's side has something to read then
		kept     bool
	}{
		{"a request waits in the socket", func(t *testing.T, c net.Conn) {
			writeString(t, c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		}, true, true},
		{"nothing sent", func(*testing.T, net.Conn) {}, false, false},
		{"closed by the client", func(t *testing.T, c net.Conn) { require.NoError(t, c.Close()) }, true, false},
	} {
		for _, state := range []http.ConnState{http.StateIdle, http.StateNew} {
			t.Run(tc.name+", "+state.String(), func(t *testing.T) {
				ln := testkit.Must(net.Listen("tcp", "127.0.0.1:0"))(t)
				defer ln.Close()
				client := testkit.Must(net.Dial("tcp", ln.Addr().String()))(t)
				defer client.Close()
				server := testkit.Must(ln.Accept())(t)
				defer server.Close()
				require.NoError(t, server.SetDeadline(time.Now().Add(time.Minute)))
				raw := testkit.Must(server.(syscall.Conn).SyscallConn())(t)
				tc.peer(t, client)
				if tc.readable {
					waitReadable(t, raw)
				}

				l := newLimitListener(nil, 1)
				c := hold(t, l, a, state) // quiet, by the clock
				l.mu.Lock()
				defer l.mu.Unlock()
				c.Conn, c.raw = server, raw
				v := l.victim(c.peer, time.Now())
				if tc.kept {
					require.Nil(t, v)
					require.True(t, c.list == &c.peer.busy, "its request is in progress")
					return
				}
				require.Same(t, c, v)
			})
		}
	}
}

// waitReadable returns once bytes, or the end, can be read from raw,
// without reading them.
func waitReadable(t *testing.T, raw syscall.RawConn) {
	t.Helper()
	var err error
	require.NoError(t, raw.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return !errors.Is(err, syscall.EAGAIN)
	}))
	require.NoError(t, err)
}
