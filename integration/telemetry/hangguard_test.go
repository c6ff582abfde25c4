package telemetry_test

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/hangguard"
)

// TestTestClientsHaveAHangGuard: every pep and authzen client these tests
// make comes from hangguard.NewPep or hangguard.NewAuthZEN, whose calls the hang
// guard bounds, never the production default of 2 s: a clean call beside
// the rest of the suite on a loaded machine can overrun it and fail
// closed, and the spans and metrics a test counts are then those of a
// failure. The benchmark is skipped: it measures pep's
// BenchmarkUncachedCheck client, with the defaults.
func TestTestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	hangguard.Check(t, ".", "pep", map[string]string{}, "bench_test.go")
	hangguard.Check(t, ".", "authzen", map[string]string{}, "bench_test.go")
}
