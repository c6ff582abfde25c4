package pep_test

// A cached GRANT must not outlive its time to live when the process is
// frozen (SIGSTOP, as a VM or container pause or a starved container does):
// the client runs in a child process of the test binary (see TestMain),
// which is frozen while it checks in a tight loop and resumed once the
// cached GRANT has expired. Linux only: the child's state is read from /proc
// and the child stops itself with tgkill.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/frozentest"
	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/pep"
)

func init() { children["freeze"] = freezeChild }

// The fault: the child caches GRANTs for freezeGrantTTL and is frozen for
// freezeFor, longer than that. It runs on one processor (GOMAXPROCS=1), as
// in a one-CPU container.
const (
	freezeGrantTTL = 1500 * time.Millisecond
	freezeDenyTTL  = time.Second
	freezeFor      = 2500 * time.Millisecond
)

// The child's loop: it is frozen once it has checked for warmFor, and
// stops once the parent has said it resumed it and minChecksAfterBound
// checks began after the cached GRANT expired, or after childLoopLimit
// whatever happened. warmFor is well within the time to live; checking for
// that long before a freeze lets the runtime's monitor settle into its
// slowest pace (see frozentest.StopSelf).
const (
	warmFor             = 60 * time.Millisecond
	minChecksAfterBound = 1000
	childLoopLimit      = 30 * time.Second
)

// freezeMode is how the child comes to be frozen.
type freezeMode string

const (
	// stoppedByParent: the parent sends SIGSTOP while the child checks,
	// so the freeze lands wherever the child happens to be.
	stoppedByParent freezeMode = "stopped by the parent"
	// stopsItself: the child stops its process (a group stop, the same
	// freeze) right after a check, just after its goroutine went through
	// the scheduler; the parent resumes it. Where a freeze lands decides
	// what a clock-based shortcut gets away with: here the child's first
	// checks after the freeze come before the runtime can run any timer
	// (a cache that trusted a timer-driven clock served expired GRANTs
	// in 24 runs of 24 so, and in 8 of 24 stopped by the parent).
	stopsItself freezeMode = "stops itself"
)

// freezeConfig is what the parent tells the child.
type freezeConfig struct {
	URL, Token string
	Mode       freezeMode
}

// freezeReport is what the child saw in its loop of Checks of orders/read.
// The bound is the latest the cached GRANT can expire: its time to live
// after the first Check, which stored it, returned.
type freezeReport struct {
	Checks int
	// GrantsBeforeBound counts the GRANTs of checks begun before the
	// bound: the cache's, since the gateway denies by then.
	GrantsBeforeBound int
	// AfterBound counts the checks begun after the bound; StaleGrants
	// those of them that returned GRANT, FirstStale and WorstStale how
	// long after the bound the first and the latest of those began.
	AfterBound             int
	StaleGrants            int
	FirstStale, WorstStale time.Duration
	// Denies counts the gateway's DENYs (no Cause) after the bound;
	// Failures the fail-closed denials, FirstFailure the first's Cause.
	Denies, Failures int
	FirstFailure     string
	// LongestPause is the longest time between two checks' starts (the
	// freeze, as the child saw it); PauseSpansBound reports whether it
	// began before the bound and ended after it.
	LongestPause    time.Duration
	PauseSpansBound bool
}

// TestNoGrantPastItsTTLAfterAFreeze runs a client with WithCache(100, 1.5s,
// 1s) in a child process: it caches carol's GRANT, the gateway then
// revokes it, and the child, checking in a tight loop, is frozen for 2.5 s
// and resumed. No Check that began after the cached GRANT expired may
// return GRANT, however long the freeze and whatever the client's timers
// did meanwhile.
func TestNoGrantPastItsTTLAfterAFreeze(t *testing.T) {
	t.Parallel()
	for _, mode := range []freezeMode{stoppedByParent, stopsItself} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			g := startReference(t)
			tok := g.token(t, "carol")
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			k := frozentest.StartChild(ctx, t, childEnv, "freeze", "GOMAXPROCS=1")

			cfg := testkit.Must(json.Marshal(freezeConfig{URL: g.URL, Token: tok, Mode: mode}))(t)
			k.Tell(t, string(cfg))
			require.Equal(t, "cached", k.Next(t, `"cached"`))

			// The gateway changes its mind: carol loses the role that let
			// her read orders. A client without a cache sees it at once.
			g.unassign(t, "carol")
			d := testkit.Must(g.newClient(t, pep.WithCache(0, 0, 0)).Check(pep.WithToken(ctx, tok), "orders", "read"))(t)
			requireGatewayDecision(t, d, pep.Deny)

			k.Tell(t, "loop")
			require.Equal(t, "looping", k.Next(t, `"looping"`))
			if mode == stoppedByParent {
				require.NoError(t, k.Process().Signal(syscall.SIGSTOP))
			}
			frozentest.WaitStopped(t, k.Pid())
			time.Sleep(freezeFor) // the fault's length, not a synchronisation
			require.NoError(t, k.Process().Signal(syscall.SIGCONT))
			k.Tell(t, "resumed")

			var rep freezeReport
			require.NoError(t, json.Unmarshal([]byte(k.Next(t, "its report")), &rep))
			require.NoError(t, k.Wait())
			t.Logf("the child's report: %+v", rep)

			require.True(t, rep.PauseSpansBound, "the freeze (%v) did not span the cached GRANT's expiry", rep.LongestPause)
			require.Positive(t, rep.GrantsBeforeBound, "the child was not served the cached GRANT before the freeze")
			require.Positive(t, rep.AfterBound, "no check began after the cached GRANT expired")
			assert.Zero(t, rep.Failures, "checks failed closed after the freeze; the first: %s", rep.FirstFailure)
			assert.Positive(t, rep.Denies, "the gateway's DENY never reached the child after the freeze")
			assert.Zero(t, rep.StaleGrants,
				"%d of %d checks begun after the cached GRANT expired returned GRANT, the first begun %v after its expiry, the latest %v",
				rep.StaleGrants, rep.AfterBound, rep.FirstStale, rep.WorstStale)
		})
	}
}

// freezeChild is the child process: it reads its freezeConfig from stdin,
// caches a GRANT and says "cached"; on "loop" it checks the same pair in a
// tight loop, says "looping" after warmFor (and then, in mode
// stopsItself, stops itself); it ends its loop once the parent said
// "resumed" and enough checks began after the GRANT expired (or after
// childLoopLimit), and writes its freezeReport as one JSON line.
func freezeChild() int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "freeze child: "+format+"\n", args...)
		return 1
	}
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return fail("no configuration on stdin: %v", in.Err())
	}
	var cfg freezeConfig
	if err := json.Unmarshal(in.Bytes(), &cfg); err != nil {
		return fail("configuration: %v", err)
	}
	c, err := pep.New(cfg.URL, testRealm, testClient, pep.WithCache(100, freezeGrantTTL, freezeDenyTTL))
	if err != nil {
		return fail("pep.New: %v", err)
	}
	c.SetToken(cfg.Token)
	ctx := context.Background()
	d, err := c.Check(ctx, "orders", "read")
	if err != nil || !d.Allowed() || d.Cached {
		return fail("the first check is not the gateway's GRANT: %+v, %v", d, err)
	}
	// The GRANT was stored before Check returned: it expires by bound.
	bound := time.Now().Add(freezeGrantTTL)
	fmt.Println("cached")

	if !in.Scan() || in.Text() != "loop" {
		return fail("expected \"loop\" on stdin: %q, %v", in.Text(), in.Err())
	}
	var resumed atomic.Bool
	go func() {
		for in.Scan() {
			if in.Text() == "resumed" {
				resumed.Store(true)
			}
		}
	}()

	var rep freezeReport
	start := time.Now()
	prev := start
	warm := true
	for time.Since(start) < childLoopLimit && (!resumed.Load() || rep.AfterBound < minChecksAfterBound) {
		began := time.Now()
		d, err := c.Check(ctx, "orders", "read")
		if err != nil {
			return fail("Check: %v", err)
		}
		rep.Checks++
		if pause := began.Sub(prev); pause > rep.LongestPause {
			rep.LongestPause = pause
			rep.PauseSpansBound = prev.Before(bound) && began.After(bound)
		}
		prev = began
		switch late := began.Sub(bound); {
		case late <= 0:
			if d.Allowed() {
				rep.GrantsBeforeBound++
			}
		case d.Allowed():
			rep.AfterBound++
			rep.StaleGrants++
			if rep.StaleGrants == 1 {
				rep.FirstStale = late
			}
			rep.WorstStale = late
		case d.Cause != nil:
			rep.AfterBound++
			rep.Failures++
			if rep.Failures == 1 {
				rep.FirstFailure = d.Cause.Error()
			}
		default:
			rep.AfterBound++
			rep.Denies++
		}
		if warm && time.Since(start) >= warmFor {
			warm = false
			fmt.Println("looping")
			if cfg.Mode == stopsItself {
				frozentest.StopSelf()
			}
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		return fail("report: %v", err)
	}
	return 0
}
