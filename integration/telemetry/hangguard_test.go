package telemetry_test

import (
	"testing"

	"github.com/orgauthz/orgauthz/authzen"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/pep"
)

// newTestClient is pep.New with the hang guard (hangguard.Timeout) before
// opts, so that a test about a timeout still gives its own, which wins.
func newTestClient(gateway, realm, clientID string, opts ...pep.Option) (*pep.Client, error) {
	return pep.New(gateway, realm, clientID, append([]pep.Option{pep.WithTimeout(hangguard.Timeout)}, opts...)...)
}

// newTestAuthzen is authzen.New with the hang guard before opts.
func newTestAuthzen(pdp string, opts ...authzen.Option) (*authzen.Client, error) {
	return authzen.New(pdp, append([]authzen.Option{authzen.WithTimeout(hangguard.Timeout)}, opts...)...)
}

// TestTestClientsHaveAHangGuard: every pep and authzen client these tests
// make comes from newTestClient or newTestAuthzen, whose calls the hang
// guard bounds, never the production default of 2 s: a clean call beside
// the rest of the suite on a loaded machine can overrun it and fail
// closed, and the spans and metrics a test counts are then those of a
// failure. The benchmark is skipped: it measures pep's
// BenchmarkUncachedCheck client, with the defaults.
func TestTestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	hangguard.Check(t, ".", "pep", map[string]string{"newTestClient": "the helper itself"}, "bench_test.go")
	hangguard.Check(t, ".", "authzen", map[string]string{"newTestAuthzen": "the helper itself"}, "bench_test.go")
}
