package pep_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/internal/testkit"
	"github.com/orgauthz/orgauthz/pep"
)

// TestAttackGrantTTLBelowTheGatewaysLatencyLocksOutEveryCallOfTwoRequests
// (a-client15 F2): the allow TTL is a cache setting ("gateway GRANT answers
// kept for grantTTL"); a client given one shorter than its gateway's round
// trip (20 ms against 40 ms here: a strict deployment, a slow link) caches
// no GRANT, which is what it asked for. But Reconfirm also holds every
// answer of a call of several requests to it, counted from the send: each
// answer is older than the TTL when the call ends, is asked again, and is
// older again when that answer arrives, so every CheckMany larger than the
// batch size fails closed (WaitedOut) for a caller every one of whose
// pairs the gateway grants, fresh, each time; a Check of each pair is
// granted.
func TestAttackGrantTTLBelowTheGatewaysLatencyLocksOutEveryCallOfTwoRequests(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	c := g.newClient(t, pep.WithCache(100, 20*time.Millisecond, 10*time.Second), pep.WithBatchSize(1), noRetry)
	bob := g.token(t, "bob")
	g.setHook(func(http.ResponseWriter, *http.Request, int) bool {
		time.Sleep(40 * time.Millisecond) // the gateway's latency, not a synchronisation
		return false
	})
	ctx := pep.WithToken(t.Context(), bob)
	for _, scope := range []string{"read", "write"} {
		requireGatewayDecision(t, checkedIn(t, c, ctx, "orders", scope), pep.Grant)
	}
	before := g.count()
	r := testkit.Must(c.CheckMany(ctx, []pep.Resource{{Name: "orders", Scopes: []string{"read", "write"}}}))(t)
	require.Len(t, r.Decisions, 2)
	for _, d := range r.Decisions {
		assert.NoError(t, d.Cause, "%s/%s: the gateway granted it, fresh, twice", d.Resource, d.Scope)
		assert.Equal(t, pep.Grant, d.Status)
	}
	assert.Equal(t, pep.Grant, r.Status)
	t.Logf("gateway requests of the CheckMany: %d", g.count()-before)
}
