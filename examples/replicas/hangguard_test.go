package main

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/hangguard"
)

// TestTestClientsHaveAHangGuard: the tests make their clients with the
// example's newClient, passing the hang guard (hangguard.Timeout) as an
// option; a pep.New of their own, with the 2 s production default, which
// a clean call on a loaded machine can overrun, fails here.
func TestTestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	hangguard.Check(t, ".", "pep", nil)
}
