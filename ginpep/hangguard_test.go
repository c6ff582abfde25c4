package ginpep_test

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/hangguard"
)

// TestTestClientsHaveAHangGuard: this package's tests make no client of
// their own; they ask through adaptertest.Start, whose clients have the
// hang guard (checked in adaptertest). A client made here with pep.New
// would be bounded by the production default of 2 s, which a clean call on
// a loaded machine can overrun and then fail closed in a test that wants a
// grant: give such a client hangguard.Timeout through a newTestClient
// helper, exempted below.
func TestTestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	hangguard.Check(t, ".", "pep", nil)
}
