package grpcpep_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine outlives the tests: every
// server, connection and decision call a test starts ends with it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
