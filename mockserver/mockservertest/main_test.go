package mockservertest_test

import (
	"testing"

	"github.com/orgauthz/orgauthz/internal/leakcheck"
)

// TestMain fails the run if any goroutine outlives the tests.
func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m)
}
