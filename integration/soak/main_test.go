package soak_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a goroutine (a server connection, a client's
// request, a worker) outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
