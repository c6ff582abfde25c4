package middleware_test

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/hangguard"
)

// TestTestClientsHaveAHangGuard: every pep and authzen client this
// package's tests make comes from hangguard.NewPep or hangguard.NewAuthZEN, whose
// calls the hang guard bounds, never the production default of 2 s: a
// clean call beside the rest of the suite on a loaded machine can overrun
// it, and the middleware then answers a failed-closed 403 (or 503) in a
// test that wants a 200. The examples are skipped (they give their own
// generous timeout, in words a reader can copy), and so are the
// benchmarks (they measure the production defaults).
func TestTestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	skip := []string{"example_test.go", "example_authzen_test.go", "bench_test.go"}
	hangguard.Check(t, ".", "pep", map[string]string{}, skip...)
	hangguard.Check(t, ".", "authzen", map[string]string{}, skip...)
}
