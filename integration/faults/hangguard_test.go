package faults_test

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/pep"
)

// newTestClient is pep.New with the hang guard (hangguard.Timeout) before
// opts. The rig's clients give their own timeouts after it (clientTimeout,
// breakerTimeout, and those the tests pass), which win: they are what the
// fault tests measure. The invalidation rig's clients give none: their
// clean calls to the gateway are bounded by the guard, not by the 2 s
// production default, which a loaded machine can overrun.
func newTestClient(gateway, realm, clientID string, opts ...pep.Option) (*pep.Client, error) {
	return pep.New(gateway, realm, clientID, append([]pep.Option{pep.WithTimeout(hangguard.Timeout)}, opts...)...)
}

// TestTestClientsHaveAHangGuard: every client of the fault tests comes
// from newTestClient, so that none is bounded by the production default
// unless it says so.
func TestTestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	hangguard.Check(t, ".", "pep", map[string]string{"newTestClient": "the helper itself"})
}
