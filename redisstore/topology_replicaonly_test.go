package redisstore_test

// TestInvalidatorRefusesReplicaOnlySentinelClient (issue 24, found by
// the second attack): redis.NewFailoverClient with ReplicaOnly returns a
// *redis.Client whose connections go to the replicas, and a PUBLISH on a
// replica is delivered only to that replica's own subscribers (standalone
// Redis propagates PUBLISH from the primary to its replicas, never from a
// replica). A replica's own heartbeats would come back while another
// replica's purges never reach it. Promise: every session asks the
// server (the primary check every publication makes) and is lost, with
// an error that says what to use, its Purge fails, so the
// cache is never trusted and no purged GRANT is served past 2 s.

import (
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
	firstSessionSettled(t, b)
	tok := revocable(gw, "bob")
	for _, c := range []*pep.Client{a, b} {
		served(t, c, tok)
		_, asked := served(t, c, tok)
		require.True(t, asked, "a replica on a ReplicaOnly client served its cache")
	}
	gw.Revoke(t, realm, app, secret, tok)
	require.ErrorContains(t, a.Purge(ctx, tok), "replica, not the primary", "a purge published on a replica reaches no other replica: Purge fails")
	// B is watched until the gateway refuses it the revoked token, which
	// drops B's cached decisions of it, or for 3 s (past the 2 s bound)
	// at most.
	late := latestCachedGrant(t, b, tok, time.Now(), 3*time.Second)
	require.LessOrEqual(t, late, invalidation.DefaultTrust, "B served the purged token's cached GRANT %v after Purge returned", late)
	require.True(t, b.Stats().CacheBypassed, "B trusts its cache on a ReplicaOnly client")
}
