package pep_test

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/hangguard"
)

// TestTestClientsHaveAHangGuard: every client this package's tests make
// comes from hangguard.NewPep, which bounds its calls by hangguard.Timeout (a hang
// guard) unless the test gives its own timeout, never by the production
// default of 2 s. A clean call beside the rest of the suite on a loaded
// machine can take longer than 2 s and then fails closed (a DENY whose
// Cause is ErrUnavailable, and a nil error) in a test about something
// else: a DPoP test of an expired token (TestE2EExpiredToken, since
// merged into others) got a nil error where its refused token must be
// ErrUnauthorized. Added client by client, the guard missed that
// test and was lost in a merge (TestCacheBytesAreHonest); so it is checked
// here, in the source.
func TestTestClientsHaveAHangGuard(t *testing.T) {
	t.Parallel()
	hangguard.Check(t, ".", "pep", map[string]string{
		"TestNewValidates": "New's own validation is the subject, with the options as given; its clients send nothing",
		"freezeChild":      "a child process frozen on purpose: its clock and its deadlines are what it measures",
	}, "example_test.go", "bench_test.go")
}
