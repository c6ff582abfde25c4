package main

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/hangguard"
)

// TestTestClientsHaveAHangGuard: the tests make no client of their own;
// they run the example, whose clients take the hang guard
// (hangguard.Timeout) through run's options. A pep.New here, bounded by
// the 2 s production default, which a clean call on a loaded machine can
// overrun, fails this test.
func TestTestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	hangguard.Check(t, ".", "pep", nil)
}
