package redisstore_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/orgauthz/orgauthz/redisstore"
)

// childEnv, when set in the environment, makes the test binary run the
// child of that name (children) instead of the tests: a test that freezes
// a replica runs it in a process of its own.
const childEnv = "REDISSTORE_TEST_CHILD"

// children are the bodies of the child processes, by name; each returns
// the process's exit code.
var children = map[string]func() int{}

// TestMain runs a child when childEnv names one; otherwise it starts
// building the reference server binary (which tests of the binary need),
// runs the tests, and fails the run if any goroutine (a subscription, a
// connection) outlives them.
func TestMain(m *testing.M) {
	if name := os.Getenv(childEnv); name != "" {
		run, ok := children[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "%s=%q names no child\n", childEnv, name)
			os.Exit(2)
		}
		os.Exit(run())
	}
	redisstore.StartBuildingBinary()
	code := m.Run()
	redisstore.RemoveBuiltBinaries()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
