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
// with the Cause of a passed deadline and nothing is cached. (That a
// caller's own deadline does not count against the breaker is
// internal/core's TestOnlyTheClientsTimeoutIsItsOwn.)
func TestAnswerPastTheDeadlineIsNotUsed(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	ctx := frozentest.NewUnfired(time.Minute)
	g.setHook(func(http.ResponseWriter, *http.Request, int) bool {
		ctx.Pass()   // the call's time runs out while the gateway answers
		return false // the reference server answers: GRANT
	})
	c := g.newClient(t, pep.WithTimeout(time.Hour), noRetry)
	c.SetToken(g.token(t, "alice"))

	d := checkedIn(t, c, ctx, "orders", "read")
	requireDeadlineDenial(t, d)

	g.setHook(nil)
	d = checked(t, c, "orders", "read")
	requireGatewayDecision(t, d, pep.Grant)
	assert.False(t, d.Cached, "the answer taken past its call's deadline was cached")
	assert.Equal(t, 2, g.count())
}
