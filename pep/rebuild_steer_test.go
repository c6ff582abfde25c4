package pep_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/pep"
)

// TestNoCallerSteersTheCacheIntoRebuildingOnEveryMiss: one caller with one
// ordinary token steers the size of the decision cache's entries through
// the length of the request context (method and path, up to 512 bytes
// kept exactly) of calls that are denied, which the cache keeps too. With
// entries of a length such that the byte bound holds 2^k-1 of them, every
// further miss (the attacker's, and every other caller's) makes the cache
// publish a whole new index table under its lock (cache.index.rehash with
// no slack): measured here as the heap a Check allocates.
func TestNoCallerSteersTheCacheIntoRebuildingOnEveryMiss(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of gateway requests")
	}
	g := startReference(t)
	tok := g.token(t, "dave") // dave may do nothing: every answer is a DENY, cached
	ctx := pep.WithToken(context.Background(), tok)
	const pathLen = 400
	rc := func(i int) pep.CallOption {
		return pep.WithRequestContext(pep.RequestContext{Method: "GET", Path: fmt.Sprintf("/orders/%0*d", pathLen-8, i)})
	}
	// bulk-api's resources r00..r24 of the scopes s0..s9: 250 pairs whose
	// entries, under one request context, are all of one size.
	bulk, _ := bulkCatalog()
	check := func(c *pep.Client, i int) {
		d := checkedIn(t, c, ctx, "r00", "s1", rc(i))
		require.False(t, d.Allowed())
	}
	// What one entry and the token's group count against the byte bound.
	probe := g.newClientOf(t, bulkClient, noRetry, pep.WithCache(pep.DefaultCacheSize, time.Hour, time.Hour))
	check(probe, 0)
	one := probe.Stats().CacheBytes
	check(probe, 1)
	perEntry := probe.Stats().CacheBytes - one
	groupCost := one - perEntry
	t.Logf("an entry counts %d bytes, the token's group %d", perEntry, groupCost)

	run := func(fit int64) float64 {
		c := g.newClientOf(t, bulkClient, noRetry, pep.WithCache(pep.DefaultCacheSize, time.Hour, time.Hour),
			pep.WithCacheMaxBytes(groupCost+fit*perEntry+perEntry/2))
		// Filled 250 denied pairs a call, past the bound.
		n := int(fit)/250 + 2
		for i := range n {
			r := checkedMany(t, c, ctx, bulk, rc(i))
			require.False(t, r.Allowed())
		}
		require.EqualValues(t, fit, c.Stats().CacheEntries)
		const measured = 200
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		for i := range measured {
			check(c, n+i)
		}
		elapsed := time.Since(start) / measured
		runtime.ReadMemStats(&after)
		perCheck := float64(after.TotalAlloc-before.TotalAlloc) / measured
		t.Logf("%d entries fit: %.0f bytes and %v a denied Check", fit, perCheck, elapsed)
		return perCheck
	}
	// 1023 entries, 2^10-1: an index table rebuilt on every miss would be
	// at least 2,048 slots of 16 bytes, 32 KiB a miss; a miss otherwise
	// allocates some 45 KB (the call, HTTP and the reference server's
	// answer) whatever the cache's size, within a few KB.
	const rebuilt = 16 << 10
	good, bad := run(1024), run(1023)
	if bad > good+rebuilt {
		t.Errorf("with one caller's entries sized so that 1023 fit, a miss allocates %.0f bytes (%.0f more than %.0f with 1024): the cache rehashes its index on every miss",
			bad, bad-good, good)
	}
}
