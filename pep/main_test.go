package pep_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/orgauthz/orgauthz/internal/leakcheck"
)

// childEnv, when set in the environment, makes the test binary run the
// child of that name (children) instead of the tests: a test that needs a
// client in a process of its own (to freeze it, say) runs the binary again
// with it.
const childEnv = "PEP_TEST_CHILD"

// children are the bodies of the child processes tests start, by name;
// each returns the process's exit code. Files register theirs in init.
var children = map[string]func() int{}

// TestMain runs a child when childEnv names one; otherwise it runs the
// tests and fails the run if any goroutine (a coalesced request, a retry
// timer, a connection) outlives them.
func TestMain(m *testing.M) {
	if name := os.Getenv(childEnv); name != "" {
		run, ok := children[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "%s=%q names no child\n", childEnv, name)
			os.Exit(2)
		}
		os.Exit(run())
	}
	leakcheck.VerifyTestMain(m)
}
