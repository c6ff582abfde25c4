package pep_test

// An answer that reaches a frozen process. The gateway answers GRANT while
// the client's process is stopped (SIGSTOP, as a VM or container pause
// does); the process resumes past the call's deadline and past any time to
// live the cache would have given the answer. The context's timer has not
// fired yet when the answer is read: the call must still not use it. The
// client runs in a child process of the test binary (see TestMain and
// freeze_linux_test.go).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/frozentest"
	"github.com/orgauthz/orgauthz/internal/hangguard"
	"github.com/orgauthz/orgauthz/pep"
)

func init() { children["late-answer"] = lateAnswerChild }

// The fault: the child's calls have lateTimeout (WithTimeout) and would
// cache a GRANT for lateGrantTTL; it is frozen for lateFreeze, longer than
// both, while the gateway answers. lateRounds rounds: on the tree before
// the fix, 5 or 6 of 8 returned the answer as a fresh GRANT. They run on
// lateChildren children at once, lateRounds/lateChildren rounds each.
const (
	lateTimeout  = 300 * time.Millisecond
	lateGrantTTL = 500 * time.Millisecond
	lateFreeze   = 1500 * time.Millisecond
	lateRounds   = 8
	lateChildren = 4
)

type lateConfig struct{ URL, Token string }

// lateReport is what one of the child's Checks returned.
type lateReport struct {
	Allowed, Cached bool
	// Unavailable and Deadline report whether the Cause matches
	// pep.ErrUnavailable and context.DeadlineExceeded.
	Unavailable, Deadline bool
	Cause                 string
	Elapsed               time.Duration
}

// TestNoAnswerUsedPastTheDeadlineAfterAFreeze: the child checks
// orders/read (a GRANT for alice) with WithTimeout(300ms) and a 500 ms
// grant TTL; the gateway holds its answer until the child is stopped, then
// answers GRANT; the child is resumed 1.5 s later. Every Check must return
// DENY with the Cause of a passed deadline (pep.ErrUnavailable,
// context.DeadlineExceeded): an answer is used only while its call's
// deadline has not passed, read on the clock when it is taken, whatever
// the context's timer did. Four children do two rounds each, at once.
func TestNoAnswerUsedPastTheDeadlineAfterAFreeze(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	// The rounds run on lateChildren children at once, each with a token
	// of its own (alice's: a clerk, reads orders), by which the gateway
	// tells their requests apart: their freezes overlap rather than add up.
	type held struct{ arrived, release chan struct{} }
	toks := make([]string, lateChildren)
	byHeader := map[string]held{}
	for i := range toks {
		toks[i] = g.token(t, "alice")
		byHeader["Bearer "+toks[i]] = held{make(chan struct{}), make(chan struct{})}
	}
	g.setHook(func(_ http.ResponseWriter, r *http.Request, _ int) bool {
		h, ok := byHeader[r.Header.Get("Authorization")]
		if !ok {
			return false
		}
		select {
		case h.arrived <- struct{}{}:
		case <-g.closing:
			return true
		}
		select {
		case <-h.release:
		case <-g.closing:
			return true
		}
		return false // the reference server answers: GRANT
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for c, tok := range toks {
		h := byHeader["Bearer "+tok]
		wg.Go(func() {
			t.Run(fmt.Sprint("child ", c), func(t *testing.T) {
				k := frozentest.StartChild(ctx, t, childEnv, "late-answer")
				cfg, err := json.Marshal(lateConfig{URL: g.URL, Token: tok})
				require.NoError(t, err)
				k.Tell(t, string(cfg))
				for i := range lateRounds / lateChildren {
					k.Tell(t, "check")
					select {
					case <-h.arrived:
					case <-ctx.Done():
						t.Fatal("the child's request never arrived")
					}
					require.NoError(t, k.Process().Signal(syscall.SIGSTOP))
					frozentest.WaitStopped(t, k.Pid())
					h.release <- struct{}{} // the gateway answers GRANT while the child is frozen
					time.Sleep(lateFreeze)  // the fault's length, not a synchronisation
					require.NoError(t, k.Process().Signal(syscall.SIGCONT))
					var rep lateReport
					require.NoError(t, json.Unmarshal([]byte(k.Next(t, "its report")), &rep))
					t.Logf("round %d: %+v", i, rep)
					assert.False(t, rep.Allowed, "round %d: Check returned GRANT %v after it began, past its %v deadline and the %v grant TTL",
						i, rep.Elapsed, lateTimeout, lateGrantTTL)
					assert.False(t, rep.Cached, "round %d", i)
					assert.True(t, rep.Unavailable && rep.Deadline, "round %d: the Cause is not a passed deadline: %q", i, rep.Cause)
				}
				k.Tell(t, "stop")
				require.NoError(t, k.Wait())
			})
		})
	}
	wg.Wait()
}

// lateAnswerChild is the child process: it reads its lateConfig from
// stdin, then on each "check" checks orders/read, bypassing the cache, and
// writes its lateReport as one JSON line.
func lateAnswerChild() int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "late-answer child: "+format+"\n", args...)
		return 1
	}
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return fail("no configuration on stdin: %v", in.Err())
	}
	var cfg lateConfig
	if err := json.Unmarshal(in.Bytes(), &cfg); err != nil {
		return fail("configuration: %v", err)
	}
	c, err := hangguard.NewPep(cfg.URL, testRealm, testClient, pep.WithTimeout(lateTimeout), noRetry,
		pep.WithBreaker(0, 0), pep.WithCache(100, lateGrantTTL, lateGrantTTL))
	if err != nil {
		return fail("pep.New: %v", err)
	}
	defer c.Close()
	c.SetToken(cfg.Token)
	for in.Scan() && in.Text() == "check" {
		began := time.Now()
		d, err := c.Check(context.Background(), "orders", "read", pep.NoCache())
		if err != nil {
			return fail("Check: %v", err)
		}
		rep := lateReport{Allowed: d.Allowed(), Cached: d.Cached, Elapsed: time.Since(began),
			Unavailable: errors.Is(d.Cause, pep.ErrUnavailable), Deadline: errors.Is(d.Cause, context.DeadlineExceeded)}
		if d.Cause != nil {
			rep.Cause = d.Cause.Error()
		}
		if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
			return fail("report: %v", err)
		}
	}
	return 0
}
