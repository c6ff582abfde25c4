package pep_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine (a coalesced request, a retry
// timer, a connection) outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
