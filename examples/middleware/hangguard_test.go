package main

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/pep"
)

// newTestClient is pep.New with the hang guard (hangguard.Timeout) before
// opts: the example's own client keeps the production default, but a
// test's clean call beside the rest of the suite on a loaded machine can
// overrun 2 s and fail closed, a 403 where the route wants a 200.
func newTestClient(gateway, realm, clientID string, opts ...pep.Option) (*pep.Client, error) {
	return pep.New(gateway, realm, clientID, append([]pep.Option{pep.WithTimeout(hangguard.Timeout)}, opts...)...)
}

// TestTestClientsHaveAHangGuard: every client the example's tests make
// comes from newTestClient.
func TestTestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	hangguard.Check(t, ".", "pep", map[string]string{"newTestClient": "the helper itself"})
}
