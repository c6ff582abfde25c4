package mockserver

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test of the package leaks a goroutine. It is the
// package's only TestMain.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
