//go:build unix

package gatewaytest_test

import (
	"net"
	"net/http"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/gatewaytest"
)

// An address from Refusing refuses every connection, as a closed port
// does, and no server (of this test or a parallel one) can listen on it
// while the test runs: a closed port a test picked itself could be taken
// by the next listener, and the "unreachable" gateway would answer.
func TestRefusingRefusesAndCannotBeTaken(t *testing.T) {
	t.Parallel()
	addr := gatewaytest.Refusing(t)
	for range 3 {
		_, err := net.Dial("tcp", addr)
		require.ErrorIs(t, err, syscall.ECONNREFUSED)
	}
	resp, err := http.Get("http://" + addr + "/")
	if resp != nil {
		_ = resp.Body.Close()
	}
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	ln, err := net.Listen("tcp", addr)
	if ln != nil {
		_ = ln.Close()
	}
	require.ErrorIs(t, err, syscall.EADDRINUSE, "another server took the refusing address")
}
