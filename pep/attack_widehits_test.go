package pep_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// TestAttackListGrantedWildcardReasksItsOwnHits (a-hold16 F2): the class
// of a-fix15b F3 on another path. ListGranted of a cached named pair
// (orders/read, a hit) and a wildcard (invoices, every scope): the
// wildcard's request (core.SendWide) drops the token's cached decisions,
// the hit's entry among them, and the call's check (reconfirm) then
// finds the hit gone and asks the gateway about it again. Nothing was
// stale: the call's own wildcard made it. askWideFirst orders only the
// call's missing pairs after its wildcards, never its hits, so every such
// call costs a second request, on every call (the re-asked GRANT is
// dropped again by the next call's wildcard), and a gateway blip on that
// needless request fails a GRANT the cache held.
func TestAttackListGrantedWildcardReasksItsOwnHits(t *testing.T) {
	g := startReference(t)
	c := g.newClient(t, pep.WithCache(100, time.Minute, 10*time.Second), noRetry)
	c.SetToken(g.token(t, "bob"))
	requireGatewayDecision(t, checked(t, c, "orders", "read"), pep.Grant) // cached

	for round := range 2 {
		before := len(g.posts())
		got, err := c.ListGranted(t.Context(), []pep.Resource{
			{Name: "orders", Scopes: []string{"read"}},
			{Name: "invoices"},
		})
		require.NoError(t, err)
		require.NotEmpty(t, got)
		var asked []string
		for _, s := range g.posts()[before:] {
			asked = append(asked, s.pairs()...)
		}
		assert.Equal(t, []string{"invoices/*"}, asked, "round %d: only the wildcard is not cached; the hit was asked again", round)
	}
}
