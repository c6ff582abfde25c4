package authzen_test

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/hangguard"
)

// TestTestClientsHaveAHangGuard: every client this package's tests make
// comes from hangguard.NewAuthZEN, which bounds its calls by hangguard.Timeout (a hang
// guard) unless the test gives its own timeout, never by the production
// default of 2 s, which a clean call on a loaded machine can overrun and
// then fail closed in a test about something else.
func TestTestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	hangguard.Check(t, ".", "authzen", map[string]string{
		"TestNewValidates": "New's own validation is the subject, with the options as given; its clients send nothing",
	}, "example_test.go")
}
