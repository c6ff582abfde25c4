package interop_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a goroutine (a server, a client's connection)
// outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
