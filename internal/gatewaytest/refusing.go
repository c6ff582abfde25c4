//go:build unix

package gatewaytest

import (
	"net"
	"strconv"
	"syscall"
	"testing"
)

// Refusing returns a loopback address (127.0.0.1:port) that refuses every
// connection until the test ends: a gateway that is down. The port is
// held by a socket that is bound and never listens, so a connection gets
// the refusal a closed port gives (ECONNREFUSED) and no other server, of
// this test or of a parallel one, can listen on it in the meantime (a
// port a test closed itself could be taken at once by the next listener
// the kernel places there). The socket has no SO_REUSEADDR, which Go's
// listeners set, so their bind conflicts with it.
func Refusing(t testing.TB) string {
	t.Helper()
	syscall.ForkLock.RLock() // no child inherits the socket
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, syscall.IPPROTO_TCP)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatalf("gatewaytest: socket: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("gatewaytest: bind: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatalf("gatewaytest: getsockname: %v", err)
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		t.Fatalf("gatewaytest: getsockname: %T", sa)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(in4.Port))
}
