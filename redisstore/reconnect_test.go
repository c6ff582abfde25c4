package redisstore_test

// A purge published while a replica is reconnecting
// (its connection cut, or hung and then cut), at many offsets around the
// moment it comes back. Oracle: B serves no cached GRANT of the revoked
// token later than 2 s after A's Purge returned (the README's bound).

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/invalidation"
	"github.com/orgauthz/orgauthz/redisstore/redistest"
)

func TestPurgeWhileAReplicaReconnectsArrivesWithinTheBound(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	if !rs.Real() {
		t.Skip("needs the real redis-server")
	}
	proxy := redistest.StartProxy(t, redistest.Listen(t), rs.Addr(), nil)
	gw := startGateway(t)
	a := replica(t, gw, rs.Client(), "attack:reconnect")
	rdbB := redis.NewClient(&redis.Options{Addr: proxy.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdbB.Close() })
	b := replica(t, gw, rdbB, "attack:reconnect")

	stale := 0
	var worst time.Duration
	for i := range 10 {
		waitFor(t, "both trust their caches", 15*time.Second, trusted(a, b))
		tok := revocable(gw, "bob")
		cache(t, tok, a, b)
		hung := i%2 == 1
		if hung {
			proxy.Set(redistest.Drop)
		}
		proxy.Cut()
		// Publish at an offset around the replica's reconnection.
		time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
		gw.Revoke(t, realm, app, secret, tok)
		healed := make(chan struct{})
		if hung {
			go func() {
				defer close(healed)
				time.Sleep(time.Duration(rand.IntN(100)) * time.Millisecond)
				proxy.Set(redistest.Pass)
				proxy.Cut()
			}()
		} else {
			close(healed)
		}
		require.NoError(t, a.Purge(t.Context(), tok))
		// Watched until B asks the gateway (which refuses tok, and so drops
		// B's cached decisions of it) or for 4 s, past the 2 s bound.
		late := latestCachedGrant(t, b, tok, time.Now(), 4*time.Second)
		worst = max(worst, late)
		if late > invalidation.DefaultTrust {
			stale++
		}
		<-healed // the next round's cut is its own
	}
	t.Logf("B: %+v; the latest cached GRANT of a purged token came %v after Purge returned", b.Stats(), worst)
	require.Zero(t, stale)
}
