package soak_test

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/hangguard"
)

// TestTestClientsHaveAHangGuard: every pep client of the soak comes from
// newSoakClient, whose calls the hang guard bounds, never the production
// default of 2 s: the soak loads the machine on purpose, and a clean call
// that overran 2 s would fail closed and count as a wrong answer.
func TestTestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	hangguard.Check(t, ".", "pep", map[string]string{"newSoakClient": "the helper itself"})
}
