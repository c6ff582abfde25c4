package mockserver_test

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/hangguard"
)

// TestTestClientsHaveAHangGuard: the reference server's tests speak HTTP
// themselves; the one client they make, the AuthZEN search client, comes
// from searchClient, whose calls the hang guard bounds, never the
// production default of 2 s, which a clean call beside the rest of the
// suite on a loaded machine can overrun. The pep clients come from
// pepClient, with the guard too.
func TestTestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	hangguard.Check(t, ".", "authzen", map[string]string{"searchClient": "the helper itself"})
	hangguard.Check(t, ".", "pep", map[string]string{"pepClient": "the helper itself"})
}
