package grpcpep_test

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/pep"
)

// newTestClient is pep.New with the hang guard (hangguard.Timeout) before
// opts, so that a test about a timeout still gives its own, which wins.
func newTestClient(gateway, realm, clientID string, opts ...pep.Option) (*pep.Client, error) {
	return pep.New(gateway, realm, clientID, append([]pep.Option{pep.WithTimeout(hangguard.Timeout)}, opts...)...)
}

// TestTestClientsHaveAHangGuard: every client this package's tests make
// comes from newTestClient (or adaptertest.Start, which checks its own),
// whose calls the hang guard bounds, never the production default of 2 s:
// a clean call on a loaded machine can overrun it, and the interceptor
// then answers a failed-closed PermissionDenied in a test that wants OK.
// The example is skipped: it shows the defaults and calls nothing.
func TestTestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	hangguard.Check(t, ".", "pep", map[string]string{"newTestClient": "the helper itself"}, "example_test.go")
}
