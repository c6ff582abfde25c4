package pep_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// unfired is a context whose deadline a test moves into the past without
// its timer firing: Done never closes and Err stays nil. It is what a call
// sees when a frozen process (SIGSTOP, a paused VM) resumes, before the
// runtime runs its timers. A client whose WithTimeout is longer than the
// time left keeps reading this deadline (context.WithTimeout then wraps
// without a timer of its own).
type unfired struct {
	context.Context
	deadline atomic.Pointer[time.Time]
}

// newUnfired returns an unfired context whose deadline is d from now.
func newUnfired(d time.Duration) *unfired {
	c := &unfired{Context: context.Background()}
	at := time.Now().Add(d)
	c.deadline.Store(&at)
	return c
}

func (c *unfired) Deadline() (time.Time, bool) { return *c.deadline.Load(), true }

// pass makes the deadline now: from here on it has passed, and the
// context's timer has still not fired.
func (c *unfired) pass() {
	now := time.Now()
	c.deadline.Store(&now)
}

// requireDeadlineDenial asserts that d failed closed because its call's
// deadline passed.
func requireDeadlineDenial(t *testing.T, d pep.Decision) {
	t.Helper()
	assert.False(t, d.Allowed())
	assert.Equal(t, pep.Deny, d.Status)
	assert.False(t, d.Cached)
	require.ErrorIs(t, d.Cause, pep.ErrUnavailable)
	require.ErrorIs(t, d.Cause, context.DeadlineExceeded)
}

// TestAnswerPastTheDeadlineIsNotUsed: the gateway's GRANT is read after
// the call's deadline passed, its context's timer not yet fired (the
// process was frozen while the gateway answered). The call fails closed
// with the Cause of a passed deadline, nothing is cached, and a caller's
// own deadline does not count against the breaker.
func TestAnswerPastTheDeadlineIsNotUsed(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	ctx := newUnfired(time.Minute)
	g.setHook(func(http.ResponseWriter, *http.Request, int) bool {
		ctx.pass()   // the call's time runs out while the gateway answers
		return false // the reference server answers: GRANT
	})
	c := g.newClient(t, pep.WithTimeout(time.Hour), pep.WithBreaker(1, time.Hour), noRetry)
	c.SetToken(g.token(t, "alice"))

	d, err := c.Check(ctx, "orders", "read")
	require.NoError(t, err)
	requireDeadlineDenial(t, d)
	assert.Equal(t, pep.BreakerClosed, c.Stats().Breaker, "a caller's own deadline counted against the breaker")

	g.setHook(nil)
	d, err = c.Check(t.Context(), "orders", "read")
	require.NoError(t, err)
	requireGatewayDecision(t, d, pep.Grant)
	assert.False(t, d.Cached, "the answer taken past its call's deadline was cached")
	assert.Equal(t, 2, g.count())
}

// TestCoalescedWaiterPastItsDeadlineGetsNoGrant: a caller waiting for a
// request another caller sent, whose own deadline passes meanwhile (its
// timer not yet fired, as after a freeze), is denied with the Cause of
// its passed deadline, while the caller who sent the request, still in
// time, gets the gateway's GRANT. The waiter sends nothing of its own.
func TestCoalescedWaiterPastItsDeadlineGetsNoGrant(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	g.setHook(func(http.ResponseWriter, *http.Request, int) bool {
		arrived <- struct{}{}
		select { // hold the request until the test lets it go
		case <-release:
		case <-g.closing:
		}
		return false // then the server answers it: GRANT
	})
	waiting := make(chan struct{}, 2)
	c := g.newClient(t, pep.WithTimeout(time.Hour), pep.WithCache(0, 0, 0), noRetry,
		pep.WithFlightWaitHook(func() { waiting <- struct{}{} }))
	c.SetToken(g.token(t, "alice"))

	leader := make(chan pep.Decision)
	go func() {
		d, err := c.Check(t.Context(), "orders", "read")
		assert.NoError(t, err)
		leader <- d
	}()
	<-waiting // the leader waits on its request
	<-arrived

	waiterCtx := newUnfired(time.Minute)
	waiter := make(chan pep.Decision)
	go func() {
		d, err := c.Check(waiterCtx, "orders", "read")
		assert.NoError(t, err)
		waiter <- d
	}()
	<-waiting // the waiter joined the same request
	waiterCtx.pass()
	close(release)

	requireGatewayDecision(t, <-leader, pep.Grant)
	requireDeadlineDenial(t, <-waiter)
	assert.Equal(t, 1, g.count())
	assert.Equal(t, uint64(1), c.Stats().Coalesced)
}
