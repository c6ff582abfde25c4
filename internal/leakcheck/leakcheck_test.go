package leakcheck

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { VerifyTestMain(m) }

// blockedInLeakcheckTest blocks until release is closed; its name is what
// the reports are searched for.
func blockedInLeakcheckTest(started chan<- struct{}, release <-chan struct{}) {
	close(started)
	<-release
}

// startBlocked starts a goroutine that blocks until the returned function
// is called, which waits for it to end.
func startBlocked(t *testing.T) (release func()) {
	t.Helper()
	started, unblock, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		blockedInLeakcheckTest(started, unblock)
	}()
	<-started
	return func() {
		close(unblock)
		<-done
	}
}

// recorder is a testing.TB that records what VerifyNone reports.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// TestLeakedGoroutineIsReported: a goroutine a test started and left
// blocked is reported, with its stack, by Find and by VerifyNone; not once
// it ended, nor when a snapshot taken after it started holds it. Not
// parallel: a check looks at every goroutine.
func TestLeakedGoroutineIsReported(t *testing.T) {
	before := Current()
	release := startBlocked(t)

	err := find(0, []Snapshot{before})
	require.Error(t, err)
	require.Contains(t, err.Error(), "1 goroutine(s) still running")
	require.Contains(t, err.Error(), "leakcheck.blockedInLeakcheckTest", "the report carries the goroutine's stack")

	rec := &recorder{TB: t}
	verifyNone(rec, 0, []Snapshot{before})
	require.Len(t, rec.errors, 1)
	require.Contains(t, rec.errors[0], "leakcheck.blockedInLeakcheckTest")

	require.NoError(t, Find(Current()), "a snapshot holding it ignores it")

	release()
	require.NoError(t, Find(before))
	rec = &recorder{TB: t}
	VerifyNone(rec, before)
	require.Empty(t, rec.errors)
}

// TestGoroutineOnItsWayOutIsWaitedFor: a goroutine still ending when the
// check starts is given time to end, not reported.
func TestGoroutineOnItsWayOutIsWaitedFor(t *testing.T) {
	before := Current()
	release := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		<-release
		for range 1000 { // some work on its way out
			_ = strings.Repeat("x", 100)
		}
		close(ended)
	}()
	close(release)
	require.NoError(t, Find(before))
	<-ended
}

// TestTestingsOwnGoroutinesAreNotLeaks: the goroutines of tests paused by
// t.Parallel and of the runner waiting for them are not reported (this
// check runs while its parallel siblings wait for it to end).
func TestTestingsOwnGoroutinesAreNotLeaks(t *testing.T) {
	t.Run("group", func(t *testing.T) {
		for i := range 3 {
			t.Run(fmt.Sprint("parallel-", i), func(t *testing.T) {
				t.Parallel()
			})
		}
		// The three are paused until this function returns.
		require.NoError(t, Find())
	})
}

// TestParseReadsTheDump: a dump's entries give their id, state without its
// duration, and functions without their arguments, innermost first.
func TestParseReadsTheDump(t *testing.T) {
	t.Parallel()
	dump := "goroutine 7 [chan receive, 2 minutes]:\n" +
		"testing.(*T).Run(0xc000007a00, {0x5c1a2e, 0x4}, 0x5d2f70)\n" +
		"\t/usr/local/go/src/testing/testing.go:1859 +0x431\n" +
		"main.f[...](...)\n" +
		"\t/tmp/x.go:3\n" +
		"created by testing.(*M).Run in goroutine 1\n" +
		"\t/usr/local/go/src/testing/testing.go:2100 +0x1\n" +
		"\n" +
		"goroutine 12 [running]:\n" +
		"main.g()\n" +
		"\t/tmp/x.go:9 +0x1d\n"
	gs := parse(dump)
	require.Len(t, gs, 2)
	require.Equal(t, uint64(7), gs[0].id)
	require.Equal(t, "chan receive", gs[0].state)
	require.Equal(t, []string{"testing.(*T).Run", "main.f[...]"}, gs[0].funcs)
	require.True(t, gs[0].runtimesOwn())
	require.Equal(t, uint64(12), gs[1].id)
	require.Equal(t, "running", gs[1].state)
	require.Equal(t, []string{"main.g"}, gs[1].funcs)
	require.False(t, gs[1].runtimesOwn())
}

// TestCurrentHoldsTheCaller: a snapshot holds the goroutine that took it,
// and a check never reports its caller.
func TestCurrentHoldsTheCaller(t *testing.T) {
	require.True(t, Current().has(currentID()))
	require.NoError(t, Find())
}

// TestVerifyTestMainReportsGoroutinesStartedBeforeRun: VerifyTestMain
// checks every goroutine, as goleak.VerifyTestMain did: one started before
// m.Run (by an init function, a package variable or TestMain itself) and
// still running when the tests pass fails the binary, with its stack.
// IgnoreCurrent, made after it started, leaves it out; a goroutine the
// tests start is reported all the same; failed tests keep their exit code.
// Not parallel: a check looks at every goroutine.
func TestVerifyTestMainReportsGoroutinesStartedBeforeRun(t *testing.T) {
	release := startBlocked(t) // "before m.Run"
	defer release()
	passed := func() int { return 0 }
	tests := []struct {
		name     string
		run      func() int
		opts     func() []Option
		wantCode int
		wantOut  bool // the goroutine's stack is printed
	}{
		{"started before m.Run, left running", passed, func() []Option { return nil }, 1, true},
		{"started before m.Run, ignored on purpose", passed, func() []Option { return []Option{IgnoreCurrent()} }, 0, false},
		{"failed tests keep their code", func() int { return 3 }, func() []Option { return nil }, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			code := verifyTestMain(tt.run, 0, &out, tt.opts())
			require.Equal(t, tt.wantCode, code)
			if tt.wantOut {
				require.Contains(t, out.String(), "leakcheck.blockedInLeakcheckTest")
			} else {
				require.Empty(t, out.String())
			}
		})
	}

	t.Run("started by the tests, with IgnoreCurrent", func(t *testing.T) {
		opts := []Option{IgnoreCurrent()}
		var stop func()
		var out strings.Builder
		code := verifyTestMain(func() int { stop = startBlocked(t); return 0 }, 0, &out, opts)
		stop()
		require.Equal(t, 1, code)
		require.Contains(t, out.String(), "leakcheck.blockedInLeakcheckTest")
	})
}
