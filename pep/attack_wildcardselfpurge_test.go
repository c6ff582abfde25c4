package pep_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// TestAttackWildcardSelfPurge (a-fix15b F3): alice lists four named pairs
// and every scope of r04 (a wildcard) in one ListGranted, one pair a chunk
// (WithBatchSize(1)). Nothing happens meanwhile: no purge, no revocation,
// no clock movement. The wildcard's own request drops alice's cached
// decisions when it is sent (SendWide: a purge, which also bumps the
// client-wide purge count), so the named pairs' GRANTs, answered and
// cached moments before or fenced while in flight, are gone, and their
// Stamps see the count moved: the call asks the gateway about every one of
// them again. A call's own wildcard makes its other answers stale by
// construction: each named pair costs two requests (and a second purge
// during the re-ask, a stranger's 401, fails it closed: F1's class).
func TestAttackWildcardSelfPurge(t *testing.T) {
	t.Parallel()
	g := startReference(t)
	clk := newManualClock()
	c := g.newClientOf(t, bulkClient, pep.WithClock(clk.Now), pep.WithTimeout(time.Minute), noRetry, pep.WithBatchSize(1))
	alice := g.token(t, "alice")
	// Four concrete pairs take the four chunk slots (MaxParallelChunks): the
	// wildcard's chunk starts only once one of them has ended, its answer
	// cached.
	resources := []pep.Resource{
		{Name: "r00", Scopes: []string{"s0"}}, {Name: "r01", Scopes: []string{"s0"}},
		{Name: "r02", Scopes: []string{"s0"}}, {Name: "r03", Scopes: []string{"s0"}},
		{Name: "r04"},
	}
	before := len(g.posts())
	got, err := c.ListGranted(pep.WithToken(t.Context(), alice), resources)
	require.NoError(t, err)
	assert.Len(t, got, 4+5)
	asked := map[string]int{}
	for _, s := range g.posts()[before:] {
		for _, p := range s.pairs() {
			asked[p]++
		}
	}
	t.Logf("asked: %v", asked)
	assert.Equal(t, map[string]int{"r00/s0": 1, "r01/s0": 1, "r02/s0": 1, "r03/s0": 1, "r04/*": 1}, asked,
		"pairs asked again though nothing happened but the call's own wildcard")
}
