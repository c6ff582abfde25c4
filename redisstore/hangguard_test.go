package redisstore_test

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/hangguard"
)

// TestTestClientsHaveAHangGuard: every pep client this package's tests
// make comes from hangguard.NewPep, whose calls the hang guard bounds, never
// the production default of 2 s, which a clean call beside the rest of the
// suite on a loaded machine can overrun (the call then fails closed, and a
// test that waits for a GRANT or a purge sees a DENY instead).
func TestTestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	hangguard.Check(t, ".", "pep", map[string]string{
		"freezeChild": "the frozen replica runs with the production settings, as pep's freezeChild does",
		"TestCloseDoesNotWaitForAPurgeWithoutDeadline": "it holds that Close waits for a Purge no longer than the client's own timeout, the production one",
	})
}
