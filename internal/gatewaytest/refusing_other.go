//go:build !unix

package gatewaytest

import (
	"net"
	"testing"
)

// Refusing returns a loopback address (127.0.0.1:port) that refuses every
// connection until the test ends: a gateway that is down. Where a socket
// cannot hold a port without listening (this build), a listener holds it
// and closes every connection it accepts before reading a byte, so no
// request is ever answered and no other server can take the port.
func Refusing(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("gatewaytest: listen: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return ln.Addr().String()
}
