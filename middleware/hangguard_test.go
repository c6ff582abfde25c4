package middleware_test

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

// TestTestClientsHaveAHangGuard: every pep and authzen client this
// package's tests make comes from newTestClient or newTestAuthzen, whose
// calls the hang guard bounds, never the production default of 2 s: a
// clean call beside the rest of the suite on a loaded machine can overrun
// it, and the middleware then answers a failed-closed 403 (or 503) in a
// test that wants a 200. The examples are skipped (they give their own
// generous timeout, in words a reader can copy), and so are the
// benchmarks (they measure the production defaults).
func TestTestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	skip := []string{"example_test.go", "example_authzen_test.go", "bench_test.go"}
	hangguard.Check(t, ".", "pep", map[string]string{"newTestClient": "the helper itself"}, skip...)
	hangguard.Check(t, ".", "authzen", map[string]string{"newTestAuthzen": "the helper itself"}, skip...)
}
