package redisstore_test

// TestInvalidatorRefusesReplicaOnlySentinelClient (issue 24, found by
// the second attack): redis.NewFailoverClient with ReplicaOnly returns a
// *redis.Client whose connections go to the replicas, and a PUBLISH on a
// replica is delivered only to that replica's own subscribers (standalone
// Redis propagates PUBLISH from the primary to its replicas, never from a
// replica). A replica's own heartbeats would come back while another
// replica's purges never reach it. Promise: every session asks the
// server (ROLE) and is lost, with an error that says what to use, so the
// cache is never trusted and no purged GRANT is served past 2 s.

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgauthz/orgauthz/invalidation"
	"github.com/orgauthz/orgauthz/pep"
)

func TestInvalidatorRefusesReplicaOnlySentinelClient(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	set := startSentinelSet(t, 2)
	client := func() *redis.Client {
		c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster",
			SentinelAddrs: []string{set.sentinelAddr}, ReplicaOnly: true})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	const channel = "topology:replicaonly"
	refusedSession(t, client(), channel, "not a primary", "ReplicaOnly")

	gw := startGateway(t)
	a := replica(t, gw, client(), channel)
	b := replica(t, gw, client(), channel)
	tok := revocable(gw, "bob")
	for _, c := range []*pep.Client{a, b} {
		served(t, c, tok)
		_, asked := served(t, c, tok)
		require.True(t, asked, "a replica on a ReplicaOnly client served its cache")
	}
	revoke(t, gw, tok)
	require.NoError(t, a.Purge(ctx, tok), "Purge publishes on a replica, which Redis accepts")
	purged := time.Now()
	var late time.Duration
	for time.Since(purged) < 3*time.Second {
		before := b.Stats().GatewayRequests
		d, err := b.Check(pep.WithToken(context.Background(), tok), "orders", "read")
		if err == nil && d.Allowed() && d.Cached && b.Stats().GatewayRequests == before {
			late = time.Since(purged)
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.LessOrEqual(t, late, invalidation.DefaultTrust, "B served the purged token's cached GRANT %v after Purge returned", late)
	require.True(t, b.Stats().CacheBypassed, "B trusts its cache on a ReplicaOnly client")
}
