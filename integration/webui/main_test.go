package webui_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a goroutine (the browser's connection, the
// reference server's, a request's) outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
