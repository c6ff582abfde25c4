package adaptertest_test

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/hangguard"
)

// TestClientsHaveAHangGuard: every client Start makes for the adapters'
// tests (middleware, grpcpep, ginpep, echopep) comes from newClient, with
// the hang guard, never the production default of 2 s, which a clean call
// on a loaded machine can overrun: the case then fails closed as
// Unavailable in a test that wants another answer.
func TestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	hangguard.CheckSupport(t, ".", "pep", map[string]string{
		"newClient": "the helper itself",
	})
}
