package mockservertest_test

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/hangguard"
)

// TestTestClientsHaveAHangGuard: every client this package's tests make
// comes from client, whose calls the hang guard bounds, never the
// production default of 2 s: a clean call beside the rest of the suite on
// a loaded machine can overrun it and fail closed, a DENY in a test that
// wants the reference server's GRANT. The examples are skipped: they give
// their own generous timeout, with the reason, for readers to copy.
func TestTestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	hangguard.Check(t, ".", "pep", map[string]string{"client": "the helper itself"}, "example_test.go")
}
