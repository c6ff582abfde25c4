package pep_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/frozentest"
	"github.com/orgauthz/orgauthz/pep"
)

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
	ctx := frozentest.NewUnfired(time.Minute)
	g.setHook(func(http.ResponseWriter, *http.Request, int) bool {
		ctx.Pass()   // the call's time runs out while the gateway answers
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

	waiterCtx := frozentest.NewUnfired(time.Minute)
	waiter := make(chan pep.Decision)
	go func() {
		d, err := c.Check(waiterCtx, "orders", "read")
		assert.NoError(t, err)
		waiter <- d
	}()
	<-waiting // the waiter joined the same request
	waiterCtx.Pass()
	close(release)

	requireGatewayDecision(t, <-leader, pep.Grant)
	requireDeadlineDenial(t, <-waiter)
	assert.Equal(t, 1, g.count())
	assert.Equal(t, uint64(1), c.Stats().Coalesced)
}
