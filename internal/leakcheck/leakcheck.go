// Package leakcheck fails a test, or a test binary, that leaves goroutines
// running: a client's coalesced request, retry timer or idle connection
// that outlives its Close, a server's handler that outlives the server.
//
// It reads every goroutine's stack (runtime.Stack) and reports those that
// are neither the caller's, nor the runtime's or the testing package's own
// (a test paused by t.Parallel, the runner waiting for a test, the signal
// loop), nor in a Snapshot taken before. A goroutine on its way out (a
// connection's reader after its Close, a handler finishing its write) is
// given time: the check is repeated, with a backoff from a microsecond to
// 100 ms, for up to Wait (5 s) before it reports the goroutines still there,
// with their stacks. It stands in for go.uber.org/goleak, so that the
// library's module requires no module for its tests' leak checks (issue 25).
//
// Its functions are safe for concurrent use, but a check sees every
// goroutine of the process: run it where no other test runs (from
// TestMain, or in a test that is not parallel).
package leakcheck

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Wait is how long a check waits, at most, for goroutines to end before it
// reports them.
const Wait = 5 * time.Second

// maxBackoff is the longest pause between two looks at the goroutines.
const maxBackoff = 100 * time.Millisecond

// Snapshot is the goroutines running when it was taken (Current): a check
// given it does not report them.
type Snapshot struct {
	ids []uint64 // sorted
}

// Current returns the goroutines running now, for a check to ignore.
func Current() Snapshot {
	var ids []uint64
	for _, g := range goroutines() {
		ids = append(ids, g.id)
	}
	slices.Sort(ids)
	return Snapshot{ids: ids}
}

// has reports whether the goroutine id was running when s was taken.
func (s Snapshot) has(id uint64) bool {
	_, ok := slices.BinarySearch(s.ids, id)
	return ok
}

// Find returns nil once no goroutine is left but the caller's, the
// runtime's and the testing package's own and those in ignore; if some are
// still there after Wait, it returns an error that lists them with their
// stacks.
func Find(ignore ...Snapshot) error {
	return find(Wait, ignore)
}

// VerifyNone fails t (Errorf) with the goroutines Find reports.
func VerifyNone(t testing.TB, ignore ...Snapshot) {
	t.Helper()
	verifyNone(t, Wait, ignore)
}

// verifyNone is VerifyNone waiting at most wait.
func verifyNone(t testing.TB, wait time.Duration, ignore []Snapshot) {
	t.Helper()
	if err := find(wait, ignore); err != nil {
		t.Errorf("%v", err)
	}
}

// Option changes what VerifyTestMain checks.
type Option struct {
	ignore *Snapshot
}

// IgnoreCurrent makes VerifyTestMain ignore the goroutines running when
// the option is made: for a TestMain that starts goroutines the package's
// tests share on purpose (a server for all of them) and that outlive
// m.Run. Say why next to it.
func IgnoreCurrent() Option {
	s := Current()
	return Option{ignore: &s}
}

// VerifyTestMain runs the tests (m.Run) and exits with their code; when
// they passed, it exits with 1 instead if any goroutine is left (Find),
// after printing the goroutines to stderr. By default every goroutine
// counts, those running before m.Run too (started by an init function, a
// package variable's initializer or TestMain itself), as
// go.uber.org/goleak's VerifyTestMain checked them; IgnoreCurrent, given
// by a TestMain that starts shared goroutines on purpose, leaves those
// out. Call it from TestMain.
func VerifyTestMain(m *testing.M, opts ...Option) {
	os.Exit(verifyTestMain(m.Run, Wait, os.Stderr, opts))
}

// verifyTestMain is VerifyTestMain running run, waiting at most wait for
// goroutines to end, writing a failure to w, and returning the exit code.
func verifyTestMain(run func() int, wait time.Duration, w io.Writer, opts []Option) int {
	var ignore []Snapshot
	for _, o := range opts {
		if o.ignore != nil {
			ignore = append(ignore, *o.ignore)
		}
	}
	code := run()
	if code == 0 {
		if err := find(wait, ignore); err != nil {
			fmt.Fprintln(w, err)
			code = 1
		}
	}
	return code
}

// find is Find waiting at most wait.
func find(wait time.Duration, ignore []Snapshot) error {
	self := currentID()
	deadline := time.Now().Add(wait)
	backoff := time.Microsecond
	for {
		var left []goroutine
		for _, g := range goroutines() {
			if g.id != self && !g.runtimesOwn() && !ignored(g.id, ignore) {
				left = append(left, g)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if !time.Now().Before(deadline) {
			return leaked(left)
		}
		time.Sleep(min(backoff, time.Until(deadline)))
		backoff = min(2*backoff, maxBackoff)
	}
}

// ignored reports whether any of ignore holds the goroutine id.
func ignored(id uint64, ignore []Snapshot) bool {
	for _, s := range ignore {
		if s.has(id) {
			return true
		}
	}
	return false
}

// leaked is the error that lists the goroutines left.
func leaked(left []goroutine) error {
	var b strings.Builder
	fmt.Fprintf(&b, "leakcheck: %d goroutine(s) still running:", len(left))
	for _, g := range left {
		b.WriteString("\n\n")
		b.WriteString(g.stack)
	}
	return errors.New(b.String())
}

// goroutine is one goroutine of a runtime.Stack dump.
type goroutine struct {
	id    uint64
	state string   // "chan receive", "select", "IO wait", ... without its duration
	funcs []string // the functions of its frames, innermost first
	stack string   // its whole entry in the dump
}

// runtimesOwn reports whether g is one the runtime or the testing package
// runs for itself, which no test started.
func (g goroutine) runtimesOwn() bool {
	if len(g.funcs) == 0 {
		return false
	}
	switch g.funcs[0] {
	case "testing.RunTests", "testing.(*T).Run", "testing.(*T).Parallel", "testing.runFuzzing", "testing.runFuzzTests":
		// The runner waiting for a test, a test waiting for its
		// subtests, a parallel test waiting for its turn.
		return strings.HasPrefix(g.state, "chan receive")
	case "os/signal.signal_recv", "os/signal.loop":
		return true // signal.Notify's goroutine
	}
	return slices.Contains(g.funcs, "runtime.ensureSigM") || slices.Contains(g.funcs, "runtime.ReadTrace")
}

// goroutines returns every goroutine's entry of a runtime.Stack dump.
func goroutines() []goroutine {
	return parse(dump(true))
}

// currentID returns the calling goroutine's id.
func currentID() uint64 {
	gs := parse(dump(false))
	if len(gs) != 1 {
		panic("leakcheck: runtime.Stack does not start with the calling goroutine")
	}
	return gs[0].id
}

// dump returns runtime.Stack's dump of the calling goroutine, or of all.
func dump(all bool) string {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, all)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// parse splits a runtime.Stack dump into its goroutines. An entry starts
// with "goroutine <id> [<state>]:", then each frame is a line naming its
// function and call arguments, and a tab-indented line of its file; the
// last may be "created by <function> in goroutine <id>".
func parse(dump string) []goroutine {
	var gs []goroutine
	for entry := range strings.SplitSeq(strings.TrimSpace(dump), "\n\n") {
		header, frames, _ := strings.Cut(entry, "\n")
		rest, ok := strings.CutPrefix(header, "goroutine ")
		if !ok {
			continue
		}
		idText, state, ok := strings.Cut(rest, " [")
		if !ok {
			continue
		}
		id, err := strconv.ParseUint(idText, 10, 64)
		if err != nil {
			continue
		}
		state = strings.TrimSuffix(state, "]:")
		state, _, _ = strings.Cut(state, ",") // "chan receive, 2 minutes"
		g := goroutine{id: id, state: state, stack: entry}
		for line := range strings.SplitSeq(frames, "\n") {
			if line == "" || strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "created by ") {
				continue
			}
			if i := strings.LastIndexByte(line, '('); i > 0 { // the arguments
				line = line[:i]
			}
			g.funcs = append(g.funcs, line)
		}
		gs = append(gs, g)
	}
	return gs
}
