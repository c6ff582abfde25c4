package grpcpep_test

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/hangguard"
)

// TestTestClientsHaveAHangGuard: every client this package's tests make
// comes from hangguard.NewPep (or adaptertest.Start, which checks its own),
// whose calls the hang guard bounds, never the production default of 2 s:
// a clean call on a loaded machine can overrun it, and the interceptor
// then answers a failed-closed PermissionDenied in a test that wants OK.
// The example is skipped: it shows the defaults and calls nothing.
func TestTestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	hangguard.Check(t, ".", "pep", map[string]string{}, "example_test.go")
}
